"""Who may see and edit what: assignments, review modes, overlap, the reveal rule.

Admins see and edit every segment (the final copy). Annotators see only the segments assigned to
them and edit the copy their assignment names (the rule and its forms:
:mod:`rescue_bench.review.copies`). A segment a user may not see answers "not found",
the same as one that does not exist.

Review modes: in ``shared`` mode (the default) every assignee edits the segment's final copy,
so two people on one segment meet the version check. In ``independent`` mode each assignee edits an
annotator copy of their own that starts from the draft (overlap: k annotators per segment, for
inter-annotator agreement); an admin adjudicates their values into the final copy. Annotators of an
independent segment do not see each other's values until the segment is adjudicated (the database
setting :data:`REVEAL_SETTING` makes that ``never`` or ``always`` instead). A segment's mode changes
only while the copies it would abandon hold no saved work, so nothing is ever orphaned.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Select, delete, func, select, update
from sqlalchemy.orm import Session

from rescue_bench.review.copies import CopyRef, own_copy, segment_and_copy
from rescue_bench.review.errors import Invalid, NotFound
from rescue_bench.review.models import (
    FINAL_LABEL,
    REVIEW_MODES,
    Assignment,
    AuditEntry,
    Copy,
    RowValue,
    Segment,
    SegmentRow,
    Setting,
    User,
    dumps,
    utcnow,
)

REVEAL_SETTING = "reveal_others"
REVEAL_CHOICES: tuple[str, ...] = ("adjudicated", "never", "always")
"""When annotators of an independent segment see the other annotators' values and the final one:
once the segment is adjudicated (default), never, or always (no longer blind)."""
DEFAULT_REVEAL = "adjudicated"

def visible_segments(user: User) -> Select[Segment]:
    """A query of the segments ``user`` may see, in import order."""
    query = select(Segment).order_by(Segment.position)
    if not user.is_admin:
        query = query.join(Assignment, Assignment.segment_id == Segment.id).where(Assignment.user_id == user.id)
    return query


def get_segment(session: Session, user: User, key: str) -> Segment:
    """The segment with opaque id ``key`` if ``user`` may see it; :class:`NotFound` otherwise."""
    return segment_and_copy(session, user, key)[0]


def get_segment_and_copy(session: Session, user: User, key: str) -> tuple[Segment, CopyRef]:
    """:func:`get_segment` and the copy ``user`` edits (:mod:`rescue_bench.review.copies`), in one query."""
    return segment_and_copy(session, user, key)


def users_named(session: Session, usernames: list[str], *, field: str) -> list[User]:
    """The users of ``usernames`` (exact spelling); :class:`Invalid` naming ``field`` and every missing one."""
    people = list(session.scalars(select(User).where(User.username.in_(usernames))))
    missing = sorted(set(usernames) - {u.username for u in people})
    if missing:
        raise Invalid(f"no such user: {', '.join(missing)}", field)
    return people


def active_users_named(session: Session, usernames: list[str], *, field: str) -> list[User]:
    """The active users of ``usernames``; :class:`Invalid` naming ``field`` and every one missing or deactivated."""
    people = list(session.scalars(select(User).where(User.username.in_(usernames), User.active.is_(True))))
    missing = sorted(set(usernames) - {p.username for p in people})
    if missing:
        raise Invalid(f"no such active user: {', '.join(missing)}", field)
    return people


def segments_by_sample_id(session: Session, sample_ids: list[str] | None) -> tuple[list[Segment], list[str]]:
    """The segments of ``sample_ids`` (every segment when ``None``) in import order, and the sample
    ids of none, sorted (each caller words the refusal its own way)."""
    query = select(Segment).order_by(Segment.position)
    if sample_ids is not None:
        query = query.where(Segment.sample_id.in_(sample_ids))
    found = list(session.scalars(query).all())
    return found, sorted(set(sample_ids or []) - {s.sample_id for s in found})


def segments_named(session: Session, sample_ids: list[str], *, field: str) -> list[Segment]:
    """:func:`segments_by_sample_id`, with :class:`Invalid` naming ``field`` and every missing one."""
    found, missing = segments_by_sample_id(session, sample_ids)
    if missing:
        raise Invalid(f"no such segment: {', '.join(missing)}", field)
    return found


def get_row(session: Session, segment: Segment, position: int) -> SegmentRow:
    row = session.scalars(
        select(SegmentRow).where(SegmentRow.segment_id == segment.id, SegmentRow.position == position)
    ).first()
    if row is None:
        raise NotFound(f"segment has no row {position}")
    return row


def final_copy(session: Session, segment: Segment) -> Copy:
    return session.scalars(select(Copy).where(Copy.segment_id == segment.id, Copy.label == FINAL_LABEL)).one()


def status_for(session: Session, user: User, segment: Segment, copy: CopyRef | None = None) -> tuple[str, str | None]:
    """``(status, reason)`` of ``segment`` as ``user`` sees it: the segment's when it is discarded
    (by an admin, or in shared mode), else their own copy's in independent mode (another annotator's
    discard is never shown to them). ``copy``: the one :func:`get_segment_and_copy` gave, if the
    caller has it."""
    if segment.status == "discarded":
        return segment.status, segment.status_reason
    copy = own_copy(session, user, segment, copy)
    if copy is not None:
        return copy.status, copy.status_reason
    return segment.status, segment.status_reason


class SegmentView:
    """A segment as one viewer sees it: its attributes, with ``status`` and ``status_reason`` of
    :func:`status_for` (what the pages show; never written back)."""

    def __init__(self, segment: Segment, status: str, status_reason: str | None):
        self._segment = segment
        self.status = status
        self.status_reason = status_reason

    def __getattr__(self, name: str) -> object:
        return getattr(self._segment, name)


def assignees(session: Session, segment: Segment) -> list[str]:
    return list(
        session.scalars(
            select(User.username).join(Assignment, Assignment.user_id == User.id).where(Assignment.segment_id == segment.id).order_by(User.username)
        )
    )


def annotator_copy(session: Session, segment: Segment, user: User, *, now: datetime | None = None) -> Copy:
    """``user``'s own copy of ``segment`` (created with every row at the draft if there is none yet).

    A copy outlives its assignment: unassigning keeps the work, and assigning again finds it.
    """
    label = f"user:{user.id}"
    copy = session.scalars(select(Copy).where(Copy.segment_id == segment.id, Copy.label == label)).first()
    if copy is not None:
        return copy
    now = now or utcnow()
    copy = Copy(segment_id=segment.id, kind="annotator", label=label, owner_id=user.id, created_at=now)
    session.add(copy)
    session.flush()
    row_ids = session.scalars(select(SegmentRow.id).where(SegmentRow.segment_id == segment.id).order_by(SegmentRow.position)).all()
    session.add_all([RowValue(copy_id=copy.id, row_id=rid, version=0, reviewed=False, edited=False) for rid in row_ids])
    session.flush()
    return copy


def assign(session: Session, segment: Segment, user: User, *, by: User | None, now: datetime | None = None) -> bool:
    """Assign ``segment`` to ``user``: they edit the final copy (shared mode) or their own copy
    (independent mode). False if already assigned."""
    if not user.active:
        raise Invalid(f"user {user.username!r} is deactivated", "username")
    exists = session.scalars(
        select(Assignment.id).where(Assignment.segment_id == segment.id, Assignment.user_id == user.id)
    ).first()
    if exists is not None:
        return False
    now = now or utcnow()
    copy = annotator_copy(session, segment, user, now=now) if segment.review_mode == "independent" else final_copy(session, segment)
    session.add(Assignment(segment_id=segment.id, user_id=user.id, copy_id=copy.id, created_at=now, created_by=by.id if by else None))
    session.add(AuditEntry(at=now, user_id=by.id if by else None, action="assign", segment_id=segment.id, field="assignee", new_json=dumps(user.username)))
    return True


def unassign(session: Session, segment: Segment, user: User, *, by: User | None, now: datetime | None = None) -> bool:
    """Remove ``user``'s assignment (their saved work stays in the copy). False if there was none."""
    result = session.execute(delete(Assignment).where(Assignment.segment_id == segment.id, Assignment.user_id == user.id))
    if not result.rowcount:  # type: ignore[attr-defined]
        return False
    session.add(AuditEntry(at=now or utcnow(), user_id=by.id if by else None, action="unassign", segment_id=segment.id, field="assignee", old_json=dumps(user.username)))
    return True


