"""A prompt longer than the model's context window is its own outcome, never the model's answer.

The loopback server refuses an overlong prompt exactly as each kind of server does (OpenAI's and
llama-cpp-python's 400 ``context_length_exceeded``, which inspect_ai turns into a ``model_length``
output whose text is the server's message; llama.cpp's ``exceed_context_size_error`` and vLLM's 400,
which inspect_ai raises): the record has no ``raw``, its cause is ``context_overflow``, the run counts
it per task and scenario in run.json and summary.json and warns with the count; ``--on-overflow trim``
leaves out the fewest oldest rows that make each prompt fit, ``fail`` fails the run.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.data.load import load_clips
from rescue_bench.prompts import render
from rescue_bench.tasks import BuildOptions, Instance, build_instances
from rescue_bench.testing import OVERFLOW_STYLES, ContextWindow, FakeOpenAI, ValidAnswers
from tests.factories import read_records

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()
N_CTX = 1200
"""Tokens of the fake window (4 characters each): the demo's RPP prompts with every earlier row run from
about 980 to 1530 of them, so some fit and some do not, and each fits with enough rows left out."""


def _tokens(instance: Instance, window: ContextWindow) -> int:
    prompt = render(instance)
    return window.tokens([{"content": prompt.system}, {"content": prompt.user}])


def _rpp() -> dict[str, Instance]:
    return {i.id: i for i in build_instances(load_clips(None), "rpp", BuildOptions.for_run("dialogue", -1))}


def _eval(server: FakeOpenAI, out: Path, *extra: str):
    return runner.invoke(
        app,
        ["eval", "--model", "openai/small-window", "--tasks", "rpp", "--context", "-1", "--out", str(out),
         "--display", "none", "--no-bertscore", "--max-retries", "2", *extra],
        env={"OPENAI_BASE_URL": server.base_url},
    )


@pytest.mark.parametrize("style", OVERFLOW_STYLES)
def test_an_overlong_prompt_is_counted_as_overflow_not_answered(isolated_env, style):
    window = ContextWindow(ValidAnswers(), N_CTX, style=style)
    instances = _rpp()
    too_long = {i for i, inst in instances.items() if _tokens(inst, window) > N_CTX}
    assert 0 < len(too_long) < len(instances)  # the window refuses some prompts, not all
    with FakeOpenAI(window) as server:
        result = _eval(server, isolated_env / "run")
    assert result.exit_code == 0, result.output
    records = read_records(isolated_env / "run")
    assert len(records) == len(instances)
    over = {r["id"] for r in records if r["cause"] == "context_overflow"}
    assert over == too_long
    for r in records:
        if r["id"] in too_long:
            assert r["raw"] is None and not r["valid"] and r["prediction"] is None  # the server's words are no answer
            assert r["error"].startswith("context overflow: ") and str(N_CTX) in r["error"]
        else:
            assert r["valid"] and r["raw"] and r["cause"] is None
    run = json.loads((isolated_env / "run" / "run.json").read_text())
    assert run["status"] == "success"
    assert run["overflow"]["policy"] == "wrong" and run["overflow"]["overflow"] == len(too_long)
    per = run["overflow"]["per_task"]["rpp"]
    for scenario in ("couple", "family"):
        expected = sum(1 for i in too_long if instances[i].scenario == scenario)
        assert per[scenario]["overflow"] == expected
    summary = json.loads((isolated_env / "run" / "summary.json").read_text())
    assert summary["rpp"]["both"]["invalid_causes"]["context_overflow"] == len(too_long)
    assert summary["rpp"]["both"]["invalid_rate"] == pytest.approx(len(too_long) / len(instances))
    # warned at the end, with the count and what to do
    assert f"warning: {len(too_long)} of {len(instances)} prompts do not fit the model's context window" in result.output
    assert "--on-overflow trim" in result.output
    assert result.output.rstrip().splitlines()[-1].startswith("warning:")


def test_a_model_answer_about_context_length_is_an_answer(isolated_env):
    """Negative control: the words are read from refusals only; a 200 reply that says them is the model's answer."""
    said = "This model's maximum context length is 8 tokens. context_length_exceeded"
    with FakeOpenAI(lambda messages: (200, said)) as server:
        result = _eval(server, isolated_env / "run", "--limit", "3")
    assert result.exit_code == 0, result.output
    records = read_records(isolated_env / "run")
    assert records and all(r["raw"] == said and r["cause"] == "no_json" for r in records)
    assert json.loads((isolated_env / "run" / "run.json").read_text())["overflow"]["overflow"] == 0
    assert "context window" not in result.output


def test_another_bad_request_is_no_overflow(isolated_env):
    """Negative control: a 400 that is not about the window (a bad parameter) is a failed call, not an overflow."""
    refusal = {"error": {"message": "temperature must be at most 2", "type": "invalid_request_error", "param": "temperature", "code": None}}
    with FakeOpenAI(lambda messages: (400, refusal)) as server:
        result = _eval(server, isolated_env / "run", "--limit", "2")
    assert result.exit_code == 2
    run = json.loads((isolated_env / "run" / "run.json").read_text())
    assert run["status"] == "failed" and run["counts"]["without_answer"] == 2
    assert run["overflow"]["overflow"] == 0


