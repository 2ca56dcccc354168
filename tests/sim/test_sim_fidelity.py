"""`rescue sim fidelity`: a simulator's first step against the real next client turn."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.sim import SimOptions
from rescue_bench.sim.fidelity import fidelity_cases, summarize_fidelity
from rescue_bench.testing import FakeOpenAI
from tests.factories import write_lines
from tests.sim.helpers import LoopAnswers, hand_clip, leak_clip

runner = CliRunner()


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results" / "fidelity.jsonl").read_text().splitlines()]


def test_cases_replay_the_real_move_and_read_the_real_next_client_row():
    cases = fidelity_cases([hand_clip()], SimOptions())
    by_row = {start.row: (answers, real) for start, answers, real in cases}
    # after row 2 the therapist (row 3) tracks the couple; Ann speaks next (row 4)
    answers, real = by_row[2]
    assert json.loads(answers["whom_how"]) == {"target": "Couple", "strategy": "track"}
    assert real["speaker"] == "Ann" and real["pattern"] == "attack_attack"
    # after row 4 the next row is Bob's: the move is silence
    answers, real = by_row[4]
    assert answers == {"when": json.dumps({"answer": "no"})} and real["speaker"] == "Bob"
    assert real["alternation"] == "Bob"  # Bob spoke less recently than Ann
    assert 5 not in by_row  # after row 5 only the therapist speaks: nothing to compare


def test_scripted_fidelity_on_the_demo(tmp_path):
    out = tmp_path / "fid"
    result = runner.invoke(app, ["sim", "fidelity", "--out", str(out), "--display", "none", "--no-bertscore"])
    assert result.exit_code == 0, result.output
    records = _records(out)
    assert records and all(r["valid"] for r in records)
    for r in records:
        assert r["speaker_correct"] == (r["prediction"]["speaker"] == r["gold"]["speaker"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads(json.dumps({"fidelity": summarize_fidelity(records)}))
    both = summary["fidelity"]["both"]
    assert both["speaker_correct"]["value"] == sum(r["speaker_correct"] for r in records) / len(records)
    assert json.loads((out / "run.json").read_text())["kind"] == "sim_fidelity"


def test_model_simulator_fidelity_through_the_server(isolated_env):
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    out = isolated_env / "fid"
    with FakeOpenAI(LoopAnswers()) as server:
        result = runner.invoke(app, ["sim", "fidelity", "--simulator", "openai/fake-sim", "--data", str(data), "--out", str(out),
                                     "--display", "none", "--no-bertscore"], env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 0, result.output
    records = _records(out)
    assert records
    for r in records:  # the loopback simulator always lets the first client (Ann) speak, one point calmer
        assert r["prediction"]["speaker"] == "Ann"
        assert r["speaker_correct"] == (r["gold"]["speaker"] == "Ann")
    run = json.loads((out / "run.json").read_text())
    assert run["calls"]["simulator_total"] >= len(records)
