"""The ``rescue`` command: a thin typer layer over the library.

Each command group lives beside the code it drives (``rescue_bench.data.cli`` ...) and is mounted
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


def _mount() -> None:
    from rescue_bench.data.cli import app as data_app

    app.add_typer(data_app, name="data", help="Validate, summarise and fetch RESCUE-Bench data.")

    from rescue_bench.tasks.cli import app as tasks_app

    app.add_typer(tasks_app, name="tasks", help="Build the six tasks' instance sets.")

    from rescue_bench.engine.cli import eval_command

    app.command("eval", help="Evaluate a model on the six tasks (inspect_ai; offline baselines by default).")(eval_command)

    from rescue_bench.report.cli import agreement_app, report_command

    app.command("report", help="Report on runs: paper tables, bootstrap CIs, paired tests, figures, HTML.")(report_command)
    app.add_typer(agreement_app, name="agreement", help="Judge-human agreement (Table 12) and the sample to rate.")


_mount()


def main() -> None:
    """Entry point of the ``rescue`` console script (and of ``python -m rescue_bench.cli``)."""
    import gc

    from rescue_bench.gcpolicy import GC_THRESHOLD

    # for the whole process, never lowered again: lowering them at the end would only start a full
    # collection of everything the command built, just before the process frees it anyway
    gc.set_threshold(*GC_THRESHOLD)
    app()


if __name__ == "__main__":
    main()
