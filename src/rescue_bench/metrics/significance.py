"""Paired significance tests between two runs on the same instances, and Holm's correction.

Two runs (two models, two prompts, two cue modes) answered the *same* instances, so their
difference is best judged pairwise: records are aligned by instance id, and the resampling unit is
again the cluster (clip), because instances of one clip are correlated.

* :func:`paired_permutation_test` (recommended): under the null hypothesis that the two runs are
  exchangeable, swapping the two runs' answers for all instances of a clip does not change the
  distribution of the difference. Each permutation swaps every clip with probability 1/2. With few
  clips (``2**clusters <= n_resamples``) all swap patterns are enumerated and the p-value is exact.
* :func:`paired_bootstrap_test`: resamples clips with replacement and tests the observed difference
  against the bootstrap distribution shifted to zero (Efron & Tibshirani's shift method). Also
  gives the material for a confidence interval of the difference, see :func:`paired_delta_ci`.
* :func:`holm`: Holm-Bonferroni step-down adjustment when several comparisons are reported together.

All p-values are two-sided.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from rescue_bench.metrics import _resample as rs
from rescue_bench.metrics._util import Key, key_fn
from rescue_bench.metrics.stats import AdditiveStatistic

_K = TypeVar("_K", bound=Hashable)
"""The key type of :func:`holm`'s p-values (the adjusted values keep it)."""

__all__ = ["align_pairs", "paired_permutation_test", "paired_bootstrap_test", "paired_delta_ci", "holm"]

Statistic = Callable[[Sequence[Any]], float]

_REL_TOL = 1e-9
"""Resampled differences within this relative tolerance of the observed one count as "as extreme",
so floating-point noise in sums never turns a tie into a non-tie (identical runs give p = 1)."""


def align_pairs(
    records_a: Sequence[Any],
    records_b: Sequence[Any],
    id_key: Key = "instance_id",
    cluster_key: Key | None = None,
) -> tuple[list[Any], list[Any]]:
    """Records of both runs in the same order, matched by instance id.

    Raises ``ValueError`` when an id is duplicated within a run, when the two runs do not cover the
    same instances (a paired comparison on different instance sets is meaningless; filter both runs
    first, explicitly), or, with ``cluster_key``, when one instance sits in different clusters.
    The order is that of ``records_a``.
    """
    read_id = key_fn(id_key)
    by_id_b: dict[Any, Any] = {}
    for r in records_b:
        i = read_id(r)
        if i in by_id_b:
            raise ValueError(f"duplicate instance id in run b: {i!r}")
        by_id_b[i] = r
    a_list = list(records_a)
    seen: set[Any] = set()
    for r in a_list:
        i = read_id(r)
        if i in seen:
            raise ValueError(f"duplicate instance id in run a: {i!r}")
        seen.add(i)
    only_a = seen - by_id_b.keys()
    only_b = by_id_b.keys() - seen
    if only_a or only_b:
        raise ValueError(
            f"runs cover different instances: {len(only_a)} only in a, {len(only_b)} only in b "
            f"(e.g. {sorted(map(repr, list(only_a)[:3] + list(only_b)[:3]))})"
        )
    b_list = [by_id_b[read_id(r)] for r in a_list]
    if cluster_key is not None:
        read_c = key_fn(cluster_key)
        for ra, rb in zip(a_list, b_list):
            if read_c(ra) != read_c(rb):
                raise ValueError(f"instance {read_id(ra)!r} is in cluster {read_c(ra)!r} in a but {read_c(rb)!r} in b")
    return a_list, b_list


def _as_extreme(deltas: np.ndarray, observed: float) -> np.ndarray:
    tol = _REL_TOL * max(1.0, abs(observed))
    return np.abs(deltas) >= abs(observed) - tol


def _diff(statistic: Statistic, a: list[Any], b: list[Any]) -> float:
    return rs.call_stat(statistic, a) - rs.call_stat(statistic, b)


