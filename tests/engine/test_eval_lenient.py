"""``rescue eval`` never drops an instance without naming it: data whose gold is outside its closed
set or range is refused (exit 2, file, line, clip, row and field, and the next step); ``--lenient``
leaves those instances out and counts and names each one per task in the console, ``run.json`` and
``summary.json``; the published release's lines still evaluate by default."""

from __future__ import annotations

import json

from tests.factories import write_lines
from tests.tasks.test_tasks_left_out import attacked_clip


def test_eval_refuses_a_misspelled_gold_label_instead_of_shrinking_the_benchmark(eval_cli, isolated_env, tmp_path):
    data = write_lines(tmp_path / "attacked.jsonl", [attacked_clip()])
    out = tmp_path / "run"
    result = eval_cli("--data", str(data), "--tasks", "rpp", "--out", str(out))
    assert result.exit_code == 2, result.output
    assert f"error: {data}:1, clip pair/attacked, row 3, field relation_cycle_state: 'attack_atack' is not a couple relation pattern" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("hint: fix the data") and "--lenient" in result.stderr.splitlines()[-1]
    assert not out.exists()


def test_eval_lenient_counts_and_names_every_left_out_instance(eval_cli, isolated_env, tmp_path):
    data = write_lines(tmp_path / "attacked.jsonl", [attacked_clip()])
    out = tmp_path / "run"
    result = eval_cli("--data", str(data), "--tasks", "rpp,ssp,er", "--out", str(out), "--lenient", "--no-bertscore")
    assert result.exit_code == 0, result.output
    assert "warning: RPP: 1 instance(s) left out" in result.stderr and "clip pair/attacked, row 3, field relation_cycle_state" in result.stderr
    info = json.loads((out / "run.json").read_text())
    assert {task: [(x["sample_id"], x["row"], x["field"]) for x in items] for task, items in info["left_out"].items()} == {
        "rpp": [("pair/attacked", 3, "relation_cycle_state")],
        "ssp": [("pair/attacked", 6, "support_strategy[0].strategy_type")],
        "er": [("pair/attacked", 8, "internal_emotion[0].intensity")],
    }
    assert info["settings"]["lenient"] is True
    summary = json.loads((out / "summary.json").read_text())
    rpp = summary["rpp"]
    assert rpp["couple"]["n"] == 2 and [x["row"] for x in rpp["couple"]["left_out"]] == [3] and rpp["family"]["left_out"] == []
    assert [x["row"] for x in rpp["both"]["left_out"]] == [3]


def test_the_published_release_lines_evaluate_by_default(eval_cli, isolated_env, real_data, tmp_path):
    out = tmp_path / "run"
    result = eval_cli("--data", str(real_data), "--tasks", "rpp,ssp,er", "--out", str(out), "--no-bertscore")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert not any("left_out" in entry for per in summary.values() for entry in per.values())
    assert "left_out" not in json.loads((out / "run.json").read_text())
