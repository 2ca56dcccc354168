"""Additive statistics, cluster bootstrap, paired tests and Holm's correction."""

from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import balanced_accuracy_score, f1_score, precision_recall_fscore_support

from rescue_bench.metrics import (
    AdditiveStatistic,
    binary_metrics,
    binary_statistic,
    bootstrap_ci,
    bootstrap_distribution,
    holm,
    macro_f1_statistic,
    mean_statistic,
    paired_bootstrap_test,
    paired_delta_ci,
    paired_permutation_test,
    ranking_metrics,
    ranking_statistic,
    rpp_metrics,
    top1,
)
from rescue_bench.metrics.significance import align_pairs

LABELS = ["a", "b", "c", "d"]


def make_records(n_clusters=60, per=10, p_correct=0.6, seed=0, value_noise=0.0):
    """Records of a fake run: clip, instance id, gold/pred label, yes/no, a score and a ranking."""
    rng = random.Random(seed)
    out = []
    for c in range(n_clusters):
        clip_bias = rng.uniform(-0.2, 0.2)
        for i in range(per):
            gold = rng.choice(LABELS)
            correct = rng.random() < p_correct + clip_bias
            pred = gold if correct else rng.choice([x for x in LABELS if x != gold])
            yes = rng.choice(["yes", "no"])
            out.append(
                {
                    "instance_id": f"{c}-{i}",
                    "clip": f"clip{c}",
                    "gold": gold,
                    "pred": pred if rng.random() > 0.05 else None,
                    "itp_gold": yes,
                    "itp_pred": (yes if correct else ("no" if yes == "yes" else "yes")) if rng.random() > 0.05 else None,
                    "ranking": [pred, *[x for x in LABELS if x != pred][:2]] if rng.random() > 0.05 else None,
                    "v": float(correct) + rng.gauss(0, value_noise),
                }
            )
    return out


def mean_v(records):
    return sum(r["v"] for r in records) / len(records)


# ------------------------------------------------------------------------------------------------
# Additive statistics agree with the plain metrics
# ------------------------------------------------------------------------------------------------


def test_mean_statistic():
    recs = make_records(5, 4, value_noise=1.0)
    assert mean_statistic(lambda r: r["v"])(recs) == pytest.approx(mean_v(recs))
    assert math.isnan(mean_statistic(lambda r: r["v"])([]))


@pytest.mark.parametrize("metric", ["precision", "recall", "f1", "accuracy", "balanced_accuracy"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_statistic_matches_binary_metrics(metric, seed):
    recs = make_records(8, 5, seed=seed)
    stat = binary_statistic(metric, "itp_gold", "itp_pred")
    expected = binary_metrics([r["itp_gold"] for r in recs], [r["itp_pred"] for r in recs])[metric]
    assert stat(recs) == pytest.approx(expected)


def test_binary_statistic_single_class_and_bad_metric():
    recs = [{"g": "yes", "p": "yes"}, {"g": "yes", "p": None}]
    assert binary_statistic("balanced_accuracy", "g", "p")(recs) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        binary_statistic("auc", "g", "p")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS + ["zz", None])), min_size=1, max_size=30))
def test_macro_f1_statistic_matches_sklearn(pairs):
    recs = [{"g": g, "p": p} for g, p in pairs]
    golds = [g for g, _ in pairs]
    preds = ["__invalid__" if p is None else p for _, p in pairs]
    expected = f1_score(golds, preds, labels=sorted(set(golds)), average="macro", zero_division=0)
    assert macro_f1_statistic("g", "p")(recs) == pytest.approx(expected)


def test_ranking_statistic_matches_ranking_metrics():
    recs = make_records(6, 5)
    golds = [r["gold"] for r in recs]
    ranks = [r["ranking"] for r in recs]
    m = ranking_metrics(golds, ranks)
    assert ranking_statistic("mrr", "gold", "ranking")(recs) == pytest.approx(m["mrr"])
    assert ranking_statistic("recall_at_2", "gold", "ranking")(recs) == pytest.approx(m["recall_at_2"])
    with pytest.raises(ValueError):
        ranking_statistic("ndcg", "gold", "ranking")


def test_macro_f1_statistic_on_rankings_matches_rpp_metrics():
    recs = make_records(6, 5)
    stat = macro_f1_statistic("gold", lambda r: None if r["ranking"] is None else top1(r["ranking"]))
    expected = rpp_metrics([r["gold"] for r in recs], [r["ranking"] for r in recs])["macro_f1"]
    assert stat(recs) == pytest.approx(expected)


