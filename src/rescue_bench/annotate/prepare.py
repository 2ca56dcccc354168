"""``rescue annotate prepare``: a folder of segments (video + subtitles) to an assets folder of manifests.

``SRC_DIR`` holds ``<segment>.<mp4|mkv|webm|mov>`` with ``<segment>.srt`` or ``<segment>.vtt`` beside
it and optionally ``<segment>.json`` (``{"scenario": ..., "participants": [...]}``, overriding the
command's flags). Segments may sit in sub-folders; the segment id is the path below ``SRC_DIR``
without the suffix. Subtitles without a video make a subtitles-only segment.

All segments are read and checked before anything is written: one bad segment (no subtitles,
unreadable video, reversed or overlapping cue times, a video shorter than its subtitles, bad
metadata) stops the command with one line per problem and leaves ``ASSETS`` as it was. Each
segment is then staged in a temporary folder inside ``ASSETS`` and renamed into place.

A segment is compared with what ``ASSETS`` holds by content (the SHA-256 of its video and
subtitles, recorded in the manifest), never by file times: a copy of the source folder with new
time stamps is "unchanged". A segment whose video is the same but whose manifest changed (edited
subtitles, other participants) gets its new manifest written in place, so its row clips and draft
media stay; only a new video replaces the whole segment folder.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rescue_bench.annotate.manifest import MANIFEST, Manifest, ManifestCue, file_sha256
from rescue_bench.annotate.media import VIDEO_SUFFIXES, MediaError, atomic_path, probe
from rescue_bench.annotate.subtitles import (
    OVERLAP_TOLERANCE,
    SUBTITLE_SUFFIXES,
    Cue,
    SubtitleError,
    infer_names,
    read_subtitle_file,
    resolve_name,
)
from rescue_bench.data.load import Problem
from rescue_bench.errors import RescueError
from rescue_bench.fileio import atomic_write, loads, replace_folder
from rescue_bench.labels import GROUP_LABELS, NON_CLIENT_SPEAKERS, SCENARIOS, THERAPIST

END_TOLERANCE = 0.5
"""Seconds a last cue may run past the end of its video. Subtitle tools often end the last cue a few
frames after the video; such ends are clamped to the video's duration (and reported). More than
this is the error "video shorter than its subtitles"."""

METADATA_KEYS = ("scenario", "participants")


class PrepareError(RescueError):
    """Raised by :func:`prepare` with every problem found; nothing was written."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(str(problems[0]) if problems else "bad input")


@dataclass
class SegmentSource:
    """The files of one segment in ``SRC_DIR``."""

    segment_id: str
    subtitles: list[Path] = field(default_factory=list)
    videos: list[Path] = field(default_factory=list)
    metadata: Path | None = None


@dataclass
class Prepared:
    """One segment written (or found unchanged) by :func:`prepare`."""

    segment_id: str
    status: str
    """``new``, ``replaced`` or ``unchanged``."""
    manifest: Manifest


