"""Who may see and edit what: assignments, the segments a user can see, the copy a user edits.

Admins see and edit every segment (the final copy). Annotators see only the segments assigned to
them and edit the copy their assignment names (the segment's final copy in the shared mode of
issue 12). A segment a user may not see answers "not found", the same as one that does not exist.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, bindparam, delete, select
from sqlalchemy.orm import Session, aliased

from rescue_bench.review.errors import Invalid, NotFound
from rescue_bench.review.models import FINAL_LABEL, Assignment, AuditEntry, Copy, Segment, SegmentRow, User, dumps, utcnow

_FINAL = aliased(Copy, name="final_copy")
"""Built once: constructing an alias per query costs more than the query (SQLAlchemy adapts every column)."""


_SEGMENT = (
    select(Segment, Assignment.copy_id, _FINAL.id)
    .outerjoin(Assignment, (Assignment.segment_id == Segment.id) & (Assignment.user_id == bindparam("user_id")))
    .join(_FINAL, (_FINAL.segment_id == Segment.id) & (_FINAL.label == FINAL_LABEL))
    .where(Segment.key == bindparam("key"))
)
"""Built once with bound parameters (building a select per request costs more than running it)."""


def visible_segments(user: User) -> Select[Segment]:
    """A query of the segments ``user`` may see, in import order."""
    query = select(Segment).order_by(Segment.position)
    if not user.is_admin:
        query = query.join(Assignment, Assignment.segment_id == Segment.id).where(Assignment.user_id == user.id)
    return query


def get_segment(session: Session, user: User, key: str) -> Segment:
    """The segment with opaque id ``key`` if ``user`` may see it; :class:`NotFound` otherwise.

    One query finds the segment, the user's assignment and the final copy, and remembers which copy
    the user edits for :func:`copy_for` (per session), so a row read or save costs few round trips.
    """
    found = session.execute(_SEGMENT, {"user_id": user.id, "key": key}).first()
    if found is None:
        raise NotFound("no such segment")
    segment, assigned_copy, final_id = found
    if assigned_copy is None and not user.is_admin:
        raise NotFound("no such segment")
    session.info.setdefault("copy_for", {})[(user.id, segment.id)] = assigned_copy or final_id
    return segment


def get_row(session: Session, segment: Segment, position: int) -> SegmentRow:
    row = session.scalars(
        select(SegmentRow).where(SegmentRow.segment_id == segment.id, SegmentRow.position == position)
    ).first()
    if row is None:
        raise NotFound(f"segment has no row {position}")
    return row


def final_copy(session: Session, segment: Segment) -> Copy:
    return session.scalars(select(Copy).where(Copy.segment_id == segment.id, Copy.label == FINAL_LABEL)).one()


def copy_id_for(session: Session, user: User, segment: Segment) -> int:
    """The id of the copy ``user`` reads and edits (see :func:`copy_for`)."""
    known = session.info.get("copy_for", {}).get((user.id, segment.id))
    return known if known is not None else copy_for(session, user, segment).id


def copy_for(session: Session, user: User, segment: Segment) -> Copy:
    """The copy ``user`` reads and edits: the one their assignment names, else (admins) the final copy."""
    assignment = session.scalars(
        select(Assignment).where(Assignment.segment_id == segment.id, Assignment.user_id == user.id)
    ).first()
    if assignment is not None:
        copy = session.get(Copy, assignment.copy_id)
        assert copy is not None
        return copy
    if user.is_admin:
        return final_copy(session, segment)
    raise NotFound("no such segment")


def assignees(session: Session, segment: Segment) -> list[str]:
    return list(
        session.scalars(
            select(User.username).join(Assignment, Assignment.user_id == User.id).where(Assignment.segment_id == segment.id).order_by(User.username)
        )
    )


def assign(session: Session, segment: Segment, user: User, *, by: User | None, now: datetime | None = None) -> bool:
    """Assign ``segment`` to ``user`` (shared mode: they edit the final copy). False if already assigned."""
    if not user.active:
        raise Invalid(f"user {user.username!r} is deactivated", "username")
    exists = session.scalars(
        select(Assignment.id).where(Assignment.segment_id == segment.id, Assignment.user_id == user.id)
    ).first()
    if exists is not None:
        return False
    now = now or utcnow()
    session.add(Assignment(segment_id=segment.id, user_id=user.id, copy_id=final_copy(session, segment).id, created_at=now, created_by=by.id if by else None))
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
