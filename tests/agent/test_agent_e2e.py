"""End to end: `rescue agent eval` against a scripted model on a real OpenAI-compatible HTTP server."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.agent import summarize_chain
from rescue_bench.cli import app
from rescue_bench.testing import FakeOpenAI
from rescue_bench.testing.agent import step_of
from tests.agent.scripted import GARBAGE, ScriptedAgent
from tests.factories import T, emo, raw_clip, row, strat, view, write_lines

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()
LIMIT = 60
"""Decision points of the full run test: the demo's first 56 are couple points, so both scenarios."""


def _run(server: FakeOpenAI, out: Path, *extra: str):
    return runner.invoke(
        app,
        ["agent", "eval", "--model", "openai/fake-agent", "--judge", "openai/fake-judge", "--out", str(out),
         "--display", "none", "--no-bertscore", "--max-retries", "6", "--timeout", "30", *extra],
        env={"OPENAI_BASE_URL": server.base_url},
    )


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results" / "agent.jsonl").read_text().splitlines()]


def test_valid_chains_through_http_server(isolated_env):
    scripted = ScriptedAgent()
    out = isolated_env / "run"
    with FakeOpenAI(scripted, error_rate=0.1) as server:
        result = _run(server, out, "--limit", str(LIMIT), "--max-connections", "16")
        assert result.exit_code == 0, result.output
        assert server.stats.errors > 0  # injected 429/5xx were retried through
        records = _records(out)
        assert len(records) == LIMIT and {r["scenario"] for r in records} == {"couple", "family"}
        unanswered = 0
        for r in records:
            steps = r["steps"]
            for step, result_ in steps.items():
                if result_["raw"] is None:  # a garbled body: the client cannot read it, so no answer
                    assert result_["error"].startswith("no answer") and not result_["valid"]
                    unanswered += 1
                    continue
                assert result_["valid"], (step, result_)
                assert result_["prediction"] == scripted.intent[step][result_["raw"]], (step, result_["raw"])
            if steps["state"]["raw"] is None:
                assert set(steps) == {"state"}  # nothing to continue from
                continue
            if steps["when"]["raw"] is None:
                continue
            said_yes = steps["when"]["prediction"] == "yes"
            assert ("whom_how" in steps) == said_yes
            assert ("turn" in steps) == (said_yes and steps["whom_how"]["raw"] is not None)
            assert ("how_gold" in steps) == (r["gold"]["whom"] is not None and r["gold"]["how"] is not None)
            for item in r["scores"]["emotions"] + r["scores"]["stances"]:
                assert item["judge_score"] in (1, 2, 3, 4, 5)
            if r["scores"].get("turn"):
                assert r["scores"]["turn"]["judge_real"] in (1, 2, 3, 4, 5)
        assert unanswered == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary == json.loads(json.dumps({"agent": summarize_chain(records)}))
        both = summary["agent"]["both"]
        assert both["invalid_rate"] == 0
        assert both["emotion_judge"] is not None and both["turn_judge_strategy"] is not None
        # every judge request whose first reply was invalid was asked exactly once more
        judged = [p for p in scripted.prompts if "careful rater" in p[0]["content"]]
        reasked = [p for p in judged if len(p) > 2]
        assert reasked and all(p[2]["content"].startswith("Score:") for p in reasked)
        # what run.json says the chain asked is what reached the server (first attempts, empty cache)
        run = json.loads((out / "run.json").read_text())
        assert run["kind"] == "agent" and run["judge_prompt_sha"] and run["points"] == LIMIT
        sent = Counter(step_of(p) for p in scripted.prompts if step_of(p))
        answered = Counter(s for r in records for s, v in r["steps"].items() if v["raw"] is not None)
        assert run["calls"]["chain_steps"] == dict(answered)
        assert all(sent[s] >= answered[s] for s in answered)  # retries after faults add requests
        # the single-task ablation ran the six tasks' own prompts on the same rows
        single = {p.stem: [json.loads(x) for x in p.read_text().splitlines()] for p in (out / "single" / "results").glob("*.jsonl")}
        assert set(single) == {"itp", "rpp", "stp", "ssp", "er", "vp"}
        assert {r["id"] for r in single["itp"]} == {r["single_ids"]["itp"] for r in records}
        assert scripted.steps["task"] >= run["calls"]["single_task"] >= 0.9 * sum(len(v) for v in single.values())
        text = "".join(p.read_text(errors="ignore") for p in out.rglob("*.json*"))
        assert "sk-test-not-a-real-key" not in text

        # the same command again sends no request: every step and judge call is cached
        before = server.stats.requests
        again = _run(server, out, "--limit", str(LIMIT), "--max-connections", "16")
        assert again.exit_code == 0, again.output
        assert server.stats.requests == before
        assert _records(out) == records