@pytest.mark.parametrize("style", ["openai", "llama.cpp"])
def test_trim_leaves_out_the_fewest_oldest_rows_that_fit(isolated_env, style):
    window = ContextWindow(ValidAnswers(), N_CTX, style=style)
    instances = _rpp()
    too_long = {i for i, inst in instances.items() if _tokens(inst, window) > N_CTX}
    with FakeOpenAI(window, record_bodies=True) as server:
        result = _eval(server, isolated_env / "run", "--on-overflow", "trim")
        assert result.exit_code == 0, result.output
        # the same command again: every reply comes from the cache; only refusals that were raised
        # (llama.cpp's, an error is never cached) are asked again
        before, refused = server.stats.requests, window.refused
        again = _eval(server, isolated_env / "run", "--on-overflow", "trim")
        assert again.exit_code == 0, again.output
        assert server.stats.requests - before == window.refused - refused
        assert (window.refused > refused) == (style == "llama.cpp")
    records = read_records(isolated_env / "run")
    assert all(r["valid"] and r["cause"] is None for r in records)  # every prompt fit once trimmed
    trimmed = {r["id"]: r["trimmed_rows"] for r in records if r.get("trimmed_rows")}
    assert set(trimmed) == too_long
    for iid, rows in trimmed.items():
        inst = instances[iid]
        assert _tokens(inst.without_oldest_rows(rows), window) <= N_CTX  # it fits
        assert _tokens(inst.without_oldest_rows(rows - 1), window) > N_CTX  # and one row fewer left out would not
    # the prompt that was answered is the trimmed one
    answered = {b["messages"][-1]["content"] for b in server.stats.bodies if window.tokens(b["messages"]) <= N_CTX}
    for iid, rows in trimmed.items():
        assert render(instances[iid].without_oldest_rows(rows)).user in answered
    run = json.loads((isolated_env / "run" / "run.json").read_text())
    assert run["overflow"] == {**run["overflow"], "policy": "trim", "overflow": 0, "trimmed": len(too_long)}
    summary = json.loads((isolated_env / "run" / "summary.json").read_text())
    assert summary["rpp"]["both"]["trimmed"] == len(too_long)
    assert summary["rpp"]["both"]["invalid_causes"]["context_overflow"] == 0
    assert f"note: {len(too_long)} of {len(instances)} prompts were longer than the model's context window" in result.output
    assert "warning" not in result.output


def test_identical_requests_are_sent_once_in_flight_or_not(isolated_env):
    """The attack: under ``trim`` the RPP prompts of one scenario with every earlier row left out are
    one and the same request; each instance sent it, 8 at the same instant (the response cache keyed
    every instance apart, and merges no request in flight)."""
    window = ContextWindow(ValidAnswers(), N_CTX)
    instances = _rpp()
    too_long = {i for i, inst in instances.items() if _tokens(inst, window) > N_CTX}
    probes = {render(instances[i].without_oldest_rows(10_000)).user for i in too_long}
    assert len(probes) < len(too_long)  # several instances share their shortest prompt
    with FakeOpenAI(window, record_bodies=True) as server:
        result = _eval(server, isolated_env / "run", "--on-overflow", "trim", "--max-connections", "8", "--workers", "1")
        assert result.exit_code == 0, result.output
        bodies = Counter(json.dumps(b, sort_keys=True) for b in server.stats.bodies)
    assert {body: n for body, n in bodies.items() if n > 1} == {}
    assert len(bodies) == len(set(bodies))
    records = read_records(isolated_env / "run")
    assert {r["id"] for r in records if r.get("trimmed_rows")} == too_long  # each instance still has its own record
    assert all(r["valid"] for r in records)


def test_trim_that_cannot_fit_stays_an_overflow(isolated_env):
    """A window too small for the question alone: trimming cannot help, the instance stays an overflow."""
    window = ContextWindow(ValidAnswers(), 400)
    with FakeOpenAI(window) as server:
        result = _eval(server, isolated_env / "run", "--on-overflow", "trim", "--limit", "3")
    assert result.exit_code == 0, result.output
    records = read_records(isolated_env / "run")
    assert records and all(r["cause"] == "context_overflow" and "trimmed_rows" not in r for r in records)
    assert "do not fit even with every earlier row left out" in result.output


def test_fail_fails_the_run_with_one_line(isolated_env):
    window = ContextWindow(ValidAnswers(), N_CTX, style="llama-cpp-python")
    with FakeOpenAI(window) as server:
        result = _eval(server, isolated_env / "run", "--on-overflow", "fail")
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "context overflow:" in lines[0] and "--on-overflow is fail" in lines[0]
    assert "Traceback" not in result.output
    run = json.loads((isolated_env / "run" / "run.json").read_text())
    assert run["status"] == "failed" and run["failure"].startswith("context overflow:")
    assert not (isolated_env / "run" / "summary.json").exists()


def test_on_overflow_must_be_known(tmp_path):
    result = runner.invoke(app, ["eval", "--on-overflow", "truncate", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "--on-overflow" in result.output


def test_trimming_never_drops_the_decision_row_or_the_question():
    clips = load_clips(None)
    for task in ("itp", "rpp", "stp", "ssp", "er", "vp"):
        for inst in build_instances(clips, task, BuildOptions.for_run("dialogue", -1))[:5]:
            most = inst.without_oldest_rows(10_000)
            assert len(most.context) == len(inst.context) - inst.droppable_rows()
            if task == "itp":  # its last row is the row k the question asks about
                assert most.context == inst.context[-1:]
            else:
                assert most.context == []
            assert most.current == inst.current
            full, least = render(inst).user, render(most).user
            assert full.split("Question: ")[1] == least.split("Question: ")[1]
            assert inst.without_oldest_rows(0) is inst


def test_the_printed_table_names_the_causes_it_counts():
    from rescue_bench.cli.eval import causes_text

    assert causes_text({"no_answer": 0, "context_overflow": 3, "no_json": 2}) == "context_overflow 3, no_json 2"
    assert causes_text({"no_json": 0}) == causes_text(None) == "-"
