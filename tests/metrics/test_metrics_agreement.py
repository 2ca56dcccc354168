"""Inter-annotator agreement against hand-computed values and published worked examples.

Expected values are written from the arithmetic in the comments or from the cited worked examples,
never from running the code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from rescue_bench.metrics.agreement import (
    Unit,
    cohen_kappa,
    cohen_kappa_statistic,
    fleiss_kappa,
    krippendorff_alpha,
    krippendorff_alpha_statistic,
    reliability,
    value_counts,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four observers, twelve
# units, missing values. Published: nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797.
K2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def k2011_units() -> list[Unit]:
    units = []
    for i in range(12):
        ratings = {who: values[i] for who, values in K2011.items() if values[i] is not None}
        units.append(Unit(cluster=f"s{i % 4}", ratings=ratings, key=f"unit {i + 1}"))
    return units


def test_krippendorff_2011_worked_example():
    units = k2011_units()
    domain = [1, 2, 3, 4, 5]
    counts = value_counts(units, domain)
    assert counts.sum() == 41  # A gave 9 values, B 11, C 10, D 11
    assert krippendorff_alpha(counts, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(counts, "interval", domain) == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(counts, "ordinal", domain) == pytest.approx(0.815, abs=5e-4)


def test_alpha_by_hand_nominal_and_interval():
    # Two coders, four units (a,a) (a,b) (b,b) (b,b). Coincidences: o_aa = 2, o_ab = o_ba = 1, o_bb = 4;
    # n_a = 3, n_b = 5, n = 8. D_o = 2/8, D_e = 2 * 3 * 5 / (8 * 7) = 30/56; alpha = 1 - 7/15 = 8/15.
    units = [Unit("s", {"x": "a", "y": "a"}), Unit("s", {"x": "a", "y": "b"}), Unit("t", {"x": "b", "y": "b"}), Unit("t", {"x": "b", "y": "b"})]
    assert krippendorff_alpha(value_counts(units, ["a", "b"]), "nominal") == pytest.approx(8 / 15)
    # Interval: units (1,2) (3,3) (5,4). D_o = (1+1+0+0+1+1)/6 = 4/6; over all ordered pairs of the six
    # values 1,2,3,3,4,5: sum (x_i - x_j)^2 = 2*6*64 - 2*18^2 = 120, D_e = 120 / (6*5) = 4; alpha = 5/6.
    numeric = [Unit("s", {"x": 1, "y": 2}), Unit("s", {"x": 3, "y": 3}), Unit("t", {"x": 5, "y": 4})]
    assert krippendorff_alpha(value_counts(numeric, [1, 2, 3, 4, 5]), "interval", [1, 2, 3, 4, 5]) == pytest.approx(5 / 6)
    # a lone rating is not pairable and changes nothing
    extra = numeric + [Unit("t", {"x": 1})]
    assert krippendorff_alpha(value_counts(extra, [1, 2, 3, 4, 5]), "interval", [1, 2, 3, 4, 5]) == pytest.approx(5 / 6)


def test_alpha_undefined_cases():
    same = [Unit("s", {"x": "a", "y": "a"}), Unit("t", {"x": "a", "y": "a"})]
    assert krippendorff_alpha(value_counts(same, ["a"]), "nominal") is None
    lonely = [Unit("s", {"x": "a"}), Unit("t", {"y": "b"})]
    assert krippendorff_alpha(value_counts(lonely, ["a", "b"]), "nominal") is None
    assert krippendorff_alpha(np.zeros((0, 2)), "nominal") is None


def test_alpha_statistic_equals_the_krippendorff_package_at_every_level():
    # the published example, then random tables with missing ratings, three to six raters
    units = k2011_units()
    domain = [1, 2, 3, 4, 5]
    rng = np.random.default_rng(11)
    tables = [value_counts(units, domain)]
    for _ in range(25):
        n_units, k = int(rng.integers(3, 40)), int(rng.integers(2, 7))
        table = rng.multinomial(int(rng.integers(2, 7)), rng.dirichlet(np.ones(k)), size=n_units).astype(float)
        table[rng.random(n_units) < 0.2, :] //= 2  # some units with fewer ratings
        tables.append(table[table.sum(axis=1) >= 2])
    for table in tables:
        values = [1.0, 2.5, 3.0, 7.0, 8.0, 11.0][: table.shape[1]]
        rows = [("c", row) for row in table]
        for level in ("nominal", "ordinal", "interval", "ratio"):
            expected = krippendorff_alpha(table, level, None if level == "nominal" else values)
            got = krippendorff_alpha_statistic(level, None if level == "nominal" else values)(rows)
            if expected is None:
                assert math.isnan(got), (level, table)
            else:
                assert got == pytest.approx(expected, abs=1e-12), (level, table)
    # the negative control: one value only is undefined, never 1
    assert math.isnan(krippendorff_alpha_statistic()([("c", np.array([2.0, 0.0])), ("d", np.array([3.0, 0.0]))]))


def test_alpha_intervals_are_those_of_the_package_called_on_each_resample():
    from rescue_bench.metrics import bootstrap_ci

    rng = np.random.default_rng(5)
    units = []
    for s in range(9):
        for _ in range(8):
            a = int(rng.integers(0, 6))
            units.append(Unit(f"seg{s}", {"x": a, "y": a if rng.random() < 0.6 else int(rng.integers(0, 6)), "z": int(rng.integers(0, 6))}))
    for level in ("nominal", "interval"):
        r = reliability(units, level, n_resamples=300, seed=2)
        domain = sorted({v for u in units for v in u.ratings.values()})
        counts = value_counts(units, domain)
        records = [(u.cluster, i) for i, u in enumerate(units)]

        def slow(sample, level=level, counts=counts, domain=domain):
            value = krippendorff_alpha(counts[[i for _, i in sample]], level, None if level == "nominal" else domain)
            return math.nan if value is None else value

        low, high = bootstrap_ci(records, slow, cluster_key=lambda rec: rec[0], n_resamples=300, seed=2)
        assert r.alpha_ci == pytest.approx((low, high), abs=1e-12), level


def test_cohen_kappa_textbook_example():
    # 50 proposals: both yes 20, both no 15, A yes / B no 5, A no / B yes 10.
    # p_o = 35/50 = 0.7; A says yes 25/50, B 30/50: p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2/0.5 = 0.4
    a = ["y"] * 20 + ["n"] * 15 + ["y"] * 5 + ["n"] * 10
    b = ["y"] * 20 + ["n"] * 15 + ["n"] * 5 + ["y"] * 10
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    stat = cohen_kappa_statistic(["n", "y"])
    assert stat([("c", x, y) for x, y in zip(a, b)]) == pytest.approx(0.4)
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None and cohen_kappa([], []) is None


def test_cohen_kappa_statistic_equals_scikit_learn_on_random_labels():
    rng = np.random.default_rng(7)
    labels = ["p", "q", "r", "s"]
    for _ in range(20):
        n = int(rng.integers(5, 60))
        a = [labels[i] for i in rng.integers(0, 4, n)]
        b = [x if rng.random() < 0.6 else labels[int(rng.integers(0, 4))] for x in a]
        expected = cohen_kappa_score(a, b)
        got = cohen_kappa_statistic(labels)([("c", x, y) for x, y in zip(a, b)])
        if math.isnan(expected):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(expected)


def test_fleiss_kappa_published_example():
    # Fleiss' kappa worked example (10 subjects, 14 raters, 5 categories): P = 0.378, P_e = 0.213,
    # kappa = (0.37802 - 0.21333) / (1 - 0.21333) = 0.210.
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=5e-5)


def test_fleiss_kappa_by_hand_and_its_preconditions():
    # Counts (a,b) per unit: (2,0) (1,1) (0,2) (0,2). P_i = 1, 0, 1, 1 -> P = 3/4; p_a = 3/8, p_b = 5/8,
    # P_e = 9/64 + 25/64 = 17/32; kappa = (24/32 - 17/32) / (15/32) = 7/15.
    assert fleiss_kappa([[2, 0], [1, 1], [0, 2], [0, 2]]) == pytest.approx(7 / 15)
    assert fleiss_kappa([[2, 0], [2, 0]]) is None  # one category only: undefined
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[2, 0], [1, 2]])


def test_reliability_reports_every_statistic_with_intervals_and_says_what_does_not_apply():
    units = [Unit("s1", {"x": "a", "y": "a"}), Unit("s1", {"x": "a", "y": "b"}), Unit("s2", {"x": "b", "y": "b"}), Unit("s2", {"x": "b", "y": "b"})]
    r = reliability(units, "nominal", n_resamples=200, seed=1)
    assert r.units == 4 and r.ratings == 8 and r.clusters == 2 and r.raters == ["x", "y"]
    assert r.alpha == pytest.approx(8 / 15)
    # Cohen: rater x = a,a,b,b; y = a,b,b,b: p_o = 3/4, p_e = 2/4*1/4 + 2/4*3/4 = 1/2 -> 1/2
    assert r.cohen_kappa == pytest.approx(0.5)
    assert r.fleiss_kappa == pytest.approx(7 / 15)
    for low, high in (r.alpha_ci, r.cohen_ci, r.fleiss_ci):
        assert low <= high
    # resamples drawing s1 twice disagree more than the data: the interval reaches below the estimate
    assert r.alpha_ci[0] < r.alpha
    # three annotators, units with 2 and 3 ratings: no Cohen, no Fleiss, alpha still defined
    mixed = units + [Unit("s3", {"x": "a", "y": "a", "z": "b"})]
    m = reliability(mixed, "nominal", n_resamples=0)
    assert m.cohen_kappa is None and m.fleiss_kappa is None and m.alpha is not None and m.alpha_ci is None
    assert any("Cohen" in n for n in m.notes) and any("Fleiss" in n for n in m.notes)
    # one segment: no interval, said so
    one = reliability([Unit("s", {"x": 1, "y": 2}), Unit("s", {"x": 3, "y": 3}), Unit("s", {"x": 5, "y": 4})], "interval", n_resamples=100)
    assert one.alpha == pytest.approx(5 / 6) and one.alpha_ci is None and any("one segment" in n for n in one.notes)
    assert one.cohen_kappa is None and one.fleiss_kappa is None  # kappas are for labels
    empty = reliability([Unit("s", {"x": "a"})])
    assert empty.units == 0 and empty.alpha is None and empty.notes


def test_reliability_intervals_are_seeded_and_resample_segments():
    rng = np.random.default_rng(3)
    units = []
    for s in range(12):
        for _ in range(6):
            a = str(rng.integers(0, 3))
            b = a if rng.random() < 0.7 else str(rng.integers(0, 3))
            units.append(Unit(f"seg{s}", {"x": a, "y": b}))
    first = reliability(units, n_resamples=300, seed=5)
    again = reliability(units, n_resamples=300, seed=5)
    assert first.alpha_ci == again.alpha_ci and first.cohen_ci == again.cohen_ci
    assert first.alpha_ci[0] < first.alpha < first.alpha_ci[1]
    assert first.cohen_ci[0] < first.cohen_kappa < first.cohen_ci[1]