def test_unreadable_bodies_leave_steps_without_answer(isolated_env):
    """A 200 OK whose body is not a completion cannot be read (no retry): that step has no answer,
    the chain goes on as far as it can, and a garbled judge reply costs only its own part."""
    scripted = ScriptedAgent()
    with FakeOpenAI(scripted, garbage_rate=0.15) as server:
        result = _run(server, isolated_env / "u", "--limit", "25", "--no-single-task")
        assert server.stats.garbled > 0
    records = _records(isolated_env / "u")
    assert len(records) == 25
    lost = [(r, s) for r in records for s, v in r["steps"].items() if v["raw"] is None]
    assert lost and len(lost) <= server.stats.garbled
    # an unreadable body is not the model's answer: the run is failed (one line, run.json's counts)
    run = json.loads((isolated_env / "u" / "run.json").read_text())
    assert result.exit_code == 2 and "run failed" in result.output, result.output
    assert run["status"] == "failed" and len(lost) <= run["counts"]["failed_calls"] <= server.stats.garbled
    for r, step in lost:
        assert r["steps"][step]["error"].startswith("no answer") and not r["valid"]
    answered = [v for r in records for v in r["steps"].values() if v["raw"] is not None]
    assert answered and all(v["valid"] for v in answered)
    assert all(i["judge_score"] in (1, 2, 3, 4, 5) for r in records for i in r["scores"]["emotions"])


def test_a_broken_step(isolated_env):
    scripted = ScriptedAgent(broken={"whom_how"})
    with FakeOpenAI(scripted) as server:
        result = _run(server, isolated_env / "b", "--no-single-task", "--limit", "30")
    assert result.exit_code == 0, result.output
    records = _records(isolated_env / "b")
    spoke = [r for r in records if r["steps"]["when"]["prediction"] == "yes"]
    assert spoke
    for r in spoke:
        assert r["steps"]["whom_how"] == {"raw": GARBAGE, "prediction": None, "valid": False, "error": "no JSON object"}
        assert r["steps"]["turn"]["valid"]  # the agent speaks anyway; its turn is still judged
        assert r["prediction"]["whom"] is None and r["valid"] is False
    s = json.loads((isolated_env / "b" / "summary.json").read_text())["agent"]["both"]
    assert s["invalid_whom_how"] == 1.0 and s["invalid_turn"] == 0.0
    assert s["whom_recall_at_1"] == 0.0 and s["how_recall_at_1"] == 0.0 and s["whom_given_intervened"] == 0.0
    assert s["how_given_gold_target"] is not None and s["when_f1"] is not None
    assert not (isolated_env / "b" / "single").exists()


def test_garbage_everywhere_and_failed_calls(isolated_env):
    scripted = ScriptedAgent(garbage=True)
    with FakeOpenAI(scripted) as server:
        result = _run(server, isolated_env / "g", "--no-single-task", "--limit", "20")
    assert result.exit_code == 0, result.output
    records = _records(isolated_env / "g")
    assert len(records) == 20
    for r in records:
        # an unusable timing answer ends the main chain: nothing after it
        assert set(r["steps"]) <= {"state", "when", "how_gold"} and not r["valid"]
        # the judge's floor (a judge is in the run); no BERTScore, which the run does not compute (--no-bertscore)
        assert all(i["judge_score"] == 1 and i["bertscore"] is None for i in r["scores"]["emotions"] + r["scores"]["stances"])
    s = json.loads((isolated_env / "g" / "summary.json").read_text())["agent"]["both"]
    assert s["invalid_rate"] == 1.0 and s["when_accuracy"] == 0.0 and s["joint"] == 0.0  # invalid is wrong, never dropped
    assert s["emotion_judge"] == 1.0 and s["turn_judge_real"] is None  # no turn was owed
    assert scripted.steps["whom_how"] == 0 and "careful rater" not in json.dumps(scripted.prompts)  # no judge for garbage

    # a step whose calls keep failing has no answer; the record says so
    failing = ScriptedAgent(fail={"when"})
    with FakeOpenAI(failing) as server:
        result = runner.invoke(
            app,
            ["agent", "eval", "--model", "openai/fake-agent", "--out", str(isolated_env / "f"), "--display", "none",
             "--no-bertscore", "--no-single-task", "--limit", "3", "--max-retries", "1", "--timeout", "10"],
            env={"OPENAI_BASE_URL": server.base_url},
        )
    # calls that never got an answer fail the run (resumable), they are not the model's answers
    assert result.exit_code == 2 and "run failed" in result.output, result.output
    assert json.loads((isolated_env / "f" / "run.json").read_text())["counts"]["failed_calls"] == 3
    for r in _records(isolated_env / "f"):
        assert r["steps"]["when"]["raw"] is None and r["steps"]["when"]["error"].startswith("no answer")
        assert r["prediction"]["when"] is None and "whom_how" not in r["steps"]


