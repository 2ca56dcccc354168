"""How often the report's cluster-bootstrap interval covers the true value, by number of clips.

    python bench/bootstrap_coverage.py                  # 95% level, 1000 simulated data sets per clip count
    python bench/bootstrap_coverage.py --confidence 0.9 --reps 400

Each simulated data set has K clips of 8 instances; clip c answers right with probability p_c drawn
from Beta(3, 2) (mean 0.6, clips differ as real clips do), so the true accuracy is 0.6. The interval is
:func:`rescue_bench.metrics.bootstrap_ci` (percentile, 1000 resamples of clips), as ``rescue report``
computes it. Printed: the share of data sets whose interval holds 0.6. The coverage notes of the
report (:data:`rescue_bench.metrics.MEASURED_COVERAGE`) come from this script; nothing is written.
"""

from __future__ import annotations

import argparse

import numpy as np

from rescue_bench.metrics import bootstrap_ci, mean_statistic

CLIPS = (2, 3, 4, 6, 10, 17, 30, 60)


def coverage(k: int, reps: int, confidence: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    stat = mean_statistic(lambda r: r["hit"])
    hits = 0
    for rep in range(reps):
        p = rng.beta(3.0, 2.0, size=k)
        records = [{"sample_id": f"c{c}", "hit": float(rng.random() < p[c])} for c in range(k) for _ in range(8)]
        low, high = bootstrap_ci(records, stat, "sample_id", 1000, confidence, seed=rep)
        hits += bool(low <= 0.6 <= high)
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"nominal {args.confidence:.0%}; {args.reps} data sets per row")
    for k in CLIPS:
        print(f"{k:>4} clips: covers {coverage(k, args.reps, args.confidence, args.seed + k):.1%}")


if __name__ == "__main__":
    main()
