"""``rescue report`` and ``rescue agreement``: thin typer commands over :mod:`rescue_bench.report`.

``rescue report`` reads ``rescue eval`` (and ``rescue agent eval``, ``rescue sim``) output folders, and
the logs of ``inspect eval rescue_bench/<task>``: a log file, or a folder of logs
(:mod:`rescue_bench.engine.inspect_logs`, imported only then).

Conventions of :mod:`rescue_bench.cli._common`: bad input (a missing run folder, no summary.json or
results, a malformed JSONL line, a bad ratings CSV: a ``ReportInputError``; an unusable inspect log:
an ``InspectLogError``) is one line ``error: file:line: message`` on stderr and exit code 2; a
traceback is never shown.

``rescue agreement HUMAN.csv RUN_DIR`` is shorthand for ``rescue agreement score HUMAN.csv RUN_DIR``;
``rescue agreement sample RUN_DIR --n 100 --out FILE.csv`` writes the sample for human raters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from typer.core import TyperGroup

from rescue_bench.cli._common import command, fail, fmt_number, guard, table_console

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.report.runs import Run

# ------------------------------------------------------------------------------------------------
# rescue report
# ------------------------------------------------------------------------------------------------


@guard
def report_command(
    run_dirs: list[Path] = typer.Argument(
        ..., show_default=False,
        help="Output folders of `rescue eval`, `rescue agent eval`, `rescue sim eval` or `rescue sim fidelity`, or logs of "
        "`inspect eval rescue_bench/<task>` (a log file or a folder of logs); one or more.",
    ),
    data: Optional[list[Path]] = typer.Option(
        None, "--data", "-d",
        help="Release JSONL or per-clip folder for the data figures (repeatable). Default: the data recorded in the first run's run.json.",
    ),
    out: Path = typer.Option(Path("rescue_report"), "--out", "-o", help="Output folder."),
    resamples: int = typer.Option(1000, "--resamples", min=1, help="Bootstrap / permutation resamples (>= 1000 recommended)."),
    seed: int = typer.Option(0, "--seed", help="Seed of every resampling."),
    confidence: float = typer.Option(0.95, "--confidence", min=0.5, max=0.999, help="Confidence level of the intervals."),
    correction: str = typer.Option(
        "pairs", "--correction",
        help="p-values the significance tables show: pairs (Holm over run pairs per task, metric and scenario), "
        "holm (Holm over every test of the report) or bh (Benjamini-Hochberg over every test).",
    ),
) -> None:
    """Tables (paper layouts), CIs, paired tests, per-label analyses, figures and an HTML report."""
    from rescue_bench.data.load import load_clips
    from rescue_bench.report.analysis import CORRECTIONS
    from rescue_bench.report.build import compute_report, resolve_data, write_report
    from rescue_bench.report.runs import disambiguate

    if correction not in CORRECTIONS:
        raise fail(f"--correction must be one of {', '.join(CORRECTIONS)}, not {correction!r}")
    runs = [run for path in run_dirs for run in _runs_at(path)]
    disambiguate(runs)
    paths, warnings = resolve_data(runs, [str(p) for p in data] if data else None)
    clips = None
    if paths is None:
        clips = load_clips(None)
    elif paths:
        clips = load_clips(paths)
    report = compute_report(runs, clips, n_resamples=resamples, seed=seed, confidence=confidence, data_paths=paths, correction=correction)
    report.warnings = warnings + report.warnings
    files = write_report(report, out)
    for w in report.warnings:
        typer.echo(f"warning: {w}", err=True)
    typer.echo(
        f"Report for {len(runs)} run(s): {out / 'report.html'} ({len(files['tables'])} table files, "
        f"{len(files['figures'])} figures, {len(report.tests)} paired tests; report.json beside it)"
    )


def _runs_at(path: Path) -> list[Run]:
    """The runs at ``path``: a `rescue eval` output folder's one run, or the runs of inspect logs."""
    from rescue_bench.report.runs import is_run_folder, load_run, records_run

    if is_run_folder(path):
        return [load_run(path)]
    from rescue_bench.engine.inspect_logs import read_log_runs

    return [records_run(logged.path, logged.records, logged.info) for logged in read_log_runs(path)]


# ------------------------------------------------------------------------------------------------
# rescue agreement
# ------------------------------------------------------------------------------------------------


def _looks_like_a_file(word: str) -> bool:
    path = Path(word)
    return path.exists() or bool(path.suffix) or len(path.parts) > 1


class _DefaultScore(TyperGroup):
    """``rescue agreement HUMAN.csv RUN_DIR`` runs the ``score`` subcommand when the first word looks
    like a file (it exists, or has a suffix or a folder in it); any other word is a mistyped
    subcommand, refused by click (``rescue agreement smaple``)."""

    # ctx is the Context of the click typer runs on: the click package's before typer 0.2x, typer's
    # own copy (typer._click) after; no public name covers both, hence Any
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-") and _looks_like_a_file(args[0]):
            args = ["score", *args]
        return super().parse_args(ctx, args)


