"""Chance levels the task design fixes: the expected score of an answer that ignores the input.

Printed beside every cell of the report's interval table, so a number is read against what the
design gives away. A uniform guess (ITP a fair coin; a ranking task a uniformly random order of the
instance's candidates) has, per instance with ``n`` candidates:

* Recall@k ``min(k, n) / n`` (top-1 accuracy is Recall@1): couple STP has three candidates (two
  clients and the group label), so its Recall@3 is 100% for *any* valid ranking;
* MRR ``(1 + 1/2 + ... + 1/min(3, n)) / n`` (MRR counts ranks up to 3);
* ITP with prevalence ``p`` of "yes": accuracy, recall and balanced accuracy 1/2, precision ``p``,
  F1 ``2p / (1 + 2p)``. A constant answer is not a coin: always "yes" scores F1 ``2p / (1 + p)``
  (2/3 on balanced points), always "no" 0, so a majority baseline's ITP F1 is decided by its
  tie-break; ``f1_always_yes`` / ``f1_always_no`` give both.

Levels are averaged over the records given (their candidate sets may differ). Metrics without a
design-fixed level (macro-F1, judge scores, BERTScore) are ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rescue_bench.labels import BINARY_TASKS, RANKED_TASKS
from rescue_bench.metrics.ranking import MRR_CUTOFF

__all__ = ["chance_levels"]

_KEYS = {
    "itp": ("precision", "recall", "f1", "accuracy", "balanced_accuracy", "f1_always_yes", "f1_always_no"),
    "rpp": ("accuracy", "macro_f1", "recall_at_3", "mrr"),
    "stp": ("recall_at_1", "recall_at_2", "recall_at_3", "mrr"),
    "ssp": ("recall_at_1", "recall_at_2", "recall_at_3", "mrr"),
    "er": ("judge", "intensity", "score", "bertscore"),
    "vp": ("judge", "bertscore"),
}


def _ranking_chance(sizes: Sequence[int]) -> dict[str, float]:
    out = {f"recall_at_{k}": sum(min(k, n) / n for n in sizes) / len(sizes) for k in (1, 2, 3)}
    out["mrr"] = sum(sum(1 / r for r in range(1, min(MRR_CUTOFF, n) + 1)) / n for n in sizes) / len(sizes)
    out["accuracy"] = out["recall_at_1"]
    return out


def chance_levels(task: str, records: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """``{metric: chance level or None}`` of ``task`` over ``records`` (result records: ``gold``,
    and ``candidates`` for the ranking tasks). Empty input gives ``None`` everywhere."""
    keys = _KEYS.get(task, ())
    out: dict[str, float | None] = dict.fromkeys(keys)
    if not records:
        return out
    if task in BINARY_TASKS:
        p = sum(r.get("gold") == "yes" for r in records) / len(records)
        out.update(precision=p, recall=0.5, f1=2 * p / (1 + 2 * p), accuracy=0.5, balanced_accuracy=0.5,
                   f1_always_yes=2 * p / (1 + p), f1_always_no=0.0)
    elif task in RANKED_TASKS:
        sizes = [len(r.get("candidates") or []) for r in records]
        if all(n > 0 for n in sizes):
            levels = _ranking_chance(sizes)
            out.update({k: levels[k] for k in keys if k in levels})
    return out
