"""``rescue annotate``: pre-annotation, from video segments and subtitles to draft clips.

``prepare`` checks a folder of segments and writes an assets folder of manifests; ``draft`` has a
model draft every segment as a release-format clip (inspect_ai underneath: any provider, cache,
resume); ``clips`` cuts each row's video clip and keyframe for the review app and
``rescue eval --mode video``. Bad input is one line per problem and exit 2, never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rescue_bench.cli._common import (
    DEFAULT_RUN,
    RunOptions,
    command,
    data_error_exit,
    fail,
    print_dry_run,
    print_usage,
    run_options,
    setting,
    settings_values,
)
from rescue_bench.engine.settings import DRAFTER_MAX_TOKENS, RunSettings

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _group() -> None:
    """Pre-annotation: subtitles and video segments to draft clips in the release format."""


def _problems(problems: list) -> typer.Exit:  # noqa: ANN001 - list of rescue_bench.data.Problem
    """One line per problem on stderr, exit 2 (the data layer's convention)."""
    return data_error_exit(problems)


@command(app, "prepare")
def prepare_command(
    src_dir: Path = typer.Argument(..., help="Folder of segments: <segment>.<mp4|mkv|webm|mov> with <segment>.srt or .vtt beside it (and optionally <segment>.json)."),
    out: Path = typer.Option(..., "--out", "-o", help="Assets folder to write (ASSETS/<segment>/manifest.json and the video)."),
    scenario: Optional[str] = typer.Option(None, "--scenario", help="couple or family, for segments without a <segment>.json that says."),
    participants: Optional[str] = typer.Option(None, "--participants", help='Client names, comma-separated ("A,B"); default: the subtitles\' speakers.'),
    link: bool = typer.Option(False, "--link", help="Hard-link the videos into ASSETS instead of copying them (then never rewrite a source video in place)."),
    overlap_tolerance: Optional[float] = typer.Option(
        None, "--overlap-tolerance", min=0.0, show_default=False,
        help="Seconds a cue may run into the next and be trimmed (reported) instead of refused. Default: one frame at 25 fps (0.04).",
    ),
) -> None:
    """Check every segment, then write one manifest per segment (nothing is written if any is bad)."""
    from rich.console import Console
    from rich.table import Table

    from rescue_bench.annotate.prepare import PrepareError, prepare
    from rescue_bench.annotate.subtitles import OVERLAP_TOLERANCE

    names = [p.strip() for p in participants.split(",")] if participants is not None else None
    if overlap_tolerance is None:
        overlap_tolerance = OVERLAP_TOLERANCE
    try:
        result = prepare(src_dir, out, scenario=scenario, participants=names, link=link, overlap_tolerance=overlap_tolerance)
    except PrepareError as exc:
        raise _problems(exc.problems) from None
    console = Console()
    table = Table(title=f"Segments in {out}", title_justify="left")
    for col in ("segment", "scenario", "participants", "cues", "seconds", "video", "status"):
        table.add_column(col, justify="right" if col in ("cues", "seconds") else "left")
    for seg in result.segments:
        m = seg.manifest
        table.add_row(m.segment_id, m.scenario, ", ".join(m.participants), str(len(m.cues)), f"{m.duration:.1f}",
                      "yes" if m.video else "none", seg.status)
    console.print(table)
    counts = {s: sum(seg.status == s for seg in result.segments) for s in ("new", "replaced", "unchanged")}
    text_only = sum(seg.manifest.video is None for seg in result.segments)
    console.print(
        f"{len(result.segments)} segments: " + ", ".join(f"{n} {s}" for s, n in counts.items())
        + (f"; {text_only} without video (subtitles only)" if text_only else ""),
        markup=False, highlight=False, soft_wrap=True,
    )
    for note in result.notes:
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)


