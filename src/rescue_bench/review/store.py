"""Import release-format clips as segments to review, and export the reviewed release.

Import keeps each clip exactly as ``rescue_bench.data`` loaded it (``Clip.to_json()``, unknown keys
included) as the draft. Export writes each row's value by one precedence (:func:`export_value`: the
adjudicated or reviewed final value, else a single annotator's, else the draft) through
``Clip.to_json()`` again, so export -> import -> export is byte-identical.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rescue_bench.data.load import Problem
from rescue_bench.data.models import Clip
from rescue_bench.data.validate import clip_findings
from rescue_bench.review.copies import export_copies
from rescue_bench.review.errors import Invalid
from rescue_bench.review.models import (
    FINAL_LABEL,
    AuditEntry,
    Copy,
    ImportBatch,
    RowValue,
    Segment,
    SegmentRow,
    User,
    dumps,
    utcnow,
)


def segment_key(sample_id: str) -> str:
    """The opaque, URL-safe id of a segment: 16 characters of base64url(sha256(sample_id)).

    Deterministic (the same clip has the same URL in every database) and free of slashes.
    """
    return base64.urlsafe_b64encode(hashlib.sha256(sample_id.encode("utf-8")).digest()[:12]).decode("ascii")


def import_problems(clips: Sequence[Clip], *, file_name: str = "<import>", strict: bool = True) -> list[Problem]:
    """The errors of ``clips`` under the data layer's rules (``strict``: those of ``rescue data
    validate --strict``), in order; warnings are left out."""
    return [p for clip in clips for p in clip_findings(clip, file_name, strict=strict) if p.severity == "error"]


def strict_problems(clips: Sequence[Clip], *, file_name: str = "<export>") -> list[Problem]:
    """What ``rescue data validate --strict`` would refuse in ``clips`` (export checks its own output)."""
    return import_problems(clips, file_name=file_name, strict=True)


@dataclass(frozen=True)
class ImportSummary:
    file: str
    segments: int
    rows: int
    skipped: list[str]
    """Sample ids already in the database, left untouched (``skip_existing``)."""


def import_clips(
    session: Session,
    clips: Sequence[Clip],
    *,
    file_name: str,
    sha256: str,
    skip_existing: bool = False,
    strict: bool = True,
    now: datetime | None = None,
) -> ImportSummary:
    """Add ``clips`` as segments (drafts) with their final copies; nothing is written on an error.

    The clips must pass the data layer's rules (:func:`import_problems`): strict by default, since
    every save is held to them and export must pass ``rescue data validate --strict``; with
    ``strict=False`` the published release's quirks (e.g. evidence row 0) are let in.

    A sample id already in the database is an error naming it, unless ``skip_existing``: then that
    clip is left out and its existing review work is untouched.
    """
    errors = import_problems(clips, file_name=file_name, strict=strict)
    if errors:
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise Invalid(f"{errors[0]}{more}", errors[0].field)
    now = now or utcnow()
    ids = [clip.sample_id for clip in clips]
    existing: set[str] = set()
    for start in range(0, len(ids), 500):
        existing.update(session.scalars(select(Segment.sample_id).where(Segment.sample_id.in_(ids[start : start + 500]))))
    if existing and not skip_existing:
        first = next(i for i in ids if i in existing)
        more = f" (+{len(existing) - 1} more)" if len(existing) > 1 else ""
        raise Invalid(f"clip {first} is already in the review database{more}; use --skip-existing to add only new clips", "sample_id")
    new = [clip for clip in clips if clip.sample_id not in existing]
    position = session.scalar(select(func.coalesce(func.max(Segment.position), 0))) or 0
    batch = ImportBatch(file_name=file_name, sha256=sha256, segments=len(new), rows=sum(len(c.rows) for c in new), imported_at=now)
    session.add(batch)
    session.flush()
    for clip in new:
        position += 1
        data = clip.to_json()
        rows = data.pop("rows")
        segment = Segment(
            key=segment_key(clip.sample_id),
            sample_id=clip.sample_id,
            scenario=clip.scenario,
            header_json=dumps(data),
            position=position,
            import_id=batch.id,
            participants_json=dumps(clip.clients),
            row_count=len(rows),
            status="open",
        )
        session.add(segment)
        session.flush()
        final = Copy(segment_id=segment.id, kind="final", label=FINAL_LABEL, created_at=now)
        session.add(final)
        seg_rows = [SegmentRow(segment_id=segment.id, position=i, draft_json=dumps(row)) for i, row in enumerate(rows, 1)]
        session.add_all(seg_rows)
        session.flush()
        session.add_all([RowValue(copy_id=final.id, row_id=r.id, version=0, reviewed=False, edited=False) for r in seg_rows])
        session.add(AuditEntry(at=now, action="import", segment_id=segment.id, note=file_name))
    session.flush()
    return ImportSummary(file_name, len(new), batch.rows, sorted(existing))


def export_value(
    draft_json: str,
    final: tuple[str | None, bool],
    annotators: Sequence[tuple[str | None, bool]] = (),
    *,
    include_saved: bool = False,
) -> str:
    """Which value of a row export writes: the one place the precedence lives.

    1. The final copy's value where it is reviewed: adjudicated (independent mode) or reviewed by
       the assignees (shared mode).
    2. Else, when the segment has exactly one annotator copy (``annotators``: independent mode with
       a single annotator), that annotator's value where they reviewed it.
    3. With ``include_saved``: a value saved but not marked reviewed, of the final copy, else of the
       single annotator copy.
    4. Else the draft.

    Each copy is ``(value_json, reviewed)``; a reviewed copy whose value is ``None`` confirmed the draft.
    """
    return _export_choice(draft_json, final, annotators, include_saved=include_saved)[0]


def _export_choice(
    draft_json: str, final: tuple[str | None, bool], annotators: Sequence[tuple[str | None, bool]], *, include_saved: bool
) -> tuple[str, str]:
    """:func:`export_value` and what the row counts as: ``reviewed``, ``saved`` (an edit saved but not
    reviewed; written only with ``include_saved``) or ``untouched``."""
    value, reviewed = final
    if reviewed:
        return (value if value is not None else draft_json), "reviewed"
    single = annotators[0] if len(annotators) == 1 else None
    if single is not None and single[1]:
        return (single[0] if single[0] is not None else draft_json), "reviewed"
    for saved in (value, single[0] if single is not None else None):
        if saved is not None and saved != draft_json:
            return (saved if include_saved else draft_json), "saved"
    return draft_json, "untouched"


@dataclass
class ExportCounts:
    """What an export wrote, for its summary line."""

    clips: int = 0
    reviewed: int = 0
    """Rows written from a reviewed (or adjudicated) copy."""
    saved: int = 0
    """Rows with an edit saved but not marked reviewed (written as the draft unless ``include_saved``)."""
    untouched: int = 0
    discarded: int = 0
    """Discarded segments (left out unless ``include_discarded``)."""
    include_saved: bool = False

    def summary(self) -> str:
        saved = "written with their edits" if self.include_saved else "written as the draft; --include-saved writes their edits"
        return (
            f"{self.clips} clip(s): {self.reviewed} row(s) reviewed, {self.saved} saved but not reviewed ({saved}), "
            f"{self.untouched} untouched; {self.discarded} discarded segment(s)"
        )


def audit_export(session: Session, *, user_id: int | None, clips: int, include_discarded: bool, include_saved: bool, annotator: str | None) -> None:
    """An ``export`` entry in the audit log: who took the annotations out, when, and which."""
    note = f"{clips} clip(s)" + (", discarded included" if include_discarded else "") + (", saved edits included" if include_saved else "")
    if annotator:
        note += f", annotator {annotator}"
    session.add(AuditEntry(at=utcnow(), user_id=user_id, action="export", note=note))


def export_clips(
    session: Session,
    *,
    include_discarded: bool = False,
    annotator: User | None = None,
    include_saved: bool = False,
    counts: ExportCounts | None = None,
) -> Iterator[Clip]:
    """The reviewed release as clips, in import order (discarded segments left out unless asked).

    Each row's value follows :func:`export_value`. ``annotator``: one annotator's version instead
    (their own copy, or the shared copy of a segment assigned to them in shared mode; human value
    where they reviewed, draft otherwise); segments they have no copy of are left out. ``counts``
    is filled in as the clips are produced.
    """
    counts = counts if counts is not None else ExportCounts()
    counts.include_saved = include_saved
    counts.discarded = int(session.scalar(select(func.count(Segment.id)).where(Segment.status == "discarded")) or 0)
    query = select(Segment).order_by(Segment.position)
    if not include_discarded:
        query = query.where(Segment.status != "discarded")
    segments = session.scalars(query).all()
    for start in range(0, len(segments), 200):
        chunk = segments[start : start + 200]
        main, extra = export_copies(session, chunk, annotator)
        if not main:
            continue
        rows = session.execute(
            select(SegmentRow.segment_id, SegmentRow.position, SegmentRow.draft_json, RowValue.value_json, RowValue.reviewed)
            .join(RowValue, RowValue.row_id == SegmentRow.id)
            .where(RowValue.copy_id.in_(list(main.values())))
            .order_by(SegmentRow.segment_id, SegmentRow.position)
        ).all()
        single = {sid: copies[0] for sid, copies in extra.items() if len(copies) == 1}
        theirs: dict[tuple[int, int], tuple[str | None, bool]] = {}
        if single:
            for segment_id, position, value_json, reviewed in session.execute(
                select(SegmentRow.segment_id, SegmentRow.position, RowValue.value_json, RowValue.reviewed)
                .join(RowValue, RowValue.row_id == SegmentRow.id)
                .where(RowValue.copy_id.in_(list(single.values())))
            ):
                theirs[(segment_id, position)] = (value_json, reviewed)
        by_segment: dict[int, list[dict]] = {}
        for segment_id, position, draft_json, value_json, reviewed in rows:
            annotators = [theirs[(segment_id, position)]] if (segment_id, position) in theirs else []
            value, kind = _export_choice(draft_json, (value_json, reviewed), annotators, include_saved=include_saved)
            setattr(counts, kind, getattr(counts, kind) + 1)
            by_segment.setdefault(segment_id, []).append(json.loads(value))
        for segment in chunk:
            if segment.id in main:
                counts.clips += 1
                yield Clip.model_validate({**segment.header, "rows": by_segment.get(segment.id, [])})


def export_lines(
    session: Session,
    *,
    include_discarded: bool = False,
    annotator: User | None = None,
    include_saved: bool = False,
    counts: ExportCounts | None = None,
) -> Iterator[str]:
    """Release-format JSON lines (with their newline) of :func:`export_clips`."""
    from rescue_bench.data.load import iter_jsonl_lines

    clips = export_clips(session, include_discarded=include_discarded, annotator=annotator, include_saved=include_saved, counts=counts)
    for line in iter_jsonl_lines(clips):
        yield line + "\n"
