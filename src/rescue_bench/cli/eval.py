"""``rescue eval``: any model on the six tasks in one command (inspect_ai underneath)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rescue_bench.cli._common import (
    ContextOption,
    DataOption,
    ModeOption,
    RepairOption,
    TasksOption,
    check_context,
    check_mode,
    check_model,
    check_tasks,
    fail,
    guard,
)
from rescue_bench.labels import JUDGED_TASKS

console = Console()


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


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def print_summary(summary: dict[str, Any], title: str) -> None:
    """The summary as one small rich table per task: a row per scenario, a column per metric."""
    from rescue_bench.scoring import HEADLINE

    console.print(f"[bold]{escape(title)}[/bold]")
    for task, per in summary.items():
        table = Table(title=task.upper(), title_justify="left", show_edge=False)
        table.add_column("scenario")
        for col in ("n", "invalid", *HEADLINE[task]):
            table.add_column(col, justify="right")
        for scenario, metrics in per.items():
            table.add_row(
                scenario,
                str(metrics["n"]),
                _fmt(metrics["invalid_rate"]),
                *(_fmt(metrics.get(m)) for m in HEADLINE[task]),
            )
        console.print(table)


@guard
def eval_command(
    model: str = typer.Option("baseline/majority", "--model", "-m", help="inspect_ai model, e.g. openai/gpt-4o or baseline/majority."),
    judge: Optional[str] = typer.Option(None, "--judge", "-j", help="Judge model for ER/VP (none: judge scores left empty)."),
    vp_rubric: str = typer.Option("default", "--vp-rubric", help="VP judge rubric: default (1-5) or authors (the authors' 0-2 target + 0-4 viewpoint, reported as judge_authors 0-6)."),
    data: DataOption = None,
    tasks: TasksOption = "all",
    mode: ModeOption = "dialogue",
    context: ContextOption = None,
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Evaluate only the first N instances of each task."),
    max_connections: Optional[int] = typer.Option(None, "--max-connections", min=1, help="Concurrent model connections."),
    max_retries: Optional[int] = typer.Option(None, "--max-retries", min=0, help="Retries per model call (inspect_ai default when unset)."),
    timeout: Optional[int] = typer.Option(None, "--timeout", min=1, help="Seconds one attempt of a model call may take before it is abandoned and retried."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature (the paper used 0)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default: rescue_runs/<model>)."),
    bertscore: bool = typer.Option(True, "--bertscore/--no-bertscore", help="Compute BERTScore F1 for ER/VP."),
    bertscore_model: Optional[str] = typer.Option(None, "--bertscore-model", help="BERTScore backbone (path or name; default: bundled all-MiniLM-L6-v2)."),
    repair_mojibake: RepairOption = False,
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the response cache (RESCUE_CACHE_DIR)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random/prior baselines."),
    display: str = typer.Option("full", "--display", help="Progress display: full, rich, plain, log or none."),
    log_samples: bool = typer.Option(True, "--log-samples/--no-log-samples", help="Write every sample to the inspect logs (for inspect view); off runs about a third faster."),
    workers: str = typer.Option("auto", "--workers", help="Processes to spread the calls over, or auto: one, and more (at most the CPUs and --max-connections) when one cannot keep the calls in flight (fast endpoints); --max-connections is shared among them."),
) -> None:
    """Evaluate a model on the six tasks; writes results/, summary.json, run.json and inspect logs."""
    from rescue_bench.labels import RUBRICS

    if vp_rubric not in RUBRICS:
        raise fail(f"--vp-rubric must be one of {', '.join(RUBRICS)} (got {vp_rubric!r})")
    check_model(model)
    worker_count = check_workers(workers)
    task_list = check_tasks(tasks)
    cue_mode = check_mode(mode)
    context = check_context(context)
    from rescue_bench.engine.run import run_eval
    from rescue_bench.engine.settings import EvalSettings

    settings = EvalSettings(
        model=model,
        judge=judge,
        vp_rubric=vp_rubric,  # type: ignore[arg-type]  # checked above
        data=[str(p) for p in data] if data else None,
        tasks=task_list,
        mode=cue_mode,
        context=context,
        limit=limit,
        max_connections=max_connections,
        max_retries=max_retries,
        timeout=timeout,
        temperature=temperature,
        repair_mojibake=repair_mojibake,
        bertscore=bertscore,
        bertscore_model=bertscore_model,
        cache=not no_cache,
        seed=seed,
        log_samples=log_samples,
        workers=worker_count,
        out=str(out) if out else default_out(model),
    )
    try:
        summary = run_eval(settings, display=display)
    except (ValueError, KeyError, ImportError, OSError) as exc:  # a provider that cannot start, a bad path
        raise fail(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    print_summary(summary, f"{model} on RESCUE-Bench ({settings.mode})")
    judged = [t for t in JUDGED_TASKS if t in summary]
    if judged and not judge:
        console.print(f"note: no --judge given, so {'/'.join(t.upper() for t in judged)} judge scores are empty", highlight=False)
    run = json.loads((Path(settings.out) / "run.json").read_text(encoding="utf-8"))
    if judged and bertscore and not run.get("bertscore_backbone"):
        console.print(
            "note: BERTScore skipped (install the extra: pip install torch==2.13.0 'rescue-bench[bertscore]')",
            highlight=False,
            markup=False,  # "[bertscore]" is not a rich tag
        )
    choice = run.get("workers_choice") or {}
    if choice:
        console.print(f"Workers: {run['workers']} ({choice['reason']})", highlight=False, markup=False)
    console.print(f"Results in {settings.out} (inspect view --log-dir {settings.out}/logs)", highlight=False, markup=False)