@dataclass
class PrepareResult:
    segments: list[Prepared] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Things worth a look that are not errors (unknown speakers, clamped cue ends, ignored files)."""


def discover(src_dir: Path, exclude: Path | None = None) -> tuple[list[SegmentSource], list[str]]:
    """Segments under ``src_dir`` by path without suffix, and notes about ignored files.

    Hidden files and folders, and ``exclude`` (an output folder inside ``src_dir``), are skipped.
    """
    by_id: dict[str, SegmentSource] = {}
    ignored: list[str] = []
    for path in sorted(src_dir.rglob("*")):
        rel = path.relative_to(src_dir)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if exclude is not None and (path == exclude or exclude in path.parents):
            continue
        suffix = path.suffix.lower()
        segment_id = rel.with_suffix("").as_posix()
        if suffix in SUBTITLE_SUFFIXES:
            by_id.setdefault(segment_id, SegmentSource(segment_id)).subtitles.append(path)
        elif suffix in VIDEO_SUFFIXES:
            by_id.setdefault(segment_id, SegmentSource(segment_id)).videos.append(path)
        elif suffix == ".json":
            by_id.setdefault(segment_id, SegmentSource(segment_id)).metadata = path
        else:
            ignored.append(rel.as_posix())
    notes = [f"ignored {len(ignored)} file(s) that are neither video, subtitles nor metadata: {', '.join(ignored[:5])}"
             + (" ..." if len(ignored) > 5 else "")] if ignored else []
    return [by_id[k] for k in sorted(by_id)], notes


def _read_metadata(path: Path, segment_id: str) -> tuple[dict, list[Problem]]:
    file = str(path)
    try:
        raw = loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return {}, [Problem(file, f"cannot read file: {exc.strerror or exc}", sample_id=segment_id)]
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN/Infinity
        return {}, [Problem(file, f"not valid JSON: {exc}", sample_id=segment_id)]
    if not isinstance(raw, dict):
        return {}, [Problem(file, "expected a JSON object with scenario and participants", sample_id=segment_id)]
    problems = []
    for key in raw:
        if key not in METADATA_KEYS:
            problems.append(Problem(file, f"unknown key {key!r} (expected {', '.join(METADATA_KEYS)})", sample_id=segment_id, field=key))
    if "scenario" in raw and raw["scenario"] not in SCENARIOS:
        problems.append(Problem(file, f"scenario must be couple or family (got {raw['scenario']!r})", sample_id=segment_id, field="scenario"))
    if "participants" in raw:
        value = raw["participants"]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(Problem(file, "participants must be a list of names", sample_id=segment_id, field="participants"))
    return raw, problems


def check_participants(names: Iterable[str], scenario: str) -> str | None:
    """Why ``names`` cannot be a segment's participants, or ``None`` when they can."""
    seen: set[str] = set()
    for name in names:
        if not name.strip():
            return "a participant name is empty"
        if name.strip() in NON_CLIENT_SPEAKERS or name.strip().casefold() in {n.casefold() for n in NON_CLIENT_SPEAKERS}:
            return f"participant {name!r} is the therapist or a group label, not a client"
        if name.casefold() in seen:
            return f"participant {name!r} is listed twice"
        seen.add(name.casefold())
    return None


def _speakers(cues: list[Cue], participants: list[str], scenario: str) -> tuple[list[ManifestCue], dict[str, list[int]], list[int]]:
    """Manifest cues with speakers in canonical spelling; unknown names (kept as written) and mixed cues."""
    unknown: dict[str, list[int]] = {}
    mixed: list[int] = []
    out = []
    for cue in cues:
        speaker = cue.speaker
        if speaker is not None:
            known = resolve_name(speaker, participants, scenario)
            if known is None:
                unknown.setdefault(speaker, []).append(cue.cue)
            else:
                speaker = known
        if len(cue.speakers) > 1:
            mixed.append(cue.cue)
        out.append(ManifestCue(cue=cue.cue, start=cue.start, end=cue.end, speaker=speaker, text=cue.text))
    return out, unknown, mixed


