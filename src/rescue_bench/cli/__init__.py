"""The ``rescue`` command: a thin typer layer over the library.

Each command group lives beside the code it drives (``rescue_bench.cli.data`` ...) and is mounted
here; heavy imports happen inside the commands so ``rescue --help`` stays fast and needs no extra.
``-h`` is ``--help`` for every command (click passes the setting down to every subcommand), and
``rescue --version`` prints the installed version.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

app = typer.Typer(
    name="rescue",
    help="RESCUE-Bench: evaluate language models on relation-aware, multi-party emotional support.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from rescue_bench import __version__

        typer.echo(f"rescue-bench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """RESCUE-Bench: evaluate language models on relation-aware, multi-party emotional support."""


GROUPS: tuple[tuple[str, str, str, str, str | None], ...] = (
    # (name, module under rescue_bench.cli, attribute, help, the extra it needs); a typer app is
    # mounted as a group, a function as a single command
    ("data", "data", "app", "Validate, summarise and fetch RESCUE-Bench data.", None),
    ("tasks", "tasks", "app", "Build the six tasks' instance sets.", None),
    ("eval", "eval", "eval_command", "Evaluate a model on the six tasks (inspect_ai; offline baselines by default).", None),
    ("report", "report", "report_command", "Report on runs: paper tables, bootstrap CIs, paired tests, figures, HTML.", None),
    ("agreement", "report", "agreement_app", "Judge-human agreement (Table 12) and the sample to rate.", None),
    ("annotate", "annotate", "app", "Pre-annotation: video segments and subtitles to draft clips (prepare, draft, clips).", "annotate"),
    ("agent", "agent", "app", "The relation-aware support agent (state, when, whom and how, turn), evaluated as a chain.", None),
    ("sim", "sim", "app", "Closed-loop evaluation: the agent in episodes whose simulated clients answer back (eval, fidelity).", None),
    ("review", "review", "app", "The review web app: verify drafts row by row beside the video (init, users, import, assign, serve, export; agreement, questionnaires, practice).", "review"),
)
"""Every command group of ``rescue``, in ``--help`` order: the one place a new group is added."""


def _needs_extra(extra: str) -> Callable[[], None]:
    """A group callback that stops every subcommand of the group, before it reads any input, when a
    module of ``extra`` is not installed: one line naming the extra, exit 2 (help still works)."""

    def check() -> None:
        from rescue_bench.cli._common import fail
        from rescue_bench.extras import MissingExtra, missing_modules

        missing = missing_modules(extra)
        if missing:
            raise fail(str(MissingExtra(extra, missing[0])))

    return check


def _mount() -> None:
    import importlib

    for name, module, attribute, help_text, extra in GROUPS:
        target = getattr(importlib.import_module(f"rescue_bench.cli.{module}"), attribute)
        if isinstance(target, typer.Typer):
            if extra:
                app.add_typer(target, name=name, help=help_text, callback=_needs_extra(extra))
            else:
                app.add_typer(target, name=name, help=help_text)
        else:
            app.command(name, help=help_text)(target)


_mount()


def main() -> None:
    """Entry point of the ``rescue`` console script (and of ``python -m rescue_bench.cli``)."""
    import gc

    from rescue_bench.gcpolicy import GC_THRESHOLD

    # for the whole process, never lowered again: lowering them at the end would only start a full
    # collection of everything the command built, just before the process frees it anyway
    gc.set_threshold(*GC_THRESHOLD)
    app()
