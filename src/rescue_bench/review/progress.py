"""Progress figures of the dashboard (the paper's online system): files, segments, rows reviewed and
remaining, commented and discarded segments; per annotator for admins; the segment list.

One vocabulary on every page: an annotator *submits* a row of the copy they edit by marking it
reviewed; a row is *reviewed* once its value in the final data is decided (its shared copy marked
reviewed, or, with independent copies, adjudicated). For admins, :func:`overview` counts the
annotators' own copies too, the way Argilla shows a queue: per copy and per annotator the rows
submitted, draft (saved, not submitted), skipped, discarded and pending; and every segment row once,
as the final data will have it: reviewed, awaiting adjudication (every annotator submitted the same
values), conflicting (two or more submitted, and they differ), discarded, pending. A segment's
status (``progress``) is worked out once, in :func:`segment_list`, for the dashboard and the
segment page alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import BaseModel, Field
from sqlalchemy import and_, case, distinct, func, select
from sqlalchemy.orm import Session

from rescue_bench.review.models import (
    Assignment,
    AuditEntry,
    Comment,
    Copy,
    ImportBatch,
    RowValue,
    Segment,
    SegmentRow,
    User,
)


@dataclass(frozen=True)
class Counts:
    """Rows of one copy (or of several added up) by state: ``submitted`` (marked reviewed), ``draft``
    (saved, not submitted, not flagged), ``skipped`` and ``discarded`` (flagged with a reason; every
    row of a discarded copy or segment is discarded), ``pending`` (the rest)."""

    rows: int = 0
    submitted: int = 0
    draft: int = 0
    skipped: int = 0
    discarded: int = 0

    @property
    def pending(self) -> int:
        return self.rows - self.submitted - self.draft - self.skipped - self.discarded

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(self.astuple(), other.astuple(), strict=True)))

    def astuple(self) -> tuple[int, int, int, int, int]:
        return (self.rows, self.submitted, self.draft, self.skipped, self.discarded)

    def discarded_whole(self) -> Counts:
        """The same rows, all discarded (the copy or the segment is)."""
        return Counts(rows=self.rows, discarded=self.rows)

    def to_json(self) -> dict[str, int]:
        return {"rows": self.rows, "submitted": self.submitted, "draft": self.draft, "skipped": self.skipped, "discarded": self.discarded, "pending": self.pending}


@dataclass
class RowsProgress:
    """Segment rows counted once each, as the final data will have them (see the module docstring):
    ``reviewed`` (decided: the final copy holds it reviewed, a shared review or an adjudication),
    ``awaiting`` and ``conflicting`` (to adjudicate), ``discarded``, ``pending``."""

    rows: int = 0
    reviewed: int = 0
    awaiting: int = 0
    conflicting: int = 0
    discarded: int = 0

    @property
    def pending(self) -> int:
        return self.rows - self.reviewed - self.awaiting - self.conflicting - self.discarded

    def add(self, other: RowsProgress) -> None:
        self.rows += other.rows
        self.reviewed += other.reviewed
        self.awaiting += other.awaiting
        self.conflicting += other.conflicting
        self.discarded += other.discarded

    def to_json(self) -> dict[str, int]:
        return {"rows": self.rows, "reviewed": self.reviewed, "awaiting": self.awaiting, "conflicting": self.conflicting,
                "discarded": self.discarded, "pending": self.pending}


@dataclass(frozen=True)
class CopyProgress:
    """One annotator copy of an independent segment."""

    user: str
    status: str
    counts: Counts


@dataclass
class SegmentProgress:
    key: str
    rows: RowsProgress
    copies: list[CopyProgress] = field(default_factory=list)


@dataclass
class Overview:
    """What an admin's dashboard shows of everyone's work (:func:`overview`)."""

    rows: RowsProgress
    segments: dict[str, SegmentProgress]
    """segment key -> its rows and, for an independent segment, each annotator copy."""
    annotators: dict[str, Counts]
    """user name -> the rows of the copies they edit (a shared copy counts for each of its assignees)."""


_COPY_COUNTS = select(
    RowValue.copy_id,
    func.count(),
    func.sum(case((RowValue.reviewed.is_(True), 1), else_=0)),
    func.sum(case((and_(RowValue.reviewed.is_(False), RowValue.flag.is_(None), RowValue.version > 0), 1), else_=0)),
    func.sum(case((and_(RowValue.reviewed.is_(False), RowValue.flag == "skipped"), 1), else_=0)),
    func.sum(case((and_(RowValue.reviewed.is_(False), RowValue.flag == "discarded"), 1), else_=0)),
).group_by(RowValue.copy_id)


def overview(session: Session) -> Overview:
    """Everyone's progress (admins): per copy, per annotator, and every row once (a handful of
    aggregate queries; the annotators' values are read only for rows submitted and not adjudicated,
    to tell agreement from conflict)."""
    segments = session.scalars(select(Segment).order_by(Segment.position)).all()
    copies = session.execute(select(Copy.id, Copy.segment_id, Copy.kind, Copy.status, User.username).outerjoin(User, User.id == Copy.owner_id)).all()
    counts = {cid: Counts(*(int(x or 0) for x in rest)) for cid, *rest in session.execute(_COPY_COUNTS).all()}
    final = {sid: cid for cid, sid, kind, _, _ in copies if kind == "final"}
    annotator_copies: dict[int, list[tuple[int, str, str]]] = {}
    for cid, sid, kind, status, owner in copies:
        if kind == "annotator":
            annotator_copies.setdefault(sid, []).append((cid, status, owner or "?"))
    by_id = {s.id: s for s in segments}

    def copy_counts(cid: int, segment: Segment, status: str = "open") -> Counts:
        c = counts.get(cid, Counts(rows=segment.row_count))
        return c.discarded_whole() if segment.status == "discarded" or status == "discarded" else c

    out = Overview(RowsProgress(), {}, {})
    for s in segments:
        fc = copy_counts(final[s.id], s) if s.id in final else Counts(rows=s.row_count)
        rows = RowsProgress(rows=s.row_count, reviewed=fc.submitted, discarded=fc.discarded)
        seg = SegmentProgress(s.key, rows)
        if s.review_mode == "independent":
            seg.copies = [CopyProgress(owner, status, copy_counts(cid, s, status)) for cid, status, owner in sorted(annotator_copies.get(s.id, []), key=lambda c: c[2])]
        out.segments[s.key] = seg
    _count_independent(session, out, [s for s in segments if s.review_mode == "independent" and s.status != "discarded"], final, annotator_copies)
    for seg in out.segments.values():
        out.rows.add(seg.rows)
    for uid_name, copy_id, segment_id in session.execute(
        select(User.username, Assignment.copy_id, Assignment.segment_id).join(User, User.id == Assignment.user_id)
    ).all():
        segment = by_id[segment_id]
        status = next((st for cid, st, _ in annotator_copies.get(segment_id, []) if cid == copy_id), "open")
        out.annotators[uid_name] = out.annotators.get(uid_name, Counts()) + copy_counts(copy_id, segment, status)
    return out


def _count_independent(
    session: Session, out: Overview, segments: list[Segment], final: dict[int, int], annotator_copies: dict[int, list[tuple[int, str, str]]]
) -> None:
    """Count the rows of independent segments not yet adjudicated by their state (:func:`_states`)."""
    keys = {s.id: s.key for s in segments}
    for sid, _position, state in _states(session, segments, final, annotator_copies):
        rows = out.segments[keys[sid]].rows
        setattr(rows, state, getattr(rows, state) + 1)


def _states(
    session: Session, segments: list[Segment], final: dict[int, int], annotator_copies: dict[int, list[tuple[int, str, str]]]
) -> list[tuple[int, int, str]]:
    """``(segment id, row position, state)`` of the rows of independent segments not yet adjudicated
    that are no longer pending: ``awaiting`` (every open annotator copy submitted, all alike),
    ``conflicting`` (two or more submitted, not alike), ``discarded`` (every open copy discarded the row)."""
    if not segments:
        return []
    open_copies = {s.id: {cid for cid, status, _ in annotator_copies.get(s.id, []) if status == "open"} for s in segments}
    wanted = [cid for ids in open_copies.values() for cid in ids]
    finals = [final[s.id] for s in segments if s.id in final]
    adjudicated = {
        rid: (bool(reviewed), flag)
        for rid, reviewed, flag in session.execute(select(RowValue.row_id, RowValue.reviewed, RowValue.flag).where(RowValue.copy_id.in_(finals))).all()
    }
    per_row: dict[int, list[tuple[bool, str | None, str | None]]] = {}
    segment_rows: dict[int, dict[int, int]] = {}
    if wanted:
        value = case((RowValue.reviewed.is_(True), func.coalesce(RowValue.value_json, SegmentRow.draft_json)), else_=None)
        for rid, sid, position, reviewed, flag, text in session.execute(
            select(RowValue.row_id, SegmentRow.segment_id, SegmentRow.position, RowValue.reviewed, RowValue.flag, value)
            .join(SegmentRow, SegmentRow.id == RowValue.row_id)
            .where(RowValue.copy_id.in_(wanted))
        ).all():
            per_row.setdefault(rid, []).append((bool(reviewed), flag, text))
            segment_rows.setdefault(sid, {})[rid] = position
    out = []
    for s in segments:
        n_copies = len(open_copies[s.id])
        for rid, position in sorted(segment_rows.get(s.id, {}).items(), key=lambda item: item[1]):
            done, final_flag = adjudicated.get(rid, (False, None))
            if done or final_flag == "discarded":
                continue  # counted from the final copy
            marks = per_row[rid]
            submitted = [text for reviewed, _, text in marks if reviewed]
            if len(submitted) >= 2 and len(set(submitted)) > 1 and len({_canonical(t) for t in submitted}) > 1:
                out.append((s.id, position, "conflicting"))
            elif n_copies and len(submitted) == n_copies:
                out.append((s.id, position, "awaiting"))
            elif n_copies and all(flag == "discarded" for reviewed, flag, _ in marks if not reviewed) and not submitted:
                out.append((s.id, position, "discarded"))
    return out


def row_states(session: Session, segment: Segment) -> dict[int, str]:
    """position -> ``awaiting`` | ``conflicting`` | ``discarded`` for the rows of an independent
    segment that are not adjudicated and not pending (as the dashboard counts them); empty for a
    shared or discarded segment."""
    if segment.review_mode != "independent" or segment.status == "discarded":
        return {}
    copies = session.execute(select(Copy.id, Copy.kind, Copy.status, User.username).outerjoin(User, User.id == Copy.owner_id).where(Copy.segment_id == segment.id)).all()
    final: dict[int, int] = {}
    annotators: list[tuple[int, str, str]] = []
    for cid, kind, status, owner in copies:
        if kind == "final":
            final[segment.id] = cid
        else:
            annotators.append((cid, status, owner or "?"))
    return {position: state for _, position, state in _states(session, [segment], final, {segment.id: annotators})}


def _canonical(text: str | None) -> str:
    """A row's JSON text in a form where equal rows compare equal (key order aside)."""
    if text is None:
        return ""
    return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))


