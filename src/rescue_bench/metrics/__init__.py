"""Scoring of RESCUE-Bench answers (SPEC section 5): pure functions, no evaluation engine.

Per task
    * ITP: :func:`binary_metrics` (precision / recall / F1 of "yes", accuracy, balanced accuracy).
    * RPP: :func:`rpp_metrics` (top-1 accuracy, macro-F1 over gold labels, recall@3, MRR).
    * STP, SSP: :func:`ranking_metrics` (recall@1/2/3, MRR), :func:`rank_of`.
    * ER: :func:`intensity_score`, :func:`er_score`.
    * baselines: :func:`majority_share`; what the design gives away: :func:`chance_levels`.

Aggregation and uncertainty
    * :func:`mean_by_scenario`, :func:`mean_by` (micro means per scenario, pooled, per clip).
    * :func:`bootstrap_ci` (cluster bootstrap over clips, percentile interval); when an interval
      is computed at all and how often it covers: :mod:`rescue_bench.metrics.coverage`.
    * :func:`paired_permutation_test`, :func:`paired_bootstrap_test`, :func:`paired_delta_ci`,
      :func:`holm`, :func:`benjamini_hochberg` (comparing runs).
    * Statistics for the resampling functions: any ``f(records) -> float``, or the fast additive
      ones :func:`mean_statistic`, :func:`binary_statistic`, :func:`macro_f1_statistic`,
      :func:`ranking_statistic`.

Agreement between raters
    * :func:`krippendorff_alpha`, :func:`cohen_kappa`, :func:`fleiss_kappa` and :func:`reliability`
      (all three on units of several raters, with bootstrap intervals over clusters):
      :mod:`rescue_bench.metrics.agreement`.

Ranking from pairwise judgements
    * :func:`bradley_terry` (strengths from comparisons) and :func:`bradley_terry_resamples` (refitted
      on cluster-bootstrap resamples): :mod:`rescue_bench.metrics.pairwise`.

Conventions shared by every function: an invalid answer (``None`` prediction from
:mod:`rescue_bench.parse`) is wrong, never dropped, and counted in ``n_invalid`` / ``invalid_rate``;
ill-defined ratios are 0 (``zero_division=0``); empty input gives NaN, not an exception.
"""

from rescue_bench.metrics.aggregate import POOLED, mean_by, mean_by_scenario
from rescue_bench.metrics.agreement import Reliability, Unit, cohen_kappa, fleiss_kappa, krippendorff_alpha, reliability
from rescue_bench.metrics.bootstrap import bootstrap_ci, bootstrap_distribution
from rescue_bench.metrics.chance import chance_levels
from rescue_bench.metrics.classification import INVALID, binary_metrics, majority_share, rpp_metrics, top1
from rescue_bench.metrics.coverage import (
    MEASURED_COVERAGE,
    MIN_CLUSTERS_FOR_INTERVAL,
    coverage_note,
    interval_available,
    level_text,
    measured_coverage,
)
from rescue_bench.metrics.emotion import er_score, intensity_score
from rescue_bench.metrics.pairwise import Comparison, bradley_terry, bradley_terry_resamples
from rescue_bench.metrics.ranking import MRR_CUTOFF, rank_of, ranking_metrics
from rescue_bench.metrics.significance import (
    align_pairs,
    benjamini_hochberg,
    holm,
    paired_bootstrap_test,
    paired_delta_ci,
    paired_permutation_test,
)
from rescue_bench.metrics.stats import (
    AdditiveStatistic,
    binary_statistic,
    macro_f1_statistic,
    mean_statistic,
    ranking_statistic,
)

__all__ = [
    "INVALID",
    "MEASURED_COVERAGE",
    "MIN_CLUSTERS_FOR_INTERVAL",
    "MRR_CUTOFF",
    "POOLED",
    "AdditiveStatistic",
    "Comparison",
    "Reliability",
    "Unit",
    "align_pairs",
    "benjamini_hochberg",
    "binary_metrics",
    "binary_statistic",
    "chance_levels",
    "bootstrap_ci",
    "bootstrap_distribution",
    "bradley_terry",
    "bradley_terry_resamples",
    "cohen_kappa",
    "coverage_note",
    "er_score",
    "fleiss_kappa",
    "holm",
    "intensity_score",
    "interval_available",
    "krippendorff_alpha",
    "level_text",
    "macro_f1_statistic",
    "majority_share",
    "mean_by",
    "mean_by_scenario",
    "mean_statistic",
    "measured_coverage",
    "paired_bootstrap_test",
    "paired_delta_ci",
    "paired_permutation_test",
    "rank_of",
    "reliability",
    "ranking_metrics",
    "ranking_statistic",
    "rpp_metrics",
    "top1",
]
