"""Drafting one segment: windows, requests, checked answers, and the release-format clip they make.

:class:`SegmentDraft` holds everything about a segment's draft except the model calls, which the
engine makes (``rescue_bench.engine.annotate``)::

    draft = SegmentDraft(manifest, media="none")
    for window in draft.windows:
        system, user = draft.request(window)            # + draft.media(window, assets) for video/frames
        first = draft.check(window, <answer>)
        second = draft.check(window, <answer to reask_prompt(first.problems)>) if first.problems else None
        draft.commit(window, first, second)
    clip = draft.clip(provenance)

``commit`` keeps the re-asked answer (the first one when the re-ask is not a JSON answer at all),
turns each kept row into a release row (the tool sets ``row_index``, times and, when missing,
``dialogue_cleaned`` and the subtitles' speaker), drops what is still invalid and records it on the
row as ``draft_problems``. Cues no kept row covers become one row each, holding the subtitles only
and a ``draft_problems`` entry that says so: nothing is dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rescue_bench.annotate.contract import (
    ROW_FIELDS,
    AnswerCheck,
    CheckedRow,
    Context,
    DraftProblem,
    check_answer,
    subtitle_speaker,
)
from rescue_bench.annotate.manifest import Manifest, ManifestCue
from rescue_bench.annotate.media import MODEL_MAX_HEIGHT, atomic_path, cut, extract_audio, frames_at
from rescue_bench.annotate.prompt import MEDIA_MODES, system_prompt, user_prompt
from rescue_bench.annotate.windows import DEFAULT_WINDOW_CUES, Window, carried_rows, split_windows
from rescue_bench.data.models import Clip
from rescue_bench.data.validate import row_problems
from rescue_bench.labels import THERAPIST

FRAMES_PER_WINDOW = 4
"""Still frames sent per window with ``--media frames`` (evenly spaced over the window)."""
MODEL_VIDEO_FPS = 5
"""Frame rate of window videos sent with ``--media video`` (services sample 1-2 frames a second)."""
MEDIA_DIR = "draft-media"
"""``ASSETS/<segment>/draft-media/``: window videos, frames and sound made for the drafting model."""


@dataclass(frozen=True)
class MediaItem:
    """A media file to send with a window's request."""

    kind: Literal["video", "image", "audio"]
    path: Path
    format: str
    """``mp4`` (video), ``jpeg`` (image), ``mp3`` (audio)."""


@dataclass
class WindowRecord:
    """What happened to one window (kept on the clip's provenance)."""

    window: int
    cues: list[int]
    reasked: bool = False
    answer: str = "first"
    problems: list[str] = field(default_factory=list)
    """Problems of the kept answer that are not on any row (rejected rows, uncovered cues)."""


