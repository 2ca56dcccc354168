"""Agreement between raters (inter-annotator reliability): pure functions, no database, no web.

The data are *units*: one thing several raters labelled (a row's relation pattern, one client's
emotion intensity in a row). A unit holds the value each of its raters gave; raters who did not rate
it are simply absent (Krippendorff's alpha handles missing data; the kappas say when they do not
apply). Units belong to a *cluster* (the segment), the unit of resampling of the bootstrap: rows of
one segment are not independent (same people, same session, the same annotator's habits).

Statistics
    * :func:`krippendorff_alpha`: the ``krippendorff`` package on a units x values count table
      (nominal, ordinal, interval or ratio). ``None`` where undefined (fewer than two distinct values,
      no unit with two ratings). :func:`krippendorff_alpha_statistic` is the same formula as an
      additive statistic (each unit's coincidences), so the bootstrap of alpha is one matrix product
      too instead of a thousand calls of the package (about 0.5 ms each, measured).
    * :func:`cohen_kappa`: scikit-learn's ``cohen_kappa_score`` for two raters who rated the same
      units; :func:`cohen_kappa_statistic` is the same formula as an additive statistic (confusion
      matrix cells), so a thousand bootstrap resamples cost one matrix product instead of a thousand
      scikit-learn calls (about 1.5 ms each, measured).
    * :func:`fleiss_kappa`: Fleiss (1971) for units that all have the same number of ratings (the
      raters may differ between units), a dozen lines through :func:`fleiss_kappa_statistic`: adding
      statsmodels (and patsy) for this one formula would not earn its place.
    * :func:`reliability`: all three on a list of :class:`Unit`, each with a cluster-bootstrap
      percentile interval (:func:`rescue_bench.metrics.bootstrap_ci`), plus the counts and why a
      kappa does not apply.

Conventions: values are any hashable (labels) or numbers (interval level); an undefined statistic is
``None`` in results and NaN inside the vectorised combine functions, never an exception.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal, TypedDict

import numpy as np

from rescue_bench.metrics.bootstrap import bootstrap_ci
from rescue_bench.metrics.stats import AdditiveStatistic

FEW_CLUSTERS = 10
"""Below this many segments a bootstrap interval is flagged as rough: with k segments there are only
C(2k-1, k) distinct resamples (3 for two segments), and percentile intervals are too narrow."""

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")

__all__ = [
    "FEW_CLUSTERS",
    "LEVELS",
    "Level",
    "Reliability",
    "Unit",
    "cohen_kappa",
    "cohen_kappa_statistic",
    "fleiss_kappa",
    "fleiss_kappa_statistic",
    "krippendorff_alpha",
    "krippendorff_alpha_statistic",
    "pairs_of",
    "reliability",
    "value_counts",
]


@dataclass(frozen=True)
class Unit:
    """One rated thing: the value each rater gave (absent raters did not rate it)."""

    cluster: str
    """What the bootstrap resamples (the segment)."""
    ratings: Mapping[str, Hashable]
    """rater -> value."""
    key: str = ""
    """What the unit is (for messages and debugging), e.g. ``"seg/1 row 4 Alex"``."""


def _none(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def value_counts(units: Sequence[Unit], domain: Sequence[Hashable]) -> np.ndarray:
    """The units x values table: how many raters gave each value of ``domain`` to each unit."""
    index = {v: i for i, v in enumerate(domain)}
    table = np.zeros((len(units), len(domain)), dtype=float)
    for row, unit in enumerate(units):
        for value in unit.ratings.values():
            table[row, index[value]] += 1
    return table


def _domain(units: Sequence[Unit], level: Level) -> list[Hashable]:
    values = {v for u in units for v in u.ratings.values()}
    if level == "nominal":
        return sorted(values, key=lambda v: (str(type(v)), str(v)))
    return sorted(values)  # type: ignore[type-var]


def krippendorff_alpha(counts: np.ndarray, level: Level = "nominal", domain: Sequence[Any] | None = None) -> float | None:
    """Krippendorff's alpha of a units x values count table (the ``krippendorff`` package).

    ``domain`` gives the value of each column for the ordinal, interval and ratio levels (the column
    order is the value order); nominal needs none. Units with fewer than two ratings are not pairable
    and do not count. ``None`` when alpha is undefined: no pairable unit, or a single value in all
    pairable units (no expected disagreement).
    """
    import krippendorff

    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[0] == 0:
        return None
    pairable = counts[counts.sum(axis=1) >= 2]
    if pairable.shape[0] == 0 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None
    value_domain = None if level == "nominal" else list(domain) if domain is not None else list(range(counts.shape[1]))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            value = krippendorff.alpha(value_counts=counts, level_of_measurement=level, value_domain=value_domain)
    except (ValueError, ZeroDivisionError):
        return None
    return _none(float(value))


def krippendorff_alpha_statistic(level: Level = "nominal", domain: Sequence[Any] | None = None) -> AdditiveStatistic:
    """Krippendorff's alpha of records ``(cluster, counts)`` (a row of :func:`value_counts` of a
    pairable unit) as an additive statistic.

    Components: the unit's coincidences ``o_ck = n_uc (n_uk - [c = k]) / (m_u - 1)``. Combined:
    ``alpha = 1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck`` with ``n_c`` the coincidence margins and
    ``d`` the level's squared distance (nominal: 0 or 1; interval ``(v_c - v_k)^2``; ratio
    ``((v_c - v_k) / (v_c + v_k))^2``; ordinal from the margins, as Krippendorff defines it): the
    ``krippendorff`` package's formula, so the two agree exactly (tested). NaN where alpha is
    undefined (one value only).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    values = None if domain is None else np.asarray(domain, dtype=float)

    def components(records: Sequence[Any]) -> np.ndarray:
        counts = np.asarray([r[1] for r in records], dtype=float)
        m = counts.sum(axis=1)
        pairs = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(counts.shape[1])
        return (pairs / np.maximum(m - 1, 1)[:, None, None]).reshape(len(records), -1)

    def combine(sums: np.ndarray) -> np.ndarray:
        k = int(round(math.sqrt(sums.shape[-1])))
        o = sums.reshape(*sums.shape[:-1], k, k)
        n_c = o.sum(axis=-2)
        n = n_c.sum(axis=-1)
        if level == "nominal":
            d = np.broadcast_to(1.0 - np.eye(k), o.shape)
        elif level == "ordinal":
            low, high = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(np.arange(k), np.arange(k))
            through = np.cumsum(n_c, axis=-1)
            d = (through[..., high] - through[..., low] + (n_c[..., low] - n_c[..., high]) / 2.0) ** 2
        else:
            v = values if values is not None else np.arange(k, dtype=float)
            diff, total = np.subtract.outer(v, v), np.add.outer(v, v)
            if level == "ratio":
                diff = np.divide(diff, total, out=np.zeros_like(diff), where=total != 0)
            d = np.broadcast_to(diff**2, o.shape)
        with np.errstate(all="ignore"):
            observed = (o * d).sum(axis=(-1, -2))
            expected = (n_c[..., :, None] * n_c[..., None, :] * d).sum(axis=(-1, -2))
            value = 1.0 - (n - 1.0) * observed / expected
        return np.where((n > 1) & (expected > 0), value, np.nan)

    return AdditiveStatistic(components, combine, "krippendorff_alpha")


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' labels on the same units (scikit-learn); ``None`` if undefined
    (no units, or both raters used one and the same label throughout)."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b):
        raise ValueError("the two raters' label lists differ in length")
    if not a:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        value = cohen_kappa_score([str(x) for x in a], [str(x) for x in b])
    return _none(float(value))