def set_assignees(session: Session, segment: Segment, usernames: list[str], *, by: User | None) -> list[str]:
    """Make exactly ``usernames`` the segment's assignees; returns them sorted."""
    wanted = {name.strip() for name in usernames if name.strip()}
    users = {u.username: u for u in session.scalars(select(User).where(User.username.in_(wanted)))}
    missing = sorted(wanted - set(users))
    if missing:
        raise Invalid(f"no such user: {', '.join(missing)}", "usernames")
    current = set(assignees(session, segment))
    now = utcnow()
    for name in sorted(wanted - current):
        assign(session, segment, users[name], by=by, now=now)
    for name in sorted(current - wanted):
        user = session.scalars(select(User).where(User.username == name)).one()
        unassign(session, segment, user, by=by, now=now)
    return sorted(wanted)


# ------------------------------------------------------------------------------------------------
# review modes, overlap, the reveal rule
# ------------------------------------------------------------------------------------------------


def _copies_with_work(session: Session, segment: Segment, *, kind: str) -> list[int]:
    """Ids of the segment's copies of ``kind`` with at least one saved row (version > 0)."""
    return list(
        session.scalars(
            select(Copy.id)
            .join(RowValue, RowValue.copy_id == Copy.id)
            .where(Copy.segment_id == segment.id, Copy.kind == kind, RowValue.version > 0)
            .distinct()
        )
    )


