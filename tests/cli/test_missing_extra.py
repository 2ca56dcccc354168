"""A command whose extra is not installed says which extra to install, in one line, and exits 2.

Each probe runs ``rescue`` in a fresh interpreter where the extra's modules cannot be imported (a
meta-path finder refuses them, as on a core install), so the real import of the real command fails.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli.helpers import BLOCKER

RUN = BLOCKER + """
sys.argv = ["rescue", *sys.argv[2:]]
from rescue_bench.cli import main
main()
"""


def _rescue(blocked: str, *args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN, blocked, *args], capture_output=True, text=True, timeout=300, check=False, cwd=cwd
    )


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("blocked", "args", "extra", "module"),
    [
        ("sqlalchemy", ["review", "init", "--db", "sqlite:///{tmp}/review.db"], "review", "sqlalchemy"),
        ("argon2,itsdangerous", ["review", "users", "list", "--db", "sqlite:///{tmp}/review.db"], "review", None),
        ("av,srt,webvtt", ["annotate", "prepare", "{tmp}", "--out", "{tmp}/assets"], "annotate", None),
        ("av", ["annotate", "clips", "{tmp}"], "annotate", "av"),
    ],
)
def test_missing_extra_is_a_one_line_hint(tmp_path, blocked, args, extra, module):
    proc = _rescue(blocked, *[a.format(tmp=tmp_path) for a in args], cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = _one_line(proc)
    assert line.startswith("error: this command needs the '" + extra + "' extra ("), line
    assert line.endswith(f"is not installed): pip install 'rescue-bench[{extra}]'"), line
    if module:
        assert f"({module} is not installed)" in line, line
    assert "Traceback" not in proc.stderr


def test_help_lists_every_group_without_the_extras():
    """``rescue --help`` (and each group's help) needs no extra: the groups import their libraries
    inside the commands."""
    from rescue_bench.extras import EXTRA_OF_MODULE

    blocked = ",".join(EXTRA_OF_MODULE)
    proc = _rescue(blocked, "--help")
    assert proc.returncode == 0, proc.stderr
    for group in ("eval", "report", "review", "annotate", "agent"):
        assert group in proc.stdout
    for group in ("review", "annotate"):
        proc = _rescue(blocked, group, "--help")
        assert proc.returncode == 0 and "Usage" in proc.stdout, proc.stderr


def test_an_unknown_missing_module_is_not_blamed_on_an_extra(monkeypatch):
    """A module that no extra provides is a real bug or a broken install: the guard reports it as
    unexpected, never as "install the extra"."""
    from typer.testing import CliRunner

    import rescue_bench.tasks.build as build
    from rescue_bench.cli import app

    def boom(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'nonexistent_helper'", name="nonexistent_helper")

    monkeypatch.setattr(build, "build_checked", boom)
    result = CliRunner().invoke(app, ["tasks", "build", "--out", "unused"])
    assert result.exit_code == 2
    assert "unexpected ModuleNotFoundError" in result.output and "extra" not in result.output


def test_a_late_missing_extra_module_gets_the_hint(monkeypatch):
    """A command outside the review and annotate groups that reaches an extra's module (``rescue eval
    --mode video`` imports PyAV) gets the same one-line hint from the guard."""
    from typer.testing import CliRunner

    import rescue_bench.tasks.build as build
    from rescue_bench.cli import app

    def boom(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'av.codec'", name="av.codec")

    monkeypatch.setattr(build, "build_checked", boom)
    monkeypatch.delenv("RESCUE_DEBUG", raising=False)
    result = CliRunner().invoke(app, ["tasks", "build", "--out", "unused"])
    assert result.exit_code == 2
    assert result.output.strip() == "error: this command needs the 'annotate' extra (av is not installed): pip install 'rescue-bench[annotate]'"
