"""``rescue annotate clips``: each row's video clip and keyframe, for the review app and the video mode.

For every row of every clip in the data (drafts or reviewed clips; ``sample_id`` = segment id) this
writes ``ASSETS/<segment>/rows/<row_index>.mp4`` (the row's span, H.264 + AAC, faststart) and
``<row_index>.jpg`` (the frame at the middle of the row). ``rows/clips.json`` records the span and
the source video each clip was cut from, so running the command again cuts only rows whose times
changed (after a review) and removes clips of rows that no longer exist: it is idempotent.

The data are checked first; a row without times, with reversed times, or outside its video, and a
clip whose segment is not in ASSETS, stop the command before anything is cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rescue_bench.annotate.manifest import ROWS_DIR, AssetsError, Manifest, file_sha256, read_manifest, row_clip, row_keyframe
from rescue_bench.annotate.media import cut, keyframe
from rescue_bench.data.load import Problem
from rescue_bench.data.models import Clip
from rescue_bench.fileio import atomic_write, dumps, loads

SIDECAR = "clips.json"
SPAN_TOLERANCE = 0.05
"""Seconds a row may end after its video (rounding of subtitle times); the cut stops at the video's end."""
CLIP_VERSION = 2
"""Bumped when the way clips are cut changes, so existing clips are cut again (2: the source video
is known by its content hash, not its size and time stamp)."""


@dataclass(frozen=True)
class RowJob:
    """One row to cut."""

    segment_id: str
    row_index: int
    start: float
    end: float
    video: Path


@dataclass
class SegmentPlan:
    manifest: Manifest
    jobs: list[RowJob] = field(default_factory=list)


@dataclass
class ClipsResult:
    cut: int = 0
    unchanged: int = 0
    removed: int = 0
    subtitles_only: list[str] = field(default_factory=list)
    """Segments without video: their rows get no clips."""
    rows: int = 0


def _video_sha256(manifest: Manifest, video: Path) -> str:
    """The source video by content: the manifest's hash (prepare computed it), else the file's."""
    return manifest.video_sha256 or file_sha256(video)


def plan(assets: str | Path, clips: Sequence[Clip], files: Sequence[tuple[str, int | None]] | None = None) -> tuple[list[SegmentPlan], list[Problem]]:
    """The rows to cut per segment, and every problem (a non-empty list means: cut nothing)."""
    assets = Path(assets)
    plans: list[SegmentPlan] = []
    problems: list[Problem] = []
    for i, clip in enumerate(clips):
        file, line = files[i] if files else ("(data)", None)
        sid = clip.sample_id
        path = assets / sid / "manifest.json"
        if not path.exists():
            problems.append(Problem(file, f"no segment {sid!r} in {assets} (expected {path})", line, sid))
            continue
        try:
            manifest = read_manifest(path)
        except AssetsError as exc:
            problems.append(Problem(file, str(exc), line, sid))
            continue
        segment = SegmentPlan(manifest)
        plans.append(segment)
        video = manifest.video_path(assets)
        if video is not None and not video.exists():
            problems.append(Problem(str(path), f"the segment's video {video} is missing", None, sid, field="video"))
            continue
        for position, row in enumerate(clip.rows, 1):
            index = row.row_index if row.row_index is not None else position
            if row.start_time is None or row.end_time is None:
                problems.append(Problem(file, "row has no start_time/end_time to cut", line, sid, index, "start_time"))
                continue
            start, end = float(row.start_time), float(row.end_time)
            if end <= start:
                problems.append(Problem(file, f"end_time {end} is not after start_time {start}", line, sid, index, "end_time"))
                continue
            if video is None:
                continue
            if start < 0 or end > manifest.duration + SPAN_TOLERANCE:
                problems.append(Problem(file, f"row {start:.2f}-{end:.2f} s lies outside the video (0-{manifest.duration:.2f} s)", line, sid, index, "end_time"))
                continue
            segment.jobs.append(RowJob(sid, index, start, min(end, manifest.duration), video))
    return plans, problems


def _read_sidecar(folder: Path) -> dict[str, Any]:
    try:
        data = loads((folder / SIDECAR).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_sidecar(folder: Path, data: dict[str, Any]) -> None:
    atomic_write(folder / SIDECAR, dumps(data, indent=1, sort_keys=True) + "\n")


def cut_rows(assets: str | Path, plans: Sequence[SegmentPlan], *, on_row: Callable[[RowJob, bool], None] | None = None) -> ClipsResult:
    """Cut what is missing or out of date; ``on_row(job, was_cut)`` is called for every row."""
    assets = Path(assets)
    result = ClipsResult()
    for segment in plans:
        manifest = segment.manifest
        video = manifest.video_path(assets)
        if video is None:
            result.subtitles_only.append(manifest.segment_id)
            continue
        folder = manifest.folder(assets) / ROWS_DIR
        old = _read_sidecar(folder)
        source = {"video": manifest.video, "sha256": _video_sha256(manifest, video), "version": CLIP_VERSION}
        same_source = {k: old.get(k) for k in source} == source
        spans = old.get("rows", {}) if same_source else {}
        new_spans: dict[str, list[float]] = {}
        for job in segment.jobs:
            result.rows += 1
            key = str(job.row_index)
            clip_path = row_clip(assets, job.segment_id, job.row_index)
            frame_path = row_keyframe(assets, job.segment_id, job.row_index)
            current = spans.get(key) == [job.start, job.end] and clip_path.exists() and frame_path.exists()
            if not current:
                cut(job.video, job.start, job.end, clip_path)
                keyframe(job.video, (job.start + job.end) / 2, frame_path)
                result.cut += 1
            else:
                result.unchanged += 1
            new_spans[key] = [job.start, job.end]
            if on_row is not None:
                on_row(job, not current)
        if folder.exists():
            for path in sorted(folder.iterdir()):
                if path.suffix in (".mp4", ".jpg") and path.stem.isdigit() and path.stem not in new_spans:
                    path.unlink()
                    result.removed += path.suffix == ".mp4"
        _write_sidecar(folder, {**source, "rows": new_spans})
    return result