class CountsOut(BaseModel):
    """Rows of a copy by state (Argilla's queues): submitted, draft (saved, not submitted), skipped, discarded, pending."""

    rows: int
    submitted: int
    draft: int
    skipped: int
    discarded: int
    pending: int


class CopyCounts(BaseModel):
    """An annotator copy of an independent segment in the admins' segment list."""

    user: str | None
    status: str
    status_reason: str | None
    reviewed: int = 0
    edited: int = 0


class SegmentOut(BaseModel):
    """A segment in the list (:func:`segment_list`)."""

    id: str = Field(description="opaque, URL-safe segment id")
    segment_id: str = Field(description="the clip's sample_id")
    scenario: str
    rows: int
    reviewed: int
    edited: int
    comments: int
    status: str = Field(description="open | discarded")
    progress: str = Field(description="pending (nothing saved yet) | in_progress | to_adjudicate (admins: every copy done) | done | discarded")
    status_reason: str | None = None
    mode: str = Field(default="shared", description="shared (one copy) | independent (a copy per annotator; admins' counts are of adjudicated rows)")
    assignees: list[str] | None = Field(default=None, description="admins only")
    copies: list[CopyCounts] | None = Field(default=None, description="admins, independent segments: each annotator copy's user, reviewed, edited, status, status_reason")
    ready_to_adjudicate: bool = Field(default=False, description="admins: every annotator reviewed every row of their copy, and rows await adjudication")


