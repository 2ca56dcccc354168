"""The ``rescue`` command: a thin typer layer over the library.

Each command group lives beside the code it drives (``rescue_bench.cli.data`` ...) and is mounted
here; heavy imports happen inside the commands so ``rescue --help`` stays fast.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="rescue",
    help="RESCUE-Bench: evaluate language models on relation-aware, multi-party emotional support.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


GROUPS: tuple[tuple[str, str, str, str], ...] = (
    # (name, module under rescue_bench.cli, attribute, help); a typer app is mounted as a group, a
    # function as a single command
    ("data", "data", "app", "Validate, summarise and fetch RESCUE-Bench data."),
    ("tasks", "tasks", "app", "Build the six tasks' instance sets."),
    ("eval", "eval", "eval_command", "Evaluate a model on the six tasks (inspect_ai; offline baselines by default)."),
    ("report", "report", "report_command", "Report on runs: paper tables, bootstrap CIs, paired tests, figures, HTML."),
    ("agreement", "report", "agreement_app", "Judge-human agreement (Table 12) and the sample to rate."),
    ("annotate", "annotate", "app", "Pre-annotation: video segments and subtitles to draft clips (prepare, draft, clips)."),
    ("agent", "agent", "app", "The relation-aware support agent (state, when, whom and how, turn), evaluated as a chain."),
    ("sim", "sim", "app", "Closed-loop evaluation: the agent in episodes whose simulated clients answer back (eval, fidelity)."),
    ("review", "review", "app", "The review web app: verify drafts row by row beside the video (init, users, import, serve, export)."),
)
"""Every command group of ``rescue``, in ``--help`` order: the one place a new group is added."""


def _mount() -> None:
    import importlib

    for name, module, attribute, help_text in GROUPS:
        target = getattr(importlib.import_module(f"rescue_bench.cli.{module}"), attribute)
        if isinstance(target, typer.Typer):
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
