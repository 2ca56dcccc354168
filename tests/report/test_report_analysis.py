"""The report's pure computations: same numbers as scoring.task_metrics, binning, transitions, confusion."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rescue_bench.data.load import load_clips
from rescue_bench.metrics import AdditiveStatistic, bootstrap_ci
from rescue_bench.report import analysis as A
from rescue_bench.report.tables import fmt, fmt_ci
from rescue_bench.scoring import HEADLINE, task_metrics
from tests.factories import run_instances, run_records


@pytest.fixture(scope="module")
def recs() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in run_records(run_instances(10, 3, 5), 0.55, seed=7, invalid_every=9):
        out.setdefault(r["task"], []).append(r)
    return out


def test_points_are_task_metrics(recs):
    points = A.point_metrics(recs)
    for task, records_ in recs.items():
        both = task_metrics(task, records_)
        couple = task_metrics(task, [r for r in records_ if r["scenario"] == "couple"])
        for metric in HEADLINE[task]:
            assert points[task]["both"][metric] == pytest.approx(both[metric])
            assert points[task]["couple"][metric] == pytest.approx(couple[metric])


@pytest.mark.slow
def test_fast_statistic_equals_task_metrics_and_gives_the_same_interval(recs):
    """The vectorised path is taken for every headline metric and reproduces the slow, exact path."""
    for task, records_ in recs.items():
        for metric in HEADLINE[task]:
            stat = A.statistic_for(task, metric, records_)
            assert isinstance(stat, AdditiveStatistic), (task, metric)
            exact = A.exact_statistic(task, metric)
            rng = random.Random(0)
            for _ in range(5):  # on resample-like multisets too
                sample = [rng.choice(records_) for _ in records_]
                assert stat(sample) == pytest.approx(exact(sample), abs=1e-12)
            fast_ci = bootstrap_ci(records_, stat, "sample_id", 200, 0.95, 3)
            slow_ci = bootstrap_ci(records_, exact, "sample_id", 200, 0.95, 3)
            assert fast_ci == pytest.approx(slow_ci, abs=1e-9), (task, metric)


def test_statistic_falls_back_to_exact_when_the_fast_one_disagrees(recs, monkeypatch):
    monkeypatch.setattr(A, "additive_statistic", lambda task, metric: (lambda records: 0.123456))
    stat = A.statistic_for("rpp", "accuracy", recs["rpp"])
    assert not isinstance(stat, AdditiveStatistic)
    assert stat(recs["rpp"]) == task_metrics("rpp", recs["rpp"])["accuracy"]


def test_missing_judge_gives_no_interval(recs):
    unjudged = [dict(r, judge_score=None, score=None) if r["valid"] else r for r in recs["er"]]
    cis = A.headline_cis({"er": unjudged}, n_resamples=100)
    assert cis["er"]["both"]["judge"] == A.MetricCI(value=None, ci_low=None, ci_high=None, clips=13, chance=None)
    assert cis["er"]["both"]["intensity"].value is not None
    assert fmt_ci(cis["er"]["both"]["judge"], "judge") == "–"


def test_cis_are_seeded(recs):
    a = A.headline_cis(recs, n_resamples=300, seed=1)
    b = A.headline_cis(recs, n_resamples=300, seed=1)
    c = A.headline_cis(recs, n_resamples=300, seed=2)
    assert a == b
    assert a != c


def test_majority_share(recs):
    shares = A.majority_shares(recs)
    golds = [r["gold"] for r in recs["rpp"] if r["scenario"] == "couple"]
    label = max(set(golds), key=lambda g: (golds.count(g), [-ord(c) for c in g]))
    assert shares["rpp"]["couple"].share == pytest.approx(golds.count(label) / len(golds))
    assert set(shares) == {"rpp", "stp", "ssp"}
    assert shares["stp"]["both"].role in ("group", "individual")


@pytest.mark.parametrize(
    ("row", "n_rows", "expected"),
    [(1, 10, 0), (2, 10, 1), (10, 10, 9), (3, 10, 2), (1, 100, 0), (10, 100, 0), (11, 100, 1), (100, 100, 9), (1, 1, 9), (1, 3, 3), (2, 3, 6)],
)
def test_position_bin(row, n_rows, expected):
    assert A.position_bin(row, n_rows) == expected


@given(st.integers(1, 500), st.integers(1, 500))
@settings(max_examples=300, deadline=None)
def test_position_bin_matches_the_definition(a, b):
    row, n_rows = min(a, b), max(a, b)
    b_ = A.position_bin(row, n_rows)
    assert 0 <= b_ <= 9
    # (b/10, (b+1)/10] contains row / n_rows, checked in exact integer arithmetic
    assert b_ * n_rows < 10 * row <= (b_ + 1) * n_rows


def test_position_accuracy(recs):
    pos = A.position_accuracy(recs["rpp"], "both")
    assert sum(pos.n) == len(recs["rpp"])
    for n, acc, se in zip(pos.n, pos.accuracy, pos.se):
        if n:
            assert 0 <= acc <= 1 and se == pytest.approx(math.sqrt(acc * (1 - acc) / n))
        else:
            assert acc is None and se is None


def test_transition_matrix_by_hand():
    seqs = [["a", "a", "b"], ["b", "a"], ["c"], []]
    m = A.transition_matrix(seqs, ["a", "b", "c"])
    assert m.counts == [[1, 1, 0], [1, 0, 0], [0, 0, 0]]
    assert m.probabilities == [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_transitions_from_demo_clips():
    clips = load_clips(None)
    for scenario in ("couple", "family"):
        seqs = A.pattern_sequences(clips, scenario)
        m = A.transition_matrix(seqs, [*dict.fromkeys(x for s in seqs for x in s)])
        total = sum(max(0, len(s) - 1) for s in seqs)
        assert np.asarray(m.counts).sum() == total
        probs = np.asarray(m.probabilities)
        for row, count in zip(probs, np.asarray(m.counts)):
            assert row.sum() == pytest.approx(1.0 if count.sum() else 0.0)


def test_position_distribution_rows_sum_to_one():
    items = [("x", 1, 10), ("y", 1, 10), ("x", 10, 10), ("z", 5, 10)]
    d = A.position_distribution(items, ["x", "y"])
    assert d.labels == ["x", "y", "z"]
    assert d.n[0] == 2 and d.shares[0][:2] == [0.5, 0.5]
    assert d.counts[9] == [1, 0, 0] and d.counts[4] == [0, 0, 1]


def test_confusion_and_per_label(recs):
    conf = A.confusion("ssp", recs["ssp"], "couple")
    n = sum(1 for r in recs["ssp"] if r["scenario"] == "couple")
    assert sum(map(sum, conf.matrix)) == n
    invalid = sum(1 for r in recs["ssp"] if r["scenario"] == "couple" and not r["valid"])
    assert sum(row[conf.columns.index("(invalid)")] for row in conf.matrix) == invalid
    per = A.per_label_accuracy("ssp", recs["ssp"], "couple")
    for i, label in enumerate(conf.labels):
        row = conf.matrix[i]
        assert per[label].n == sum(row)
        assert per[label].accuracy == pytest.approx(row[conf.columns.index(label)] / sum(row))
    roles = A.confusion("stp", recs["stp"], "family", by_role=True)
    assert roles.labels == ["group", "individual"]
    assert roles.columns[-2:] == ["(other)", "(invalid)"]


def test_paired_tests_skip_pairs_without_overlap(recs):
    other = {t: [dict(r, id=r["id"] + "-x") for r in rs] for t, rs in recs.items()}
    assert A.paired_tests([("a", recs), ("b", other)], n_resamples=100) == []
    same = A.paired_tests([("a", recs), ("b", recs)], n_resamples=100)
    assert same and all(t.p_value == 1.0 and t.diff == 0 for t in same)


def test_formats():
    assert fmt(0.40453, "pct") == "40.45"
    assert fmt(4.046, "judge") == "4.05"
    assert fmt(0.86104, "bert") == "0.8610"
    assert fmt(None, "pct") == "–"
    assert fmt(float("nan"), "pct") == "–"
    assert fmt_ci(A.MetricCI(value=0.5, ci_low=0.25, ci_high=0.75), "pct") == "50.00 [25.00, 75.00]"


def test_the_pooled_interval_resamples_within_scenarios():
    """Couple clips all right, family clips all wrong: stratified by scenario, every resample of the
    pooled RPP accuracy holds the same couple and family clips' counts, so the interval is a point."""
    from tests.factories import run_instances, run_records

    recs = [r for r in run_records(run_instances(4, 4, 3), 0.5, seed=2) if r["task"] == "rpp"]
    for r in recs:
        r["prediction"] = [r["gold"]] if r["scenario"] == "couple" else [c for c in r["candidates"] if c != r["gold"]][:1]
        r["valid"] = True
    cis = A.headline_cis({"rpp": recs}, n_resamples=200)
    both = cis["rpp"]["both"]["accuracy"]
    assert both.value == pytest.approx(0.5)
    assert both.ci_low == pytest.approx(0.5) and both.ci_high == pytest.approx(0.5)
