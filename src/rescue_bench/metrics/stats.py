"""Statistics of a list of records, in a form the resampling functions can vectorise.

A *statistic* is any function ``f(records) -> float``; :func:`rescue_bench.metrics.bootstrap_ci`
and the paired tests accept any such function and simply call it once per resample. That is exact but
slow when ``f`` is heavy (scikit-learn's F1 costs about a millisecond per call, a thousand resamples a
second or more per score).

Most benchmark scores are *additive*: they are a function of per-record counts that add up over
records. A mean is ``sum(value) / sum(1)``; binary F1 is ``2 TP / (2 TP + FP + FN)``; macro-F1 needs
TP/FP/FN per class; balanced accuracy needs per-class hits and supports. An
:class:`AdditiveStatistic` declares these per-record components once, so a resample of clusters is a
weighted sum (one matrix product for all resamples) followed by the combining formula. It is still a
plain callable (``stat(records)``) that gives the same value as the slow path.

The constructors here (:func:`mean_statistic`, :func:`binary_statistic`, :func:`macro_f1_statistic`,
:func:`ranking_statistic`) follow exactly the conventions of :func:`binary_metrics`,
:func:`rpp_metrics` and :func:`ranking_metrics` (invalid answers wrong, ``zero_division=0``, macro-F1
over the labels present in gold).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rescue_bench.metrics._util import Key, key_fn
from rescue_bench.metrics.classification import INVALID
from rescue_bench.metrics.ranking import MRR_CUTOFF, rank_of

__all__ = [
    "AdditiveStatistic",
    "mean_statistic",
    "binary_statistic",
    "macro_f1_statistic",
    "ranking_statistic",
]


@dataclass(frozen=True)
class AdditiveStatistic:
    """A statistic ``combine(sum over records of components(record))``.

    Attributes
    ----------
    components
        ``components(records) -> array (n_records, m)``: the additive per-record parts. It sees the
        whole record list at once, so it may fix a layout from it (e.g. the class list of macro-F1);
        :meth:`__call__` and the resampling functions call it once on the records they are given.
    combine
        ``combine(sums) -> values``: maps an array of summed components of shape ``(..., m)`` to the
        statistic of shape ``(...)``; must be vectorised over leading axes and give NaN (not raise)
        where undefined.
    name
        For display.
    """

    components: Callable[[Sequence[Any]], np.ndarray]
    combine: Callable[[np.ndarray], np.ndarray]
    name: str = "statistic"

    def __call__(self, records: Sequence[Any]) -> float:
        records = list(records)
        if not records:
            return math.nan
        comps = np.asarray(self.components(records), dtype=float)
        return float(self.combine(comps.sum(axis=0)))


def _safe_div(num: np.ndarray, den: np.ndarray, zero: float = 0.0) -> np.ndarray:
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, zero, dtype=float)
    np.divide(num, den, out=out, where=den != 0)
    return out


def mean_statistic(value_fn: Callable[[Any], float], name: str = "mean") -> AdditiveStatistic:
    """The mean of ``value_fn(record)``: the fast path for every per-instance score (accuracy,
    recall@k, MRR, judge scores, ER score, ...). Empty input gives NaN."""

    def components(records: Sequence[Any]) -> np.ndarray:
        return np.array([[float(value_fn(r)), 1.0] for r in records], dtype=float).reshape(-1, 2)

    def combine(sums: np.ndarray) -> np.ndarray:
        return _safe_div(sums[..., 0], sums[..., 1], zero=math.nan)

    return AdditiveStatistic(components, combine, name)


_BINARY_METRICS = ("precision", "recall", "f1", "accuracy", "balanced_accuracy")


def binary_statistic(
    metric: str,
    gold: Key,
    pred: Key,
    positive: str = "yes",
    negative: str = "no",
) -> AdditiveStatistic:
    """One score of :func:`rescue_bench.metrics.binary_metrics` as an additive statistic.

    ``metric`` is one of ``precision``, ``recall``, ``f1`` (positive class), ``accuracy``,
    ``balanced_accuracy``. ``gold`` / ``pred`` read the gold label and the prediction from a record
    (field name or function); a prediction other than ``positive``/``negative`` (e.g. ``None``) is
    invalid and scored as the negation of the gold, exactly as in ``binary_metrics``.
    """
    if metric not in _BINARY_METRICS:
        raise ValueError(f"metric must be one of {_BINARY_METRICS}, not {metric!r}")
    read_gold, read_pred = key_fn(gold), key_fn(pred)

    def components(records: Sequence[Any]) -> np.ndarray:
        rows = []
        for r in records:
            g, p = read_gold(r), read_pred(r)
            if g not in (positive, negative):
                raise ValueError(f"gold label must be {positive!r} or {negative!r}, got {g!r}")
            t = g == positive
            y = (not t) if p not in (positive, negative) else p == positive
            rows.append((t and y, (not t) and y, t and not y, (not t) and not y))  # tp, fp, fn, tn
        return np.array(rows, dtype=float).reshape(-1, 4)

    def combine(s: np.ndarray) -> np.ndarray:
        tp, fp, fn, tn = s[..., 0], s[..., 1], s[..., 2], s[..., 3]
        if metric == "precision":
            return _safe_div(tp, tp + fp)
        if metric == "recall":
            return _safe_div(tp, tp + fn)
        if metric == "f1":
            return _safe_div(2 * tp, 2 * tp + fp + fn)
        if metric == "accuracy":
            return _safe_div(tp + tn, tp + fp + fn + tn, zero=math.nan)
        # balanced accuracy: mean recall over the classes present in gold
        pos, neg = tp + fn, tn + fp
        rec_pos, rec_neg = _safe_div(tp, pos), _safe_div(tn, neg)
        n_cls = (pos > 0).astype(float) + (neg > 0).astype(float)
        return _safe_div(rec_pos * (pos > 0) + rec_neg * (neg > 0), n_cls, zero=math.nan)

    return AdditiveStatistic(components, combine, f"itp_{metric}")


def macro_f1_statistic(gold: Key, pred: Key) -> AdditiveStatistic:
    """Macro-F1 over the labels present in gold, as in :func:`rescue_bench.metrics.rpp_metrics`.

    ``pred`` reads the predicted label (for rankings, e.g. ``lambda r: top1(r["ranking"])``);
    ``None`` stands for an invalid answer. The class list is fixed from the records the statistic
    is first given; in a resample, classes absent from the resampled gold are left out of the mean,
    which is what ``f1_score(labels=sorted(set(resampled gold)))`` computes.
    """
    read_gold, read_pred = key_fn(gold), key_fn(pred)

    def components(records: Sequence[Any]) -> np.ndarray:
        golds = [read_gold(r) for r in records]
        preds = [read_pred(r) for r in records]
        preds = [INVALID if p is None else p for p in preds]
        classes = sorted(set(golds))
        index = {c: i for i, c in enumerate(classes)}
        g_idx = np.array([index[x] for x in golds], dtype=np.int64)
        p_idx = np.array([index.get(x, -1) for x in preds], dtype=np.int64)  # -1: not a gold class
        cols = np.arange(len(classes))
        g = g_idx[:, None] == cols[None, :]
        p = p_idx[:, None] == cols[None, :]
        tp, fp, fn = g & p, ~g & p, g & ~p
        return np.concatenate([tp, fp, fn], axis=1).astype(float)

    def combine(s: np.ndarray) -> np.ndarray:
        k = s.shape[-1] // 3
        tp, fp, fn = s[..., :k], s[..., k : 2 * k], s[..., 2 * k :]
        f1 = _safe_div(2 * tp, 2 * tp + fp + fn)
        present = (tp + fn) > 0
        return _safe_div((f1 * present).sum(axis=-1), present.sum(axis=-1), zero=math.nan)

    return AdditiveStatistic(components, combine, "macro_f1")


def ranking_statistic(metric: str, gold: Key, ranking: Key, mrr_cutoff: int = MRR_CUTOFF) -> AdditiveStatistic:
    """``recall_at_{k}`` or ``mrr`` of :func:`rescue_bench.metrics.ranking_metrics` as a mean
    statistic (an invalid ``None`` ranking is a miss)."""
    read_gold, read_rank = key_fn(gold), key_fn(ranking)
    if metric == "mrr":

        def value(r: Any) -> float:
            rank = rank_of(read_gold(r), read_rank(r))
            return 1.0 / rank if rank is not None and rank <= mrr_cutoff else 0.0

    elif metric.startswith("recall_at_") and metric[len("recall_at_") :].isdigit():
        k = int(metric[len("recall_at_") :])

        def value(r: Any) -> float:
            rank = rank_of(read_gold(r), read_rank(r))
            return 1.0 if rank is not None and rank <= k else 0.0

    else:
        raise ValueError(f"metric must be 'mrr' or 'recall_at_<k>', not {metric!r}")
    return mean_statistic(value, metric)
