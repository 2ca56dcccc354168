"""``rescue tasks``: build the six tasks' instance sets from a release file (or the bundled demo).

``rescue tasks build`` loads clips, builds the requested tasks, writes ``DIR/<task>.jsonl`` (one
:class:`~rescue_bench.tasks.instance.Instance` per line, ``model_dump(mode="json")``) and prints the
instance and clip counts per task and scenario beside the paper's Table 6. On the full release
(191 clips) every difference from Table 6 is shown in red, and ``--strict`` turns a difference into
exit status 1. Bad input is reported without a traceback: data problems one per line, exit 2; an
unknown task, cue mode or context size in one line, exit 2.

``rescue tasks export --format chat`` writes the same instances as chat examples (the prompt
``rescue eval`` sends, then the gold answer in the answer contract) with a clip-grouped ``fold`` per
example, for fine-tuning and cross-validation; see :mod:`rescue_bench.prompts.export`.

The group is a real command group (it has a callback), so further commands can join ``build``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from rescue_bench.cli._common import (
    EXIT_CHECK_FAILED,
    ContextOption,
    DataOption,
    LenientOption,
    ModeOption,
    RepairOption,
    TasksOption,
    check_context,
    check_mode,
    check_tasks,
    command,
    fail,
    load_checked_data,
    print_left_out,
    print_let_through,
)

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

    from rescue_bench.data.models import Clip
    from rescue_bench.tasks.build import CountRow
    from rescue_bench.tasks.instance import Instance, LeftOut

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _group() -> None:
    """Build the six tasks' instance sets."""


def count_table(rows: list[CountRow], *, full_release: bool, n_clips: int) -> Table:
    """The counts table: ours beside Table 6, differences in red when ``full_release``."""
    from rich.table import Table

    title = "Instances per task and scenario vs the paper's Table 6"
    if not full_release:
        title += f" (input: {n_clips} clips; Table 6 applies to the full release of 191)"
    table = Table(title=title, title_justify="left")
    table.add_column("task")
    table.add_column("scenario")
    table.add_column("instances", justify="right")
    table.add_column("paper", justify="right")
    table.add_column("clips", justify="right")
    table.add_column("paper clips", justify="right")
    if full_release:
        table.add_column("match")

    def cell(mine: int, paper: int | None) -> str:
        if not full_release:
            return str(mine)
        style = "green" if mine == paper else "red"
        return f"[{style}]{mine}[/{style}]"

    def ref(value: int | None) -> str:
        return "-" if value is None else (str(value) if full_release else f"[dim]{value}[/dim]")

    for row in rows:
        values = [
            row.task.upper(),
            row.scenario,
            cell(row.instances, row.paper_instances),
            ref(row.paper_instances),
            cell(row.clips, row.paper_clips),
            ref(row.paper_clips),
        ]
        if full_release:
            values.append("[green]yes[/green]" if row.matches else "[bold red]NO[/bold red]")
        table.add_row(*values)
    return table


@command(app, "build")
def build(
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write <task>.jsonl files into (created if needed)."),
    data: DataOption = None,
    tasks: TasksOption = "all",
    mode: ModeOption = "dialogue",
    context: ContextOption = None,
    repair_mojibake: RepairOption = False,
    strict: bool = typer.Option(
        False, "--strict", help="On the full release (191 clips), exit 1 when any count differs from Table 6; "
        "with --assets, exit 2 (nothing written) when a draft is older than its manifest."
    ),
    assets: Optional[Path] = typer.Option(  # noqa: UP007 - typer needs Optional here
        None, "--assets", help="Assets folder of the drafts: warn (with --strict refuse) for drafts older than their manifest."
    ),
    lenient: LenientOption = False,
) -> None:
    """Build instance sets and compare their sizes with the paper's Table 6.

    Data with content errors is refused (file, line, clip, row and field); --lenient leaves out the
    instances whose gold is invalid, names them, and writes them to DIR/left_out.jsonl."""
    from rich.console import Console

    from rescue_bench.cli.annotate import warn_stale
    from rescue_bench.tasks.build import instance_counts, is_full_release

    clips, instances, left_out = _load_and_build(data, tasks, mode, context, repair_mojibake, lenient)
    if assets is not None:
        if not assets.is_dir():
            raise fail(f"--assets {assets}: no such folder")
        warn_stale(assets, clips, strict=strict)

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fail(f"cannot create {out}: {exc.strerror or exc}") from None
    console = Console()
    for task, items in instances.items():
        path = out / f"{task}.jsonl"
        _write_jsonl(path, (inst.model_dump(mode="json") for inst in items))
        console.print(f"wrote {len(items)} {task.upper()} instances to {path}", highlight=False, soft_wrap=True, markup=False)
    if lenient:
        _write_left_out(out, left_out)

    rows = instance_counts(instances)
    full = is_full_release(clips)
    console.print(count_table(rows, full_release=full, n_clips=len(clips)))
    mismatches = [r for r in rows if not r.matches]
    if not full:
        if strict:
            console.print(f"--strict: not the full release ({len(clips)} clips, not 191); Table 6 not enforced")
        return
    if mismatches:
        console.print(
            f"[bold red]{len(mismatches)} of {len(rows)} counts differ from Table 6[/bold red]", highlight=False
        )
        if strict:
            raise typer.Exit(EXIT_CHECK_FAILED)
    else:
        console.print("[green]all counts match Table 6[/green]")


