"""The task table: it lists every task in the label sets' order, and each entry gives the metric
values worked out by hand on a small record set (through scoring's own record builders)."""

from __future__ import annotations

import json

import pytest

from rescue_bench.labels import JUDGED_TASKS, POOLED, RANKED_TASKS, TASKS, in_scenario
from rescue_bench.scoring import HEADLINE, base_record, bertscore_pairs, summarize, task_metrics, with_bertscore_floor, with_judge
from rescue_bench.task_table import TASK_TABLE, live_value, rule


def test_the_table_lists_every_task_and_agrees_with_the_label_sets():
    assert tuple(TASK_TABLE) == TASKS
    assert [t for t, r in TASK_TABLE.items() if r.judged] == list(JUDGED_TASKS)
    assert [t for t, r in TASK_TABLE.items() if r.ranked] == list(RANKED_TASKS)
    assert [t for t, r in TASK_TABLE.items() if r.binary] == ["itp"]
    assert HEADLINE == {t: r.headline for t, r in TASK_TABLE.items()}
    for r in TASK_TABLE.values():
        assert r.headline_metric in r.headline and r.live in r.headline
        assert r.top1 is None or r.top1 in r.headline


def test_the_papers_names_for_headline_and_top1():
    assert {t: r.headline_metric for t, r in TASK_TABLE.items()} == {
        "itp": "f1", "rpp": "accuracy", "stp": "recall_at_1", "ssp": "recall_at_1", "er": "judge", "vp": "judge",
    }
    assert {t: r.top1 for t, r in TASK_TABLE.items() if r.top1} == {"rpp": "accuracy", "stp": "recall_at_1", "ssp": "recall_at_1"}
    assert [r.label for r in TASK_TABLE.values()] == ["ITP", "RPP", "STP", "SSP", "ER", "VP"]
    assert rule("er").kind("bertscore") == "bert" and rule("vp").kind("judge") == "judge" and rule("stp").kind("mrr") == "pct"
    with pytest.raises(ValueError, match="unknown task 'xyz'"):
        rule("xyz")


def _inst(task, k, gold, scenario="couple", candidates=(), participants=()):
    return {"id": f"{task}-{k}", "task": task, "sample_id": f"clip{k % 2}", "scenario": scenario, "row": k + 1,
            "gold": gold, "candidates": list(candidates), "participants": list(participants)}


def test_itp_entry_hand_checked():
    # golds yes yes yes no, answers yes yes no no: TP 2, FP 0, FN 1, TN 1
    golds, answers = ["yes", "yes", "yes", "no"], ["yes", "yes", "no", "no"]
    recs = [base_record(_inst("itp", k, g), json.dumps({"answer": a})) for k, (g, a) in enumerate(zip(golds, answers))]
    m = task_metrics("itp", recs)
    assert m["precision"] == 1.0 and m["recall"] == pytest.approx(2 / 3) and m["f1"] == pytest.approx(0.8)
    assert m["accuracy"] == 0.75 and m["balanced_accuracy"] == pytest.approx(5 / 6)
    assert live_value("itp", recs) == pytest.approx(0.8)


@pytest.mark.parametrize("task", ["stp", "ssp"])
def test_ranking_entries_hand_checked(task):
    cands = ["A", "B", "C", "D"]
    # gold at rank 1, rank 2, rank 3, not ranked, invalid answer
    cases = [("A", ["A", "B", "C"]), ("B", ["A", "B", "C"]), ("C", ["A", "B", "C"]), ("D", ["A", "B", "C"]), ("A", None)]
    recs = [
        base_record(_inst(task, k, g, candidates=cands), "not json at all" if r is None else json.dumps({"answer": r}))
        for k, (g, r) in enumerate(cases)
    ]
    assert [r["valid"] for r in recs] == [True, True, True, True, False]
    m = {k: v for k, v in task_metrics(task, recs).items() if k in HEADLINE[task]}
    assert m == pytest.approx({"recall_at_1": 1 / 5, "recall_at_2": 2 / 5, "recall_at_3": 3 / 5, "mrr": (1 + 1 / 2 + 1 / 3) / 5})
    assert live_value(task, recs) == pytest.approx(1 / 5)


def test_rpp_entry_hand_checked():
    cands = ["A", "B", "C"]
    cases = [("A", ["A", "B", "C"]), ("B", ["A", "B", "C"]), ("C", ["C", "A", "B"]), ("C", ["B", "A", "C"])]
    recs = [base_record(_inst("rpp", k, g, candidates=cands), json.dumps({"answer": r})) for k, (g, r) in enumerate(cases)]
    m = task_metrics("rpp", recs)
    # top-1 A, A, C, B against golds A, B, C, C: 2 of 4 right; MRR (1 + 1/2 + 1 + 1/3) / 4
    assert m["accuracy"] == 0.5 and m["recall_at_3"] == 1.0 and m["mrr"] == pytest.approx((1 + 0.5 + 1 + 1 / 3) / 4)
    # per-class F1 over gold labels A (P 1/2, R 1 -> 2/3), B (P 0 -> 0), C (P 1, R 1/2 -> 2/3)
    assert m["macro_f1"] == pytest.approx((2 / 3 + 0 + 2 / 3) / 3)