def cohen_kappa_statistic(domain: Sequence[Hashable]) -> AdditiveStatistic:
    """Cohen's kappa of records ``(cluster, a, b)`` as an additive statistic (confusion cells).

    ``1 - (1 - p_o) / (1 - p_e)`` with ``p_o`` the observed and ``p_e`` the chance agreement from
    the two raters' marginals: scikit-learn's formula with unit weights, so the two agree exactly
    (tested); NaN where ``p_e = 1``.
    """
    index = {v: i for i, v in enumerate(domain)}
    k = len(domain)

    def components(records: Sequence[Any]) -> np.ndarray:
        out = np.zeros((len(records), k * k), dtype=float)
        for i, (_, a, b) in enumerate(records):
            out[i, index[a] * k + index[b]] = 1.0
        return out

    def combine(sums: np.ndarray) -> np.ndarray:
        cells = sums.reshape(*sums.shape[:-1], k, k)
        n = cells.sum(axis=(-1, -2))
        with np.errstate(all="ignore"):
            p_o = np.trace(cells, axis1=-2, axis2=-1) / n
            p_e = (cells.sum(axis=-1) * cells.sum(axis=-2)).sum(axis=-1) / (n * n)
            value = (p_o - p_e) / (1.0 - p_e)
        return np.where((n > 0) & (p_e < 1.0), value, np.nan)

    return AdditiveStatistic(components, combine, "cohen_kappa")


