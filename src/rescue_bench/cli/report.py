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

from rescue_bench.cli._common import command, fail, fmt_number, guard, resolve_data_option, table_console

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
        "`inspect eval rescue_bench/<task>` (a log file or a folder of logs); one or more; and folders of `rescue agreement score --out` "
        "(people's ratings of closed-loop episodes), shown beside the runs they scored.",
    ),
    data: Optional[list[Path]] = typer.Option(
        None, "--data", "-d", callback=resolve_data_option,
        help="Release JSONL or per-clip folder (or hf:OWNER/NAME[@REVISION]) for the data figures (repeatable). Default: the data recorded in the first run's run.json.",
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
    from rescue_bench.report.pairs import is_agreement_folder

    agreements = [path for path in run_dirs if is_agreement_folder(path)]
    runs = [run for path in run_dirs if path not in agreements for run in _runs_at(path)]
    if not runs:
        raise fail("no run to report: give the run folders beside the agreement folder(s)")
    disambiguate(runs)
    paths, warnings = resolve_data(runs, [str(p) for p in data] if data else None)
    clips = None
    if paths is None:
        clips = load_clips(None)
    elif paths:
        clips = load_clips(paths)
    report = compute_report(
        runs, clips, n_resamples=resamples, seed=seed, confidence=confidence, data_paths=paths, correction=correction, agreements=agreements
    )
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
            words = [a for a in args if not a.startswith("-")]
            if len(words) == 1 and Path(args[0]).is_dir():  # a run folder alone: which of the two was meant?
                ctx.fail(
                    f"{args[0]} is a run folder: compare human ratings with it by `rescue agreement HUMAN.csv {args[0]}`, "
                    f"or draw the records to rate by `rescue agreement sample {args[0]} --out sample.csv`"
                )
            args = ["score", *args]
        return super().parse_args(ctx, args)


agreement_app = typer.Typer(
    cls=_DefaultScore,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Agreement with people: the judge's (paper Table 12: `rescue agreement HUMAN.csv RUN_DIR`) or the closed loop's "
    "(`rescue agreement score RATINGS.csv SIM_RUN... --out DIR`); `sample` draws what people rate.",
)


def _pct(value: float | None) -> str:
    return fmt_number(value, 1, percent=True, suffix="%", missing="–")


def _num(value: float | None, digits: int = 3) -> str:
    return fmt_number(value, digits, missing="–")


@command(agreement_app, "score")
def score_command(
    human_csv: Path = typer.Argument(
        ..., metavar="HUMAN_CSV", show_default=False,
        help="Ratings CSV: id, task, human_score (1-5; empty = not rated), optionally rater (Table 12); or pair_id, rater, preferred "
        "(A, B, tie) with the pairs' runs and episodes, as `rescue review export-ratings` writes them (closed-loop runs).",
    ),
    run_dirs: list[Path] = typer.Argument(
        ..., metavar="RUN_DIR...", show_default=False,
        help="The `rescue eval` folder whose judge scores are compared; or the `rescue sim eval` folders (practice exports too) the pairs came from.",
    ),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the statistics as JSON to this file."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="Closed-loop ratings: a folder for agreement.json, its tables and agreement.html (give it to `rescue report` beside the runs)."
    ),
    sample: Optional[Path] = typer.Option(
        None, "--sample", help="Closed-loop ratings: the pair sample, for a ratings file that names no runs and episodes (only pair_id, rater, preferred)."
    ),
    resamples: int = typer.Option(1000, "--resamples", min=1, help="Bootstrap resamples of the closed-loop intervals."),
    seed: int = typer.Option(0, "--seed", help="Seed of every resampling."),
    confidence: float = typer.Option(0.95, "--confidence", min=0.5, max=0.999, help="Confidence level of the closed-loop intervals."),
) -> None:
    """Table 12: exact-match, |difference| 1 and >= 2, MAE, quadratic kappa and ordinal alpha per task and overall.
    Closed-loop pairs: the simulator's agreement with people, the agents ranked by people beside their J, agreement among raters."""
    from rich.table import Table

    from rescue_bench.judge_ratings import is_pair_ratings
    from rescue_bench.labels import JUDGED_TASKS
    from rescue_bench.report.agreement import agreement
    from rescue_bench.report.runs import load_run, load_runs

    if is_pair_ratings(human_csv):
        _score_pairs(human_csv, load_runs(run_dirs), json_out=json_out, out=out, sample=sample, resamples=resamples, seed=seed, confidence=confidence)
        return
    if len(run_dirs) != 1:
        raise fail(f"Table 12 ratings are scored against one `rescue eval` folder, not {len(run_dirs)}")
    if out is not None or sample is not None:
        raise fail("--out and --sample are for closed-loop ratings (a pair_id column); write Table 12's statistics with --json")
    run = load_run(run_dirs[0])
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


def _print(table: Any) -> None:
    """A report table (:class:`rescue_bench.report.tables.Table`) on the console."""
    from rich.table import Table

    shown = Table(title=table.title)
    for k, name in enumerate(table.flat_header()):
        shown.add_column(name, justify="left" if k == 0 else "right")
    for row in table.rows:
        shown.add_row(*row)
    table_console().print(shown)
    for note in table.notes:
        typer.echo(note)


