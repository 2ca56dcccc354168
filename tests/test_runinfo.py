"""``run.json`` through its one typed model: what a run writes reads back key for key, files of
earlier versions (fewer keys, unknown keys) still read and lose nothing when rewritten, and a key of
the wrong type is one line naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.runinfo import (
    AgentRunInfo,
    EvalRunInfo,
    FidelityRunInfo,
    RunInfoError,
    SimRunInfo,
    parse_run_info,
    read_run_info,
)

runner = CliRunner()

OLD_EVAL = {
    # a rescue eval run.json of an earlier version: no status, identity, request, workers_choice, video
    "settings": {"model": "openai/old", "judge": None, "data": None, "mode": "dialogue"},
    "model": "openai/old",
    "judge": None,
    "clips": 3,
    "bertscore_backbone": None,
    "usage": {"openai/old": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}},
    "versions": {"rescue_bench": "0.1.0"},
    "created": "2025-06-01T00:00:00+00:00",
    "published_by": "a lab's own key",  # unknown to this version
}


def test_an_earlier_run_json_reads_and_rewrites_unchanged(tmp_path: Path):
    (tmp_path / "run.json").write_text(json.dumps(OLD_EVAL), encoding="utf-8")
    info = read_run_info(tmp_path)
    assert isinstance(info, EvalRunInfo)
    assert info.model_name == "openai/old" and info.workers_choice is None and info.status is None
    assert info.settings is not None and info.settings.mode == "dialogue"
    dumped = info.dump()
    assert dumped == OLD_EVAL and list(dumped) == list(OLD_EVAL)  # no key added, none lost, same order


def test_each_kind_is_read_by_its_model():
    assert isinstance(parse_run_info({"kind": "agent", "calls": {"chain_total": 3}}), AgentRunInfo)
    # a run that has not finished yet names its kind in its identity only
    assert isinstance(parse_run_info({"status": "running", "identity": {"kind": "agent"}}), AgentRunInfo)
    sim = parse_run_info({"kind": "sim", "gamma": 0.8, "lambda": 2.0, "horizon": 3, "status": ["success"]})
    assert isinstance(sim, SimRunInfo) and sim.lam == 2.0 and sim.dump()["lambda"] == 2.0
    assert isinstance(parse_run_info({"kind": "sim_fidelity"}), FidelityRunInfo)


def test_a_key_of_the_wrong_type_is_one_line_naming_file_and_key(tmp_path: Path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**OLD_EVAL, "clips": "three"}), encoding="utf-8")
    with pytest.raises(RunInfoError) as caught:
        read_run_info(path)
    assert str(caught.value).startswith(f"{path}: clips:") and "\n" not in str(caught.value)
    path.write_text("[1, 2", encoding="utf-8")
    with pytest.raises(RunInfoError) as caught:
        read_run_info(path)
    assert caught.value.line == 1 and "malformed JSON" in str(caught.value)
    path.write_text('{"clips": NaN}', encoding="utf-8")
    with pytest.raises(RunInfoError):
        read_run_info(path)


def test_rescue_eval_writes_what_the_model_reads_back(tmp_path: Path):
    """A run's run.json, read through the model and dumped again, is the file: every key, value and
    its place (so the writers' keys are the model's, and a rewrite changes nothing)."""
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["eval", "--model", "baseline/majority", "--tasks", "itp,rpp", "--limit", "4", "--out", str(out), "--display", "none"]
    )
    assert result.exit_code == 0, result.output
    on_disk = json.loads((out / "run.json").read_text(encoding="utf-8"))
    info = read_run_info(out)
    assert isinstance(info, EvalRunInfo)
    assert info.dump() == on_disk and list(info.dump()) == list(on_disk)
    assert list(on_disk) == [k for k in EvalRunInfo.ORDER if k in on_disk]  # the writers' order
    assert on_disk["status"] == "success" and on_disk["workers"] == 1 and on_disk["workers_choice"]["reason"]
    assert f"Workers: 1 ({on_disk['workers_choice']['reason']})" in result.output


def test_rescue_sim_eval_writes_what_the_model_reads_back(tmp_path: Path):
    out = tmp_path / "sim"
    result = runner.invoke(app, ["sim", "eval", "--model", "baseline/attend", "--horizon", "2", "--limit", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    on_disk = json.loads((out / "run.json").read_text(encoding="utf-8"))
    info = read_run_info(out)
    assert isinstance(info, SimRunInfo) and info.lam == on_disk["lambda"]
    assert info.dump() == on_disk and list(info.dump()) == list(on_disk)
    assert list(on_disk) == [k for k in SimRunInfo.ORDER if k in on_disk]
    calls = on_disk["calls"]
    assert f"calls: agent {calls['agent_total']} ({calls['agent_per_episode']:.1f} per episode)" in result.output


def test_status_has_one_meaning_and_kind_is_typed():
    """``status`` is the run's (running, success, failed); an earlier closed-loop file's list of log
    statuses is read as ``log_statuses``; an unknown kind or status is a one-line error."""
    from rescue_bench.runinfo import DraftRunInfo

    old_sim = parse_run_info({"kind": "sim", "status": ["success", "error"]})
    assert isinstance(old_sim, SimRunInfo) and old_sim.status is None and old_sim.log_statuses == ["success", "error"]
    assert isinstance(parse_run_info({"kind": "draft", "status": "failed"}), DraftRunInfo)
    for bad in ({"kind": "sim", "status": "done"}, {"kind": "nosuch"}):
        with pytest.raises(RunInfoError) as caught:
            parse_run_info(bad)
        assert "\n" not in str(caught.value)
