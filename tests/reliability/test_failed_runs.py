"""A run whose calls never reached a model is a failed run, not a table of wrong answers.

Loopback only: a server that rejects the API key (401), a closed port, a host that does not
resolve, a cache folder that is a file, no API key at all. Each must exit non-zero with one line
naming the cause and how many instances got no answer, ``run.json`` must say ``failed`` with the
counts, and the same command must finish the run once the cause is gone. A model's unusable answer
(text that is no answer) stays a wrong answer of a successful run.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.testing import FakeOpenAI
from tests.factories import read_records
from tests.reliability.helpers import GARBAGE, Responder

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()
LIMIT = 2


def _args(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "eval", "--data", str(data), "--model", "openai/fake-model", "--tasks", "itp,rpp", "--limit", str(LIMIT),
        "--out", str(out), "--display", "none", "--no-bertscore", "--max-retries", "1", "--timeout", "5", *extra,
    ]


@pytest.fixture()
def env(tmp_path: Path, monkeypatch) -> dict[str, str]:
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("INSPECT_CACHE_DIR", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    return {}


@pytest.fixture()
def demo_data() -> Path:
    from rescue_bench.data.load import demo_path

    return demo_path()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens there


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def _assert_failed(result, out: Path, instances: int, cause: str) -> dict:
    assert result.exit_code not in (0, None), result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in _error_lines(result.output) if ln.startswith("error:")]
    assert len(lines) == 1, result.output
    assert cause.lower() in lines[0].lower(), lines[0]
    assert f"{instances} of {instances} instances" in lines[0], lines[0]
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["status"] == "failed", run["status"]
    assert run["counts"]["instances"] == instances
    assert run["counts"]["without_answer"] == instances
    assert run["counts"]["answered"] == 0
    assert cause.lower() in run["failure"].lower()
    # no summary that could be read as the model's scores
    assert not (out / "summary.json").exists()
    return run


def _resume_ok(data: Path, out: Path, instances: int, extra: tuple[str, ...] = ()) -> None:
    with FakeOpenAI(Responder()) as good:
        again = runner.invoke(app, _args(data, out, *extra), env={"OPENAI_BASE_URL": good.base_url})
    assert again.exit_code == 0, again.output
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["status"] == "success"
    assert run["counts"] == {
        "instances": instances, "answered": instances, "usable": instances, "invalid": {c: 0 for c in run["counts"]["invalid"]},
        "overflow": 0, "without_answer": 0, "judge_failures": 0,
    }
    records = read_records(out)
    assert len(records) == instances and all(r["valid"] for r in records)


def test_rejected_api_key_fails_the_run_and_the_same_command_resumes(tmp_path: Path, env, demo_data: Path) -> None:
    out = tmp_path / "run"
    instances = 2 * LIMIT
    with FakeOpenAI(Responder(), status=401) as server:
        result = runner.invoke(app, _args(demo_data, out), env={"OPENAI_BASE_URL": server.base_url})
    _assert_failed(result, out, instances, "authentication")
    _resume_ok(demo_data, out, instances)


def test_closed_port_fails_the_run(tmp_path: Path, env, demo_data: Path) -> None:
    out = tmp_path / "run"
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = runner.invoke(app, _args(demo_data, out), env={"OPENAI_BASE_URL": url})
    _assert_failed(result, out, 2 * LIMIT, "connection")
    _resume_ok(demo_data, out, 2 * LIMIT)


def test_unresolvable_host_fails_the_run(tmp_path: Path, env, demo_data: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, _args(demo_data, out), env={"OPENAI_BASE_URL": "http://no-such-host.invalid/v1"})
    _assert_failed(result, out, 2 * LIMIT, "connection")


def test_cache_dir_that_is_a_file_is_one_line_before_any_call(tmp_path: Path, env, monkeypatch, demo_data: Path) -> None:
    blocker = tmp_path / "cache-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(blocker))
    with FakeOpenAI(Responder(), record_bodies=True) as server:
        result = runner.invoke(app, _args(demo_data, tmp_path / "run"), env={"OPENAI_BASE_URL": server.base_url})
    assert result.exit_code == 2, result.output
    lines = _error_lines(result.output)
    assert len(lines) == 1 and lines[0].startswith("error:") and "RESCUE_CACHE_DIR" in lines[0], result.output
    assert str(blocker) in lines[0]
    assert server.stats.requests == 0


def test_missing_api_key_is_one_plain_line(tmp_path: Path, env, monkeypatch, demo_data: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI(Responder()) as server:
        result = runner.invoke(app, _args(demo_data, tmp_path / "run"), env={"OPENAI_BASE_URL": server.base_url})
    assert result.exit_code == 2, result.output
    lines = _error_lines(result.output)
    assert len(lines) == 1, result.output
    line = lines[0]
    assert line.startswith("error:") and "OPENAI_API_KEY" in line, line
    assert "unexpected" not in line and "[" not in line and "Traceback" not in result.output


def test_unusable_answers_stay_wrong_answers_of_a_successful_run(tmp_path: Path, env, demo_data: Path) -> None:
    out = tmp_path / "run"
    with FakeOpenAI(lambda messages: (200, GARBAGE)) as server:
        result = runner.invoke(app, _args(demo_data, out), env={"OPENAI_BASE_URL": server.base_url})
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["status"] == "success"
    assert run["counts"]["without_answer"] == 0 and run["counts"]["answered"] == 2 * LIMIT
    records = read_records(out)
    assert records and all(r["valid"] is False and r["raw"] == GARBAGE for r in records)
    assert (out / "summary.json").exists()


def test_failed_judge_is_a_judge_failure_not_an_invalid_answer(tmp_path: Path, env, demo_data: Path) -> None:
    """The model answered; the judge's endpoint rejected every call: the answers stay valid answers,
    each record says its judge failed, and the run is failed (resumable) rather than scored 1."""
    out = tmp_path / "run"
    with FakeOpenAI(Responder()) as model, FakeOpenAI(Responder(), status=401) as judge:
        args = [
            "eval", "--data", str(demo_data), "--model", "openai/fake-model", "--tasks", "er", "--limit", str(LIMIT),
            "--judge", "openai-api/judgesvc/fake-judge", "--out", str(out), "--display", "none", "--no-bertscore",
            "--max-retries", "1", "--timeout", "5",
        ]
        result = runner.invoke(
            app, args, env={"OPENAI_BASE_URL": model.base_url, "JUDGESVC_BASE_URL": judge.base_url, "JUDGESVC_API_KEY": "k"}
        )
    assert result.exit_code not in (0, None), result.output
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["status"] == "failed"
    assert run["counts"]["judge_failures"] == LIMIT and run["counts"]["without_answer"] == 0
    records = read_records(out)
    assert len(records) == LIMIT
    for r in records:
        assert r["valid"] is True and r["raw"] is not None
        assert r["judge_failed"] and r["judge_score"] is None
