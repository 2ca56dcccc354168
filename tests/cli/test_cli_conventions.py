"""Conventions every ``rescue`` command keeps: each is behind the one error guard."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from rescue_bench.cli import app


def _commands(group: typer.Typer, path: str = "rescue") -> Iterator[tuple[str, Any]]:
    for info in group.registered_commands:
        yield f"{path} {info.name or info.callback.__name__}", info.callback
    for sub in group.registered_groups:
        yield from _commands(sub.typer_instance, f"{path} {sub.name}")


def test_every_command_is_guarded():
    commands = dict(_commands(app))
    assert {"rescue eval", "rescue report", "rescue data validate", "rescue tasks build", "rescue agreement score"} <= set(commands)
    unguarded = [name for name, callback in commands.items() if not getattr(callback, "__rescue_guarded__", False)]
    assert not unguarded, f"commands without the error guard (use cli._common.command or guard): {unguarded}"


def test_an_unexpected_error_is_one_line(monkeypatch):
    """The guard's last resort: an exception nobody expected is one line and exit 2, no traceback."""
    from typer.testing import CliRunner

    import rescue_bench.tasks.build as build

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("something broke\nover two lines")

    monkeypatch.setattr(build, "build_checked", boom)
    result = CliRunner().invoke(app, ["tasks", "build", "--out", "unused"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == ["error: unexpected RuntimeError: something broke over two lines (set RESCUE_DEBUG=1 for details)"]


def test_typer_usage_errors_and_aborts_pass_the_guard():
    """A usage error or an abort raised inside a command is typer's to report (its message and exit
    code), not an "unexpected" error: the guard names them through typer, which (from typer 0.2x on)
    carries its own copy of click, whose exceptions are not the ``click`` package's."""
    from typer.testing import CliRunner

    from rescue_bench.cli._common import command

    probe = typer.Typer()

    @command(probe, "bad")
    def bad() -> None:
        raise typer.BadParameter("must be a prime number", param_hint="'--size'")

    @command(probe, "abort")
    def abort() -> None:
        raise typer.Abort()

    result = CliRunner().invoke(probe, ["bad"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--size': must be a prime number" in result.output
    assert "unexpected" not in result.output

    result = CliRunner().invoke(probe, ["abort"])
    assert result.exit_code == 1, result.output
    assert "Aborted" in result.output and "unexpected" not in result.output


def test_run_options_mean_the_same_in_eval_and_agent():
    """The engine's run options are declared once: the same name, range and default in both commands
    (the agent command had accepted ``--max-retries -1`` and ``--timeout 0``)."""
    from typer.testing import CliRunner

    runner = CliRunner()
    shared = ("--max-connections", "--max-retries", "--timeout", "--temperature", "--bertscore-model", "--no-cache", "--seed", "--display")
    for command in (["eval"], ["agent", "eval"]):
        text = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "300"}).output
        missing = [name for name in shared if name not in text]
        assert not missing, (command, missing)
        for bad in (["--max-retries", "-1"], ["--timeout", "0"], ["--max-connections", "0"]):
            result = runner.invoke(app, [*command, *bad, "--limit", "1", "--out", "unused"])
            assert result.exit_code == 2, (command, bad, result.output)
            assert f"Invalid value for '{bad[0]}'" in result.output, (command, bad, result.output)
