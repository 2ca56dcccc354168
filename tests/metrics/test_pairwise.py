"""Bradley-Terry strengths from pairwise comparisons: they recover known strengths, stay finite when
one item wins everything, treat a tie as half a win, and find nothing in coin tosses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rescue_bench.metrics import Comparison, bradley_terry, bradley_terry_resamples


def _simulate(strengths: dict[str, float], n: int, seed: int = 0) -> list[Comparison]:
    rng = np.random.default_rng(seed)
    items = list(strengths)
    out = []
    for k in range(n):
        i, j = rng.choice(len(items), size=2, replace=False)
        a, b = items[i], items[j]
        p = 1 / (1 + math.exp(-(strengths[a] - strengths[b])))
        out.append(Comparison(a, b, float(rng.random() < p), cluster=f"clip{k % 40}", stratum="couple" if k % 40 < 25 else "family"))
    return out


def test_known_strengths_are_recovered_from_many_comparisons() -> None:
    truth = {"a": 1.0, "b": 0.0, "c": -1.0}
    fitted = bradley_terry(_simulate(truth, 6000))
    assert sum(fitted.values()) == pytest.approx(0.0, abs=1e-9)  # centred
    for item, value in truth.items():
        assert fitted[item] == pytest.approx(value, abs=0.12), fitted


def test_two_items_give_the_log_odds_shrunk_by_the_prior() -> None:
    # 80 wins of a over b in 100: the likelihood alone puts the difference at log(4) = 1.386; the prior pulls it in a little
    comparisons = [Comparison("a", "b", 1.0)] * 80 + [Comparison("a", "b", 0.0)] * 20
    fitted = bradley_terry(comparisons)
    assert 1.3 < fitted["a"] - fitted["b"] < math.log(4)
    # the same judgements written the other way round give the same strengths
    flipped = bradley_terry([Comparison(c.second, c.first, 1 - c.outcome) for c in comparisons])
    assert flipped == pytest.approx(fitted)


def test_an_item_that_wins_everything_stays_finite_and_a_tie_is_half_a_win() -> None:
    sweep = bradley_terry([Comparison("a", "b", 1.0)] * 10)
    assert math.isfinite(sweep["a"]) and sweep["a"] > 0.5
    ties = bradley_terry([Comparison("a", "b", 0.5)] * 10)
    assert ties["a"] == pytest.approx(0.0, abs=1e-6) and ties["b"] == pytest.approx(0.0, abs=1e-6)
    split = bradley_terry([Comparison("a", "b", 1.0)] * 5 + [Comparison("a", "b", 0.0)] * 5)
    assert split == pytest.approx(ties, abs=1e-6)
    with pytest.raises(ValueError):
        bradley_terry([Comparison("a", "a", 1.0)])
    assert bradley_terry([]) == {}


def test_coin_tosses_give_no_strength_and_resampled_intervals_cover_zero() -> None:
    rng = np.random.default_rng(1)
    comparisons = [Comparison(a, b, float(rng.random() < 0.5), f"clip{k % 30}", "couple") for k, (a, b) in
                   enumerate([("a", "b"), ("b", "c"), ("a", "c")] * 100)]
    fitted = bradley_terry(comparisons)
    assert max(abs(v) for v in fitted.values()) < 0.25
    items, resampled = bradley_terry_resamples(comparisons, n_resamples=300, seed=0)
    assert items == ["a", "b", "c"] and resampled.shape == (300, 3)
    low, high = np.percentile(resampled, [2.5, 97.5], axis=0)
    assert (low < 0).all() and (high > 0).all()
    # one cluster cannot be resampled: no resamples rather than a zero-width interval
    one = [Comparison(c.first, c.second, c.outcome, "only") for c in comparisons]
    assert bradley_terry_resamples(one, n_resamples=50)[1].shape == (0, 3)