# ------------------------------------------------------------------------------------------------
# Bootstrap
# ------------------------------------------------------------------------------------------------


def test_ci_contains_point_estimate():
    recs = make_records(60, 10)
    stat = mean_statistic(lambda r: r["v"])
    low, high = bootstrap_ci(recs, stat, "clip")
    assert low < stat(recs) < high
    assert 0 < high - low < 0.5


def test_ci_deterministic_under_seed_and_seed_matters():
    recs = make_records(40, 5)
    stat = mean_statistic(lambda r: r["v"])
    assert bootstrap_ci(recs, stat, "clip", seed=7) == bootstrap_ci(recs, stat, "clip", seed=7)
    assert bootstrap_ci(recs, stat, "clip", seed=7) != bootstrap_ci(recs, stat, "clip", seed=8)


def test_ci_shrinks_with_more_clusters():
    stat = mean_statistic(lambda r: r["v"])
    small = bootstrap_ci(make_records(20, 10, seed=1), stat, "clip")
    large = bootstrap_ci(make_records(500, 10, seed=1), stat, "clip")
    assert (large[1] - large[0]) < 0.6 * (small[1] - small[0])


def test_ci_wider_with_higher_confidence():
    recs = make_records(50, 5)
    stat = mean_statistic(lambda r: r["v"])
    lo90, hi90 = bootstrap_ci(recs, stat, "clip", confidence=0.9)
    lo99, hi99 = bootstrap_ci(recs, stat, "clip", confidence=0.99)
    assert lo99 <= lo90 and hi99 >= hi90


def test_cluster_bootstrap_wider_than_instance_bootstrap_for_correlated_clips():
    # every clip is all-right or all-wrong: resampling instances would understate the uncertainty
    recs = [{"clip": c, "id": f"{c}-{i}", "v": float(c % 2)} for c in range(40) for i in range(25)]
    stat = mean_statistic(lambda r: r["v"])
    by_clip = bootstrap_ci(recs, stat, "clip")
    by_instance = bootstrap_ci(recs, stat, "id")
    assert (by_clip[1] - by_clip[0]) > 3 * (by_instance[1] - by_instance[0])


def test_fast_path_equals_slow_path():
    recs = make_records(30, 7, value_noise=0.5)
    fast = bootstrap_ci(recs, mean_statistic(lambda r: r["v"]), "clip", n_resamples=300, seed=3)
    slow = bootstrap_ci(recs, mean_v, "clip", n_resamples=300, seed=3)
    assert fast == pytest.approx(slow, abs=1e-12)


def test_macro_f1_fast_path_equals_sklearn_slow_path():
    recs = make_records(25, 6)

    def slow(rs):
        golds = [r["gold"] for r in rs]
        preds = ["__invalid__" if r["pred"] is None else r["pred"] for r in rs]
        return f1_score(golds, preds, labels=sorted(set(golds)), average="macro", zero_division=0)

    fast_d = bootstrap_distribution(recs, macro_f1_statistic("gold", "pred"), "clip", n_resamples=200, seed=5)
    slow_d = bootstrap_distribution(recs, slow, "clip", n_resamples=200, seed=5)
    np.testing.assert_allclose(fast_d, slow_d, atol=1e-12)


def test_binary_f1_fast_path_equals_sklearn_slow_path():
    recs = make_records(25, 6)

    def slow(rs):
        gold = [r["itp_gold"] for r in rs]
        pred = [r["itp_pred"] for r in rs]
        return binary_metrics(gold, pred)["f1"]

    fast_d = bootstrap_distribution(recs, binary_statistic("f1", "itp_gold", "itp_pred"), "clip", 100, seed=2)
    slow_d = bootstrap_distribution(recs, slow, "clip", 100, seed=2)
    np.testing.assert_allclose(fast_d, slow_d, atol=1e-12)


def test_generic_statistic_works_for_f1():
    recs = make_records(30, 5)

    def f1(rs):
        g = [r["itp_gold"] for r in rs]
        p = [r["itp_pred"] or ("no" if r["itp_gold"] == "yes" else "yes") for r in rs]
        return precision_recall_fscore_support(g, p, average="binary", pos_label="yes", zero_division=0)[2]

    low, high = bootstrap_ci(recs, f1, "clip", n_resamples=100)
    assert low <= f1(recs) <= high


