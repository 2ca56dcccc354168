"""``rescue eval``: any model on the six tasks in one command (inspect_ai underneath)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rescue_bench.cli._common import (
    DEFAULT_RUN,
    ENGINE_RUN,
    LENIENT_HINT,
    RUN_INPUT_ERRORS,
    Bertscore,
    DataOption,
    Judge,
    Limit,
    MaxTokens,
    RunOptions,
    TasksOption,
    check_context,
    check_mode,
    check_model,
    check_tasks,
    fail,
    fmt_number,
    guard,
    print_dry_run,
    print_left_out,
    print_let_through,
    print_usage,
    run_input_error,
    run_options,
    setting,
    settings_values,
)
from rescue_bench.engine.settings import ON_OVERFLOW, EvalSettings
from rescue_bench.labels import JUDGED_TASKS

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.runinfo import OverflowReport
    from rescue_bench.summary import EvalSummary

console = Console()

DEMO_NOTE = (
    "note: this ran on the bundled synthetic demo (written for this project, not the benchmark's clips); "
    "its numbers say nothing about a model. Next: rescue eval --model <provider/model> --judge <provider/judge> --data <release.jsonl>"
)
"""Printed after a run on the bundled demo (no ``--data``)."""


def default_out(model: str) -> str:
    """``rescue_runs/<model>`` with path-unsafe characters replaced."""
    return str(Path("rescue_runs") / re.sub(r"[^A-Za-z0-9._-]+", "_", model))


def check_workers(value: str) -> int | Literal["auto"]:
    """``--workers``: ``auto`` or a whole number >= 1 (one-line error otherwise)."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise fail(f"--workers must be auto or a whole number >= 1 (got {value!r})")
    return n


def causes_text(causes: dict[str, int] | None) -> str:
    """The non-zero counts of a summary's ``invalid_causes``, compactly, by the names ``summary.json``
    gives them (``no_json 5, unknown_label 2``)."""
    return ", ".join(f"{cause} {n}" for cause, n in (causes or {}).items() if n) or "-"


def print_summary(summary: EvalSummary, title: str) -> None:
    """The summary as one small rich table per task, readable at 80 columns: a row per scenario, a
    column per metric under its short title (R@1, MacroF1 ...), then as notes (not as number columns)
    why answers were unusable (the invalid answers by cause, valid answers no judge scored)."""
    from rescue_bench.scoring import HEADLINE
    from rescue_bench.task_table import metric_title

    console.print(f"[bold]{escape(title)}[/bold]")
    for task, per in summary.root.items():
        table = Table(title=task.upper(), title_justify="left", show_edge=False)
        table.add_column("scenario")
        for col in ("n", "invalid", *(metric_title(m) for m in HEADLINE[task])):
            table.add_column(col, justify="right", no_wrap=True)
        for scenario, entry in per.items():
            table.add_row(
                scenario,
                str(entry.n),
                fmt_number(entry.invalid_rate),
                *(fmt_number(entry.metric(m)) for m in HEADLINE[task]),
            )
        console.print(table)
        unusable = [f"{scenario} {causes_text(entry.invalid_causes)}" for scenario, entry in per.items()
                    if scenario != "both" and any(entry.invalid_causes.values())]
        if unusable:
            console.print(f"  unusable answers: {'; '.join(unusable)}", highlight=False, markup=False)


def answers_line(counts: Mapping[str, Any] | None) -> str | None:
    """What became of every instance, in the counts of ``run.json`` (``rescue_bench.scoring.AnswerCounts``):
    answered (usable, or unusable by cause), refused as too long, without an answer."""
    if not counts or "usable" not in counts:
        return None
    invalid = {cause: n for cause, n in (counts.get("invalid") or {}).items() if n}
    unusable = f"{sum(invalid.values())} unusable" + (": " + ", ".join(f"{c} {n}" for c, n in invalid.items()) if invalid else "")
    return (
        f"Answers: {counts['instances']} instances: {counts['answered']} answered ({counts['usable']} usable, {unusable}), "
        f"{counts['overflow']} refused as too long{' for the context window' if counts['overflow'] else ''}, "
        f"{counts['without_answer']} without an answer"
    )


def overflow_lines(report: OverflowReport | None) -> list[str]:
    """What ``rescue eval`` says at the end about prompts longer than the model's context window
    (``report``: ``run.json``'s :class:`~rescue_bench.runinfo.OverflowReport`); nothing when none was."""
    if report is None or not (report.overflow or report.trimmed):
        return []

    def where(key: str) -> str:
        return ", ".join(
            f"{task.upper()} {per['both'][key]} (couple {per['couple'][key]}, family {per['family'][key]})"
            for task, per in report.per_task.items() if per["both"][key]
        )

    lines = []
    if report.trimmed:
        lines.append(
            f"note: {report.trimmed} of {report.instances} prompts were longer than the model's context window and were "
            f"trimmed to fit, their oldest context rows left out: {where('trimmed')} (records: trimmed_rows)"
        )
    if report.overflow:
        rule = (
            "scored as wrong answers (--on-overflow wrong keeps runs comparable with the paper, which scores an unusable "
            "answer as wrong); --on-overflow trim leaves the oldest rows out until a prompt fits, --context N shows fewer rows"
            if report.policy == "wrong" else "scored as wrong answers: they do not fit even with every earlier row left out"
        )
        lines.append(
            f"warning: {report.overflow} of {report.instances} prompts do not fit the model's context window: "
            f"{where('overflow')}; {rule}"
        )
    return lines


