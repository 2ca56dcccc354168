"""Nothing silently drops out of the benchmark: a gold outside its closed set or range (a misspelled
relation pattern, a strategy the scenario does not have, an intensity off 0-10) makes the instance
builders refuse, naming task, clip, row and field; ``rescue tasks build`` refuses such data with file,
line, clip, row and field, and ``--lenient`` leaves those instances out, counted and named."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.data.models import Clip
from rescue_bench.tasks import build_instances
from tests.factories import FIVE_WORDS, emo, raw_clip, row, strat, therapist, write_lines

runner = CliRunner()


def attacked_clip() -> dict:
    """Three would-be instances whose gold is invalid: RPP row 3, SSP row 6 and ER row 8."""
    rows = [
        row("Ann", "so we"),
        row("Bob", "right"),
        therapist(relation_cycle_state="attack_atack"),
        row("Ann", FIVE_WORDS),
        row("Bob", FIVE_WORDS),
        therapist(relation_cycle_state="attack_attack", support_strategy=[strat("hugging", ["Ann"])]),
        row("Ann", FIVE_WORDS),
        row("Bob", FIVE_WORDS, internal_emotion=[emo("Bob", "uneasy", 42)]),
        therapist(relation_cycle_state="pursue_withdraw", support_strategy=[strat("track", ["Bob"])]),
    ]
    return raw_clip(rows, sample_id="pair/attacked", participants=["Ann", "Bob"])


@pytest.mark.parametrize(
    ("task", "row", "field"),
    [("rpp", 3, "relation_cycle_state"), ("ssp", 6, "support_strategy[0].strategy_type"), ("er", 8, "internal_emotion[0].intensity")],
)
def test_a_gold_outside_its_set_or_range_is_refused_by_the_builders_never_dropped(task, row, field):
    clips = [Clip.model_validate(attacked_clip())]
    with pytest.raises(ValueError) as caught:
        build_instances(clips, task)
    (problem,) = caught.value.problems  # type: ignore[attr-defined]
    assert (problem.task, problem.sample_id, problem.row, problem.field) == (task, "pair/attacked", row, field)
    assert f"clip pair/attacked, row {row}, field {field}" in str(caught.value)


def test_build_checked_returns_the_left_out_apart_and_the_rest_as_the_spec_builds_them():
    from rescue_bench.tasks import build_checked

    clips = [Clip.model_validate(attacked_clip())]
    rpp = build_checked(clips, "rpp")
    assert [i.row for i in rpp.instances] == [6, 9] and [(x.row, x.field) for x in rpp.left_out] == [(3, "relation_cycle_state")]
    assert "'attack_atack' is not a couple relation pattern" in rpp.left_out[0].reason
    assert build_checked(clips, "stp").left_out == []  # STP reads no strategy label: row 6 stays an STP instance


def test_tasks_build_refuses_invalid_gold_naming_file_line_clip_row_and_field(tmp_path):
    data = write_lines(tmp_path / "attacked.jsonl", [raw_clip([row("Ann", "hi"), therapist()], sample_id="pair/ok"), attacked_clip()])
    result = runner.invoke(app, ["tasks", "build", "--data", str(data), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"error: {data}:2, clip pair/attacked, row 3, field relation_cycle_state: 'attack_atack'" in result.stderr
    assert f"error: {data}:2, clip pair/attacked, row 8, field internal_emotion[0].intensity: intensity 42 is outside 0-10" in result.stderr
    assert "--lenient" in result.stderr.splitlines()[-1]
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_tasks_build_lenient_leaves_out_counts_and_names_each_instance(tmp_path):
    data = write_lines(tmp_path / "attacked.jsonl", [attacked_clip()])
    out = tmp_path / "out"
    result = runner.invoke(app, ["tasks", "build", "--data", str(data), "--out", str(out), "--lenient"])
    assert result.exit_code == 0, result.output
    for task, where in (("RPP", "row 3, field relation_cycle_state"), ("SSP", "row 6, field support_strategy[0].strategy_type"),
                        ("ER", "row 8, field internal_emotion[0].intensity")):
        assert f"warning: {task}: 1 instance(s) left out" in result.stderr
        assert f"clip pair/attacked, {where}:" in result.stderr
    listed = [json.loads(line) for line in (out / "left_out.jsonl").read_text().splitlines()]
    assert [(x["task"], x["row"]) for x in listed] == [("rpp", 3), ("ssp", 6), ("er", 8)]
    assert [json.loads(line)["row"] for line in (out / "rpp.jsonl").read_text().splitlines()] == [6, 9]


def test_the_published_release_lines_build_by_default(real_data, tmp_path):
    result = runner.invoke(app, ["tasks", "build", "--data", str(real_data), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "out" / "left_out.jsonl").exists()