def test_single_cluster_degenerate():
    recs = [{"clip": "only", "v": float(i)} for i in range(5)]
    assert bootstrap_ci(recs, mean_v, "clip") == (2.0, 2.0)
    assert bootstrap_ci(recs, mean_statistic(lambda r: r["v"]), "clip") == (2.0, 2.0)


def test_empty_is_nan():
    low, high = bootstrap_ci([], mean_v, "clip")
    assert math.isnan(low) and math.isnan(high)
    assert bootstrap_distribution([], mean_v, "clip").size == 0


def test_bad_arguments():
    recs = make_records(3, 2)
    with pytest.raises(ValueError):
        bootstrap_ci(recs, mean_v, "clip", n_resamples=0)
    with pytest.raises(ValueError):
        bootstrap_ci(recs, mean_v, "clip", confidence=1.5)


def test_cluster_key_callable_and_attribute_records():
    class R:
        def __init__(self, clip, v):
            self.clip, self.v = clip, v

    recs = [R(c, float(c % 3)) for c in range(30)]
    a = bootstrap_ci(recs, mean_statistic(lambda r: r.v), "clip")
    b = bootstrap_ci(recs, mean_statistic(lambda r: r.v), lambda r: r.clip)
    assert a == b


def test_bootstrap_speed():
    recs = make_records(300, 10)  # 3000 records
    stats = [
        mean_statistic(lambda r: r["v"]),
        macro_f1_statistic("gold", "pred"),
        binary_statistic("f1", "itp_gold", "itp_pred"),
        ranking_statistic("mrr", "gold", "ranking"),
    ]
    t0 = time.perf_counter()
    for s in stats:
        bootstrap_ci(recs, s, "clip", n_resamples=1000)
    assert time.perf_counter() - t0 < 2.0


def test_plain_mean_function_speed():
    recs = make_records(300, 10)
    t0 = time.perf_counter()
    bootstrap_ci(recs, mean_v, "clip", n_resamples=1000)
    assert time.perf_counter() - t0 < 5.0


# ------------------------------------------------------------------------------------------------
# Paired tests
# ------------------------------------------------------------------------------------------------


def improved(records, flip=1.0, seed=0):
    """A better run: wrong answers fixed with probability ``flip``, shuffled order."""
    rng = random.Random(seed)
    out = []
    for r in records:
        r2 = dict(r)
        if r["v"] < 1 and rng.random() < flip:
            r2["v"] = 1.0
            r2["pred"] = r["gold"]
        out.append(r2)
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("test", [paired_permutation_test, paired_bootstrap_test])
def test_paired_clearly_better_gives_small_p(test):
    base = make_records(40, 10)
    better = improved(base, flip=0.5)
    stat = mean_statistic(lambda r: r["v"])
    assert test(better, base, stat, "clip", n_resamples=2000) < 0.01
    assert test(base, better, stat, "clip", n_resamples=2000) < 0.01  # two-sided


@pytest.mark.parametrize("test", [paired_permutation_test, paired_bootstrap_test])
def test_paired_identical_runs_give_p_one(test):
    base = make_records(40, 10)
    for stat in (mean_statistic(lambda r: r["v"]), macro_f1_statistic("gold", "pred"), mean_v):
        assert test(base, list(reversed(base)), stat, "clip", n_resamples=500) == 1.0


@pytest.mark.parametrize("test", [paired_permutation_test, paired_bootstrap_test])
def test_paired_noise_gives_large_p(test):
    base = make_records(40, 10, seed=3)
    rng = random.Random(9)
    # same accuracy in expectation: swap right/wrong on a few random instances both ways
    other = [dict(r, v=(1.0 - r["v"]) if rng.random() < 0.05 else r["v"]) for r in base]
    stat = mean_statistic(lambda r: r["v"])
    assert test(other, base, stat, "clip", n_resamples=2000) > 0.05


@pytest.mark.parametrize("test", [paired_permutation_test, paired_bootstrap_test])
def test_paired_fast_equals_slow(test):
    base = make_records(20, 5, seed=4)
    better = improved(base, flip=0.2, seed=1)
    fast = test(better, base, mean_statistic(lambda r: r["v"]), "clip", n_resamples=300, seed=11)
    slow = test(better, base, mean_v, "clip", n_resamples=300, seed=11)
    assert fast == pytest.approx(slow)


