"""Chance levels the task design fixes, by hand."""

from __future__ import annotations

import pytest

from rescue_bench.metrics import chance_levels


def _ranked(task: str, n: int, gold: str = "a") -> dict:
    return {"task": task, "gold": gold, "candidates": [chr(ord("a") + i) for i in range(n)]}


def test_a_couple_stp_recall_at_3_is_100_for_any_ranking():
    # couple STP: two clients and the group label, three candidates
    c = chance_levels("stp", [_ranked("stp", 3)] * 4)
    assert c["recall_at_3"] == pytest.approx(1.0)
    assert c["recall_at_1"] == pytest.approx(1 / 3) and c["recall_at_2"] == pytest.approx(2 / 3)
    assert c["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)


def test_ranking_chance_averages_over_candidate_set_sizes():
    c = chance_levels("ssp", [_ranked("ssp", 4), _ranked("ssp", 6)])
    assert c["recall_at_3"] == pytest.approx((3 / 4 + 3 / 6) / 2)
    assert c["mrr"] == pytest.approx(((1 + 1 / 2 + 1 / 3) / 4 + (1 + 1 / 2 + 1 / 3) / 6) / 2)
    r = chance_levels("rpp", [_ranked("rpp", 5)])
    assert r["accuracy"] == pytest.approx(1 / 5) and r["macro_f1"] is None


def test_itp_chance_and_the_tie_break_of_a_constant_answer():
    records = [{"task": "itp", "gold": g} for g in ("yes", "yes", "no", "no", "no")]  # prevalence 2/5
    c = chance_levels("itp", records)
    p = 2 / 5
    assert c["accuracy"] == 0.5 and c["recall"] == 0.5 and c["balanced_accuracy"] == 0.5
    assert c["precision"] == pytest.approx(p)
    assert c["f1"] == pytest.approx(2 * p / (1 + 2 * p))  # a fair coin: tp = p/2, fp = (1-p)/2, fn = p/2
    assert c["f1_always_yes"] == pytest.approx(2 * p / (1 + p)) and c["f1_always_no"] == 0.0


def test_no_chance_level_for_generation_tasks_or_empty_input():
    assert chance_levels("er", [{"task": "er"}]) == {"judge": None, "intensity": None, "score": None, "bertscore": None}
    assert chance_levels("stp", [])["recall_at_1"] is None
