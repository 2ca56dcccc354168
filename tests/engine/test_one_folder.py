"""One output folder holds one run: another run is refused there, the same command resumes there.

Offline baselines need no server, so these runs are quick; the log-deduplication test interrupts a
real run against the loopback server.
"""

from __future__ import annotations

import hashlib
import json
import signal
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.data.load import demo_path
from rescue_bench.testing import FakeOpenAI
from tests.reliability.helpers import Responder, child_env, start_eval

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()


def _eval(out: Path, *extra: str):
    return runner.invoke(app, ["eval", "--out", str(out), "--display", "none", "--no-bertscore", *extra])


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def test_another_run_in_the_same_folder_is_refused(isolated_env: Path) -> None:
    out = isolated_env / "run"
    assert _eval(out, "--tasks", "itp").exit_code == 0
    before = sorted(p.name for p in (out / "results").iterdir())
    for other in (("--tasks", "rpp"), ("--tasks", "itp", "--model", "baseline/random"), ("--tasks", "itp", "--limit", "3")):
        result = _eval(out, *other)
        assert result.exit_code == 2, result.output
        lines = _lines(result.output)
        assert len(lines) == 1 and lines[0].startswith("error:") and "--overwrite" in lines[0], result.output
        # the options it names exist on this command (it once suggested --run-dir, a draft option)
        assert "(--out DIR)" in lines[0] and "--run-dir" not in lines[0], lines[0]
    assert sorted(p.name for p in (out / "results").iterdir()) == before == ["itp.jsonl"]


def test_other_data_in_the_same_folder_is_refused(isolated_env: Path) -> None:
    out = isolated_env / "run"
    data = isolated_env / "demo.jsonl"
    data.write_bytes(demo_path().read_bytes())
    assert _eval(out, "--tasks", "itp", "--data", str(data)).exit_code == 0
    lines = data.read_text(encoding="utf-8").splitlines()
    data.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # the same file name, other contents
    result = _eval(out, "--tasks", "itp", "--data", str(data))
    assert result.exit_code == 2 and "data" in result.output, result.output


def test_overwrite_replaces_the_other_run(isolated_env: Path) -> None:
    out = isolated_env / "run"
    assert _eval(out, "--tasks", "itp").exit_code == 0
    (out / "notes.txt").write_text("mine", encoding="utf-8")  # not the run's: left alone
    result = _eval(out, "--tasks", "rpp", "--overwrite")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (out / "results").iterdir()) == ["rpp.jsonl"]
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert json.loads((out / "summary.json").read_text(encoding="utf-8")).keys() == {"rpp"}


def test_unidentified_output_is_refused(isolated_env: Path) -> None:
    out = isolated_env / "run"
    (out / "results").mkdir(parents=True)
    (out / "results" / "itp.jsonl").write_text("", encoding="utf-8")
    result = _eval(out, "--tasks", "itp")
    assert result.exit_code == 2 and "--overwrite" in result.output, result.output


def test_the_same_command_runs_again_in_its_folder(isolated_env: Path) -> None:
    out = isolated_env / "run"
    assert _eval(out, "--tasks", "itp").exit_code == 0
    again = _eval(out, "--tasks", "itp", "--workers", "1", "--max-connections", "3")  # how, not what: the same run
    assert again.exit_code == 0, again.output


def test_run_json_records_the_data_revision_and_bertscore_used(isolated_env: Path) -> None:
    out = isolated_env / "run"
    assert _eval(out, "--tasks", "itp").exit_code == 0
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    demo = demo_path().resolve()
    assert run["data_files"] == [{"path": str(demo), "sha256": hashlib.sha256(demo.read_bytes()).hexdigest()}]
    revision = run["git_revision"]
    assert revision is None or len(revision["commit"]) == 40
    assert run["bertscore"] == {"requested": False, "used": False, "backbone": None}
    assert run["status"] == "success"


def test_interrupted_then_resumed_run_leaves_one_log_per_task(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [
        "eval", "--data", str(demo_path()), "--model", "openai/fake-model", "--tasks", "itp,rpp", "--out", str(out),
        "--display", "none", "--no-bertscore", "--max-connections", "2", "--workers", "1",
    ]
    with FakeOpenAI(Responder(), latency=0.05) as server:
        env = child_env(server.base_url, tmp_path / "cache")
        proc = start_eval(env, args)
        deadline = time.monotonic() + 120
        while server.stats.answered < 5 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        assert proc.returncode == 130
        again = start_eval(env, args)
        _, err = again.communicate(timeout=300)
        assert again.returncode == 0, err.decode()[-2000:]
    logs = sorted((out / "logs").glob("*.eval"))
    tasks = [json.loads(json.dumps(p.name)) for p in logs]
    assert len(logs) == 2, tasks


def test_a_run_stopped_by_bad_data_does_not_hold_its_folder(isolated_env: Path) -> None:
    """Bad data stops a run before any call; once the file is fixed the same command runs there."""
    out = isolated_env / "run"
    data = isolated_env / "data.jsonl"
    data.write_text('{"not": "a clip"}\n', encoding="utf-8")
    bad = _eval(out, "--tasks", "itp", "--data", str(data))
    assert bad.exit_code == 2, bad.output
    data.write_bytes(demo_path().read_bytes())
    fixed = _eval(out, "--tasks", "itp", "--data", str(data))
    assert fixed.exit_code == 0, fixed.output