def test_permutation_exact_small():
    # 3 clusters, a better on every one: exact enumeration of 2**3 patterns
    a = [{"instance_id": i, "clip": i, "v": 1.0} for i in range(3)]
    b = [{"instance_id": i, "clip": i, "v": 0.0} for i in range(3)]
    stat = mean_statistic(lambda r: r["v"])
    # only "no swap" and "swap all" reach |delta| = 1: p = 2/8
    assert paired_permutation_test(a, b, stat, "clip", n_resamples=1000) == pytest.approx(2 / 8)
    assert paired_permutation_test(a, b, mean_v, "clip", n_resamples=1000) == pytest.approx(2 / 8)


def test_permutation_one_cluster_p_one():
    a = [{"instance_id": i, "clip": "x", "v": 1.0} for i in range(5)]
    b = [{"instance_id": i, "clip": "x", "v": 0.0} for i in range(5)]
    assert paired_permutation_test(a, b, mean_v, "clip") == 1.0
    assert paired_bootstrap_test(a, b, mean_v, "clip", n_resamples=100) == 1.0


def test_paired_empty_is_nan():
    assert math.isnan(paired_permutation_test([], [], mean_v, "clip"))
    assert math.isnan(paired_bootstrap_test([], [], mean_v, "clip"))


def test_paired_deterministic():
    base = make_records(30, 5)
    better = improved(base, flip=0.1)
    stat = mean_statistic(lambda r: r["v"])
    p1 = paired_permutation_test(better, base, stat, "clip", n_resamples=500, seed=1)
    assert p1 == paired_permutation_test(better, base, stat, "clip", n_resamples=500, seed=1)


def test_paired_macro_f1_better_run():
    base = make_records(50, 10)
    better = improved(base, flip=0.6)
    stat = macro_f1_statistic("gold", "pred")
    assert paired_permutation_test(better, base, stat, "clip", n_resamples=2000) < 0.01


def test_paired_delta_ci():
    base = make_records(40, 10)
    better = improved(base, flip=0.5)
    stat = mean_statistic(lambda r: r["v"])
    delta, low, high = paired_delta_ci(better, base, stat, "clip")
    assert delta == pytest.approx(mean_v(better) - mean_v(base))
    assert 0 < low < delta < high
    d0, l0, h0 = paired_delta_ci(base, base, stat, "clip")
    assert d0 == l0 == h0 == 0.0


def test_paired_speed():
    base = make_records(300, 10)
    better = improved(base, flip=0.1)
    t0 = time.perf_counter()
    paired_permutation_test(better, base, mean_statistic(lambda r: r["v"]), "clip", n_resamples=10_000)
    paired_bootstrap_test(better, base, macro_f1_statistic("gold", "pred"), "clip", n_resamples=10_000)
    assert time.perf_counter() - t0 < 5.0


def test_align_pairs_errors():
    a = [{"instance_id": 1, "clip": "x"}, {"instance_id": 2, "clip": "x"}]
    with pytest.raises(ValueError, match="different instances"):
        align_pairs(a, a[:1])
    with pytest.raises(ValueError, match="duplicate"):
        align_pairs(a + a[:1], a)
    with pytest.raises(ValueError, match="duplicate"):
        align_pairs(a, a + a[:1])
    with pytest.raises(ValueError, match="cluster"):
        align_pairs(a, [{"instance_id": 1, "clip": "y"}, {"instance_id": 2, "clip": "x"}], cluster_key="clip")
    ra, rb = align_pairs(a, list(reversed(a)))
    assert [r["instance_id"] for r in rb] == [1, 2]


# ------------------------------------------------------------------------------------------------
# Holm
# ------------------------------------------------------------------------------------------------


def test_holm_hand_values():
    # sorted: 0.01 (x4), 0.02 (x3), 0.03 (x2), 0.04 (x1) -> 0.04, 0.06, 0.06, 0.06
    out = holm({"a": 0.03, "b": 0.01, "c": 0.04, "d": 0.02})
    assert list(out) == ["a", "b", "c", "d"]
    assert out == {"a": pytest.approx(0.06), "b": pytest.approx(0.04), "c": pytest.approx(0.06), "d": pytest.approx(0.06)}


