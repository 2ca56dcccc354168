"""The inspect_ai entry point: the registered tasks, run by `inspect eval` (CLI) and `inspect_ai.eval`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from rescue_bench.data.load import demo_path, load_clips
from rescue_bench.prompts import render
from rescue_bench.tasks import BuildOptions, build_instances

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out


def test_entry_point_is_registered():
    eps = [ep for ep in entry_points(group="inspect_ai") if ep.name == "rescue_bench"]
    assert eps and eps[0].value == "rescue_bench.engine._registry"


def _inspect_cmd() -> list[str]:
    exe = shutil.which("inspect", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return [exe] if exe else [sys.executable, "-m", "inspect_ai"]


def _run_inspect(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[Path]]:
    log_dir = tmp_path / "logs"
    env = dict(os.environ, INSPECT_CACHE_DIR=str(tmp_path / "cache"), INSPECT_LOG_DIR=str(log_dir))
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.run(
        [*_inspect_cmd(), "eval", *args, "--log-dir", str(log_dir), "--display", "none"],
        check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    return proc, sorted(log_dir.glob("*.eval")) + sorted(log_dir.glob("*.json"))


def test_inspect_cli_runs_a_registered_task(tmp_path):
    from inspect_ai.log import read_eval_log

    proc, logs = _run_inspect(tmp_path, "rescue_bench/rpp", "--model", "baseline/majority")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(logs) == 1, proc.stdout + proc.stderr
    log = read_eval_log(str(logs[0]))
    assert log.status == "success"
    assert len(log.samples or []) == len(build_instances(load_clips(None), "rpp"))
    assert log.eval.model == "baseline/majority"


def test_inspect_cli_task_args(tmp_path):
    from inspect_ai.log import read_eval_log

    data = str(demo_path())
    proc, logs = _run_inspect(
        tmp_path, "rescue_bench/er", "--model", "baseline/majority",
        "-T", f"data={data}", "-T", "context=-1", "-T", "mode=audiovisual", "--limit", "4",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(logs) == 1
    log = read_eval_log(str(logs[0]))
    assert log.status == "success" and len(log.samples or []) == 4
    assert log.eval.task_args["context"] == -1 and log.eval.task_args["mode"] == "audiovisual"
    built = {i.id: i for i in build_instances(load_clips([data]), "er", BuildOptions(mode="audiovisual").with_context(-1))}
    for sample in log.samples or []:
        assert sample.input[1].text == render(built[sample.id]).user


def test_inspect_python_api(isolated_env):
    import inspect_ai

    logs = inspect_ai.eval(
        "rescue_bench/itp", model="baseline/majority", log_dir=str(isolated_env / "logs"), display="none"
    )
    assert len(logs) == 1
    log = logs[0]
    assert log.status == "success"
    assert len(log.samples or []) == len(build_instances(load_clips(None), "itp"))
    assert log.results is not None and log.results.scores
    assert list((isolated_env / "logs").glob("*.eval"))


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-T", "data=MISSING"], "missing.jsonl: no such file or folder"),
        (["-T", "data=ATTACKED"], "row 3, field relation_cycle_state: 'attack_atack'"),
        (["-T", "mode=smell"], "unknown mode 'smell'"),
    ],
)
def test_a_task_error_under_inspect_eval_is_one_line(tmp_path, args, said):
    from tests.factories import write_lines
    from tests.tasks.test_tasks_left_out import attacked_clip

    attacked = write_lines(tmp_path / "attacked.jsonl", [attacked_clip()])
    args = [a.replace("MISSING", str(tmp_path / "missing.jsonl")).replace("ATTACKED", str(attacked)) for a in args]
    # a terminal wide enough for the line (rich wraps at 80 columns when the output is no terminal)
    env = dict(os.environ, INSPECT_CACHE_DIR=str(tmp_path / "cache"), INSPECT_LOG_DIR=str(tmp_path / "logs"), COLUMNS="500")
    proc = subprocess.run(  # inspect's default display (with --display none it prints no error at all)
        [*_inspect_cmd(), "eval", "rescue_bench/rpp", "--model", "mockllm/model", *args],
        check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr, lines
    assert len(lines) == 1 and lines[0].startswith("error: rescue_bench/rpp: ") and said in lines[0], lines
