"""Ranking metrics for the ranking tasks (RPP, STP, SSP): recall@k and mean reciprocal rank.

A model answers with its (up to) three most likely labels, most likely first. An invalid answer is a
``None`` ranking and counts as a miss at every cut-off (SPEC section 5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["MRR_CUTOFF", "rank_of", "ranking_metrics"]

MRR_CUTOFF = 3
"""MRR counts a hit only within the top 3 (the answer contract asks for three labels)."""


def rank_of(gold: str, ranking: Sequence[str] | None) -> int | None:
    """1-based rank of ``gold`` in ``ranking``; ``None`` when absent or the ranking is invalid.

    Comparison is exact: rankings from :mod:`rescue_bench.parse` already hold canonical labels.

    >>> rank_of("b", ["a", "b", "c"]), rank_of("z", ["a"]), rank_of("a", None)
    (2, None, None)
    """
    if not ranking:
        return None
    for i, label in enumerate(ranking, start=1):
        if label == gold:
            return i
    return None


def ranking_metrics(
    golds: Sequence[str],
    rankings: Sequence[Sequence[str] | None],
    ks: Sequence[int] = (1, 2, 3),
    mrr_cutoff: int = MRR_CUTOFF,
) -> dict[str, float]:
    """Recall@k for each ``k`` in ``ks`` and MRR.

    Parameters
    ----------
    golds
        One gold label per instance.
    rankings
        One ranking per instance (``None`` = invalid answer).
    ks
        Cut-offs; the keys are ``recall_at_{k}``. ``recall_at_1`` is the paper's "Rec.".
    mrr_cutoff
        The reciprocal rank is ``1/rank`` when ``rank <= mrr_cutoff``, else 0.

    Returns
    -------
    dict with ``recall_at_{k}``, ``mrr``, ``n``, ``n_invalid`` (``None`` or empty rankings) and
    ``invalid_rate``. Empty input gives NaN scores.

    >>> ranking_metrics(["a", "b"], [["a", "b"], ["c", "b"]])["mrr"]
    0.75
    """
    if len(golds) != len(rankings):
        raise ValueError(f"golds and rankings differ in length: {len(golds)} != {len(rankings)}")
    n = len(golds)
    ranks = [rank_of(g, r) for g, r in zip(golds, rankings)]
    n_invalid = sum(1 for r in rankings if not r)
    out: dict[str, float] = {"n": n, "n_invalid": n_invalid, "invalid_rate": n_invalid / n if n else math.nan}
    for k in ks:
        out[f"recall_at_{k}"] = sum(1 for r in ranks if r is not None and r <= k) / n if n else math.nan
    out["mrr"] = sum(1.0 / r for r in ranks if r is not None and r <= mrr_cutoff) / n if n else math.nan
    return out