def test_holm_monotone_step_down_and_cap():
    out = holm({"a": 0.001, "b": 0.2, "c": 0.01, "d": 0.9})
    # 0.001*4=0.004; 0.01*3=0.03; 0.2*2=0.4; 0.9*1=0.9
    assert out == {"a": pytest.approx(0.004), "b": pytest.approx(0.4), "c": pytest.approx(0.03), "d": pytest.approx(0.9)}
    assert holm({"a": 0.5, "b": 0.6}) == {"a": 1.0, "b": 1.0}


def test_holm_running_max():
    # 0.01*3 = 0.03; 0.011*2 = 0.022 -> raised to 0.03 by the running max; 0.5
    out = holm({"x": 0.01, "y": 0.011, "z": 0.5})
    assert out == {"x": pytest.approx(0.03), "y": pytest.approx(0.03), "z": pytest.approx(0.5)}


def test_holm_ties_single_and_empty():
    assert holm({"a": 0.02, "b": 0.02}) == {"a": pytest.approx(0.04), "b": pytest.approx(0.04)}
    assert holm({"only": 0.03}) == {"only": 0.03}
    assert holm({}) == {}


@pytest.mark.parametrize("bad", [float("nan"), -0.1, 1.1, None, "0.1"])
def test_holm_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        holm({"a": 0.1, "b": bad})


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=3), st.floats(0, 1), max_size=12))
def test_holm_properties(pvalues):
    out = holm(pvalues)
    assert out.keys() == pvalues.keys()
    m = len(pvalues)
    for k, p in pvalues.items():
        assert p - 1e-12 <= out[k] <= min(1.0, m * p) + 1e-12
    ordered = sorted(pvalues, key=pvalues.get)
    adj = [out[k] for k in ordered]
    assert all(x <= y + 1e-12 for x, y in zip(adj, adj[1:]))


def test_custom_additive_statistic():
    # sum of squares / count, as a user-defined additive statistic
    stat = AdditiveStatistic(
        components=lambda rs: np.array([[r["v"] ** 2, 1.0] for r in rs]),
        combine=lambda s: s[..., 0] / s[..., 1],
        name="mean_square",
    )
    recs = make_records(10, 3, value_noise=1.0)
    assert stat(recs) == pytest.approx(sum(r["v"] ** 2 for r in recs) / len(recs))
    low, high = bootstrap_ci(recs, stat, "clip", n_resamples=200)
    assert low <= high


def test_balanced_accuracy_statistic_against_sklearn():
    recs = make_records(10, 10, seed=5)
    eff = [r["itp_pred"] or ("no" if r["itp_gold"] == "yes" else "yes") for r in recs]
    expected = balanced_accuracy_score([r["itp_gold"] for r in recs], eff)
    assert binary_statistic("balanced_accuracy", "itp_gold", "itp_pred")(recs) == pytest.approx(expected)


def test_stratified_bootstrap_keeps_each_stratum_size():
    """Couple clips all right, family clips all wrong, same sizes: a resample within scenarios always
    holds 3 couple and 3 family clips, so the pooled mean is exactly 1/2 in every resample; an
    unstratified resample mixes the two and varies."""
    from rescue_bench.metrics import bootstrap_ci, bootstrap_distribution, mean_statistic

    records = [{"clip": f"{s}{c}", "scenario": s, "v": float(s == "couple")} for s in ("couple", "family") for c in range(3) for _ in range(4)]
    stat = mean_statistic(lambda r: r["v"])
    stratified = bootstrap_distribution(records, stat, "clip", 300, seed=1, strata="scenario")
    assert np.allclose(stratified, 0.5)
    assert bootstrap_ci(records, stat, "clip", 300, 0.95, seed=1, strata="scenario") == pytest.approx((0.5, 0.5))
    assert bootstrap_distribution(records, stat, "clip", 300, seed=1).std() > 0.05
    # the slow path (any statistic) draws the same resamples
    slow = bootstrap_distribution(records, lambda rs: sum(r["v"] for r in rs) / len(rs), "clip", 50, seed=1, strata="scenario")
    assert np.allclose(slow, 0.5)


def test_a_cluster_in_two_strata_is_refused():
    from rescue_bench.metrics import bootstrap_distribution, mean_statistic

    records = [{"clip": "a", "scenario": "couple", "v": 1.0}, {"clip": "a", "scenario": "family", "v": 0.0}, {"clip": "b", "scenario": "couple", "v": 1.0}]
    with pytest.raises(ValueError, match="more than one stratum"):
        bootstrap_distribution(records, mean_statistic(lambda r: r["v"]), "clip", 10, strata="scenario")
