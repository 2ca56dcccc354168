"""Resampling internals shared by the bootstrap and the paired tests (not public API)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rescue_bench.metrics._util import Key, key_fn
from rescue_bench.metrics.stats import AdditiveStatistic

MAX_MATRIX_CELLS = 20_000_000
"""Resamples are processed in chunks so that a (resamples x clusters) matrix stays below this size."""


def cluster_index(records: Sequence[Any], cluster_key: Key) -> tuple[np.ndarray, list[Any]]:
    """Cluster number of every record (clusters numbered in first-seen order) and the cluster ids."""
    read = key_fn(cluster_key)
    ids: dict[Any, int] = {}
    idx = np.fromiter((ids.setdefault(read(r), len(ids)) for r in records), dtype=np.int64, count=len(records))
    return idx, list(ids)


def cluster_sums(stat: AdditiveStatistic, records: Sequence[Any], idx: np.ndarray, n_clusters: int) -> np.ndarray:
    """Per-cluster sums of the statistic's components, shape (clusters, m)."""
    comps = np.asarray(stat.components(list(records)), dtype=float)
    comps = comps.reshape(len(records), -1)
    sums = np.zeros((n_clusters, comps.shape[1]), dtype=float)
    np.add.at(sums, idx, comps)
    return sums


def group(records: Sequence[Any], idx: np.ndarray, n_clusters: int) -> list[list[Any]]:
    """Records grouped by cluster number."""
    groups: list[list[Any]] = [[] for _ in range(n_clusters)]
    for r, c in zip(records, idx.tolist()):
        groups[c].append(r)
    return groups


def chunks(n_rows: int, n_cols: int) -> list[tuple[int, int]]:
    """Row ranges [start, stop) so that each chunk has at most MAX_MATRIX_CELLS cells."""
    step = max(1, MAX_MATRIX_CELLS // max(1, n_cols))
    return [(s, min(n_rows, s + step)) for s in range(0, n_rows, step)]


def draw_counts(rng: np.random.Generator, n_rows: int, n_clusters: int) -> np.ndarray:
    """How often each cluster is drawn in each of ``n_rows`` bootstrap resamples, shape (rows, clusters).

    Each resample draws ``n_clusters`` clusters with replacement (``rng.integers``), so the draws
    are the same whether the statistic then takes the fast or the slow path.
    """
    draws = rng.integers(0, n_clusters, size=(n_rows, n_clusters))
    flat = draws + (np.arange(n_rows, dtype=np.int64) * n_clusters)[:, None]
    return np.bincount(flat.ravel(), minlength=n_rows * n_clusters).reshape(n_rows, n_clusters)


def expand(groups: list[list[Any]], counts_row: np.ndarray) -> list[Any]:
    """The records of one resample: cluster c repeated counts_row[c] times, in cluster order."""
    out: list[Any] = []
    for c in np.flatnonzero(counts_row).tolist():
        out.extend(groups[c] * int(counts_row[c]))
    return out


def call_stat(statistic: Callable[[Sequence[Any]], float], records: list[Any]) -> float:
    value = statistic(records)
    return float("nan") if value is None else float(value)


def stratum_columns(records: Sequence[Any], idx: np.ndarray, n_clusters: int, strata: Key) -> list[np.ndarray]:
    """The cluster numbers of each stratum (strata in first-seen order); a cluster must lie in one."""
    read = key_fn(strata)
    of: dict[int, Any] = {}
    for r, c in zip(records, idx.tolist()):
        s = read(r)
        if of.setdefault(c, s) != s:
            raise ValueError(f"cluster number {c} lies in more than one stratum ({of[c]!r} and {s!r})")
    order: dict[Any, list[int]] = {}
    for c in range(n_clusters):
        order.setdefault(of[c], []).append(c)
    return [np.array(cols, dtype=np.int64) for cols in order.values()]


def draw_stratified(rng: np.random.Generator, n_rows: int, n_clusters: int, columns: list[np.ndarray] | None) -> np.ndarray:
    """:func:`draw_counts`, or with ``columns`` (from :func:`stratum_columns`) a resample of each
    stratum's clusters within it, so every resample keeps each stratum's number of clusters."""
    if columns is None:
        return draw_counts(rng, n_rows, n_clusters)
    counts = np.zeros((n_rows, n_clusters), dtype=np.int64)
    for cols in columns:
        counts[:, cols] = draw_counts(rng, n_rows, len(cols))
    return counts