def paired_permutation_test(
    records_a: Sequence[Any],
    records_b: Sequence[Any],
    statistic: Statistic,
    cluster_key: Key,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    id_key: Key = "instance_id",
) -> float:
    """Two-sided p-value of ``statistic(a) - statistic(b)`` by swapping runs within clusters.

    Parameters
    ----------
    records_a, records_b
        The two runs' per-instance records; aligned by ``id_key`` (see :func:`align_pairs`).
    statistic
        A function of a list of records (an
        :class:`~rescue_bench.metrics.stats.AdditiveStatistic` takes the vectorised path).
    cluster_key
        The clip of a record; all instances of a clip are swapped together.
    n_resamples
        Random swap patterns to draw; when ``2**n_clusters <= n_resamples`` all patterns are
        enumerated instead and the p-value is exact.
    seed
        Seed of ``numpy.random.default_rng`` (ignored when exact).

    Returns
    -------
    p-value in ``(0, 1]``: exact ``#{|delta*| >= |delta|} / 2**C``, or the Monte-Carlo estimate
    ``(1 + #{|delta*| >= |delta|}) / (n_resamples + 1)``, which is never 0. Identical runs give 1.

    Notes
    -----
    Empty runs give NaN. With one cluster the only swap gives ``-delta``, so p = 1: a single clip
    is no evidence either way.
    """
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, not {n_resamples!r}")
    a, b = align_pairs(records_a, records_b, id_key, cluster_key)
    if not a:
        return math.nan
    idx, ids = rs.cluster_index(a, cluster_key)
    n_clusters = len(ids)
    exact = n_clusters < 63 and 2**n_clusters <= n_resamples
    rng = np.random.default_rng(seed)

    def patterns(start: int, stop: int) -> np.ndarray:
        if exact:
            codes = np.arange(start, stop, dtype=np.int64)
            return ((codes[:, None] >> np.arange(n_clusters, dtype=np.int64)[None, :]) & 1).astype(float)
        return rng.integers(0, 2, size=(stop - start, n_clusters)).astype(float)

    total = 2**n_clusters if exact else n_resamples
    deltas = np.empty(total, dtype=float)
    if isinstance(statistic, AdditiveStatistic):
        # one components() call over both runs, so a layout fixed from the data (macro-F1 classes)
        # is shared by a and b
        both = rs.cluster_sums(statistic, a + b, np.concatenate([idx, idx + n_clusters]), 2 * n_clusters)
        sa, sb = both[:n_clusters], both[n_clusters:]
        observed = float(statistic.combine(sa.sum(0)) - statistic.combine(sb.sum(0)))
        d = sb - sa
        for start, stop in rs.chunks(total, n_clusters):
            z = patterns(start, stop)
            shift = z @ d
            deltas[start:stop] = statistic.combine(sa.sum(0) + shift) - statistic.combine(sb.sum(0) - shift)
    else:
        observed = _diff(statistic, a, b)
        ga, gb = rs.group(a, idx, n_clusters), rs.group(b, idx, n_clusters)
        for start, stop in rs.chunks(total, n_clusters):
            for i, z in enumerate(patterns(start, stop)):
                ra: list[Any] = []
                rb: list[Any] = []
                for c, swap in enumerate(z.tolist()):
                    if swap:
                        ra.extend(gb[c])
                        rb.extend(ga[c])
                    else:
                        ra.extend(ga[c])
                        rb.extend(gb[c])
                deltas[start + i] = _diff(statistic, ra, rb)
    if math.isnan(observed):
        return math.nan
    hits = int(_as_extreme(deltas[~np.isnan(deltas)], observed).sum())
    if exact:
        return hits / total
    return (1 + hits) / (n_resamples + 1)


def _paired_bootstrap_deltas(
    a: list[Any], b: list[Any], statistic: Statistic, cluster_key: Key, n_resamples: int, seed: int | None
) -> tuple[float, np.ndarray, int]:
    idx, ids = rs.cluster_index(a, cluster_key)
    n_clusters = len(ids)
    rng = np.random.default_rng(seed)
    deltas = np.empty(n_resamples, dtype=float)
    if isinstance(statistic, AdditiveStatistic):
        both = rs.cluster_sums(statistic, a + b, np.concatenate([idx, idx + n_clusters]), 2 * n_clusters)
        sa, sb = both[:n_clusters], both[n_clusters:]
        observed = float(statistic.combine(sa.sum(0)) - statistic.combine(sb.sum(0)))
        for start, stop in rs.chunks(n_resamples, n_clusters):
            counts = rs.draw_counts(rng, stop - start, n_clusters)
            deltas[start:stop] = statistic.combine(counts @ sa) - statistic.combine(counts @ sb)
    else:
        observed = _diff(statistic, a, b)
        ga, gb = rs.group(a, idx, n_clusters), rs.group(b, idx, n_clusters)
        for start, stop in rs.chunks(n_resamples, n_clusters):
            counts = rs.draw_counts(rng, stop - start, n_clusters)
            for i, row in enumerate(counts):
                deltas[start + i] = _diff(statistic, rs.expand(ga, row), rs.expand(gb, row))
    return observed, deltas, n_clusters