def test_no_annotation_reaches_the_server(isolated_env):
    """The leak test over HTTP: markers in every annotation of a data file never reach a chain or task
    prompt (only the judge, which compares with the gold by design, sees gold text)."""
    rows = [
        row("Ann", "you never listen", target=["Bob"], utterance_type="MARKUTT", internal_emotion=[emo("Ann", "MARKEMO1", 8)],
            viewpoints_attitudes=[view("Ann", "Bob", "MARKVIEW1")], relation_pattern="attack_attack", relation_pattern_reason="MARKREASON"),
        row("Bob", "i do listen", target=["Ann"], internal_emotion=[emo("Bob", "MARKEMO2", 3)], viewpoints_attitudes=[view("Bob", "Ann", "MARKVIEW2")]),
        row(T, "what happens now", target=["Ann"], support_strategy=[dict(strat("evoke", ["Ann"]), strategy_content="MARKCONTENT")],
            relation_cycle_state="attack_attack"),
        row("Ann", "i feel alone", target=[T], internal_emotion=[emo("Ann", "MARKEMO3", 9)]),
        row("Bob", "so do i", target=["Ann"], internal_emotion=[emo("Bob", "MARKEMO4", 4)]),
        row(T, "say more", target=["Couple"], support_strategy=[strat("track", ["Couple"])], relation_cycle_state="repair_softening"),
    ]
    data = write_lines(isolated_env / "marked.jsonl", [raw_clip(rows, sample_id="hand/a"), raw_clip(rows, sample_id="hand/b")])
    scripted = ScriptedAgent()
    with FakeOpenAI(scripted) as server:
        result = _run(server, isolated_env / "m", "--data", str(data), "--mode", "audiovisual")
    assert result.exit_code == 0, result.output
    chain_and_tasks = [p for p in scripted.prompts if "careful rater" not in p[0]["content"]]
    assert any(step_of(p) == "turn" for p in chain_and_tasks) and scripted.steps["task"] > 0
    for prompt in chain_and_tasks:
        assert "MARK" not in json.dumps(prompt), prompt[-1]["content"][:300]
    judged = [p for p in scripted.prompts if "careful rater" in p[0]["content"]]
    assert any("MARKEMO" in json.dumps(p) for p in judged)  # the gold reached the judge, as it must


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--state", "implicit"], "--state"),
        (["--mode", "smell"], "--mode"),
        (["--context", "-3"], "--context"),
        (["--model", "baseline/oracle"], "baseline/oracle"),
    ],
)
def test_bad_options_are_one_line_exit_2(tmp_path, args, needle):
    result = runner.invoke(app, ["agent", "eval", "--out", str(tmp_path / "o"), *args])
    assert result.exit_code == 2
    assert needle in result.output and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.startswith("error:")]) == 1


def test_bad_data_is_one_line_per_problem(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "x/y", "scenario": "couple", "rows": [{"row_index": "one"}]}\n')
    result = runner.invoke(app, ["agent", "eval", "--data", str(bad), "--out", str(tmp_path / "o"), "--display", "none"])
    assert result.exit_code == 2
    assert "bad.jsonl:1" in result.output and "row_index" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o" / "results").exists()
