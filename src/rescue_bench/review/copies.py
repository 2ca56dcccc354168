"""Which copy of a segment a user reads and edits: the one rule, in its single and bulk forms.

The rule (:func:`pick`): the copy the user's assignment names; else, for an admin, the segment's
final copy; else none (the segment is not theirs: "not found"). In shared mode an assignment names
the final copy, in independent mode the annotator's own copy.

Its forms, side by side here so they cannot drift apart:

- :func:`segment_and_copy`: a segment by its opaque id with the copy the user edits, in one query
  (a request's first read; the row read and the save take the copy from it);
- :func:`copy_for`: the copy of a segment already loaded (one query);
- :func:`copy_ids_for`: the copy of each of many segments (the dashboard's list: two queries);
- :func:`export_copies`: export's variant (no user, or one annotator's version: their own copy, which
  outlives the assignment, else the shared copy of a segment assigned to them).

Nothing is remembered between calls: a caller that needs the copy twice passes the
:class:`CopyRef` it got (the save path gets it with the segment, so a save costs no extra query).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, aliased

from rescue_bench.review.errors import NotFound
from rescue_bench.review.models import FINAL_LABEL, Assignment, Copy, Segment, User

T = TypeVar("T")


def pick(assigned: T | None, final: T, *, is_admin: bool) -> T | None:
    """The rule: the assignment's copy, else (admins) the final copy, else ``None``."""
    if assigned is not None:
        return assigned
    return final if is_admin else None


@dataclass(frozen=True)
class CopyRef:
    """A copy as a request read it: enough to read rows of it and to check its status."""

    id: int
    kind: str
    """``final`` or ``annotator``."""
    status: str
    status_reason: str | None


_FINAL = aliased(Copy, name="final_copy")
_ASSIGNED = aliased(Copy, name="assigned_copy")

_SEGMENT_AND_COPY = (
    select(
        Segment,
        _ASSIGNED.id, _ASSIGNED.kind, _ASSIGNED.status, _ASSIGNED.status_reason,
        _FINAL.id, _FINAL.kind, _FINAL.status, _FINAL.status_reason,
    )
    .outerjoin(Assignment, (Assignment.segment_id == Segment.id) & (Assignment.user_id == bindparam("user_id")))
    .outerjoin(_ASSIGNED, _ASSIGNED.id == Assignment.copy_id)
    .join(_FINAL, (_FINAL.segment_id == Segment.id) & (_FINAL.label == FINAL_LABEL))
    .where(Segment.key == bindparam("key"))
)
"""Built once with bound parameters (building a select per request costs more than running it)."""

_COPY_OF_SEGMENT = (
    select(
        _ASSIGNED.id, _ASSIGNED.kind, _ASSIGNED.status, _ASSIGNED.status_reason,
        _FINAL.id, _FINAL.kind, _FINAL.status, _FINAL.status_reason,
    )
    .select_from(_FINAL)
    .outerjoin(Assignment, (Assignment.segment_id == _FINAL.segment_id) & (Assignment.user_id == bindparam("user_id")))
    .outerjoin(_ASSIGNED, _ASSIGNED.id == Assignment.copy_id)
    .where(_FINAL.segment_id == bindparam("segment_id"), _FINAL.label == FINAL_LABEL)
)


def _ref(columns: Sequence[Any]) -> CopyRef | None:
    copy_id, kind, status, reason = columns
    return None if copy_id is None else CopyRef(int(copy_id), str(kind), str(status), reason)


def segment_and_copy(session: Session, user: User, key: str) -> tuple[Segment, CopyRef]:
    """The segment with opaque id ``key`` and the copy ``user`` edits (one query); :class:`NotFound`
    when there is no such segment or it is not theirs."""
    found = session.execute(_SEGMENT_AND_COPY, {"user_id": user.id, "key": key}).first()
    if found is None:
        raise NotFound("no such segment")
    copy = pick(_ref(found[1:5]), _ref(found[5:9]), is_admin=user.is_admin)
    if copy is None:
        raise NotFound("no such segment")
    return found[0], copy


def copy_for(session: Session, user: User, segment: Segment) -> CopyRef:
    """The copy ``user`` reads and edits of ``segment`` (one query); :class:`NotFound` if none."""
    found = session.execute(_COPY_OF_SEGMENT, {"user_id": user.id, "segment_id": segment.id}).first()
    copy = pick(_ref(found[0:4]), _ref(found[4:8]), is_admin=user.is_admin) if found is not None else None
    if copy is None:
        raise NotFound("no such segment")
    return copy


def copy_ids_for(session: Session, user: User, segments: Sequence[Segment]) -> dict[int, int]:
    """:func:`copy_for` of many segments: copy id by segment id (segments with no copy for ``user``
    left out). Two queries whatever the number of segments."""
    ids = [s.id for s in segments]
    if not ids:
        return {}
    assigned = dict(session.execute(select(Assignment.segment_id, Assignment.copy_id).where(Assignment.user_id == user.id, Assignment.segment_id.in_(ids))).all())
    finals = dict(session.execute(select(Copy.segment_id, Copy.id).where(Copy.label == FINAL_LABEL, Copy.segment_id.in_(ids))).all())
    out = {}
    for sid in ids:
        chosen = pick(assigned.get(sid), finals[sid], is_admin=user.is_admin)
        if chosen is not None:
            out[sid] = int(chosen)
    return out


def own_copy(session: Session, user: User, segment: Segment, copy: CopyRef | None = None) -> CopyRef | None:
    """The annotator copy ``user`` edits in an independent segment, else ``None`` (shared mode, admins
    on the final copy): the copy whose status is theirs alone. ``copy``: the one :func:`copy_for` gave."""
    if segment.review_mode != "independent":
        return None
    copy = copy or copy_for(session, user, segment)
    return copy if copy.kind == "annotator" else None


def export_copies(session: Session, segments: Sequence[Segment], annotator: User | None) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Which copy each segment is exported from, and its annotator copies when they matter.

    Returns ``(main copy id by segment id, annotator copy ids by segment id)``. Without
    ``annotator``: the final copy, plus the annotator copies of independent segments (export's
    precedence needs to know whether there is exactly one). With ``annotator``: their own copy (kept
    after an unassignment, so their work is still theirs), else the final copy of a shared segment
    assigned to them (:func:`pick`'s assignment case); other segments are left out.
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