def set_mode(session: Session, segment: Segment, mode: str, *, by: User | None, now: datetime | None = None) -> bool:
    """Switch ``segment`` to ``shared`` or ``independent`` review; False if it already is.

    Shared -> independent: every assignee gets a copy of their own, starting from the draft; refused
    while the final copy holds saved work (that work was not done blind). Independent -> shared: the
    assignees edit the final copy again; refused while an annotator copy holds saved work (it would
    be abandoned); the empty annotator copies are removed.
    """
    if mode not in REVIEW_MODES:
        raise Invalid(f"review mode must be one of {', '.join(REVIEW_MODES)}, got {mode!r}", "mode")
    if segment.review_mode == mode:
        return False
    now = now or utcnow()
    assignments = session.scalars(select(Assignment).where(Assignment.segment_id == segment.id)).all()
    if mode == "independent":
        if _copies_with_work(session, segment, kind="final"):
            raise Invalid(
                f"segment {segment.sample_id} already has saved work in its shared copy; independent copies must start from the draft",
                "mode",
            )
        for assignment in assignments:
            user = session.get(User, assignment.user_id)
            assert user is not None
            assignment.copy_id = annotator_copy(session, segment, user, now=now).id
    else:
        if _copies_with_work(session, segment, kind="annotator"):
            raise Invalid(f"segment {segment.sample_id} has saved work in annotators' own copies; adjudicate it instead", "mode")
        final_id = final_copy(session, segment).id
        for assignment in assignments:
            assignment.copy_id = final_id
        session.flush()
        session.execute(delete(Copy).where(Copy.segment_id == segment.id, Copy.kind == "annotator"))
    old = segment.review_mode
    session.execute(update(Segment).where(Segment.id == segment.id).values(review_mode=mode).execution_options(synchronize_session=False))
    session.add(AuditEntry(at=now, user_id=by.id if by else None, action="mode", segment_id=segment.id, field="review_mode", old_json=dumps(old), new_json=dumps(mode)))
    session.flush()
    session.refresh(segment)
    return True


@dataclass
class OverlapSummary:
    """What :func:`assign_overlap` did."""

    k: int
    segments: int
    """Segments considered."""
    added: list[tuple[str, str]] = field(default_factory=list)
    """(sample id, user name) assignments made."""
    switched: list[str] = field(default_factory=list)
    """Segments switched to independent copies."""
    skipped: list[str] = field(default_factory=list)
    """Segments left alone: saved work in their shared copy, so they cannot become independent."""
    over: list[str] = field(default_factory=list)
    """Segments that already have more than k assignees (nobody is removed)."""
    load: dict[str, int] = field(default_factory=dict)
    """Rows assigned to each annotator afterwards (over the segments considered and the rest)."""