@guard
@run_options(*ENGINE_RUN, "bertscore_model")
def eval_command(
    model: str = setting(EvalSettings, "model", "--model", "-m"),
    judge: Optional[str] = Judge,
    vp_rubric: str = setting(EvalSettings, "vp_rubric", "--vp-rubric"),
    data: DataOption = None,
    tasks: TasksOption = "all",
    mode: str = setting(EvalSettings, "mode", "--mode"),
    assets: Optional[Path] = setting(EvalSettings, "assets", "--assets"),
    context: Optional[int] = setting(EvalSettings, "context", "--context", typer_range=False),
    limit: Optional[int] = Limit,
    max_tokens: Optional[int] = MaxTokens,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default: rescue_runs/<model>)."),
    bertscore: bool = Bertscore,
    workers: str = setting(EvalSettings, "workers", "--workers"),
    on_overflow: str = setting(EvalSettings, "on_overflow", "--on-overflow"),
    lenient: bool = setting(EvalSettings, "lenient", "--lenient"),
    context_window: Optional[int] = setting(EvalSettings, "context_window", "--context-window"),
    run: RunOptions = DEFAULT_RUN,
) -> None:
    """Evaluate a model on the six tasks; writes results/, summary.json, run.json and inspect logs."""
    params = {**locals(), **run.settings_values()}  # the options, by name: those naming a settings field go to EvalSettings
    from rescue_bench.labels import RUBRICS

    if vp_rubric not in RUBRICS:
        raise fail(f"--vp-rubric must be one of {', '.join(RUBRICS)} (got {vp_rubric!r})")
    if on_overflow not in ON_OVERFLOW:
        raise fail(f"--on-overflow must be one of {', '.join(ON_OVERFLOW)} (got {on_overflow!r})")
    check_model(model)
    worker_count = check_workers(workers)
    task_list = check_tasks(tasks)
    from rescue_bench.labels import VIDEO_MODE

    eval_mode = VIDEO_MODE if mode == VIDEO_MODE else check_mode(mode)
    if (eval_mode == VIDEO_MODE) != (assets is not None):
        raise fail("--mode video needs --assets ASSETS" if assets is None else "--assets is only used with --mode video")
    check_context(context)
    from rescue_bench.engine.run import estimate_eval, run_eval

    settings = EvalSettings(
        **settings_values(
            EvalSettings,
            params,
            data=[str(p) for p in data] if data else None,
            tasks=task_list,
            mode=eval_mode,
            workers=worker_count,
            out=str(out) if out else default_out(model),
            assets=str(assets) if assets else None,
        )
    )
    from rescue_bench.data.validate import ContentError

    try:
        if run.dry_run:
            print_dry_run(estimate_eval(settings), run.price_in, run.price_out)
            return
        result = run_eval(settings, display=run.display, overwrite=run.overwrite)
    except ContentError as exc:  # clips that load but break a content rule: the way out is --lenient
        raise ContentError(exc.problems, LENIENT_HINT) from None
    except RUN_INPUT_ERRORS as exc:
        raise run_input_error(exc) from None
    summary, info = result.summary, result.info
    print_summary(summary, f"{model} on RESCUE-Bench ({settings.mode})")
    line = answers_line(info.counts)
    if line:
        console.print(line, highlight=False, markup=False)  # wrapped at the console's width, as the tables are
    print_usage(info)
    judged = [t for t in JUDGED_TASKS if t in summary.root]
    if judged and not judge:
        console.print(f"note: no --judge given, so {'/'.join(t.upper() for t in judged)} judge scores are empty", highlight=False)
    video = info.video
    if video is not None and video.missing_clips:
        typer.echo(
            f"warning: {video.missing_clips} of {video.instances} instances were not evaluated: row clips are "
            f"missing in {video.assets} (listed in {Path(settings.out) / str(video.missing_file)})",
            err=True,
        )
    if judged and bertscore and not info.bertscore_backbone:
        console.print(
            "note: BERTScore skipped (install the extra: pip install torch==2.13.0 'rescue-bench[bertscore]')",
            highlight=False,
            markup=False,  # "[bertscore]" is not a rich tag
        )
    if info.workers_choice is not None:
        console.print(f"Workers: {info.workers} ({info.workers_choice.reason})", highlight=False, markup=False)
    console.print(f"Results in {settings.out} (inspect view --log-dir {settings.out}/logs)", highlight=False, markup=False)
    if not data:
        console.print(DEMO_NOTE, highlight=False, markup=False)
    if info.left_out is not None:
        print_left_out(info.left_out, f"{Path(settings.out) / 'run.json'} and summary.json")
    if result.let_through:
        print_let_through(result.let_through)
    for line in overflow_lines(info.overflow):  # last, where a user looks when the run ends
        typer.echo(line, err=True)
