"""``rescue data``: validate, summarise and fetch RESCUE-Bench data.

A thin layer over :mod:`rescue_bench.data.validate`, :mod:`~rescue_bench.data.stats` and
:mod:`~rescue_bench.data.fetch`. Conventions shared by every command: with no PATH the bundled
synthetic demo is used; bad input is reported as one line per problem (``error: file:line, clip ...,
row ..., field ...: message``) and exits with code 2; a traceback is never shown (set
``RESCUE_DEBUG=1`` to see one for an unexpected failure).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import typer

from rescue_bench.cli._common import EXIT_BAD_INPUT, RepairOption, command, fail, fmt_number, load_data, resolve_data_option

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Validate, summarise and fetch RESCUE-Bench data.",
)

PathsArg = typer.Argument(
    None,
    help="Release JSONL files or per-clip folders, or hf:OWNER/NAME[@REVISION] (fetched into the cache). Default: the bundled synthetic demo.",
    show_default=False,
    callback=lambda values: resolve_data_option(values),
)


def _inputs(paths: Optional[Sequence[Path]]) -> list[Path]:
    """The given paths, or the bundled demo when none is given."""
    from rescue_bench.data.load import demo_path

    return list(paths) if paths else [demo_path()]


def _fmt(value: float | None, key: str) -> str:
    return fmt_number(value, 3 if key == "therapist_share" else 2)


# ------------------------------------------------------------------------------------------------
# validate
# ------------------------------------------------------------------------------------------------


@command(app)
def validate(
    paths: Optional[list[Path]] = PathsArg,
    repair_mojibake: RepairOption = False,
    max_warnings: int = typer.Option(
        200, "--max-warnings", min=0, help="List at most this many warnings (all are counted in the summary)."
    ),
    strict: bool = typer.Option(
        False, "--strict",
        help="Also fail on what the published release tolerates (evidence rows outside the clip, a group "
        "target beside names, unknown speakers or targets, leftover draft_problems): for data we write.",
    ),
) -> None:
    """Check release files: exit 0 when every clip loads and breaks no rule, 2 on any error; list warnings."""
    from rescue_bench.data.validate import count_rows, draft_problem_counts, validate_paths

    inputs = _inputs(paths)
    result = validate_paths(inputs, repair_mojibake=repair_mojibake, strict=strict)
    for problem in result.errors:
        typer.echo(str(problem))
    warnings = result.warnings
    for problem in warnings[:max_warnings]:
        typer.echo(str(problem))
    if len(warnings) > max_warnings:
        typer.echo(f"... {len(warnings) - max_warnings} more warnings not shown (raise --max-warnings)")
    n_errors = len(result.errors)
    left, left_rows = draft_problem_counts(result.clips)
    leftover = f", {left} draft problems left in {left_rows} row{'s' if left_rows != 1 else ''}" if left else ""
    typer.echo(
        f"{'FAILED' if n_errors else 'OK'}: {len(inputs)} input(s), {len(result.clips)} clips, "
        f"{count_rows(result.clips)} rows, {n_errors} errors, {len(warnings)} warnings{leftover}"
    )
    if n_errors:
        raise typer.Exit(EXIT_BAD_INPUT)


# ------------------------------------------------------------------------------------------------
# stats
# ------------------------------------------------------------------------------------------------


def _distribution_table(title: str, key: str, stats: dict[str, dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("label")
    for scope in stats:
        table.add_column(scope, justify="right")
    labels: dict[str, None] = {}
    for values in stats.values():
        labels.update(dict.fromkeys(values[key]))
    totals = {scope: sum(values[key].values()) for scope, values in stats.items()}
    for label in labels:
        cells = []
        for scope, values in stats.items():
            if label not in values[key]:
                cells.append("")
                continue
            n = values[key][label]
            share = f" ({100 * n / totals[scope]:.1f}%)" if totals[scope] else ""
            cells.append(f"{n}{share}")
        table.add_row(label, *cells)
    return table


@command(app)
def stats(
    paths: Optional[list[Path]] = PathsArg,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object with keys couple, family, all."),
    paper: bool = typer.Option(
        False, "--paper", help="Show the paper's Table 3 beside ours even when the input is not the full release."
    ),
) -> None:
    """Dataset statistics (the paper's Table 3) and label distributions, per scenario and overall."""
    from rich.console import Console
    from rich.table import Table

    from rescue_bench.data.stats import TABLE3_KEYS, dataset_stats, is_full_release, with_paper

    clips = load_data(paths)
    values = dataset_stats(clips)
    show_paper = paper or is_full_release(values)
    values = with_paper(values, force=show_paper)
    if as_json:
        typer.echo(json.dumps(values, indent=2, ensure_ascii=False))
        return

    console = Console()
    table = Table(title="Dataset statistics (Table 3)", title_justify="left")
    if show_paper:
        table.caption = "paper: Hu et al. 2026, Table 3 (its 'turns' are our rows)"
        table.caption_justify = "left"
    table.add_column("quantity", no_wrap=True)
    for scope in values:
        table.add_column(scope, justify="right", no_wrap=True)
        if show_paper:
            table.add_column("paper", justify="right", style="dim", no_wrap=True)
    for key in TABLE3_KEYS:
        cells = []
        for scope in values:
            cells.append(_fmt(values[scope][key], key))
            if show_paper:
                cells.append(_fmt(values[scope].get("paper", {}).get(key), key))
        table.add_row(key, *cells)
    console.print(table)
    for title, key in (
        ("Relation patterns (therapist rows' relation_cycle_state)", "relation_patterns"),
        ("Support strategies (first support_strategy item)", "strategies"),
        ("Support targets", "target_kinds"),
        ("Utterance types (client rows)", "utterance_types"),
        ("Emotion intensities (internal_emotion items)", "emotion_intensities"),
    ):
        console.print(_distribution_table(title, key, values))
    notes = [
        f"{scope}: {values[scope]['relation_patterns_empty']} therapist rows with no pattern, "
        f"{values[scope]['utterance_types_missing']} client rows with no utterance type"
        for scope in values
    ]
    for note in notes:
        console.print(note, style="dim", markup=False, highlight=False)
    if not show_paper:
        console.print(
            "The paper's values are shown on the full release (191 clips), or with --paper.",
            style="dim", markup=False, highlight=False,
        )


# ------------------------------------------------------------------------------------------------
# fetch
# ------------------------------------------------------------------------------------------------


@command(app)
def fetch(
    source: str = typer.Option("hf", "--source", help="Where to download from: hf (Hugging Face) or github."),
    revision: Optional[str] = typer.Option(
        None, "--revision", help="A branch, tag or commit of the source. Default: the pinned one (hf main; github the commit the tests' real lines come from)."
    ),
    sha256: Optional[str] = typer.Option(None, "--sha256", help="Refuse a download whose sha256 is not this one (nothing is saved)."),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir", help="Where to keep the release. Default: $RESCUE_DATA_DIR, else $XDG_CACHE_HOME/rescue-bench, else ~/.cache/rescue-bench."
    ),
    url: Optional[str] = typer.Option(None, "--url", help="Download from this URL instead (a mirror)."),
    force: bool = typer.Option(False, "--force", help="Download again even when a valid copy is cached."),
    timeout: float = typer.Option(60.0, "--timeout", min=1.0, help="Network timeout in seconds."),
) -> None:
    """Download the public release into the cache, validate it, record its sha256 and print its path."""
    from rescue_bench.data.fetch import SOURCES, fetch_release

    if url is None and source not in SOURCES:
        raise fail(f"unknown --source {source!r}; choose one of: {', '.join(SOURCES)}")
    result = fetch_release(source, cache_dir, url, revision=revision, sha256=sha256, force=force, timeout=timeout)
    origin = f"downloaded from {result.url}" if result.downloaded else "cached copy reused (--force to download again)"
    at = f" (revision {result.revision})" if result.revision else ""
    typer.echo(
        f"{origin}{at}: {result.clips} clips, {result.rows} rows, {result.warnings} warnings, sha256 {result.sha256}",
        err=True,
    )
    typer.echo(str(result.path))
