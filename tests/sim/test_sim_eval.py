"""`rescue sim eval` end to end: offline reference agents, the manipulation check, and a model agent
and a model simulator through the loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.sim import summarize
from rescue_bench.sim.fitted import default_model_path, load_model
from rescue_bench.summary import SimSummary, summary_json
from rescue_bench.testing import FakeOpenAI
from rescue_bench.testing.agent import step_of
from tests.factories import write_lines
from tests.sim.helpers import MARK, LoopAnswers, leak_clip

runner = CliRunner()


def _eval(out: Path, *args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, ["sim", "eval", "--out", str(out), "--display", "none", *args], env=env)


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results" / "sim.jsonl").read_text().splitlines()]


def test_outputs_and_run_json(tmp_path):
    out = tmp_path / "run"
    result = _eval(out, "--model", "baseline/group", "--horizon", "3", "--gamma", "0.8", "--lambda", "2", "--episodes-per-clip", "1")
    assert result.exit_code == 0, result.output
    records = _records(out)
    run = json.loads((out / "run.json").read_text())
    assert run["kind"] == "sim" and run["gamma"] == 0.8 and run["lambda"] == 2.0 and run["horizon"] == 3
    assert run["calls"]["agent_total"] == 0 and run["calls"]["simulator_total"] == 0  # offline
    assert run["simulator"] == "fitted" and run["settings"]["sim_model"] is None  # the default: the bundled fitted model
    assert "simulator: fitted on demo" in result.output  # what the words are read as, beside the run
    assert len(records) == 9  # one per demo clip
    sha = load_model(default_model_path()).sha256()
    for r in records:
        assert len(r["steps"]) == 3 and r["valid"]
        assert r["simulator_model"]["name"] == "fitted" and r["simulator_model"]["sha256"] == sha  # which model played it
        assert all(s["action"]["whom"] == r["group"] and s["action"]["recipients"] == r["clients"] for s in r["steps"])
        assert set(r["steps"][0]["state"]["emotions"]) == set(r["clients"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads(json.dumps(summary_json(SimSummary(sim=summarize(records)))))
    sensitivity = summary["sim"]["both"]["sensitivity"]
    assert sensitivity["variants"][0]["variant"] == "as fitted" and sensitivity["above_floor"]["variants"] == len(sensitivity["variants"])
    assert "sensitivity (both):" in result.output
    assert summary["sim"]["both"]["intervention_rate"]["value"] == 1.0
    assert summary["sim"]["both"]["turn_judge"] == {"value": None, "ci_low": None, "ci_high": None, "n": 0}  # no --judge


def test_bad_agent_and_simulator_are_one_line_errors(tmp_path):
    (tmp_path / "model.json").write_text('{"kind": "something else"}')
    for args in (["--model", "baseline/nobody"], ["--simulator", "baseline/attend"], ["--simulator", "nonsense"],
                 ["--sim-model", str(tmp_path / "missing.json")], ["--sim-model", str(tmp_path / "model.json")],
                 ["--simulator", "scripted", "--sim-model", str(default_model_path())],
                 ["--model", "baseline/oracle", "--simulator", "openai/gpt-4o"]):
        result = _eval(tmp_path / "x", *args, env={"OPENAI_API_KEY": "test-key"})
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
        assert not (tmp_path / "x").exists()  # refused before the folder is claimed


def test_a_run_with_little_to_win_says_so_per_scenario_and_one_with_room_does_not(tmp_path):
    """On the default simulator addressing everyone warmly is the optimum in both scenarios: a
    normalised score there means nothing, and the command says so for each scenario (the pooled
    number alone would hide a scenario with no room). The scripted rules leave room: no warning."""
    none = _eval(tmp_path / "none", "--model", "baseline/group")
    room = _eval(tmp_path / "room", "--model", "baseline/group", "--simulator", "scripted")
    assert none.exit_code == 0 and room.exit_code == 0, none.output + room.output
    rooms = {d: json.loads((tmp_path / d / "summary.json").read_text())["sim"] for d in ("none", "room")}
    assert all(rooms["none"][s]["room"]["value"] < 0.10 for s in ("couple", "family", "both"))
    assert all(rooms["room"][s]["room"]["value"] >= 0.10 for s in ("couple", "family", "both"))
    warning = next(line for line in none.output.splitlines() if "little to win" in line)  # one line, each scenario named
    assert all(f"{s} 0.0%" in warning for s in ("couple", "family", "both")) and "a constant policy is the optimum" in warning
    assert "little to win" not in room.output


def test_the_oracle_cannot_look_ahead_with_a_model_simulator_and_says_what_can(tmp_path):
    result = _eval(tmp_path / "x", "--model", "baseline/oracle", "--simulator", "openai/gpt-4o", env={"OPENAI_API_KEY": "test-key"})
    assert result.exit_code == 2 and "offline simulator" in result.output and "baseline/distressed" in result.output
    assert _eval(tmp_path / "y", "--model", "baseline/distressed", "--simulator", "openai/gpt-4o", "--dry-run",
                 env={"OPENAI_API_KEY": "test-key"}).exit_code == 0


@pytest.mark.slow
def test_model_agent_and_simulator_never_show_the_agent_an_annotation(isolated_env):
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    responder = LoopAnswers(when="yes")
    out = isolated_env / "run"
    args = ["--model", "openai/fake-agent", "--simulator", "openai/fake-sim", "--data", str(data), "--horizon", "3",
            "--max-connections", "3", "--max-retries", "2"]
    with FakeOpenAI(responder) as server:
        result = _eval(out, *args, env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 0, result.output
        assert server.stats.peak_in_flight <= 3
        records = _records(out)
        # resumable: the same command again is answered from the response cache, no request is sent
        before = server.stats.requests
        again = _eval(out, *args, env={"OPENAI_BASE_URL": server.base_url})
        assert again.exit_code == 0, again.output
        assert server.stats.requests == before
        assert _records(out) == records
    agent_prompts = [m for m in responder.requests if not responder.is_simulator(m)]
    sim_prompts = [m for m in responder.requests if responder.is_simulator(m)]
    assert agent_prompts and sim_prompts
    said = {s["action"]["how"] for r in _records(out) for s in r["steps"] if s["action"]["how"]}
    assert said  # the agent declared labels; the simulator hears words and whom, never a label or a rule
    for messages in sim_prompts:
        text = json.dumps(messages)
        assert not any(f"strategy {label}" in text or "with the strategy" in text for label in said)
        assert "fitting move calms" not in text
    assert all(step_of(m) is not None for m in agent_prompts)
    for messages in agent_prompts:  # the prompts as sent: no card, no hidden state, no annotation
        text = json.dumps(messages)
        assert MARK not in text and "Hidden state" not in text
    assert any(MARK in json.dumps(m) for m in sim_prompts)  # the simulator does see the cards (the test can fail)
    for r in records:
        assert len(r["steps"]) == 3
        for s in r["steps"]:
            sim = s["simulator"]
            assert sim["valid"], sim
            assert 1 <= len(sim["raw"]) <= 2
            if len(sim["raw"]) == 2:  # the unusable first reply was asked again
                assert "{" not in sim["raw"][0]
            assert s["client_turns"][0]["speaker"] == r["clients"][0]
        intensities = [s["state"]["emotions"][r["clients"][0]]["intensity"] for s in r["steps"]]
        start = r["initial_state"]["emotions"][r["clients"][0]]["intensity"]
        assert intensities == [max(0, start - i) for i in (1, 2, 3)]  # the simulator's state, as it said
    assert any(len(s["simulator"]["raw"]) == 2 for r in records for s in r["steps"])
    run = json.loads((out / "run.json").read_text())
    assert run["calls"]["simulator_total"] == sum(len(s["simulator"]["raw"]) for r in records for s in r["steps"])
    assert run["calls"]["agent_total"] == len(agent_prompts)
    assert (out / "logs").is_dir() and any((out / "logs").iterdir())


def test_a_simulator_that_never_answers_usably_gives_no_state_and_counts(isolated_env):
    """An unusable simulator step is excluded and counted, never scored as the state it started from,
    and it is asked again with a request that differs from the failed one."""
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    out = isolated_env / "run"
    loop = LoopAnswers(broken_simulator=True)
    with FakeOpenAI(loop) as server:
        args = ["--model", "baseline/silent", "--simulator", "openai/fake-sim", "--data", str(data), "--horizon", "2"]
        result = _eval(out, *args, env={"OPENAI_BASE_URL": server.base_url})
        # no usable answer is a failure, never a success with every episode excluded
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert "the simulator gave no usable answer: 4 of 4 steps" in result.output and "2 of 2 episodes" in result.output
        run = json.loads((out / "run.json").read_text())
        assert run["status"] == "failed" and run["counts"]["unusable_steps"] == 4 and run["counts"]["excluded_episodes"] == 2
        assert not (out / "summary.json").exists()
        # the user's own threshold lets the same run finish, its numbers empty
        result = _eval(out, *args, "--max-failed-share", "1", env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 0, result.output
    for r in _records(out):
        assert not r["valid"] and "simulator" in r["error"]
        for s in r["steps"]:
            assert not s["simulator"]["valid"] and len(s["simulator"]["raw"]) == 2
            assert s["state"] is None and s["excluded"] and s["client_turns"] == []
        m = r["metrics"]
        assert m["invalid_simulator_steps"] == 2 and m["excluded"] and m["excluded_steps"] == 2
        assert m["J"] is None and m["final_max_distress"] is None  # not the initial reward, frozen
        assert m["simulator_calls"] == 4 and m["simulator_failed_calls"] == 0
    sim_requests = [json.dumps(m) for m in loop.requests if loop.is_simulator(m)]
    assert len(sim_requests) == len(set(sim_requests))  # no request repeated byte for byte, silent steps included
    summary = json.loads((out / "summary.json").read_text())["sim"]["both"]
    assert summary["J"]["value"] is None and summary["excluded_rate"]["value"] == 1.0


@pytest.mark.slow
def test_a_simulator_answering_http_500_is_asked_again_differently_and_counted(isolated_env):
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    out = isolated_env / "run"
    loop = LoopAnswers()

    def respond(messages):
        if loop.is_simulator(messages):
            loop.requests.append(messages)
            return 500, "the simulator is down"
        return loop(messages)

    with FakeOpenAI(respond) as server:
        _eval(out, "--model", "baseline/attend", "--simulator", "openai/fake-sim", "--data", str(data), "--horizon", "2",
                       "--max-retries", "0", env={"OPENAI_BASE_URL": server.base_url})
    records = _records(out)
    assert records
    for r in records:
        m = r["metrics"]
        assert m["J"] is None and m["excluded"] and m["simulator_calls"] == 0 and m["simulator_failed_calls"] == 4
        assert all(s["state"] is None and s["simulator"]["errors"][0] for s in r["steps"])
    asked = sum(len(s["simulator"]["raw"]) for r in records for s in r["steps"])
    assert asked == 2 * sum(len(r["steps"]) for r in records)  # each step asked twice
    # the client's own retries resend a request as it was; the episode's re-ask is a different request
    assert len({json.dumps(m) for m in loop.requests}) == asked


def test_the_judge_rates_every_turn_the_agent_took(isolated_env):
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    responder = LoopAnswers()
    out = isolated_env / "run"
    with FakeOpenAI(responder) as server:
        result = _eval(out, "--model", "baseline/attend", "--judge", "openai/fake-judge", "--data", str(data), "--horizon", "2",
                       env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 0, result.output
    judged = [m for m in responder.requests if "careful rater" in str(m[0]["content"])]
    records = _records(out)
    steps = [s for r in records for s in r["steps"]]
    assert steps and all(s["action"]["intervened"] for s in steps)
    assert all(s["judge_strategy"] in (1, 2, 3, 4, 5) for s in steps)
    assert len(judged) >= len(steps)  # one request per turn (and a re-ask where the reply was no score)
    for messages in judged:  # the rubric names the agent's own strategy and target, and shows its turn
        assert "Strategy: " in messages[1]["content"] and "I can see how much this is weighing on you" in messages[1]["content"]
    summary = json.loads((out / "summary.json").read_text())
    both = summary["sim"]["both"]["turn_judge"]
    assert both["value"] == sum(s["judge_strategy"] for s in steps) / len(steps) and both["n"] == len(steps)
    run = json.loads((out / "run.json").read_text())
    assert run["judge"] == "openai/fake-judge" and run["judge_prompt_sha"] and run["calls"]["judge"] == len(steps)
    assert run["calls"]["agent_total"] == 0  # the reference agent answers offline


@pytest.mark.parametrize("when, per_step", [("yes", 4), ("no", 2)])
def test_call_counts_per_episode_are_as_documented(isolated_env, when, per_step):
    """docs/sim.md: a model agent (--state explicit) makes 4 calls a step when it speaks (state, when,
    whom/how, turn), 2 when it stays silent; a model simulator 1 a step, 2 when re-asked."""
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    out = isolated_env / "run"
    responder = LoopAnswers(when=when)
    horizon = 3
    with FakeOpenAI(responder) as server:
        result = _eval(out, "--model", "openai/fake-agent", "--simulator", "openai/fake-sim", "--data", str(data), "--horizon", str(horizon),
                       env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 0, result.output
        sent = server.stats.requests
    records = _records(out)
    calls = json.loads((out / "run.json").read_text())["calls"]
    assert calls["agent_per_episode"] == per_step * horizon
    assert horizon <= calls["simulator_per_episode"] <= 2 * horizon
    assert calls["agent_total"] + calls["simulator_total"] == sent == len(responder.requests)
    assert f"agent {calls['agent_total']} ({per_step * horizon:.1f} per episode)" in result.output
    assert all(s["action"]["intervened"] == (when == "yes") for r in records for s in r["steps"])