def fleiss_kappa_statistic() -> AdditiveStatistic:
    """Fleiss' kappa of count-table rows (one per unit, every unit with the same number of ratings
    ``m >= 2``) as an additive statistic.

    Per unit ``i``: ``P_i = (sum_j n_ij^2 - m) / (m (m - 1))``; then ``P = mean P_i``, ``p_j`` = share
    of all ratings in category ``j``, ``P_e = sum_j p_j^2`` and kappa ``(P - P_e) / (1 - P_e)`` (NaN
    where ``P_e = 1``). Components: the counts, ``P_i`` and 1.
    """

    def components(rows: Sequence[Any]) -> np.ndarray:
        table = np.asarray(rows, dtype=float).reshape(len(rows), -1)
        m = table.sum(axis=1)
        if np.any(m < 2) or np.any(m != m[0]):
            raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings in every unit")
        p_i = ((table**2).sum(axis=1) - m) / (m * (m - 1))
        return np.concatenate([table, p_i[:, None], np.ones((len(rows), 1))], axis=1)

    def combine(sums: np.ndarray) -> np.ndarray:
        counts, p_sum, n_units = sums[..., :-2], sums[..., -2], sums[..., -1]
        total = counts.sum(axis=-1)
        with np.errstate(all="ignore"):
            p_bar = p_sum / n_units
            p_j = counts / total[..., None]
            p_e = (p_j**2).sum(axis=-1)
            value = (p_bar - p_e) / (1.0 - p_e)
        return np.where((n_units > 0) & (p_e < 1.0), value, np.nan)

    return AdditiveStatistic(components, combine, "fleiss_kappa")


def fleiss_kappa(table: np.ndarray | Sequence[Sequence[float]]) -> float | None:
    """Fleiss' kappa of a units x categories count table whose rows all sum to the same ``m >= 2``
    (see :func:`fleiss_kappa_statistic`); ``None`` when undefined (no units, one category used)."""
    rows = np.asarray(table, dtype=float)
    if rows.ndim != 2 or rows.shape[0] == 0:
        return None
    return _none(fleiss_kappa_statistic()(list(rows)))


# ------------------------------------------------------------------------------------------------
# everything about one field: alpha, kappas, intervals, counts
# ------------------------------------------------------------------------------------------------


class ReliabilityJson(TypedDict):
    """A :class:`Reliability` as the agreement report's JSON holds it."""

    level: str
    units: int
    ratings: int
    segments: int
    raters: list[str]
    alpha: float | None
    alpha_ci: list[float] | None
    cohen_kappa: float | None
    cohen_ci: list[float] | None
    fleiss_kappa: float | None
    fleiss_ci: list[float] | None
    notes: list[str]


@dataclass
class Reliability:
    """Agreement on one set of units (one field in one scope)."""

    level: Level
    units: int
    """Pairable units (two or more ratings): what alpha is computed on."""
    ratings: int
    """Ratings in the pairable units."""
    clusters: int
    """Segments the pairable units come from (the bootstrap resamples these)."""
    raters: list[str]
    alpha: float | None = None
    alpha_ci: tuple[float, float] | None = None
    cohen_kappa: float | None = None
    cohen_ci: tuple[float, float] | None = None
    fleiss_kappa: float | None = None
    fleiss_ci: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)
    """Why a statistic is missing (e.g. "Cohen's kappa needs the same two raters on every unit")."""

    def to_json(self) -> ReliabilityJson:
        def ci(value: tuple[float, float] | None) -> list[float] | None:
            return None if value is None else [value[0], value[1]]

        return {
            "level": self.level,
            "units": self.units,
            "ratings": self.ratings,
            "segments": self.clusters,
            "raters": self.raters,
            "alpha": self.alpha,
            "alpha_ci": ci(self.alpha_ci),
            "cohen_kappa": self.cohen_kappa,
            "cohen_ci": ci(self.cohen_ci),
            "fleiss_kappa": self.fleiss_kappa,
            "fleiss_ci": ci(self.fleiss_ci),
            "notes": list(self.notes),
        }


