"""Import release-format clips as segments to review, and export the reviewed release.

Import keeps each clip exactly as ``rescue_bench.data`` loaded it (``Clip.to_json()``, unknown keys
included) as the draft. Export writes each row's value by one precedence (:func:`export_choice`: the
adjudicated or reviewed final value, else a single annotator's, else the draft) through
``Clip.to_json()`` again, so export -> import -> export is byte-identical.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rescue_bench.data.load import Problem
from rescue_bench.data.models import Clip
from rescue_bench.data.validate import clip_findings
from rescue_bench.review.copies import export_copies
from rescue_bench.review.errors import Invalid, ReviewError
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


AWAITING_MARK = {"review_status": "awaiting_adjudication"}
"""The clip-level key export adds, with ``mark_unadjudicated``, to a segment awaiting adjudication (an
unknown key of the release format: read back and written again as it is)."""


class Unfinished(ReviewError):
    """An export that would write annotators' unadjudicated work as if it were done: refused, with
    the segments named."""

    status = 409

    def __init__(self, sample_ids: Sequence[str]):
        shown = ", ".join(sample_ids[:20]) + (f" (+{len(sample_ids) - 20} more)" if len(sample_ids) > 20 else "")
        super().__init__(
            f"{len(sample_ids)} segment(s) await adjudication (annotators reviewed rows nobody adjudicated): {shown}; "
            'adjudicate them, or export with --mark-unadjudicated to write them marked "review_status": "awaiting_adjudication"'
        )
        self.sample_ids = list(sample_ids)


RowKind = Literal["submitted", "adjudicated", "awaiting", "saved", "draft"]


def export_choice(
    draft_json: str,
    final: tuple[str | None, bool],
    annotators: Sequence[tuple[str | None, bool]],
    *,
    include_saved: bool,
    independent: bool = False,
) -> tuple[str, RowKind]:
    """Which value of a row export writes, and what the row counts as: the one place the precedence lives.

    1. The final copy's value where it is reviewed: adjudicated (independent mode) or reviewed by
       the assignees (shared mode).
    2. Else, when the segment has exactly one annotator copy (``annotators``: independent mode with
       a single annotator), that annotator's value where they reviewed it.
    3. With ``include_saved``: a value saved but not marked reviewed, of the final copy, else of the
       single annotator copy.
    4. Else the draft.

    Each copy is ``(value_json, reviewed)``; a reviewed copy whose value is ``None`` confirmed the
    draft. The row counts as ``adjudicated`` (the final copy of an independent segment, reviewed),
    ``submitted`` (reviewed by its annotator: the shared copy, or the single annotator's copy),
    ``awaiting`` (reviewed by an annotator of an independent segment with two or more, not
    adjudicated: written as the draft), ``saved`` (an edit saved but not reviewed; written only with
    ``include_saved``) or ``draft`` (nobody reviewed it)."""
    value, reviewed = final
    if reviewed:
        return (value if value is not None else draft_json), "adjudicated" if independent else "submitted"
    single = annotators[0] if len(annotators) == 1 else None
    if single is not None and single[1]:
        return (single[0] if single[0] is not None else draft_json), "submitted"
    if len(annotators) > 1 and any(done for _, done in annotators):
        return draft_json, "awaiting"
    for saved in (value, single[0] if single is not None else None):
        if saved is not None and saved != draft_json:
            return (saved if include_saved else draft_json), "saved"
    return draft_json, "draft"


@dataclass
class ExportCounts:
    """What an export wrote, row by row, for its summary line."""

    clips: int = 0
    submitted: int = 0
    """Rows reviewed by their annotator (a shared segment, or an independent one with one annotator)."""
    adjudicated: int = 0
    awaiting: int = 0
    """Rows annotators reviewed that nobody adjudicated (written as the draft, in marked segments)."""
    saved: int = 0
    """Rows with an edit saved but not marked reviewed (written as the draft unless ``include_saved``)."""
    draft: int = 0
    """Rows nobody reviewed or edited: the draft."""
    discarded: int = 0
    """Discarded segments (left out unless ``include_discarded``)."""
    discarded_rows: int = 0
    """Rows of the written segments an annotator flagged discarded (written as counted above: the
    release format has no place for a flag, and a row cannot leave its clip)."""
    skipped_rows: int = 0
    """Rows of the written segments an annotator flagged skipped (left for later), written likewise."""
    awaiting_segments: list[str] = field(default_factory=list)
    """The sample ids of the segments awaiting adjudication."""
    include_saved: bool = False
    include_discarded: bool = False

    def summary(self) -> str:
        awaiting = f" ({len(self.awaiting_segments)} segment(s), marked: {', '.join(self.awaiting_segments)})" if self.awaiting_segments else ""
        saved = "written with their edits" if self.include_saved else "written as the draft; --include-saved writes their edits"
        return (
            f"{self.clips} clip(s): {self.submitted} row(s) submitted, {self.adjudicated} adjudicated, "
            f"{self.awaiting} awaiting adjudication{awaiting}, {self.draft} draft-only; "
            f"{self.saved} saved but not reviewed ({saved}); {self.discarded} discarded segment(s) {'written' if self.include_discarded else 'left out'}; "
            f"{self.discarded_rows} discarded and {self.skipped_rows} skipped row(s) written as above"
        )


def audit_export(session: Session, *, user_id: int | None, counts: ExportCounts, include_discarded: bool, include_saved: bool, annotator: str | None) -> None:
    """An ``export`` entry in the audit log: who took the annotations out, when, and which."""
    note = f"{counts.clips} clip(s)" + (", discarded included" if include_discarded else "") + (", saved edits included" if include_saved else "")
    if counts.awaiting_segments:
        note += f", {len(counts.awaiting_segments)} awaiting adjudication marked"
    if annotator:
        note += f", annotator {annotator}"
    session.add(AuditEntry(at=utcnow(), user_id=user_id, action="export", note=note))


def export_clips(
    session: Session,
    *,
    include_discarded: bool = False,
    annotator: User | None = None,
    include_saved: bool = False,
    mark_unadjudicated: bool = False,
    counts: ExportCounts | None = None,
) -> list[Clip]:
    """The reviewed release as clips, in import order (discarded segments left out unless asked).

    Each row's value follows :func:`export_choice`. ``annotator``: one annotator's version instead
    (their own copy, or the shared copy of a segment assigned to them in shared mode; human value
    where they reviewed, draft otherwise); segments they have no copy of are left out. ``counts``
    is filled in.

    Nothing outside its domain leaves: a stored value the data layer's rules refuse (a label the
    scenario does not have, an intensity off 0-10, a name the clip does not have: an older database
    may hold one) is refused with :class:`Invalid` naming it.

    Nothing unfinished leaves as done: a segment awaiting adjudication (an independent segment with
    two or more annotators, a row of which an annotator reviewed and nobody adjudicated) is refused
    with :class:`Unfinished` naming them all, unless ``mark_unadjudicated``: then it is written, its
    clip carrying :data:`AWAITING_MARK`.
    """
    counts = counts if counts is not None else ExportCounts()
    counts.include_saved = include_saved
    counts.include_discarded = include_discarded
    counts.discarded = int(session.scalar(select(func.count(Segment.id)).where(Segment.status == "discarded")) or 0)
    query = select(Segment).order_by(Segment.position)
    if not include_discarded:
        query = query.where(Segment.status != "discarded")
    segments = session.scalars(query).all()
    out: list[Clip] = []
    for start in range(0, len(segments), 200):
        chunk = segments[start : start + 200]
        main, extra = export_copies(session, chunk, annotator)
        if not main:
            continue
        rows = session.execute(
            select(SegmentRow.segment_id, SegmentRow.position, SegmentRow.draft_json, RowValue.value_json, RowValue.reviewed, RowValue.flag)
            .join(RowValue, RowValue.row_id == SegmentRow.id)
            .where(RowValue.copy_id.in_(list(main.values())))
            .order_by(SegmentRow.segment_id, SegmentRow.position)
        ).all()
        theirs: dict[tuple[int, int], list[tuple[str | None, bool]]] = {}
        flags: dict[tuple[int, int], set[str]] = {}
        annotator_copies = [c for copies in extra.values() for c in copies]
        if annotator_copies:
            for segment_id, position, value_json, reviewed, flag in session.execute(
                select(SegmentRow.segment_id, SegmentRow.position, RowValue.value_json, RowValue.reviewed, RowValue.flag)
                .join(RowValue, RowValue.row_id == SegmentRow.id)
                .where(RowValue.copy_id.in_(annotator_copies))
                .order_by(RowValue.copy_id)
            ):
                theirs.setdefault((segment_id, position), []).append((value_json, reviewed))
                if flag:
                    flags.setdefault((segment_id, position), set()).add(flag)
        independent = {s.id for s in chunk if s.review_mode == "independent"} if annotator is None else set()
        by_segment: dict[int, list[dict]] = {}
        awaiting: set[int] = set()
        for segment_id, position, draft_json, value_json, reviewed, flag in rows:
            flagged = flags.get((segment_id, position), set()) | ({flag} if flag else set())
            if "discarded" in flagged:
                counts.discarded_rows += 1
            elif "skipped" in flagged:
                counts.skipped_rows += 1
            copies = theirs.get((segment_id, position), [])
            value, kind = export_choice(draft_json, (value_json, reviewed), copies, include_saved=include_saved, independent=segment_id in independent)
            setattr(counts, kind, getattr(counts, kind) + 1)
            if kind == "awaiting":
                awaiting.add(segment_id)
            by_segment.setdefault(segment_id, []).append(json.loads(value))
        for segment in chunk:
            if segment.id in main:
                counts.clips += 1
                mark = AWAITING_MARK if segment.id in awaiting else {}
                if mark:
                    counts.awaiting_segments.append(segment.sample_id)
                out.append(Clip.model_validate({**segment.header, **mark, "rows": by_segment.get(segment.id, [])}))
    if counts.awaiting_segments and not mark_unadjudicated:
        raise Unfinished(counts.awaiting_segments)
    outside = import_problems(out, file_name="<export>", strict=False)
    if outside:  # saved before the app checked values against their domain: never written
        first = str(outside[0]).removeprefix("error: <export>, ")
        more = f" (+{len(outside) - 1} more)" if len(outside) > 1 else ""
        raise Invalid(
            f"{len(outside)} stored value(s) outside their field's domain would be exported: {first}{more}; "
            "correct them in the row editor, then export again", outside[0].field,
        )
    return out


def export_lines(
    session: Session,
    *,
    include_discarded: bool = False,
    annotator: User | None = None,
    include_saved: bool = False,
    mark_unadjudicated: bool = False,
    counts: ExportCounts | None = None,
) -> list[str]:
    """Release-format JSON lines (with their newline) of :func:`export_clips` (refused as there)."""
    from rescue_bench.data.load import iter_jsonl_lines

    clips = export_clips(
        session, include_discarded=include_discarded, annotator=annotator, include_saved=include_saved, mark_unadjudicated=mark_unadjudicated, counts=counts
    )
    return [line + "\n" for line in iter_jsonl_lines(clips)]