def build_manifest(
    source: SegmentSource,
    assets: Path,
    scenario: str | None,
    participants: list[str] | None,
    overlap_tolerance: float = OVERLAP_TOLERANCE,
) -> tuple[Manifest | None, Path | None, list[Problem], list[str]]:
    """The manifest of one segment, the video to place beside it, problems and notes."""
    sid = source.segment_id
    problems: list[Problem] = []
    notes: list[str] = []
    if not source.subtitles:
        first = next((p for p in (*source.videos, source.metadata) if p is not None), Path(sid))
        return None, None, [Problem(str(first), f"no subtitles: expected {sid}.srt or {sid}.vtt beside it", sample_id=sid)], notes
    if len(source.subtitles) > 1:
        names = ", ".join(p.name for p in source.subtitles)
        return None, None, [Problem(str(source.subtitles[0]), f"several subtitle files for one segment ({names}); keep one", sample_id=sid)], notes
    if len(source.videos) > 1:
        names = ", ".join(p.name for p in source.videos)
        return None, None, [Problem(str(source.videos[0]), f"several videos for one segment ({names}); keep one", sample_id=sid)], notes
    meta: dict = {}
    if source.metadata is not None:
        meta, problems = _read_metadata(source.metadata, sid)
        if problems:
            return None, None, problems, notes
    scenario = meta.get("scenario", scenario)
    if scenario is None:
        where = str(source.metadata or source.subtitles[0])
        return None, None, [Problem(where, f"no scenario: pass --scenario or put it in {sid}.json", sample_id=sid, field="scenario")], notes
    subs = source.subtitles[0]
    given = meta.get("participants", participants)
    try:
        read = read_subtitle_file(subs, participants=given, scenario=scenario, overlap_tolerance=overlap_tolerance)
    except SubtitleError as exc:
        return None, None, [Problem(exc.file, (f"cue {exc.cue}: " if exc.cue else "") + exc.reason, exc.line, sid)], notes
    cues = read.cues
    notes.extend(f"{sid}: {note}" for note in read.notes)
    if given is None:
        given = infer_names(cues, scenario)
        notes.append(f"{sid}: participants inferred from the subtitles' speakers: {', '.join(given) or '(none)'}")
    else:
        given = [p.strip() for p in given]
        reason = check_participants(given, scenario)
        if reason:
            where = str(source.metadata) if "participants" in meta else str(subs)
            return None, None, [Problem(where, reason, sample_id=sid, field="participants")], notes
    manifest_cues, unknown, mixed = _speakers(cues, given, scenario)
    for name, numbers in unknown.items():
        group = GROUP_LABELS[scenario]
        notes.append(
            f"{sid}: unknown speaker {name!r} in cue(s) {', '.join(map(str, numbers[:8]))}{' ...' if len(numbers) > 8 else ''} "
            f"(not a participant, {THERAPIST} or {group}); kept as written"
        )
    if mixed:
        notes.append(f"{sid}: cue(s) {', '.join(map(str, mixed[:8]))} name more than one speaker; the first is the cue's speaker")
    video_src = source.videos[0] if source.videos else None
    duration = manifest_cues[-1].end
    video_rel = None
    if video_src is not None:
        try:
            info = probe(video_src)
        except MediaError as exc:
            return None, None, [Problem(str(video_src), str(exc).split(": ", 1)[-1], sample_id=sid)], notes
        if not info.has_video:
            return None, None, [Problem(str(video_src), "unreadable video (no video stream)", sample_id=sid)], notes
        last = manifest_cues[-1]
        if last.end > info.duration + END_TOLERANCE:
            return None, None, [Problem(
                str(video_src),
                f"video is shorter ({info.duration:.2f} s) than its subtitles (cue {last.cue} ends at {last.end:.2f} s in {subs.name})",
                sample_id=sid,
            )], notes
        clamped = [c.cue for c in manifest_cues if c.end > info.duration]
        for cue in manifest_cues:
            if cue.end > info.duration:
                cue.end = info.duration
                cue.start = min(cue.start, info.duration)
        if clamped:
            notes.append(f"{sid}: cue(s) {', '.join(map(str, clamped))} end up to {END_TOLERANCE} s after the video; clamped to its end {info.duration:.2f} s")
        if any(c.end <= c.start for c in manifest_cues):
            bad = next(c for c in manifest_cues if c.end <= c.start)
            return None, None, [Problem(str(subs), f"cue {bad.cue} starts after the video ends ({info.duration:.2f} s)", sample_id=sid)], notes
        duration = info.duration
        video_rel = f"{sid}/video{video_src.suffix.lower()}"
    try:
        video_sha = file_sha256(video_src) if video_src is not None else None
        subtitles_sha = file_sha256(subs)
    except OSError as exc:
        return None, None, [Problem(str(video_src or subs), f"cannot read file: {exc.strerror or exc}", sample_id=sid)], notes
    manifest = Manifest(
        segment_id=sid,
        scenario=scenario,
        participants=given,
        video=video_rel,
        video_sha256=video_sha,
        subtitles_sha256=subtitles_sha,
        duration=round(float(duration), 3),
        cues=manifest_cues,
    )
    return manifest, video_src, [], notes