def test_er_entry_hand_checked():
    inst = [_inst("er", 0, {"emotion": "hurt", "intensity": 6}), _inst("er", 1, {"emotion": "calm", "intensity": 2}), _inst("er", 2, {"emotion": "x", "intensity": 5})]
    raws = [json.dumps({"emotion": "sad", "intensity": 8}), json.dumps({"emotion": "calm", "intensity": 2}), "{}"]
    recs = [base_record(i, r) for i, r in zip(inst, raws)]
    # before the judge every judge score and BERTScore waits (None); the intensity score needs no model
    assert [r["intensity_score"] for r in recs] == [3.0, 5.0, 1.0] and recs[2]["judge_score"] is None and recs[2]["bertscore"] is None
    assert task_metrics("er", recs)["judge"] is None and live_value("er", recs) is None
    recs = [with_judge(recs[0], 4), with_judge(recs[1], 5), with_judge(recs[2], 5)]  # the invalid one takes the judge's floor
    assert [r["score"] for r in recs] == [3.5, 5.0, 1.0] and recs[2]["judge_score"] == 1
    assert with_bertscore_floor(recs[2])["bertscore"] == 0.0 and with_bertscore_floor(recs[0]) == recs[0]
    recs = [dict(r, bertscore=b) for r, b in zip(recs, [0.5, 1.0, 0.0])]
    m = task_metrics("er", recs)
    assert m == pytest.approx({"judge": 10 / 3, "intensity": 3.0, "score": 9.5 / 3, "bertscore": 0.5})
    assert bertscore_pairs(recs[0]) == ("sad", "hurt") and bertscore_pairs(recs[2]) is None


def test_vp_entry_hand_checked():
    gold = [{"target": "Ann", "viewpoint": "feels unheard"}]
    inst = _inst("vp", 0, gold, participants=["Ann", "Bob"])
    rec = base_record(inst, json.dumps({"viewpoints": [{"target": "Ann", "viewpoint": "not listened to"}]}))
    assert rec["valid"], rec["error"]
    bad = base_record(_inst("vp", 1, gold, participants=["Ann", "Bob"]), None)
    assert bad["judge_score"] is None and bad["bertscore"] is None  # nothing computed until the judge and BERTScore run
    recs = [dict(with_judge(rec, 4), bertscore=0.6), with_bertscore_floor(with_judge(bad, None))]
    assert task_metrics("vp", recs) == pytest.approx({"judge": 2.5, "bertscore": 0.3})
    assert bertscore_pairs(recs[0]) == ("not listened to", "feels unheard")


def test_pooled_spelling_and_filter():
    recs = [{"scenario": "couple", "v": 1}, {"scenario": "family", "v": 2}]
    assert in_scenario(recs, POOLED) == recs and in_scenario(recs, "family") == [recs[1]]
    recs = [base_record(_inst("itp", k, "yes", scenario=s), '{"answer": "yes"}') for k, s in enumerate(["couple", "family", "family"])]
    assert [summarize(recs)["itp"][s]["n"] for s in ("couple", "family", POOLED)] == [1, 2, 3]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"task": "itp", "prediction": "yes", "gold": "yes"}, 1.0),
        ({"task": "itp", "prediction": "no", "gold": "yes"}, 0.0),
        ({"task": "rpp", "prediction": ["B", "A"], "gold": "A"}, 0.0),
        ({"task": "ssp", "prediction": ["A", "B"], "gold": "A"}, 1.0),
        ({"task": "stp", "prediction": [], "gold": "A"}, 0.0),
        ({"task": "er", "score": None, "intensity_score": 4.0}, 4.0),  # the judge's score pending
        ({"task": "er", "score": 3.5, "intensity_score": 4.0}, 3.5),
        ({"task": "vp", "judge_score": None}, 0.0),
        ({"task": "vp", "judge_score": 4}, 4.0),
    ],
)
def test_the_live_sample_value_by_hand(record, expected):
    assert rule(record["task"]).sample_value(record) == expected


def test_only_vp_takes_the_authors_rubric():
    assert [t for t, r in TASK_TABLE.items() if r.authors_rubric] == ["vp"]


def test_the_baselines_read_what_an_answer_is_from_the_task_table(monkeypatch):
    """Per-task rules live in the task table, not in string tests spread over the code: the baselines
    guess an emotion for a task whose answer kind is ``emotion``, whatever its name."""
    import dataclasses

    from rescue_bench.baselines import common
    from rescue_bench.data.load import load_clips
    from rescue_bench.task_table import TASK_TABLE
    from rescue_bench.tasks import build_instances

    assert [r.answer for r in TASK_TABLE.values()] == ["yes_no", "ranking", "ranking", "ranking", "emotion", "viewpoints"]
    er = build_instances(load_clips(), "er")[0]
    assert common.fallback_guess(er) == (common.NEUTRAL_EMOTION, common.NEUTRAL_INTENSITY)
    monkeypatch.setitem(TASK_TABLE, "er", dataclasses.replace(TASK_TABLE["er"], answer="viewpoints"))
    assert common.fallback_guess(er) == [common.NEUTRAL_VIEWPOINT]