def _ci(records: Sequence[Any], statistic: Any, n_resamples: int, confidence: float, seed: int) -> tuple[float, float] | None:
    if n_resamples <= 0 or not records:
        return None
    low, high = bootstrap_ci(records, statistic, cluster_key=lambda r: r[0], n_resamples=n_resamples, confidence=confidence, seed=seed)
    if math.isnan(low) or math.isnan(high):
        return None
    return float(low), float(high)


def reliability(
    units: Sequence[Unit],
    level: Level = "nominal",
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Reliability:
    """Krippendorff's alpha at ``level`` and, for nominal data, Cohen's and Fleiss' kappa where they
    apply, each with a cluster-bootstrap percentile interval (``n_resamples = 0``: no intervals).

    - Only *pairable* units (two or more ratings) count; the rest carry no agreement information.
    - Cohen's kappa applies when every pairable unit was rated by the same two raters.
    - Fleiss' kappa applies when every pairable unit has the same number of ratings (raters may vary).
    - Intervals resample clusters (segments) with replacement; with a single cluster an interval is
      degenerate and reported as ``None`` (no uncertainty estimate), not as certainty.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    pairable = [u for u in units if len(u.ratings) >= 2]
    raters = sorted({r for u in pairable for r in u.ratings})
    clusters = sorted({u.cluster for u in pairable})
    result = Reliability(level, len(pairable), sum(len(u.ratings) for u in pairable), len(clusters), raters)
    if not pairable:
        result.notes.append("no unit rated by two or more annotators")
        return result
    intervals = n_resamples if len(clusters) >= 2 else 0
    if len(clusters) < 2 and n_resamples > 0:
        result.notes.append("one segment only: no confidence interval")
    elif len(clusters) < FEW_CLUSTERS and n_resamples > 0:
        result.notes.append(f"only {len(clusters)} segments: the interval is rough")
    domain = _domain(pairable, level)
    counts = value_counts(pairable, domain)
    numeric_domain = None if level == "nominal" else list(domain)
    rows = [(u.cluster, counts[i]) for i, u in enumerate(pairable)]  # the records of alpha's and Fleiss' intervals
    result.alpha = krippendorff_alpha(counts, level, numeric_domain)
    if result.alpha is None:
        result.notes.append("alpha undefined: every rating has the same value")
    else:
        result.alpha_ci = _ci(rows, krippendorff_alpha_statistic(level, numeric_domain), intervals, confidence, seed)
    if level != "nominal":
        return result
    if len(raters) == 2:
        a, b = raters
        pairs = [(u.cluster, u.ratings[a], u.ratings[b]) for u in pairable]
        kappa = cohen_kappa_statistic(domain)  # scikit-learn's formula (tested equal), without its per-call checks
        result.cohen_kappa = _none(kappa(pairs))
        if result.cohen_kappa is not None:
            result.cohen_ci = _ci(pairs, kappa, intervals, confidence, seed)
    else:
        result.notes.append(f"Cohen's kappa needs the same two annotators on every unit ({len(raters)} annotators here)")
    sizes = {len(u.ratings) for u in pairable}
    if len(sizes) == 1:
        result.fleiss_kappa = fleiss_kappa(counts)
        if result.fleiss_kappa is not None:
            stat = fleiss_kappa_statistic()
            fleiss_of = AdditiveStatistic(lambda recs: stat.components([r[1] for r in recs]), stat.combine, stat.name)
            result.fleiss_ci = _ci(rows, fleiss_of, intervals, confidence, seed)
    else:
        result.notes.append("Fleiss' kappa needs the same number of annotators on every unit")
    return result


def pairs_of(unit: Unit) -> list[tuple[str, str]]:
    """The rater pairs of a unit (sorted names), for pairwise measures such as text similarity."""
    return list(combinations(sorted(unit.ratings), 2))
