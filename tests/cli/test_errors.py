"""One error root: every error class of the package is a RescueError, the CLI guard formats them all,
and a bug (a KeyError, say) is reported as a bug, with its traceback under RESCUE_DEBUG=1."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess

import pytest
from typer.testing import CliRunner

import rescue_bench
from rescue_bench.cli import app
from rescue_bench.errors import RescueError


def _error_classes() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(rescue_bench.__path__, "rescue_bench."):
        if info.name.endswith("__main__") or ".migrations" in info.name:
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == info.name and issubclass(obj, BaseException):
                found.append(obj)
    return found


def test_every_error_class_is_a_rescue_error():
    classes = _error_classes()
    names = {c.__name__ for c in classes}
    assert {"DataError", "ReviewError", "PrepareError", "DatabaseError", "FetchError", "SubtitleError"} <= names, names
    strays = sorted(f"{c.__module__}.{c.__qualname__}({', '.join(b.__name__ for b in c.__bases__)})" for c in classes if not issubclass(c, RescueError))
    assert not strays, f"error classes outside the one root (derive them from rescue_bench.errors.RescueError): {strays}"


def test_the_guard_formats_every_root_error(monkeypatch):
    """A project error raised anywhere in a command is one line through the one guard: a review
    service error, a database error and the data layer's problem list alike."""
    import rescue_bench.tasks.build as build
    from rescue_bench.data.load import DataError, Problem
    from rescue_bench.review.db import DatabaseError
    from rescue_bench.review.errors import Invalid

    runner = CliRunner()
    for error, expected in (
        (Invalid("bad field"), ["error: bad field"]),
        (DatabaseError("no schema here"), ["error: no schema here"]),
        (DataError([Problem(file="a.jsonl", line=3, message="bad row")]), None),
    ):
        def boom(*args, _error=error, **kwargs):
            raise _error

        monkeypatch.setattr(build, "build_checked", boom)
        result = runner.invoke(app, ["tasks", "build", "--out", "unused"])
        assert result.exit_code == 2, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        if expected is not None:
            assert lines == expected, lines
        else:
            assert len(lines) == 1 and "a.jsonl" in lines[0] and "bad row" in lines[0], lines


RUN_COMMANDS = [
    ("rescue_bench.engine.run", "run_eval", ["eval"]),
    ("rescue_bench.engine.agent", "run_agent", ["agent", "eval"]),
    ("rescue_bench.engine.sim", "run_sim", ["sim", "eval"]),
    ("rescue_bench.engine.sim", "run_fidelity", ["sim", "fidelity"]),
]
"""Each run command: the module and name of the engine's driver it calls, and its argv."""


@pytest.mark.parametrize(("module", "name", "argv"), RUN_COMMANDS)
def test_a_key_error_in_a_run_command_is_a_bug_not_bad_input(monkeypatch, module, name, argv):
    """A run command that caught KeyError beside a provider's ValueError would print "error: KeyError:
    'x'" as if the input were bad: a KeyError is a bug, reported by the guard as unexpected."""

    def boom(*args, **kwargs):
        raise KeyError("records")

    monkeypatch.setattr(importlib.import_module(module), name, boom)
    monkeypatch.delenv("RESCUE_DEBUG", raising=False)
    result = CliRunner().invoke(app, [*argv, "--limit", "1", "--out", "unused", "--display", "none"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == ["error: unexpected KeyError: 'records' (set RESCUE_DEBUG=1 for details)"], lines


@pytest.mark.parametrize(("module", "name", "argv"), RUN_COMMANDS)
def test_rescue_debug_shows_the_traceback_of_a_provider_error_too(monkeypatch, module, name, argv):
    """A provider's ValueError (an unknown model API) is one line for users, and under RESCUE_DEBUG=1
    its traceback, like every other error: the run commands' own catch swallowed it."""
    error = ValueError("Model API nope is not recognized")

    def boom(*args, **kwargs):
        raise error

    monkeypatch.setattr(importlib.import_module(module), name, boom)
    args = [*argv, "--limit", "1", "--out", "unused", "--display", "none"]
    monkeypatch.delenv("RESCUE_DEBUG", raising=False)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "error: ValueError: Model API nope is not recognized" in result.output, result.output
    monkeypatch.setenv("RESCUE_DEBUG", "1")
    assert CliRunner().invoke(app, args).exception is error


def test_rescue_debug_lets_the_traceback_through(monkeypatch):
    """RESCUE_DEBUG=1: a bug and a project error alike propagate (their traceback is shown)."""
    import rescue_bench.tasks.build as build
    from rescue_bench.review.errors import Invalid

    monkeypatch.setenv("RESCUE_DEBUG", "1")
    for error in (KeyError("x"), Invalid("bad field")):
        def boom(*args, _error=error, **kwargs):
            raise _error

        monkeypatch.setattr(build, "build_checked", boom)
        result = CliRunner().invoke(app, ["tasks", "build", "--out", "unused"])
        assert result.exception is error, result.output


WORKER_BUG = """
import sys
import rescue_bench.engine.evaluate as evaluate
def boom(*args, **kwargs):
    raise KeyError("planted in a worker")
evaluate.evaluate = boom
sys.argv = ["python -m rescue_bench.engine.workers", *sys.argv[1:]]
from rescue_bench.engine.workers import worker_main
sys.exit(worker_main())
"""


@pytest.mark.slow
def test_rescue_debug_shows_a_workers_traceback_in_the_parent(isolated_env, monkeypatch):
    """A bug inside a worker process fails the run; under RESCUE_DEBUG=1 the parent's error carries
    the worker's traceback (without it, one line naming the worker's stderr file)."""
    import rescue_bench.engine.pool as pool
    from rescue_bench.testing import FakeOpenAI
    from tests.reliability.helpers import Responder

    wrapper = isolated_env / "bugged_worker.py"
    wrapper.write_text(WORKER_BUG, encoding="utf-8")
    real_popen = subprocess.Popen

    def popen(cmd, *args, **kwargs):
        if cmd[1:3] == ["-m", "rescue_bench.engine.workers"]:
            cmd = [cmd[0], str(wrapper), *cmd[3:]]
        return real_popen(cmd, *args, **kwargs)

    monkeypatch.setattr(pool.subprocess, "Popen", popen)
    args = ["eval", "--model", "openai/fake-model", "--limit", "4", "--tasks", "itp", "--workers", "2",
            "--display", "none", "--no-bertscore"]
    with FakeOpenAI(Responder()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("RESCUE_DEBUG", raising=False)
        result = CliRunner().invoke(app, [*args, "--out", str(isolated_env / "quiet")])
        assert result.exit_code == 2, result.output
        assert "KeyError" in result.output and "Traceback" not in result.output, result.output

        monkeypatch.setenv("RESCUE_DEBUG", "1")
        result = CliRunner().invoke(app, [*args, "--out", str(isolated_env / "debug")])
    assert result.exception is not None, result.output
    shown = "".join(getattr(result.exception, "__notes__", []))
    assert "Traceback" in shown and "planted in a worker" in shown, shown