agreement_app = typer.Typer(
    cls=_DefaultScore,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Judge-human agreement (paper Table 12): `rescue agreement HUMAN.csv RUN_DIR`, or `sample` a set to rate.",
)


def _pct(value: float | None) -> str:
    return fmt_number(value, 1, percent=True, suffix="%", missing="–")


def _num(value: float | None, digits: int = 3) -> str:
    return fmt_number(value, digits, missing="–")


@command(agreement_app, "score")
def score_command(
    human_csv: Path = typer.Argument(..., help="Ratings CSV with columns id, task, human_score (1-5; empty = not rated), optionally rater.", show_default=False),
    run_dir: Path = typer.Argument(..., help="The `rescue eval` folder whose judge scores are compared.", show_default=False),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the statistics as JSON to this file."),
) -> None:
    """Exact-match, |difference| 1 and >= 2, MAE, quadratic kappa and ordinal alpha per task and overall."""
    from rich.table import Table

    from rescue_bench.labels import JUDGED_TASKS
    from rescue_bench.report.agreement import agreement
    from rescue_bench.report.runs import load_run

    run = load_run(run_dir)
    result = agreement(human_csv, run)
    table = Table(title=f"Judge vs human scores (Table 12): {run.model}")
    for col in ("scope", "n", "exact", "|d|=1", "|d|>=2", "MAE", "kappa(q)", "alpha(ord)"):
        table.add_column(col, justify="left" if col == "scope" else "right")

    def add(label: str, s: dict[str, Any]) -> None:
        table.add_row(
            label, str(s["n"]), _pct(s["exact"]), _pct(s["diff1"]), _pct(s["diff2"]), _num(s["mae"]),
            _num(s["kappa_quadratic"]), _num(s["krippendorff_alpha_ordinal"]),
        )

    for scope in (*JUDGED_TASKS, "overall"):
        add(f"judge-human {scope.upper() if scope != 'overall' else 'overall'}", result[scope])
    for rater, stats in result.get("raters", {}).items():
        add(f"judge-{rater} overall", stats["overall"])
    if result.get("human_human"):
        for scope in (*JUDGED_TASKS, "overall"):
            add(f"human-human {scope.upper() if scope != 'overall' else 'overall'}", result["human_human"][scope])
    paper = result.get("paper_table12") or {}
    if paper.get("samples"):
        n = paper["samples"]
        table.add_row(
            "paper T12", str(n), _pct(paper["exact"] / n), _pct(paper["diff1"] / n), _pct(paper["diff2"] / n),
            _num(paper.get("mae")), "–", "–",
        )
    table_console().print(table)
    typer.echo("kappa(q): Cohen's kappa, quadratic weights; alpha(ord): Krippendorff's alpha, ordinal; |d|>=2 includes larger differences.")
    if result.get("human_human"):
        typer.echo("judge-human pools every (item, rater) pair; human-human compares every two raters of an item (n = pairs; kappa only for two fixed raters).")
    if result["unrated"]:
        typer.echo(f"{result['unrated']} row(s) without a human score were skipped.")
    excluded = result.get("excluded") or {}
    if excluded.get("invalid_answer"):
        typer.echo(f"{excluded['invalid_answer']} rating(s) of unusable answers were left out (their score 1 was filled in without a judge call).")
    if excluded.get("judge_failed"):
        typer.echo(f"{excluded['judge_failed']} rating(s) whose judge call failed were left out (their score 1 is a floor, not a judge's verdict).")
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


@command(agreement_app, "sample")
def sample_command(
    run_dir: Path = typer.Argument(..., help="The `rescue eval` folder with judged ER/VP records.", show_default=False),
    n: int = typer.Option(100, "--n", min=1, help="Records to sample (split evenly between ER and VP)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the draw and of the order."),
    out: Path = typer.Option(..., "--out", "-o", help="CSV to write (columns id, task, sample_id, scenario, row, gold, prediction, judge_score, human_score)."),
) -> None:
    """A stratified (task x judge score), seeded sample of judged ER/VP records for human raters."""
    from rescue_bench.labels import JUDGED_TASKS
    from rescue_bench.report.agreement import stratified_sample, write_sample
    from rescue_bench.report.runs import ReportInputError, load_run

    run = load_run(run_dir)
    rows = stratified_sample(run, n=n, seed=seed)
    if not rows:
        raise ReportInputError(run.path / "results", "no judged ER/VP records (was the run made with --judge?)")
    write_sample(rows, out)
    by_task = {t: sum(r["task"] == t for r in rows) for t in JUDGED_TASKS}
    note = f" (only {len(rows)} eligible)" if len(rows) < n else ""
    typer.echo(f"Wrote {len(rows)} records{note} to {out}: ER {by_task['er']}, VP {by_task['vp']}. Fill in human_score (1-5).")