def _place_video(src: Path, dest: Path, link: bool) -> None:
    """A copy (keeping the time stamp), or with ``link`` a hard link where the file system allows.

    Copying is the default: a hard-linked asset changes with its source when the source is rewritten
    in place, behind the back of the clips and reviews made from it. The copy goes through
    :func:`rescue_bench.fileio.atomic_path` (fsynced before the staged folder is renamed into place),
    so a crash cannot leave a whole manifest beside a video cut short.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    if link:
        try:
            os.link(src, dest)
            return
        except OSError:
            pass
    with atomic_path(dest) as tmp:
        shutil.copy2(src, tmp)


def _video_in_place(final: Path, manifest: Manifest, video_src: Path | None, assets: Path) -> bool:
    """Whether ``ASSETS`` already holds this segment's video (same place, same bytes), or, for a
    subtitles-only segment, held no video before either. Compared by content, not time stamps."""
    try:
        old = loads((final / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(old, dict) or old.get("video") != manifest.video:
        return False
    video = manifest.video_path(assets)
    if video_src is None or video is None:
        return video_src is None and video is None
    try:
        if os.path.samefile(video_src, video):
            return True
        if video.stat().st_size != video_src.stat().st_size:
            return False
        return file_sha256(video) == manifest.video_sha256
    except OSError:
        return False


def _manifest_text(final: Path) -> str | None:
    try:
        return (final / MANIFEST).read_text(encoding="utf-8")
    except OSError:
        return None


def prepare(
    src_dir: str | Path,
    assets: str | Path,
    *,
    scenario: str | None = None,
    participants: list[str] | None = None,
    link: bool = False,
    overlap_tolerance: float = OVERLAP_TOLERANCE,
) -> PrepareResult:
    """Check every segment of ``src_dir``, then write their manifests and videos into ``assets``.

    Cue overlaps of at most ``overlap_tolerance`` seconds are trimmed and reported in the notes.

    Videos are copied, or hard-linked with ``link`` (no second copy of a large collection). Raises :class:`PrepareError` (nothing written) when any segment has a problem.
    """
    src_dir, assets = Path(src_dir), Path(assets)
    if scenario is not None and scenario not in SCENARIOS:
        raise PrepareError([Problem(str(src_dir), f"--scenario must be couple or family (got {scenario!r})")])
    if participants is not None and scenario is not None:
        reason = check_participants(participants, scenario)
        if reason:
            raise PrepareError([Problem(str(src_dir), f"--participants: {reason}")])
    if not src_dir.is_dir():
        raise PrepareError([Problem(str(src_dir), "no such folder")])
    exclude = assets.resolve() if assets.resolve().is_relative_to(src_dir.resolve()) else None
    sources, notes = discover(src_dir.resolve(), exclude)
    if not sources:
        raise PrepareError([Problem(str(src_dir), "no segments: expected <segment>.srt or <segment>.vtt files, each beside its video")])
    result = PrepareResult(notes=notes)
    planned: list[tuple[Manifest, Path | None]] = []
    problems: list[Problem] = []
    ids = {s.segment_id for s in sources}
    for source in sources:  # ASSETS/<a>/ would hold ASSETS/<a/b>/: one folder cannot be both
        parent = next((i for i in ids if source.segment_id.startswith(i + "/")), None)
        if parent is not None:
            first = next((p for p in (*source.subtitles, *source.videos, source.metadata) if p is not None), Path(source.segment_id))
            problems.append(Problem(str(first), f"segment {source.segment_id!r} lies inside the folder of segment {parent!r}; rename one", sample_id=source.segment_id))
    for source in sources:
        manifest, video_src, found, seg_notes = build_manifest(source, assets, scenario, participants, overlap_tolerance)
        problems += found
        result.notes += seg_notes
        if manifest is not None:
            planned.append((manifest, video_src))
    if problems:
        raise PrepareError(problems)
    assets.mkdir(parents=True, exist_ok=True)
    staging = assets / f".staging-{uuid.uuid4().hex[:12]}"
    try:
        for manifest, video_src in planned:
            final = manifest.folder(assets)
            if final.exists() and _video_in_place(final, manifest, video_src, assets):
                if _manifest_text(final) == manifest.to_text():
                    result.segments.append(Prepared(manifest.segment_id, "unchanged", manifest))
                else:  # same video: only the manifest changes; row clips and draft media stay
                    atomic_write(final / MANIFEST, manifest.to_text())
                    result.segments.append(Prepared(manifest.segment_id, "replaced", manifest))
                continue
            staged = staging / "new" / manifest.segment_id
            staged.mkdir(parents=True)
            atomic_write(staged / MANIFEST, manifest.to_text())
            if video_src is not None and manifest.video:
                _place_video(video_src, staged / Path(manifest.video).name, link)
            status = "replaced" if final.exists() else "new"
            # the old folder moves into the staging area (deleted below), the new one in; a failed
            # move puts the old one back
            replace_folder(staged, final, aside=staging / "old" / manifest.segment_id)
            result.segments.append(Prepared(manifest.segment_id, status, manifest))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result