@command(app, "draft")
@run_options("max_retries", "timeout", "cache", "seed", "display", "overwrite", "dry_run", "price_in", "price_out")
def draft_command(
    assets: Path = typer.Argument(..., help="Assets folder made by 'rescue annotate prepare'."),
    model: str = typer.Option(..., "--model", "-m", help="inspect_ai model, e.g. google/gemini-2.5-pro or openai-video/<service>/<model>."),
    media: str = typer.Option("none", "--media", help="video (the window's video), frames (keyframes, and sound where the provider takes audio) or none (subtitles only)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Drafts file (default: ASSETS/drafts.jsonl)."),
    max_connections: Optional[int] = setting(
        RunSettings, "max_connections", "--max-connections", help="Concurrent model connections (segments drafted at once)."
    ),
    limit: Optional[int] = setting(
        RunSettings, "limit", "--limit", help="Draft only the first N (by segment id) of the segments that need a draft."
    ),
    segment: Optional[list[str]] = typer.Option(None, "--segment", help="Draft exactly this segment, even when its draft is current (repeatable)."),
    window_cues: int = typer.Option(40, "--window-cues", min=1, help="Cues per request; longer segments go in windows with a carried summary."),
    temperature: float = setting(RunSettings, "temperature", "--temperature", help="Sampling temperature."),
    max_tokens: int = typer.Option(DRAFTER_MAX_TOKENS, "--max-tokens", min=1, help="Most tokens per drafter answer (sent with every call)."),
    run_dir: Optional[Path] = typer.Option(
        None, "--run-dir", help="The draft run's folder: run.json and the inspect logs (default: ASSETS/.draft-run/<model>)."
    ),
    run: RunOptions = DEFAULT_RUN,
) -> None:
    """Draft each segment that needs it (no draft yet, or one older than its manifest) as a
    release-format clip, merged into the drafts file: the other segments' clips stay as they are."""
    params = {**locals(), **run.settings_values()}  # the options, by name: those naming a settings field go to DraftSettings
    from rich.console import Console
    from rich.table import Table

    from rescue_bench.annotate.manifest import AssetsError
    from rescue_bench.annotate.media import MediaError
    from rescue_bench.engine.annotate import DraftInputError, DraftSettings, run_draft
    from rescue_bench.engine.runfolder import RunFailed
    from rescue_bench.runinfo import DraftRunInfo

    settings = DraftSettings(
        **settings_values(
            DraftSettings,
            params,
            assets=str(assets),
            out=str(out) if out else None,
            segments=list(segment) if segment else None,
            run_dir=str(run_dir) if run_dir else None,
        )
    )
    try:
        if run.dry_run:
            print_dry_run(run_draft(settings, dry_run=True), run.price_in, run.price_out)
            return
        report = run_draft(settings, display=run.display, overwrite=run.overwrite)
    except (DraftInputError, AssetsError, MediaError) as exc:
        raise fail(str(exc)) from None
    except RunFailed as exc:  # each segment without a draft on its line, then the run's one line
        segments = exc.info.segments if isinstance(exc.info, DraftRunInfo) else None
        for segment_id, error in (segments.failed if segments else {}).items():
            typer.echo(f"segment {segment_id}: no draft: {error}", err=True)
        raise
    except KeyboardInterrupt:
        raise fail("draft interrupted; run the same command again to resume (finished calls are cached)", 130) from None
    console = Console()
    if not report.segments:
        console.print(f"{len(report.kept)} segments already have a current draft in {report.out}; nothing to draft "
                      "(--segment ID redrafts one)", markup=False, highlight=False, soft_wrap=True)
        return
    why: dict[str, int] = {}
    for reason in report.reasons.values():
        why[reason] = why.get(reason, 0) + 1
    console.print(f"drafting {report.segments} segment(s): " + ", ".join(f"{n} {r}" for r, n in why.items())
                  + (f"; {len(report.kept)} with a current draft kept as they are" if report.kept else ""),
                  markup=False, highlight=False, soft_wrap=True)
    sent = "subtitles only" if media == "none" else f"subtitles and {media}"
    table = Table(title=f"Drafts of {model} ({sent})", title_justify="left")
    for col in ("segments", "written", "windows", "calls", "re-asks", "rows", "problems kept", "input tokens", "output tokens"):
        table.add_column(col, justify="right")
    table.add_row(str(report.segments), str(len(report.written)), str(report.windows), str(report.calls), str(report.reasked),
                  str(report.rows), str(report.problems), str(report.input_tokens), str(report.output_tokens))
    console.print(table)
    if report.info is not None:
        print_usage(report.info)
    if report.written:
        console.print(f"Drafts in {report.out} (check with: rescue data validate {report.out})", markup=False, highlight=False)


def warn_stale(assets: Path, clips: list, *, strict: bool) -> None:  # noqa: ANN001 - list of rescue_bench.data.Clip
    """Name every draft older than its manifest in ``assets`` on stderr: a warning, or with
    ``strict`` an error and exit 2 (before anything is written)."""
    from rescue_bench.annotate.freshness import stale_drafts

    stale = stale_drafts(assets, clips)
    for item in stale:
        typer.echo(f"{'error' if strict else 'warning'}: {item.line(assets)}", err=True)
    if stale and strict:
        typer.echo(f"error: --strict: {len(stale)} draft(s) older than their manifest; nothing was written", err=True)
        raise typer.Exit(2)


@command(app, "clips")
def clips_command(
    assets: Path = typer.Argument(..., help="Assets folder made by 'rescue annotate prepare'."),
    data: Optional[list[Path]] = typer.Option(None, "--data", "-d", help="Clips whose rows to cut (release format; default: ASSETS/drafts.jsonl). Repeatable."),
    strict: bool = typer.Option(False, "--strict", help="Refuse (exit 2, nothing cut) when a draft is older than its manifest; default: warn."),
) -> None:
    """Cut each row's clip (ASSETS/<segment>/rows/<row>.mp4) and keyframe (.jpg); only what changed."""
    from rich.console import Console
    from rich.progress import Progress

    from rescue_bench.annotate.clips import cut_rows, plan
    from rescue_bench.annotate.media import MediaError
    from rescue_bench.data.load import read_paths
    from rescue_bench.engine.annotate import DEFAULT_OUT

    paths = data or [assets / DEFAULT_OUT]
    if not assets.is_dir():
        raise fail(f"{assets}: no such assets folder")
    loaded = read_paths(paths)
    if loaded.errors:
        raise _problems(loaded.errors)
    warn_stale(assets, loaded.clips, strict=strict)
    plans, problems = plan(assets, loaded.clips, loaded.locations)
    if problems:
        raise _problems(problems)
    total = sum(len(p.jobs) for p in plans)
    console = Console(stderr=True)
    try:
        with Progress(console=console, transient=True) as progress:
            bar = progress.add_task("cutting row clips", total=total)
            result = cut_rows(assets, plans, on_row=lambda job, was_cut: progress.advance(bar))
    except MediaError as exc:
        raise fail(str(exc)) from None
    out = Console()
    out.print(f"{result.rows} rows: {result.cut} clips cut, {result.unchanged} unchanged, {result.removed} stale clips removed",
              markup=False, highlight=False)
    if result.subtitles_only:
        out.print(f"note: no video, so no clips, for {len(result.subtitles_only)} segment(s): {', '.join(result.subtitles_only)}",
                  markup=False, highlight=False)
