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

from rescue_bench.data.models import Clip
from rescue_bench.review.errors import Invalid
from rescue_bench.review.models import (
    FINAL_LABEL,
    Assignment,
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
    now: datetime | None = None,
) -> ImportSummary:
    """Add ``clips`` as segments (drafts) with their final copies; nothing is written on an error.

    A sample id already in the database is an error naming it, unless ``skip_existing``: then that
    clip is left out and its existing review work is untouched.
    """
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
) -> str:
    """Which value of a row export writes: the one place the precedence lives.

    1. The final copy's value where it is reviewed: adjudicated (independent mode) or reviewed by
       the assignees (shared mode).
    2. Else, when the segment has exactly one annotator copy (``annotators``: independent mode with
       a single annotator), that annotator's value where they reviewed it.
    3. Else the draft.

    Each copy is ``(value_json, reviewed)``; a reviewed copy whose value is ``None`` confirmed the draft.
    """
    value, reviewed = final
    if reviewed:
        return value if value is not None else draft_json
    if len(annotators) == 1:
        value, reviewed = annotators[0]
        if reviewed:
            return value if value is not None else draft_json
    return draft_json


def _copy_plan(session: Session, segments: Sequence[Segment], annotator: User | None) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Which copy each segment is exported from, and its annotator copies when they matter.

    Returns ``(main copy id by segment id, annotator copy ids by segment id)``. Without
    ``annotator``: the final copy, plus the annotator copies of independent segments (precedence
    rule 2 needs to know whether there is exactly one). With ``annotator``: their own copy, else the
    final copy of a shared segment assigned to them; other segments are left out.
    """
    ids = [s.id for s in segments]
    finals = dict(session.execute(select(Copy.segment_id, Copy.id).where(Copy.segment_id.in_(ids), Copy.label == FINAL_LABEL)).all())
    if annotator is None:
        extra: dict[int, list[int]] = {}
        independent = [s.id for s in segments if s.review_mode == "independent"]
        if independent:
            for segment_id, copy_id in session.execute(
                select(Copy.segment_id, Copy.id).where(Copy.segment_id.in_(independent), Copy.kind == "annotator").order_by(Copy.id)
            ):
                extra.setdefault(segment_id, []).append(copy_id)
        return finals, extra
    own = dict(session.execute(select(Copy.segment_id, Copy.id).where(Copy.segment_id.in_(ids), Copy.owner_id == annotator.id, Copy.kind == "annotator")).all())
    shared = set(
        session.scalars(
            select(Assignment.segment_id)
            .join(Copy, Copy.id == Assignment.copy_id)
            .where(Assignment.user_id == annotator.id, Assignment.segment_id.in_(ids), Copy.label == FINAL_LABEL)
        )
    )
    main = {sid: own[sid] if sid in own else finals[sid] for sid in ids if sid in own or sid in shared}
    return main, {}


def export_clips(session: Session, *, include_discarded: bool = False, annotator: User | None = None) -> Iterator[Clip]:
    """The reviewed release as clips, in import order (discarded segments left out unless asked).

    Each row's value follows :func:`export_value`. ``annotator``: one annotator's version instead
    (their own copy, or the shared copy of a segment assigned to them in shared mode; human value
    where they reviewed, draft otherwise); segments they have no copy of are left out.
    """
    query = select(Segment).order_by(Segment.position)
    if not include_discarded:
        query = query.where(Segment.status != "discarded")
    segments = session.scalars(query).all()
    for start in range(0, len(segments), 200):
        chunk = segments[start : start + 200]
        main, extra = _copy_plan(session, chunk, annotator)
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
            by_segment.setdefault(segment_id, []).append(json.loads(export_value(draft_json, (value_json, reviewed), annotators)))
        for segment in chunk:
            if segment.id in main:
                yield Clip.model_validate({**segment.header, "rows": by_segment.get(segment.id, [])})


def export_lines(session: Session, *, include_discarded: bool = False, annotator: User | None = None) -> Iterator[str]:
    """Release-format JSON lines (with their newline) of :func:`export_clips`."""
    from rescue_bench.data.load import iter_jsonl_lines

    for line in iter_jsonl_lines(export_clips(session, include_discarded=include_discarded, annotator=annotator)):
        yield line + "\n"