class SegmentDraft:
    """The draft of one segment, built window by window (see the module doc)."""

    def __init__(self, manifest: Manifest, *, media: str = "none", window_cues: int = DEFAULT_WINDOW_CUES):
        if media not in MEDIA_MODES:
            raise ValueError(f"unknown media mode {media!r}; expected one of {', '.join(MEDIA_MODES)}")
        self.manifest = manifest
        self.media_mode = media if manifest.video else "none"
        """The media mode actually used: ``none`` for a segment without video, whatever was asked."""
        self.windows = split_windows(manifest.cues, window_cues)
        self.rows: list[dict[str, Any]] = []
        self.summary: str | None = None
        self.records: list[WindowRecord] = []

    # -- requests ----------------------------------------------------------------------------------
    def context(self, window: Window) -> Context:
        m = self.manifest
        return Context(m.scenario, tuple(m.participants), window.cues, len(self.rows) + 1)

    @property
    def system(self) -> str:
        return system_prompt(self.manifest.scenario, self.media_mode)

    def request(self, window: Window, media: list[MediaItem] | None = None) -> tuple[str, str]:
        """(system, user) text of ``window``'s request; ``media`` only shapes the note about it."""
        note = None
        if media:
            kinds = {item.kind for item in media}
            bits = []
            if "video" in kinds:
                bits.append(f"the video of {window.start:.2f}-{window.end:.2f} s")
            if "image" in kinds:
                bits.append(f"{sum(i.kind == 'image' for i in media)} frames from {window.start:.2f}-{window.end:.2f} s in time order")
            if "audio" in kinds:
                bits.append("the sound of that span")
            note = "Attached: " + ", ".join(bits) + "."
        user = user_prompt(
            self.manifest.participants,
            window,
            first_row=len(self.rows) + 1,
            summary=self.summary,
            previous_rows=carried_rows(self.rows),
            media_note=note,
        )
        return self.system, user

    def media(self, window: Window, assets: str | Path, *, audio: bool = False) -> list[MediaItem]:
        """The media files for ``window`` under this draft's mode, made when missing (idempotent).

        ``video``: the window's span as a small MP4; ``frames``: :data:`FRAMES_PER_WINDOW` JPEG
        frames, plus the span's sound as MP3 when ``audio``; ``none``: nothing.
        """
        video = self.manifest.video_path(assets)
        if self.media_mode == "none" or video is None:
            return []
        folder = self.manifest.folder(assets) / MEDIA_DIR
        span = f"{window.start:.2f}-{window.end:.2f}"
        items: list[MediaItem] = []
        if self.media_mode == "video":
            path = folder / f"video-{span}.mp4"
            if not path.exists():
                cut(video, window.start, window.end, path, max_height=MODEL_MAX_HEIGHT, fps=MODEL_VIDEO_FPS)
            items.append(MediaItem("video", path, "mp4"))
            return items
        step = (window.end - window.start) / FRAMES_PER_WINDOW
        times = [round(window.start + (i + 0.5) * step, 2) for i in range(FRAMES_PER_WINDOW)]
        paths = [folder / f"frame-{t:.2f}.jpg" for t in times]
        todo = [(t, p) for t, p in zip(times, paths) if not p.exists()]
        if todo:
            folder.mkdir(parents=True, exist_ok=True)
            for (_, p), image in zip(todo, frames_at(video, [t for t, _ in todo], max_height=MODEL_MAX_HEIGHT)):
                with atomic_path(p) as tmp:
                    image.save(tmp, format="JPEG", quality=80)
        items += [MediaItem("image", p, "jpeg") for p in paths]
        if audio:
            path = folder / f"sound-{span}.mp3"
            if not path.exists():
                extract_audio(video, window.start, window.end, path)
            items.append(MediaItem("audio", path, "mp3"))
        return items

    # -- answers -----------------------------------------------------------------------------------
    def check(self, window: Window, answer: Any) -> AnswerCheck:
        """Validate an answer for ``window`` (see :func:`rescue_bench.annotate.contract.check_answer`)."""
        return check_answer(answer, self.context(window))

    def commit(self, window: Window, first: AnswerCheck, second: AnswerCheck | None = None) -> int:
        """Keep the final answer of ``window`` as release rows (:attr:`rows`); returns how many were added."""
        final = second if second is not None and second.usable else first
        record = WindowRecord(window.index + 1, window.numbers, reasked=second is not None,
                              answer="reask" if final is second else "first")
        if second is not None and not second.usable:
            record.problems.append("the re-asked answer had no rows; the first answer was kept")
        on_rows = {id(p) for row in final.rows for p in row.problems}
        # structural problems (rejected rows, uncovered cues, no rows at all) belong to no kept row
        record.problems += [p.line() for p in final.problems if id(p) not in on_rows]
        by_first: dict[int, CheckedRow | ManifestCue] = {row.cues[0]: row for row in final.rows}
        missing = set(final.missing) if final.usable else set(window.numbers)
        for cue in window.cues:
            if cue.cue in missing:
                by_first[cue.cue] = cue
        added = 0
        numbers = {c.cue: c for c in window.cues}
        reason = "no valid row from the model covered this cue" + ("" if final.usable else " (the answer had no rows)")
        for first_cue in sorted(by_first, key=window.numbers.index):
            item = by_first[first_cue]
            if isinstance(item, CheckedRow):
                row = self._row([numbers[n] for n in item.cues], item.fields, item.problems)
            else:
                row = self._row([item], {}, [DraftProblem("(row)", reason + "; this row holds the subtitles only")])
            self.rows.append(row)
            added += 1
        if final.summary:
            self.summary = final.summary
        self.records.append(record)
        return added

    def _row(self, cues: list[ManifestCue], fields: dict[str, Any], problems: list[DraftProblem]) -> dict[str, Any]:
        ctx = Context(self.manifest.scenario, tuple(self.manifest.participants), tuple(cues), len(self.rows) + 1)
        row: dict[str, Any] = {
            "row_index": len(self.rows) + 1,
            "start_time": float(cues[0].start),
            "end_time": float(cues[-1].end),
        }
        speaker = fields.get("primary_speaker")
        known: list[str] = []
        if speaker is None:
            speaker, known = subtitle_speaker(cues, ctx)
        if speaker is None:
            # every release row needs a speaker (the loader rejects rows without one), and it must be
            # a participant, the therapist or the group label: take the first known name the
            # subtitles give, else the previous row's (an unprefixed cue usually continues a turn),
            # else the therapist; a name the subtitles wrote that is none of these is never taken
            previous = self.rows[-1].get("primary_speaker") if self.rows else None
            speaker = (known[0] if known else None) or previous or THERAPIST
            source = "the subtitles' name" if known else ("the previous row's speaker" if previous else "a default")
            written = next((c.speaker for c in cues if c.speaker and c.speaker not in ctx.names), None)
            also = f"; the subtitles' {written!r} is not a participant, {THERAPIST} or {ctx.group}" if written else ""
            problems = [*problems, DraftProblem("primary_speaker", f"no valid speaker from the model or the subtitles{also}; "
                                                                   f"{speaker} ({source}) was assumed: check it")]
        row["primary_speaker"] = speaker
        for key in ROW_FIELDS:
            if key in fields and key != "primary_speaker":
                row[key] = fields[key]
        if not (row.get("dialogue_cleaned") or "").strip():
            row["dialogue_cleaned"] = " ".join(c.text for c in cues if c.text)
        ordered = {k: row[k] for k in ("row_index", "start_time", "end_time", *ROW_FIELDS) if k in row}
        problems = [*problems, *self._strict(ordered)]
        if problems:
            ordered["draft_problems"] = [p.record() for p in problems]
        return ordered

    def _strict(self, row: dict[str, Any]) -> list[DraftProblem]:
        """Hold ``row`` to the data layer's strict rules (what ``rescue data validate --strict``
        checks): a field they reject is dropped (the speaker replaced by the therapist) and named.
        The answer checks above already keep to these rules; this is the one place they are
        enforced for what the tool itself fills in."""
        m = self.manifest
        out: list[DraftProblem] = []
        for _ in range(3):  # a dropped field can only remove findings; a few passes settle it
            found = [p for p in row_problems(row, position=row["row_index"], participants=m.participants, scenario=m.scenario,
                                             strict=True, sample_id=m.segment_id) if p.severity == "error"]
            if not found:
                break
            for problem in found:
                key = re.split(r"[.\[]", problem.field or "", maxsplit=1)[0]
                if key in ("primary_speaker", "row_index", "start_time", "end_time") or key not in row:
                    if key == "primary_speaker" and row.get(key) != THERAPIST:
                        out.append(DraftProblem(key, f"the release's rules reject it ({problem.message}); {THERAPIST} was assumed: check it", value=row[key]))
                        row[key] = THERAPIST
                    continue
                out.append(DraftProblem(key, f"the release's rules reject it ({problem.message}); dropped", value=row.pop(key)))
        return out

    # -- result ------------------------------------------------------------------------------------
    def clip(self, provenance: dict[str, Any]) -> Clip:
        """The release-format clip: ``sample_id`` = segment id, rows, and ``draft`` provenance."""
        m = self.manifest
        draft = {
            **provenance,
            "media": self.media_mode,
            "windows": [vars(r) for r in self.records],
        }
        return Clip.model_validate(
            {
                "sample_id": m.segment_id,
                "scenario": m.scenario,
                "participants": list(m.participants),
                "source_file": m.video or f"{m.segment_id} (subtitles only)",
                "rows": self.rows,
                "draft": draft,
            }
        )

    @property
    def problem_count(self) -> int:
        """The problems kept on rows (``draft_problems``), what a reviewer works through and ``rescue
        data validate`` counts. A window's own record repeats what its rows already say (a rejected
        row's cues become rows holding the subtitles, each with its problem), so it adds nothing here."""
        return sum(len(r.get("draft_problems", [])) for r in self.rows)
