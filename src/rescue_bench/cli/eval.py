"""``rescue eval``: any model on the six tasks in one command (inspect_ai underneath)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rescue_bench.cli._common import fail, no_traceback
from rescue_bench.labels import EVAL_MODES, VIDEO_MODE

err = Console(stderr=True)
console = Console()


def _fail(message: str, code: int = 2) -> None:
    raise fail(message, code)


def default_out(model: str) -> str:
    """``rescue_runs/<model>`` with path-unsafe characters replaced."""
    return str(Path("rescue_runs") / re.sub(r"[^A-Za-z0-9._-]+", "_", model))


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


@no_traceback
def eval_command(
    model: str = typer.Option("baseline/majority", "--model", "-m", help="inspect_ai model, e.g. openai/gpt-4o or baseline/majority."),
    judge: Optional[str] = typer.Option(None, "--judge", "-j", help="Judge model for ER/VP (none: judge scores left empty)."),
    vp_rubric: str = typer.Option("default", "--vp-rubric", help="VP judge rubric: default (1-5) or authors (the authors' 0-2 target + 0-4 viewpoint, reported as judge_authors 0-6)."),
    data: Optional[list[Path]] = typer.Option(None, "--data", "-d", help="Release JSONL or per-clip folder (repeatable); default: the bundled demo."),
    tasks: str = typer.Option("all", "--tasks", "-t", help="Comma-separated tasks: itp,rpp,stp,ssp,er,vp."),
    mode: str = typer.Option("dialogue", "--mode", help="Cue mode: dialogue, audio, visual or audiovisual; or video (dialogue plus each row's clip, needs --assets)."),
    assets: Optional[Path] = typer.Option(None, "--assets", help="--mode video: assets folder with the row clips (rescue annotate clips)."),
    context: Optional[int] = typer.Option(None, "--context", help="Rows of context for every task (-1 = all; default: per-task defaults)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Evaluate only the first N instances of each task."),
    max_connections: Optional[int] = typer.Option(None, "--max-connections", help="Concurrent model connections."),
    max_retries: Optional[int] = typer.Option(None, "--max-retries", help="Retries per model call (inspect_ai default when unset)."),
    timeout: Optional[int] = typer.Option(None, "--timeout", help="Seconds one attempt of a model call may take before it is abandoned and retried."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature (the paper used 0)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default: rescue_runs/<model>)."),
    bertscore: bool = typer.Option(True, "--bertscore/--no-bertscore", help="Compute BERTScore F1 for ER/VP."),
    bertscore_model: Optional[str] = typer.Option(None, "--bertscore-model", help="BERTScore backbone (path or name; default: bundled all-MiniLM-L6-v2)."),
    repair_mojibake: bool = typer.Option(False, "--repair-mojibake", help="Repair mojibake in the data with ftfy before building."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the response cache (RESCUE_CACHE_DIR)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random/prior baselines."),
    display: str = typer.Option("full", "--display", help="Progress display: full, rich, plain, log or none."),
    log_samples: bool = typer.Option(True, "--log-samples/--no-log-samples", help="Write every sample to the inspect logs (for inspect view); off runs about a third faster."),
    workers: int = typer.Option(1, "--workers", min=1, help="Processes to spread the calls over (for fast endpoints, where one process is CPU-bound); --max-connections is shared among them."),
) -> None:
    """Evaluate a model on the six tasks; writes results/, summary.json, run.json and inspect logs."""
    from rescue_bench.data.load import DataError
    from rescue_bench.tasks import parse_tasks

    if vp_rubric not in ("default", "authors"):
        _fail(f"--vp-rubric must be default or authors (got {vp_rubric!r})")
    if mode not in EVAL_MODES:
        _fail(f"--mode must be one of {', '.join(EVAL_MODES)} (got {mode!r})")
    if (mode == VIDEO_MODE) != (assets is not None):
        _fail("--mode video needs --assets ASSETS" if assets is None else "--assets is only used with --mode video")
    try:
        task_list = parse_tasks(tasks)
    except ValueError as exc:
        _fail(str(exc))
    if model.startswith("baseline/"):
        from rescue_bench.baselines import BASELINES

        if model.split("/", 1)[1] not in BASELINES:
            _fail(f"unknown baseline {model!r}; expected one of {', '.join('baseline/' + b for b in BASELINES)}")
    from rescue_bench.engine.run import EvalSettings, RunInterrupted, WorkerFailed, run_eval
    from rescue_bench.engine.video_mode import VideoModeError

    settings = EvalSettings(
        model=model,
        judge=judge,
        vp_rubric=vp_rubric,
        data=[str(p) for p in data] if data else None,
        tasks=task_list,
        mode=mode,
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
        workers=workers,
        out=str(out) if out else default_out(model),
        assets=str(assets) if assets else None,
    )
    try:
        summary = run_eval(settings, display=display)
    except DataError as exc:
        for problem in exc.problems:
            err.print(str(problem), highlight=False, soft_wrap=True, markup=False)
        raise typer.Exit(2)
    except (WorkerFailed, VideoModeError) as exc:
        _fail(str(exc))
    except (RunInterrupted, KeyboardInterrupt):  # Ctrl-C inside the run, or before/after inspect_ai's part
        _fail("run interrupted; run the same command again to resume (finished calls are cached)", 130)
    except (ValueError, KeyError, ImportError, OSError) as exc:
        _fail(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    print_summary(summary, f"{model} on RESCUE-Bench ({settings.mode})")
    judged = [t for t in ("er", "vp") if t in summary]
    if judged and not judge:
        console.print(f"note: no --judge given, so {'/'.join(t.upper() for t in judged)} judge scores are empty", highlight=False)
    run = json.loads((Path(settings.out) / "run.json").read_text(encoding="utf-8"))
    video = run.get("video") or {}
    if video.get("missing_clips"):
        err.print(
            f"warning: {video['missing_clips']} of {video['instances']} instances were not evaluated: row clips are "
            f"missing in {video['assets']} (listed in {Path(settings.out) / video['missing_file']})",
            markup=False, highlight=False, soft_wrap=True,
        )
    if judged and bertscore and not run.get("bertscore_backbone"):
        console.print(
            "note: BERTScore skipped (install the extra: pip install torch==2.13.0 'rescue-bench[bertscore]')",
            highlight=False,
            markup=False,  # "[bertscore]" is not a rich tag
        )
    console.print(f"Results in {settings.out} (inspect view --log-dir {settings.out}/logs)", highlight=False, markup=False)