class Figures(BaseModel):
    """The dashboard's totals (:func:`figures`)."""

    files: int
    segments: int
    segments_done: int
    segments_commented: int
    segments_discarded: int
    rows: int
    rows_reviewed: int
    rows_remaining: int
    rows_edited: int


class AnnotatorActivity(BaseModel):
    """One person's work (:func:`per_annotator`); ``progress`` (:func:`with_progress`): the rows of the copies they edit, by state."""

    username: str
    role: str
    active: bool
    segments: int
    rows: int
    rows_reviewed: int
    reviewed_by_them: int
    edits: int
    comments: int
    discards: int
    progress: CountsOut | None = None


def segment_list(session: Session, user: User, *, only: Segment | None = None) -> list[SegmentOut]:
    """The segments ``user`` may see, in import order (``only``: that one, as the list counts it).

    Counts, status and comments are of the copy the user edits, so nothing of another annotator's
    blind copy shows (their comments are not counted, their discard is not shown). For admins the
    final copy is counted (in an independent segment: the rows adjudicated), and ``copies`` lists each
    annotator copy's counts and status; a segment whose every copy is fully reviewed while rows await
    adjudication is ``to_adjudicate`` (``ready_to_adjudicate``)."""
    from rescue_bench.review.access import may_see_others
    from rescue_bench.review.copies import copy_ids_for

    seg_query = select(Segment).order_by(Segment.position)
    if only is not None:
        seg_query = seg_query.where(Segment.id == only.id)
    if not user.is_admin:
        seg_query = seg_query.join(Assignment, Assignment.segment_id == Segment.id).where(Assignment.user_id == user.id)
    segments = session.scalars(seg_query).all()
    if not segments:
        return []
    copy_ids = copy_ids_for(session, user, segments)  # the copy each segment is counted in
    independent = [s.id for s in segments if s.review_mode == "independent"]
    copies: dict[int, list[tuple[int, CopyCounts]]] = {}
    own_status: dict[int, tuple[str, str | None]] = {}
    wanted = set(copy_ids.values())
    if independent:
        for cid, sid, kind, status, reason, owner in session.execute(
            select(Copy.id, Copy.segment_id, Copy.kind, Copy.status, Copy.status_reason, User.username)
            .outerjoin(User, User.id == Copy.owner_id)
            .where(Copy.segment_id.in_(independent))
            .order_by(User.username)
        ):
            if kind != "annotator":
                continue
            if copy_ids.get(sid) == cid:
                own_status[sid] = (status, reason)
            if user.is_admin:
                copies.setdefault(sid, []).append((cid, CopyCounts(user=owner, status=status, status_reason=reason)))
                wanted.add(cid)
    counts = {
        cid: (int(reviewed or 0), int(edited or 0))
        for cid, reviewed, edited in session.execute(
            select(
                RowValue.copy_id,
                func.sum(case((RowValue.reviewed, 1), else_=0)),
                func.sum(case((RowValue.edited, 1), else_=0)),
            )
            .where(RowValue.copy_id.in_(list(wanted)))
            .group_by(RowValue.copy_id)
        ).all()
    }
    n_comments = dict(session.execute(select(Comment.segment_id, func.count()).group_by(Comment.segment_id)).all())
    blind = [s for s in segments if s.review_mode == "independent" and not user.is_admin and not may_see_others(session, user, s)]
    if blind:
        # what this annotator may read: their own comments and the admins' (see edits.comments)
        for s in blind:
            n_comments[s.id] = 0
        n_comments.update(
            session.execute(
                select(Comment.segment_id, func.count())
                .join(User, User.id == Comment.user_id)
                .where(Comment.segment_id.in_([s.id for s in blind]), (Comment.user_id == user.id) | (User.role == "admin"))
                .group_by(Comment.segment_id)
            ).all()
        )
    people: dict[int, list[str]] = {}
    for sid, name in session.execute(select(Assignment.segment_id, User.username).join(User, User.id == Assignment.user_id).order_by(User.username)):
        people.setdefault(sid, []).append(name)
    out = []
    for s in segments:
        reviewed, edited = counts.get(copy_ids[s.id], (0, 0))
        status, reason = (s.status, s.status_reason) if s.status == "discarded" else own_status.get(s.id, (s.status, s.status_reason))
        mine = [c for _, c in copies.get(s.id, [])]
        for cid, c in copies.get(s.id, []):
            c.reviewed, c.edited = counts.get(cid, (0, 0))
        ready = bool(mine) and status == "open" and reviewed < s.row_count and all(c.reviewed >= s.row_count for c in mine)
        if status == "discarded":
            progress = "discarded"
        elif reviewed >= s.row_count:
            progress = "done"
        elif ready:
            progress = "to_adjudicate"
        elif reviewed or edited or any(c.reviewed or c.edited for c in mine):
            progress = "in_progress"
        else:
            progress = "pending"
        out.append(
            SegmentOut(
                id=s.key,
                segment_id=s.sample_id,
                scenario=s.scenario,
                rows=s.row_count,
                reviewed=int(reviewed),
                edited=int(edited),
                comments=int(n_comments.get(s.id, 0)),
                status=status,
                progress=progress,
                status_reason=reason,
                mode=s.review_mode,
                assignees=people.get(s.id, []) if user.is_admin else None,
                copies=mine if user.is_admin and s.review_mode == "independent" else None,
                ready_to_adjudicate=ready,
            )
        )
    return out