def assign_overlap(
    session: Session,
    k: int,
    *,
    seed: int = 0,
    annotators: list[User] | None = None,
    segments: list[Segment] | None = None,
    by: User | None = None,
    now: datetime | None = None,
) -> OverlapSummary:
    """Give every open segment ``k`` annotators, balancing the load in rows.

    Segments are taken in import order; each gets the annotators with the fewest assigned rows so far
    (existing assignments count), ties broken by an order drawn once from ``seed``, so the same seed
    gives the same assignment. With ``k > 1`` a segment switches to independent copies (unless its
    shared copy already holds work: then it is skipped and reported). Nobody is unassigned.
    ``annotators`` defaults to every active user with the annotator role.
    """
    if k < 1:
        raise Invalid("--overlap must be at least 1", "k")
    now = now or utcnow()
    pool = annotators if annotators is not None else list(
        session.scalars(select(User).where(User.role == "annotator", User.active).order_by(User.username))
    )
    pool = [u for u in pool if u.active]
    if len(pool) < k:
        raise Invalid(f"overlap {k} needs at least {k} active annotators, found {len(pool)}", "k")
    order = list(pool)
    random.Random(seed).shuffle(order)
    rank = {u.id: i for i, u in enumerate(order)}
    load = {
        uid: int(rows or 0)
        for uid, rows in session.execute(
            select(Assignment.user_id, func.sum(Segment.row_count))
            .join(Segment, Segment.id == Assignment.segment_id)
            .where(Segment.status != "discarded")
            .group_by(Assignment.user_id)
        ).all()
    }
    todo = segments if segments is not None else list(session.scalars(select(Segment).where(Segment.status == "open").order_by(Segment.position)))
    summary = OverlapSummary(k=k, segments=len(todo))
    for segment in todo:
        current = set(session.scalars(select(Assignment.user_id).where(Assignment.segment_id == segment.id)))
        if len(current) > k:
            summary.over.append(segment.sample_id)
        need = k - len(current)
        if need <= 0 and (k == 1 or segment.review_mode == "independent"):
            continue
        if k > 1 and segment.review_mode != "independent":
            try:
                set_mode(session, segment, "independent", by=by, now=now)
            except Invalid:
                summary.skipped.append(segment.sample_id)
                continue
            summary.switched.append(segment.sample_id)
        candidates = sorted((u for u in pool if u.id not in current), key=lambda u: (load.get(u.id, 0), rank[u.id]))
        for user in candidates[: max(0, need)]:
            assign(session, segment, user, by=by, now=now)
            load[user.id] = load.get(user.id, 0) + segment.row_count
            summary.added.append((segment.sample_id, user.username))
    names = {u.id: u.username for u in session.scalars(select(User))}
    summary.load = {names[uid]: rows for uid, rows in sorted(load.items(), key=lambda kv: names[kv[0]])}
    session.flush()
    return summary


def reveal_rule(session: Session) -> str:
    """The database's reveal rule (one of :data:`REVEAL_CHOICES`)."""
    row = session.get(Setting, REVEAL_SETTING)
    return row.value if row is not None and row.value in REVEAL_CHOICES else DEFAULT_REVEAL


def set_reveal_rule(session: Session, value: str, *, by: User | None) -> str:
    if value not in REVEAL_CHOICES:
        raise Invalid(f"reveal must be one of {', '.join(REVEAL_CHOICES)}, got {value!r}", "reveal")
    old = reveal_rule(session)
    row = session.get(Setting, REVEAL_SETTING) or Setting(key=REVEAL_SETTING, value=value)
    row.value = value
    session.add(row)
    if old != value:
        session.add(AuditEntry(at=utcnow(), user_id=by.id if by else None, action="setting", field=REVEAL_SETTING, old_json=dumps(old), new_json=dumps(value)))
    session.flush()
    return value


def is_adjudicated(session: Session, segment: Segment) -> bool:
    """An independent segment whose every row has its final value (the final copy fully reviewed)."""
    if segment.review_mode != "independent":
        return False
    done = session.scalar(
        select(func.count(RowValue.id))
        .join(Copy, Copy.id == RowValue.copy_id)
        .where(Copy.segment_id == segment.id, Copy.label == FINAL_LABEL, RowValue.reviewed)
    )
    return int(done or 0) >= segment.row_count


def may_see_others(session: Session, user: User, segment: Segment) -> bool:
    """May ``user`` see the other annotators' values (and the final one) of ``segment``?

    Admins always; an annotator of an independent segment per the reveal rule; nobody else (in
    shared mode everyone already edits the one copy).
    """
    if user.is_admin:
        return True
    if segment.review_mode != "independent":
        return False
    rule = reveal_rule(session)
    if rule == "always":
        return True
    return rule == "adjudicated" and is_adjudicated(session, segment)
