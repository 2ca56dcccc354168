"""The assets folder: segment videos, row clips, keyframes and subtitle cues, served safely.

Layout (defined by the pre-annotation tool, :mod:`rescue_bench.annotate.manifest`, whose manifest
model this module reads)::

    ASSETS/<segment_id>/manifest.json        {segment_id, scenario, participants, video, duration, cues}
    ASSETS/<video>                           the segment video (``video`` is relative to ASSETS, or null)
    ASSETS/<segment_id>/rows/<row_index>.mp4 the row's clip
    ASSETS/<segment_id>/rows/<row_index>.jpg its keyframe

Segment ids contain slashes, so these are nested folders. Anything may be missing (text-only
segments, clips not cut yet): every accessor then returns ``None`` and the pages say so.

Every path is resolved (symlinks followed) and must stay inside the resolved assets folder and be a
regular file: a ``..`` in a segment id or a manifest, or a symlink pointing outside, is refused.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue_bench.annotate.manifest import MANIFEST, AssetsError, Manifest, read_manifest, row_clip_name, row_keyframe_name

__all__ = ["Assets", "Manifest", "ManifestResult", "clip_stale", "row_number", "subtitles"]


@dataclass(frozen=True)
class ManifestResult:
    manifest: Manifest | None
    problem: str | None = None
    """Why a manifest that exists could not be read (shown on the page), else ``None``."""


@functools.lru_cache(maxsize=256)
def _read_manifest(path: str, _mtime_ns: int, _size: int) -> ManifestResult:
    """The manifest at ``path`` (the one model of ``rescue annotate``), cached while the file is unchanged."""
    try:
        return ManifestResult(read_manifest(path))
    except AssetsError as exc:
        return ManifestResult(None, str(exc).replace(path, MANIFEST, 1))


class Assets:
    """Read-only access to an assets folder (or to none: every lookup then finds nothing)."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root).expanduser().resolve() if root else None

    def safe_file(self, *parts: str) -> Path | None:
        """``ASSETS/<parts...>`` if it is a regular file inside the assets folder, else ``None``."""
        if self.root is None or not all(parts):
            return None
        try:
            candidate = self.root.joinpath(*parts).resolve(strict=True)
        except (OSError, RuntimeError, ValueError):  # missing, symlink loop, NUL byte
            return None
        if not candidate.is_relative_to(self.root) or not candidate.is_file():
            return None
        return candidate

    def manifest(self, segment_id: str) -> ManifestResult:
        path = self.safe_file(segment_id, MANIFEST)
        if path is None:
            return ManifestResult(None)
        stat = path.stat()
        return _read_manifest(str(path), stat.st_mtime_ns, stat.st_size)

    def video(self, segment_id: str) -> Path | None:
        manifest = self.manifest(segment_id).manifest
        if manifest is None or not manifest.video:
            return None
        return self.safe_file(manifest.video)

    def row_clip(self, segment_id: str, row_index: int) -> Path | None:
        return self.safe_file(row_clip_name(segment_id, row_index))

    def row_keyframe(self, segment_id: str, row_index: int) -> Path | None:
        return self.safe_file(row_keyframe_name(segment_id, row_index))


def row_number(row: dict[str, Any], position: int) -> int:
    """The number a row's clip is named by: its ``row_index`` when it has one, else its position."""
    value = row.get("row_index")
    return value if isinstance(value, int) and not isinstance(value, bool) else position


def _time(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def times_changed(row: dict[str, Any], draft: dict[str, Any]) -> bool:
    """The row's start or end time differs from the imported draft's, which its clip was cut for."""
    return any(_time(row.get(k)) != _time(draft.get(k)) for k in ("start_time", "end_time"))


def clip_stale(assets: Assets, segment_id: str, position: int, row: dict[str, Any], draft: dict[str, Any]) -> bool:
    """The row has a clip in the assets folder and its times were edited since the clip was cut (the
    page marks the clip; ``rescue annotate clips --data`` on the export cuts it again)."""
    return times_changed(row, draft) and assets.row_clip(segment_id, row_number(draft, position)) is not None


@dataclass(frozen=True)
class RowText:
    """What the subtitles panel reads of a row: its times, speaker and ``dialogue_cleaned``."""

    start: float | None
    end: float | None
    speaker: str
    dialogue: str | None

    @classmethod
    def of(cls, row: dict[str, Any]) -> RowText:
        """A stored row's (release-format JSON) times, speaker and dialogue."""
        text = row.get("dialogue_cleaned")
        return cls(_time(row.get("start_time")), _time(row.get("end_time")), row.get("primary_speaker") or "", text if isinstance(text, str) else None)


NO_TEXT = RowText(None, None, "", None)
"""A row the caller did not read (shown with no times, no speaker and no subtitles)."""


@dataclass(frozen=True)
class SubtitleLine:
    speaker: str
    text: str
    start: float | None
    end: float | None


@dataclass(frozen=True)
class RowSubtitles:
    """One row of the subtitles panel (``source``: ``cues`` of the manifest, or the row's ``dialogue``)."""

    position: int
    current: bool
    speaker: str
    start: float | None
    end: float | None
    lines: list[SubtitleLine]
    source: str


def subtitles(rows: Sequence[RowText | None], position: int, manifest: Manifest | None, *, neighbours: int = 1) -> list[RowSubtitles]:
    """The subtitles of the row at ``position`` and of ``neighbours`` rows on each side (``rows``: the
    segment's rows by position, ``None`` for one not read).

    With a manifest that has cues: those overlapping each row's ``[start_time, end_time]``. Without
    one (or without cues, or for a row without times): the row's ``dialogue_cleaned``.
    """
    out = []
    for pos in range(max(1, position - neighbours), min(len(rows), position + neighbours) + 1):
        row = rows[pos - 1] or NO_TEXT
        start, end, speaker = row.start, row.end, row.speaker
        lines: list[SubtitleLine] = []
        source = "dialogue"
        if manifest is not None and manifest.cues and start is not None and end is not None:
            source = "cues"
            for cue in manifest.cues:
                if cue.start < end and cue.end > start:
                    lines.append(SubtitleLine(cue.speaker or "", cue.text, cue.start, cue.end))
        if source == "dialogue":
            text = row.dialogue
            if text is not None and text.strip():
                lines.append(SubtitleLine(speaker, text, start, end))
        out.append(RowSubtitles(pos, pos == position, speaker, start, end, lines, source))
    return out