def figures(session: Session, user: User, segs: list[SegmentOut] | None = None) -> Figures:
    """The dashboard's totals over what ``user`` may see (everything for admins); ``segs``: their
    :func:`segment_list` when the caller has it."""
    segs = segment_list(session, user) if segs is None else segs
    open_segs = [s for s in segs if s.status != "discarded"]
    rows = sum(s.rows for s in open_segs)
    reviewed = sum(s.reviewed for s in open_segs)
    if user.is_admin:
        files = session.scalar(select(func.count()).select_from(ImportBatch).where(ImportBatch.segments > 0)) or 0
    else:
        files = len({s for s in session.scalars(select(Segment.import_id).join(Assignment, Assignment.segment_id == Segment.id).where(Assignment.user_id == user.id))})
    return Figures(
        files=int(files),
        segments=len(segs),
        segments_done=sum(1 for s in open_segs if s.progress == "done"),
        segments_commented=sum(1 for s in segs if s.comments),
        segments_discarded=sum(1 for s in segs if s.status == "discarded"),
        rows=rows,
        rows_reviewed=reviewed,
        rows_remaining=rows - reviewed,
        rows_edited=sum(s.edited for s in open_segs),
    )


def per_annotator(session: Session) -> list[AnnotatorActivity]:
    """Per user: assigned segments and rows, rows reviewed in them, rows they marked reviewed, field
    edits and comments they made (admins' own work included when they have any)."""
    users = session.scalars(select(User).order_by(User.username)).all()
    assigned = {
        uid: (n_seg, n_rows or 0)
        for uid, n_seg, n_rows in session.execute(
            select(Assignment.user_id, func.count(distinct(Segment.id)), func.sum(Segment.row_count))
            .join(Segment, Segment.id == Assignment.segment_id)
            .where(Segment.status != "discarded")
            .group_by(Assignment.user_id)
        ).all()
    }
    reviewed_in_assigned = dict(
        session.execute(
            select(Assignment.user_id, func.count(RowValue.id))
            .join(Segment, Segment.id == Assignment.segment_id)
            .join(RowValue, and_(RowValue.copy_id == Assignment.copy_id, RowValue.reviewed))
            .where(Segment.status != "discarded")
            .group_by(Assignment.user_id)
        ).all()
    )
    marked = dict(session.execute(select(RowValue.reviewed_by, func.count()).where(RowValue.reviewed).group_by(RowValue.reviewed_by)).all())
    actions = {
        (uid, action): n
        for uid, action, n in session.execute(
            select(AuditEntry.user_id, AuditEntry.action, func.count()).where(AuditEntry.user_id.is_not(None)).group_by(AuditEntry.user_id, AuditEntry.action)
        ).all()
    }
    out = []
    for u in users:
        n_seg, n_rows = assigned.get(u.id, (0, 0))
        entry = AnnotatorActivity(
            username=u.username,
            role=u.role,
            active=u.active,
            segments=int(n_seg),
            rows=int(n_rows),
            rows_reviewed=int(reviewed_in_assigned.get(u.id, 0)),
            reviewed_by_them=int(marked.get(u.id, 0)),
            edits=int(actions.get((u.id, "edit"), 0)),
            comments=int(actions.get((u.id, "comment"), 0)),
            discards=int(actions.get((u.id, "discard"), 0)),
        )
        if u.role == "annotator" or entry.segments or entry.reviewed_by_them or entry.edits or entry.comments:
            out.append(entry)
    return out


def with_progress(annotators: list[AnnotatorActivity], ov: Overview) -> list[AnnotatorActivity]:
    """:func:`per_annotator`'s entries with ``progress``: the rows of the copies each one edits by
    state (:class:`Counts`)."""
    return [a.model_copy(update={"progress": CountsOut(**ov.annotators.get(a.username, Counts()).to_json())}) for a in annotators]
