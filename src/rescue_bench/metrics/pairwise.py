"""Ranking from pairwise comparisons: Bradley-Terry strengths, with cluster-bootstrap resamples.

A *comparison* is two items (agents) and its outcome: 1 the first won, 0 the second won, 0.5 a tie.
:func:`bradley_terry` fits ``P(i beats j) = sigmoid(s_i - s_j)`` by penalised maximum likelihood
(scipy's Newton-CG on the log-likelihood, its gradient and its Hessian): a tie is half a win for each side, and a
standard normal prior on each strength (:data:`PRIOR_SD`) keeps an item that wins every comparison
finite while pulling little once there are a few dozen comparisons. The likelihood depends on the
comparisons only through the table of wins (who beat whom, how often), so a fit costs the same for
ten comparisons or ten thousand. Strengths are log-odds, centred to mean 0 over the items compared.

:func:`bradley_terry_resamples` refits on cluster-bootstrap resamples (clusters: the clips; strata:
the scenarios, as every interval of the package), for percentile intervals of the strengths and of
anything computed from them (a rank correlation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rescue_bench.metrics import _resample as rs

__all__ = ["PRIOR_SD", "Comparison", "bradley_terry", "bradley_terry_resamples"]

PRIOR_SD = 1.0
"""Standard deviation of the normal prior on each strength (log-odds)."""


@dataclass(frozen=True)
class Comparison:
    """One judgement of ``first`` against ``second``: ``outcome`` 1 (first won), 0 (second won) or
    0.5 (a tie); ``cluster`` is what the bootstrap resamples (the clip), ``stratum`` what it keeps
    (the scenario)."""

    first: str
    second: str
    outcome: float
    cluster: str = ""
    stratum: str = ""


def _wins(comparisons: Sequence[Comparison], index: dict[str, int]) -> np.ndarray:
    """The table of wins: ``w[i, j]`` how often item i beat item j (a tie: half each way)."""
    w = np.zeros((len(index), len(index)))
    for c in comparisons:
        i, j = index[c.first], index[c.second]
        w[i, j] += c.outcome
        w[j, i] += 1.0 - c.outcome
    return w


def _fit(wins: np.ndarray) -> np.ndarray:
    """The penalised maximum-likelihood strengths of a table of wins, centred."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    def objective(s: np.ndarray) -> tuple[float, np.ndarray]:
        diff = s[:, None] - s[None, :]
        loss = -float((wins * log_expit(diff)).sum()) + float(s @ s) / (2 * PRIOR_SD**2)
        pull = wins * expit(-diff)  # d/ds_i of log sigmoid(s_i - s_j), weighted
        return loss, -pull.sum(axis=1) + pull.sum(axis=0) + s / PRIOR_SD**2

    def hessian(s: np.ndarray) -> np.ndarray:
        p = expit(s[:, None] - s[None, :])
        curvature = (wins + wins.T) * p * (1 - p)
        return np.diag(curvature.sum(axis=1) + 1 / PRIOR_SD**2) - curvature

    found = minimize(objective, np.zeros(len(wins)), jac=True, hess=hessian, method="Newton-CG")
    return found.x - found.x.mean()


def _items(comparisons: Sequence[Comparison]) -> list[str]:
    return sorted({c.first for c in comparisons} | {c.second for c in comparisons})


def bradley_terry(comparisons: Sequence[Comparison]) -> dict[str, float]:
    """Each compared item's strength (log-odds, mean 0); ``{}`` without comparisons."""
    for c in comparisons:
        if c.first == c.second:
            raise ValueError(f"a comparison of {c.first!r} with itself")
        if not 0.0 <= c.outcome <= 1.0:
            raise ValueError(f"outcome must be in [0, 1], not {c.outcome!r}")
    items = _items(comparisons)
    if not comparisons:
        return {}
    wins = _wins(comparisons, {item: k for k, item in enumerate(items)})
    return dict(zip(items, (float(v) for v in _fit(wins))))


def bradley_terry_resamples(
    comparisons: Sequence[Comparison], *, n_resamples: int = 1000, seed: int = 0, stratified: bool = True
) -> tuple[list[str], np.ndarray]:
    """``(items, strengths)``: the strengths refitted on ``n_resamples`` cluster-bootstrap resamples,
    shape (resamples, items); an item absent from a resample is NaN there. One cluster: no
    resamples (an empty array)."""
    items = _items(comparisons)
    idx, ids = rs.cluster_index(comparisons, lambda c: c.cluster)
    if len(ids) < 2 or n_resamples < 1:
        return items, np.empty((0, len(items)))
    columns = rs.stratum_columns(comparisons, idx, len(ids), lambda c: c.stratum) if stratified else None
    position = {item: k for k, item in enumerate(items)}
    per_cluster = np.stack([_wins(group, position) for group in rs.group(comparisons, idx, len(ids))])
    rng = np.random.default_rng(seed)
    out = np.full((n_resamples, len(items)), np.nan)
    for start, stop in rs.chunks(n_resamples, len(ids)):
        counts = rs.draw_stratified(rng, stop - start, len(ids), columns)
        tables = np.tensordot(counts, per_cluster, axes=1)  # the wins of each resample
        for i, wins in enumerate(tables):
            present = np.flatnonzero(wins.sum(axis=0) + wins.sum(axis=1))
            if len(present) >= 2:
                out[start + i, present] = _fit(wins[np.ix_(present, present)])
    return items, out
