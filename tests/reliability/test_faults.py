"""A hostile server: HTTP errors, garbage and stalls. The run still gives every instance a record.

Loopback only. Nothing here asserts on wall-clock time: stalls are cut short by ``--timeout``
(the per-attempt timeout) and retried, so the run finishes; pytest's own duration report shows
how long it took.

Two kinds of garbage: a ``200 OK`` whose body is not a chat completion (truncated JSON, an HTML
error page, binary), which the client cannot read, so that sample ends with no answer; and a
well-formed completion whose text is no answer at all. Both are counted invalid, never dropped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.testing import FakeOpenAI
from tests.factories import read_records
from tests.reliability.helpers import GARBAGE, Responder, eval_args, expected_counts

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()
LIMIT = 15
"""Instances per task: enough for every fault to happen, small enough to stay quick."""


def test_errors_garbage_and_stalls_every_instance_scored(tmp_path: Path, monkeypatch, real_or_demo: Path) -> None:
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("INSPECT_CACHE_DIR", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    data = real_or_demo
    responder = Responder(garbage=0.05)  # answer text that is not an answer
    server = FakeOpenAI(
        responder,
        error_rate=0.20,  # 429 / 500 / 502 / 503, chosen per attempt
        garbage_rate=0.10,  # 200 OK with an unreadable body, per attempt
        stall_rate=0.04,  # a few prompts hang for 20 s on their first attempt
        stall_seconds=20,
        latency=0.01,
    )
    with server:
        result = runner.invoke(
            app,
            eval_args(data, tmp_path / "run", "--limit", str(LIMIT), "--max-connections", "16", "--timeout", "3"),
            env={"OPENAI_BASE_URL": server.base_url},
        )
    assert "Traceback" not in result.output
    run = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))

    records = read_records(tmp_path / "run")
    instances, _ = expected_counts(data, LIMIT)
    assert len(records) == instances  # every instance has exactly one record
    assert len({r["id"] for r in records}) == instances

    # each fault really happened
    assert server.stats.errors > 0
    assert server.stats.stalled > 0
    assert server.stats.garbled > 0
    assert responder.garbage_prompts

    # HTTP errors and stalls were retried through; an unreadable body ends its sample with no
    # answer (at most one per garbled response), a garbled judge reply is a judge failure. Neither
    # is the model's answer: the run is failed, says so with the counts, and exits with one line
    unanswered = [r for r in records if r["raw"] is None]
    judge_failed = [r for r in records if r.get("judge_failed")]
    assert len(unanswered) + len(judge_failed) <= server.stats.garbled
    assert all(r["valid"] is False and r["error"].startswith("no answer") for r in unanswered)
    assert run["counts"]["without_answer"] == len(unanswered) and run["counts"]["judge_failures"] == len(judge_failed)
    if unanswered or judge_failed:
        assert result.exit_code == 2 and run["status"] == "failed", result.output
        assert [ln for ln in result.output.splitlines() if ln.strip()][-1].startswith("error: run failed")
    else:
        assert result.exit_code == 0 and run["status"] == "success", result.output
    # garbage text is counted invalid, never dropped; every other answer is valid
    garbage = [r for r in records if r["raw"] == GARBAGE]
    assert garbage
    assert all(r["valid"] is False and r["prediction"] is None for r in garbage)
    assert all(r["valid"] for r in records if r["raw"] is not None and r["raw"] != GARBAGE)
    # an invalid ER/VP answer gets the judge's floor without a call; a valid one is judged (or its
    # judge call failed: no score, never the floor); a call that got no answer has nothing to judge
    for r in records:
        if r["task"] in ("er", "vp"):
            assert r["judge_score"] == (None if r.get("judge_failed") or r["raw"] is None else 3 if r["valid"] else 1)


def test_timeout_abandons_a_stalled_attempt_and_retries(tmp_path: Path, monkeypatch, real_or_demo: Path) -> None:
    """``--timeout`` bounds one attempt (model and judge calls alike), then the call is retried.

    Every prompt's first attempt hangs for 20 s. Each call therefore reaches the server exactly
    twice: the abandoned attempt and its retry (were ``--timeout`` a bound on the whole call with its
    retries, the first attempt would be waited out and answered, one request per call).
    """
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("INSPECT_CACHE_DIR", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    data = real_or_demo
    with FakeOpenAI(Responder(), stall_rate=1.0, stall_seconds=20) as server:
        result = runner.invoke(
            app,
            eval_args(data, tmp_path / "run", "--tasks", "itp,er", "--limit", "2", "--timeout", "1"),
            env={"OPENAI_BASE_URL": server.base_url},
        )
        assert result.exit_code == 0, result.output
        records = read_records(tmp_path / "run")
        assert len(records) == 4 and all(r["valid"] for r in records)
        calls = 4 + 2  # four answers and two judge calls (the ER answers are valid)
        assert server.stats.stalled == calls
        assert server.stats.requests == 2 * calls
