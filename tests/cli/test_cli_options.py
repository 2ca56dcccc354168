"""Options every ``rescue`` command spells the same way, and values that are refused instead of being
read as something else: ``--version``, ``-h``, ``-o/--out``, unknown subcommands, ``--display``,
``--tasks ''``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from rescue_bench.cli import app

runner = CliRunner()


def _leaves(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    commands = getattr(command, "commands", None)
    if commands is None:
        yield path, command
        return
    yield path, command
    for name, sub in commands.items():
        yield from _leaves(sub, (*path, name))


def test_version():
    import rescue_bench

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"rescue-bench {rescue_bench.__version__}"


@pytest.mark.slow
def test_dash_h_is_help_everywhere():
    root = get_command(app)
    for path, _ in _leaves(root):
        result = runner.invoke(app, [*path, "-h"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output, (path, result.output)


def test_every_out_option_has_the_short_form():
    """Every command that writes its output to a path takes ``-o`` and ``--out`` (``rescue tasks
    build``, ``tasks export``, ``review export`` and ``review export-ratings`` took ``--out`` only)."""
    root = get_command(app)
    missing = []
    for path, command in _leaves(root):
        for param in getattr(command, "params", []):
            if "--out" in param.opts and "-o" not in param.opts:
                missing.append(" ".join(path))
    assert not missing, f"--out without -o: {missing}"
    outs = [" ".join(p) for p, c in _leaves(root) if any("--out" in q.opts for q in getattr(c, "params", []))]
    assert {"eval", "report", "tasks build", "tasks export", "agreement sample", "review export"} <= set(outs), outs


def test_an_unknown_agreement_subcommand_is_refused(tmp_path):
    """``rescue agreement smaple`` ran ``score`` with "smaple" as the ratings file; a word that is
    neither a subcommand nor a file is a typo, refused as click refuses one."""
    result = runner.invoke(app, ["agreement", "smaple", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "No such command 'smaple'" in result.output, result.output


def test_agreement_shorthand_still_runs_score(tmp_path):
    """``rescue agreement HUMAN.csv RUN_DIR`` (a file, not a subcommand) is still ``score``."""
    ratings = tmp_path / "human.csv"
    ratings.write_text("id,task,human_score\n", encoding="utf-8")
    result = runner.invoke(app, ["agreement", str(ratings), str(tmp_path / "no-run")])
    assert "No such command" not in result.output, result.output
    assert result.exit_code == 2  # the run folder is missing: score's own one-line error
    assert result.output.startswith("error: ") and "no-run" in result.output, result.output


@pytest.mark.parametrize("command", [["eval"], ["agent", "eval"], ["annotate", "draft", "unused-assets", "--model", "baseline/majority"]])
def test_a_bad_display_is_refused(command, tmp_path):
    result = runner.invoke(app, [*command, "--display", "fancy", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--display'" in result.output and "fancy" in result.output, result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tasks", ["", " ", ",", " , "])
@pytest.mark.parametrize("command", [["eval"], ["tasks", "build"], ["tasks", "export", "--format", "chat"]])
def test_empty_tasks_are_refused(command, tasks, tmp_path):
    """``--tasks ''`` ran all six tasks; an empty list is a mistake (``--tasks all`` says all)."""
    result = runner.invoke(app, [*command, "--tasks", tasks, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--tasks'" in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_a_run_folder_alone_names_the_two_commands_that_take_it(tmp_path):
    """``rescue agreement RUN`` said "Missing argument 'run_dir'", though the run folder was given."""
    run = tmp_path / "run"
    run.mkdir()
    result = runner.invoke(app, ["agreement", str(run)])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.replace("\u2502", " ").split())  # click's error box, unwrapped
    assert "Missing argument" not in text and "is a run folder" in text, text
    assert f"rescue agreement HUMAN.csv {run}" in text and f"rescue agreement sample {run} --out sample.csv" in text, text