def _score_pairs(
    ratings: Path, runs: list[Run], *, json_out: Path | None, out: Path | None, sample: Path | None, resamples: int, seed: int, confidence: float
) -> None:
    from rescue_bench.fileio import atomic_write_json
    from rescue_bench.report.pairs import agreement_tables, score_pairs, write_agreement

    result = score_pairs(ratings, runs, sample=sample, n_resamples=resamples, seed=seed, confidence=confidence)
    for table in agreement_tables(result):
        _print(table)
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(json_out, result.model_dump(mode="json"))
    if out:
        write_agreement(result, out)
        folders = " ".join(str(run.path) for run in runs)
        typer.echo(f"Wrote {out / 'agreement.json'}, its tables and agreement.html; the report beside the runs: rescue report {folders} {out}")


@command(agreement_app, "sample")
def sample_command(
    run_dirs: list[Path] = typer.Argument(
        ..., metavar="RUN_DIR...", show_default=False,
        help="The `rescue eval` folder with judged ER/VP records; or two or more `rescue sim eval` folders (agents; practice exports too) to draw pairs from.",
    ),
    n: int = typer.Option(100, "--n", min=1, help="Records to sample (split evenly between ER and VP), or pairs to draw."),
    seed: int = typer.Option(0, "--seed", help="Seed of the draw and of the order."),
    out: Path = typer.Option(
        ..., "--out", "-o",
        help="The sample to write: a CSV (id, task, sample_id, scenario, row, gold, prediction, judge_score, human_score), or for "
        "closed-loop runs JSON Lines, one pair a line (pair_id, a and b: run, episode, turns; the session up to the start).",
    ),
    raters: int = typer.Option(3, "--raters", min=1, help="Closed-loop runs: raters planned per pair, for the width of the agreement interval printed."),
    data: Optional[list[Path]] = typer.Option(
        None, "--data", "-d", help="Closed-loop runs: the data they were run on, for the session up to each start (default: the data each run recorded).",
    ),
) -> None:
    """A stratified, seeded sample for human raters: judged ER/VP records (task x judge score), or pairs of closed-loop
    episodes from the same start played by two agents (scenario x agent pair)."""
    from rescue_bench.labels import JUDGED_TASKS
    from rescue_bench.report.agreement import stratified_sample, write_sample
    from rescue_bench.report.runs import ReportInputError, load_run, load_runs
    from rescue_bench.sim.episode import SIM_TASK

    runs = load_runs(run_dirs)
    if any(run.records.get(SIM_TASK) for run in runs):
        _sample_pairs(runs, n=n, seed=seed, out=out, raters=raters, data=data)
        return
    if len(runs) != 1:
        raise fail(f"judged records are sampled from one `rescue eval` folder, not {len(runs)}")
    run = load_run(run_dirs[0])
    rows = stratified_sample(run, n=n, seed=seed)
    if not rows:
        raise ReportInputError(run.path / "results", "no judged ER/VP records (was the run made with --judge?)")
    write_sample(rows, out)
    by_task = {t: sum(r["task"] == t for r in rows) for t in JUDGED_TASKS}
    note = f" (only {len(rows)} eligible)" if len(rows) < n else ""
    typer.echo(f"Wrote {len(rows)} records{note} to {out}: ER {by_task['er']}, VP {by_task['vp']}. Fill in human_score (1-5).")


def _sample_pairs(runs: list[Run], *, n: int, seed: int, out: Path, raters: int, data: list[Path] | None) -> None:
    from rescue_bench.judge_ratings import write_pair_sample
    from rescue_bench.report.pairs import draw_pairs, projected_half_width
    from rescue_bench.report.runs import ReportInputError

    pairs, counts = draw_pairs(runs, n=n, seed=seed, data=data)
    if not pairs:
        raise ReportInputError(
            runs[0].path, f"no pair to draw: of the starts two runs played, {counts.tied_J} pairs have J tied, {counts.unscored} an unscored "
            f"episode, {counts.same_words} read the same"
        )
    write_pair_sample(pairs, out)
    scenarios = ", ".join(f"{s} {k}" for s, k in sorted(counts.by_scenario.items()))
    note = f" (only {len(pairs)} eligible)" if len(pairs) < n else ""
    typer.echo(f"Wrote {len(pairs)} pairs{note} to {out}: {scenarios}; {counts.clips} clips, {len(runs)} runs.")
    typer.echo(
        f"Not drawn: {counts.tied_J} pairs with J tied, {counts.unscored} with an unscored episode, {counts.same_words} whose continuations "
        f"read the same, {counts.one_run} starts only one run played."
    )
    p = projected_half_width(len(pairs), raters, counts.clips)
    if p.independent is None:
        typer.echo(f"With {counts.clips} clip(s) the agreement gets no interval (it needs 3): draw from more clips.")
    else:
        typer.echo(
            f"With {raters} rater(s) per pair the 95% interval of the agreement will be about ±{100 * p.independent:.1f} points if raters "
            f"judge independently, ±{100 * (p.agreeing or 0):.1f} if they always agree with each other, and up to ±{100 * (p.by_clip or 0):.1f} "
            f"if every pair of a clip is judged alike ({counts.clips} clips); pairs rated as ties widen it."
        )
    typer.echo(f"Next: rescue review import-ratings {out} --rater NAME ...")