@command(app, "export")
def export(
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write <task>.jsonl chat examples into (created if needed)."),
    export_format: str = typer.Option("chat", "--format", help="Export format; only 'chat' for now."),
    data: DataOption = None,
    tasks: TasksOption = "all",
    mode: ModeOption = "dialogue",
    context: ContextOption = None,
    folds: int = typer.Option(
        5, "--folds", help="Number of clip-grouped folds; 'fold' = stable hash of the clip id mod this."
    ),
    repair_mojibake: RepairOption = False,
    lenient: LenientOption = False,
) -> None:
    """Export instances as chat examples (prompt + gold answer in the answer contract), with clip folds.

    Each line of DIR/<task>.jsonl is {"id", "task", "sample_id", "scenario", "fold", "messages"}: the system and user messages 'rescue eval' sends, then the gold as the assistant's JSON answer (for RPP/STP/SSP a ranking holding the single known gold label).

    All instances of a clip share a fold in every task, so training on folds != k never sees a clip of test fold k.
    """
    from rescue_bench.prompts.export import FORMATS, chat_examples

    fmt = export_format.strip().lower()
    if fmt not in FORMATS:
        raise fail(f"unknown format {export_format!r}; expected one of {', '.join(FORMATS)}")
    if folds < 2:
        raise fail(f"--folds must be at least 2, got {folds}")
    _, instances, left_out = _load_and_build(data, tasks, mode, context, repair_mojibake, lenient)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fail(f"cannot create {out}: {exc.strerror or exc}") from None
    if lenient:
        _write_left_out(out, left_out)
    for task, items in instances.items():
        examples = chat_examples(items, folds=folds)
        path = out / f"{task}.jsonl"
        _write_jsonl(path, examples)
        per_fold = [sum(1 for e in examples if e["fold"] == k) for k in range(folds)]
        typer.echo(
            f"wrote {len(examples)} {task.upper()} chat examples to {path} "
            f"(per fold: {' '.join(map(str, per_fold))})"
        )


def _write_left_out(out: Path, left_out: dict[str, list[LeftOut]]) -> None:
    """``--lenient``: ``out/left_out.jsonl`` (every instance left out, with its task) and the console's count."""
    listing = out / "left_out.jsonl"
    _write_jsonl(listing, ({"task": item.task, **item.to_json()} for items in left_out.values() for item in items))
    print_left_out(left_out, str(listing))


def _write_jsonl(path: Path, records: Iterable[Any]) -> None:
    """One JSON object per line, whole or not at all: a write that fails half-way (a full disk)
    leaves the file from an earlier run as it was, and is one line, exit 2."""
    from rescue_bench.fileio import atomic_write_jsonl

    try:
        atomic_write_jsonl(path, records)
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}") from None


def _load_and_build(
    data: Optional[list[Path]], tasks: str, mode: str, context: Optional[int], repair_mojibake: bool, lenient: bool  # noqa: UP007
) -> tuple[list[Clip], dict[str, list[Instance]], dict[str, list[LeftOut]]]:
    """Check the shared options, load the clips held to the data layer's rules and build the
    instances (bad input exits 2; with ``lenient`` the instances whose gold is invalid are left out
    and returned apart, and the other errors are let through as warnings)."""
    from rescue_bench.tasks.build import Built, build_checked
    from rescue_bench.tasks.options import BuildOptions

    selected = check_tasks(tasks)
    options = BuildOptions.for_run(check_mode(mode), check_context(context))
    loaded = load_checked_data(data, repair_mojibake, lenient=lenient)
    built: dict[str, Built] = {task: build_checked(loaded.clips, task, options) for task in selected}
    left_out = {task: b.left_out for task, b in built.items()}
    named = {(item.sample_id, item.row, item.field) for items in left_out.values() for item in items}
    print_let_through([p for p in loaded.problems if (p.sample_id, p.row_index, p.field) not in named])
    return loaded.clips, {task: b.instances for task, b in built.items()}, left_out