def paired_bootstrap_test(
    records_a: Sequence[Any],
    records_b: Sequence[Any],
    statistic: Statistic,
    cluster_key: Key,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    id_key: Key = "instance_id",
) -> float:
    """Two-sided p-value of ``statistic(a) - statistic(b)`` by a paired cluster bootstrap.

    Both runs are resampled with the *same* clusters; the p-value is
    ``(1 + #{|delta* - delta| >= |delta|}) / (n_resamples + 1)`` (the bootstrap distribution
    centred on zero, Efron & Tibshirani 1993, sec. 16.4). Identical runs give 1.

    Notes
    -----
    Empty runs give NaN; fewer than two clusters give 1.0 (the clusters cannot be resampled, so
    there is no evidence). The bootstrap test is somewhat liberal with few clusters; prefer
    :func:`paired_permutation_test` there (e.g. the 17 family clips).
    """
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, not {n_resamples!r}")
    a, b = align_pairs(records_a, records_b, id_key, cluster_key)
    if not a:
        return math.nan
    observed, deltas, n_clusters = _paired_bootstrap_deltas(a, b, statistic, cluster_key, n_resamples, seed)
    if math.isnan(observed):
        return math.nan
    if n_clusters < 2:
        return 1.0
    deltas = deltas[~np.isnan(deltas)]
    hits = int(_as_extreme(deltas - observed, observed).sum())
    return (1 + hits) / (deltas.size + 1)


def paired_delta_ci(
    records_a: Sequence[Any],
    records_b: Sequence[Any],
    statistic: Statistic,
    cluster_key: Key,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    id_key: Key = "instance_id",
) -> tuple[float, float, float]:
    """``(delta, low, high)``: the observed difference ``statistic(a) - statistic(b)`` and its
    paired cluster-bootstrap percentile interval. Empty runs give NaNs; one cluster gives the
    degenerate interval ``(delta, delta, delta)``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), not {confidence!r}")
    a, b = align_pairs(records_a, records_b, id_key, cluster_key)
    if not a:
        return math.nan, math.nan, math.nan
    observed, deltas, n_clusters = _paired_bootstrap_deltas(a, b, statistic, cluster_key, n_resamples, seed)
    if n_clusters < 2:
        return observed, observed, observed
    deltas = deltas[~np.isnan(deltas)]
    if deltas.size == 0:
        return observed, math.nan, math.nan
    alpha = 1.0 - confidence
    low, high = np.percentile(deltas, [100.0 * alpha / 2.0, 100.0 * (1.0 - alpha / 2.0)])
    return observed, float(low), float(high)


def _check_pvalues(pvalues: Mapping[Any, Any]) -> None:
    """``ValueError`` naming the key of a p-value that is not a number in ``[0, 1]`` (NaN included)."""
    for k, p in pvalues.items():
        if p is None or isinstance(p, bool) or not isinstance(p, (int, float, np.floating, np.integer)):
            raise ValueError(f"p-value of {k!r} is not a number: {p!r}")
        if math.isnan(p) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value of {k!r} must be in [0, 1], got {p!r}")


def holm(pvalues: Mapping[_K, float]) -> dict[_K, float]:
    """Holm-Bonferroni adjusted p-values, keyed like the input (and in the input's order).

    With ``m`` p-values sorted ascending ``p_(1) <= ... <= p_(m)``, the adjusted value of the i-th is
    ``min(1, max_{j <= i} (m - j + 1) * p_(j))``. Rejecting where the adjusted value is ``<= alpha``
    controls the family-wise error rate at ``alpha`` under any dependence. Tied p-values get the same
    adjusted value. Raises ``ValueError`` for a NaN or a value outside ``[0, 1]``; an empty mapping
    gives ``{}``.

    >>> holm({"a": 0.01, "b": 0.04, "c": 0.03})
    {'a': 0.03, 'b': 0.06, 'c': 0.06}
    """
    _check_pvalues(pvalues)
    m = len(pvalues)
    ordered = sorted(pvalues.items(), key=lambda kv: kv[1])
    adjusted: dict[_K, float] = {}
    running = 0.0
    for i, (k, p) in enumerate(ordered):
        running = max(running, min(1.0, (m - i) * float(p)))
        adjusted[k] = running
    return {k: adjusted[k] for k in pvalues}


def benjamini_hochberg(pvalues: Mapping[_K, float]) -> dict[_K, float]:
    """Benjamini-Hochberg adjusted p-values (step-up), keyed like the input.

    With ``m`` p-values sorted ascending, the adjusted value of the i-th (1-based) is
    ``min(1, min_{j >= i} m * p_(j) / j)``. Rejecting where it is ``<= alpha`` controls the false
    discovery rate at ``alpha`` for independent or positively dependent tests. The same checks as
    :func:`holm`; an empty mapping gives ``{}``.

    >>> benjamini_hochberg({"a": 0.01, "b": 0.04, "c": 0.03})
    {'a': 0.03, 'b': 0.04, 'c': 0.04}
    """
    _check_pvalues(pvalues)
    m = len(pvalues)
    ordered = sorted(pvalues.items(), key=lambda kv: kv[1])
    adjusted: dict[_K, float] = {}
    running = 1.0
    for i in range(m - 1, -1, -1):
        k, p = ordered[i]
        running = min(running, m * float(p) / (i + 1))
        adjusted[k] = min(1.0, running)
    return {k: adjusted[k] for k in pvalues}
