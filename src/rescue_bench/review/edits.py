"""Reading and changing rows and segments: saves with optimistic versioning, the audit log, comments,
discarding and restoring a segment.

A save names the version it started from. It is applied only if the row is still at that version
(one conditional ``UPDATE ... WHERE version = :v``), otherwise it is refused with the row as it is
now (:class:`~rescue_bench.review.errors.Conflict`, HTTP 409). Every applied change writes one audit
entry per changed field (who, when, field, old, new) in the same transaction, so an accepted save
without its audit entry, or an audit entry without its save, cannot exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict, TypeVar, cast

from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import Table, bindparam, exists, insert, select, update
from sqlalchemy.orm import Session, aliased

from rescue_bench.data.load import Problem
from rescue_bench.data.models import Row
from rescue_bench.data.validate import row_problems
from rescue_bench.errors import RescueError
from rescue_bench.review.access import get_row
from rescue_bench.review.copies import CopyRef, copy_for, own_copy
from rescue_bench.review.errors import Conflict, Forbidden, Invalid, Locked, NotFound, ReviewError
from rescue_bench.review.limits import MAX_DB_INT, MAX_FIELD_CHARS, value_problem
from rescue_bench.review.models import ROW_FLAGS, AuditEntry, Comment, Copy, RowValue, Segment, SegmentRow, User, dumps, utcnow

EDITABLE_FIELDS: tuple[str, ...] = tuple(Row.model_fields)
"""Every row field of the release format (SPEC section 1). Unknown keys of a row are kept, not edited."""

MAX_TEXT = MAX_FIELD_CHARS
"""Longest comment or discard reason, in characters."""


class RowStateOut(BaseModel):
    """A row as one copy holds it (:meth:`RowState.to_api`)."""

    row: dict[str, Any] = Field(description="the row as your copy holds it now (release format)")
    draft: dict[str, Any] = Field(description="the imported draft, never changed")
    version: int
    status: str = Field(description="pending (nobody saved it: the draft) | edited (saved, not reviewed) | skipped | discarded (flagged with a reason) | reviewed")
    reviewed: bool
    edited: bool
    updated_by: str | None
    updated_at: str | None
    reviewed_by: str | None
    segment_status: str
    flag: str | None = Field(default=None, description="skipped | discarded | null")
    flag_reason: str | None = None


S = TypeVar("S", bound=RowStateOut)


class CommentOut(BaseModel):
    id: int
    user: str
    at: str
    row: int | None
    text: str


class AuditOut(BaseModel):
    """One audit entry as the API and the pages show it (``old`` / ``new``: the values, decoded)."""

    id: int
    at: str
    user: str | None
    action: str
    segment: str | None
    row: int | None
    field: str | None
    old: Any
    new: Any
    old_absent: bool
    new_absent: bool
    version: int | None
    note: str | None


@dataclass(frozen=True)
class RowState:
    """A row as one copy holds it now, and everything the API and the row page show about it."""

    position: int
    row: dict[str, Any]
    draft: dict[str, Any]
    version: int
    reviewed: bool
    edited: bool
    updated_by: str | None
    updated_at: datetime | None
    reviewed_by: str | None
    segment_status: str
    row_id: int = 0
    """Database id of the row (internal: not in the API)."""
    flag: str | None = None
    """``skipped`` or ``discarded`` (:data:`~rescue_bench.review.models.ROW_FLAGS`), or None."""
    flag_reason: str | None = None

    @property
    def status(self) -> str:
        """``reviewed``, ``discarded`` or ``skipped`` (flagged, with a reason), ``edited`` (saved, not
        yet marked reviewed) or ``pending`` (nobody saved it: it holds the draft)."""
        if self.reviewed:
            return "reviewed"
        if self.flag:
            return self.flag
        return "edited" if self.edited else "pending"

    def to_api(self) -> RowStateOut:
        """The row as the API answers it."""
        return self.as_api(RowStateOut)

    def as_api(self, out: type[S], **extra: Any) -> S:
        """The row as ``out`` (:class:`RowStateOut` or a subclass of it, whose own fields ``extra`` fills)."""
        return out(
            row=self.row,
            draft=self.draft,
            version=self.version,
            status=self.status,
            reviewed=self.reviewed,
            edited=self.edited,
            updated_by=self.updated_by,
            updated_at=self.updated_at.isoformat() if self.updated_at else None,
            reviewed_by=self.reviewed_by,
            segment_status=self.segment_status,
            flag=self.flag,
            flag_reason=self.flag_reason,
            **extra,
        )


def _state(segment: Segment, row: SegmentRow, value: RowValue, updated_by: str | None, reviewed_by: str | None) -> RowState:
    draft = json.loads(row.draft_json)
    return RowState(
        position=row.position,
        row=json.loads(value.value_json) if value.value_json is not None else draft,
        draft=draft,
        version=value.version,
        reviewed=value.reviewed,
        edited=value.edited,
        updated_by=updated_by,
        updated_at=value.updated_at,
        reviewed_by=reviewed_by,
        segment_status=segment.status,
        row_id=row.id,
        flag=value.flag,
        flag_reason=value.flag_reason,
    )


_COPY_STATUS = select(Copy.status).where(Copy.id == bindparam("copy_id"))
_UPDATER = aliased(User, name="updater")
_REVIEWER = aliased(User, name="reviewer")
# Statements built once, with bound parameters: building a select per call (and computing its
# cache key) cost more CPU than running it.
_ROWS = (
    select(SegmentRow, RowValue, _UPDATER.username, _REVIEWER.username)
    .join(RowValue, (RowValue.row_id == SegmentRow.id) & (RowValue.copy_id == bindparam("copy_id")))
    .outerjoin(_UPDATER, _UPDATER.id == RowValue.updated_by)
    .outerjoin(_REVIEWER, _REVIEWER.id == RowValue.reviewed_by)
    .where(SegmentRow.segment_id == bindparam("segment_id"))
)
_ONE_ROW = _ROWS.where(SegmentRow.position == bindparam("position"))
_SOME_ROWS = _ROWS.where(SegmentRow.position.in_(bindparam("positions", expanding=True))).order_by(SegmentRow.position)
_ALL_ROWS = _ROWS.order_by(SegmentRow.position)


def _load(session: Session, copy_id: int, segment: Segment, position: int, *, fresh: bool = False) -> tuple[SegmentRow, RowValue, str | None, str | None]:
    """The row at ``position``, its value in the copy and the names of who saved / reviewed it (one query)."""
    query = _ONE_ROW.execution_options(populate_existing=True) if fresh else _ONE_ROW
    found = session.execute(query, {"copy_id": copy_id, "segment_id": segment.id, "position": position}).first()
    if found is None:
        raise NotFound(f"segment has no row {position}")
    return found[0], found[1], found[2], found[3]


def read_row(session: Session, user: User, segment: Segment, position: int, *, copy: CopyRef | None = None) -> RowState:
    """The row at ``position`` as ``user``'s copy holds it (``copy``: that copy, when the caller has it)."""
    row, value, updated_by, reviewed_by = _load(session, (copy or copy_for(session, user, segment)).id, segment, position)
    return _state(segment, row, value, updated_by, reviewed_by)


def validate_fields(fields: dict[str, Any], *, max_chars: int = MAX_FIELD_CHARS) -> None:
    """Refuse unknown field names, values no database or JSON reader can hold back (NaN, infinities,
    NUL bytes, text longer than ``max_chars``: :mod:`~rescue_bench.review.limits`) and values the
    release format does not accept (one message, the field named)."""
    if not isinstance(fields, dict):
        raise Invalid("fields must be an object of field name -> value", "fields")
    for name in fields:
        if name not in EDITABLE_FIELDS:
            raise Invalid(f"unknown field {name!r}; editable fields: {', '.join(EDITABLE_FIELDS)}", name)
    found = value_problem(fields, max_chars=max_chars)
    if found is not None:
        where, what = found
        raise Invalid(f"{where}: {what}", where)
    try:
        Row.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [p for p in err["loc"] if p not in ("int", "float")]
        path = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc))
        raise Invalid(f"{path}: {err['msg']}", str(loc[0]) if loc else None) from None


def row_rule_errors(segment: Segment, position: int, row: dict[str, Any]) -> list[Problem]:
    """The data layer's strict errors of one row of ``segment`` (the rules of ``rescue data validate
    --strict``: reversed times, a row_index off its position, evidence rows outside the clip, a group
    target beside names, speakers and targets that are not participants ...)."""
    found = row_problems(
        row, position=position, participants=segment.participants, scenario=segment.scenario, n_rows=segment.row_count,
        strict=True, sample_id=segment.sample_id,
    )
    return [p for p in found if p.severity == "error"]


def check_row_rules(segment: Segment, position: int, current: dict[str, Any], new: dict[str, Any]) -> None:
    """Refuse a save whose row breaks a strict rule it did not break before (:class:`Invalid` naming
    the field and the rule). A quirk already in the imported row (the release has some) does not block
    edits of other fields; a save that brings a new one, or changes one, is refused."""
    errors = row_rule_errors(segment, position, new)
    if not errors:
        return
    before = {(p.field, p.message) for p in row_rule_errors(segment, position, current)}
    fresh = [p for p in errors if (p.field, p.message) not in before]
    if fresh:
        first = fresh[0]
        more = f" (+{len(fresh) - 1} more)" if len(fresh) > 1 else ""
        raise Invalid(f"{first.field}: {first.message}{more}", first.field)


_ABSENT = object()


@dataclass(frozen=True)
class FlagChange:
    """Set a row's flag (``state``: one of :data:`~rescue_bench.review.models.ROW_FLAGS`, with a
    ``reason``) or clear it (``state=None``)."""

    state: str | None
    reason: str | None = None

    def checked(self) -> FlagChange:
        """The change with its reason stripped; :class:`Invalid` for an unknown state or a missing reason."""
        if self.state is None:
            return FlagChange(None, None)
        if self.state not in ROW_FLAGS:
            raise Invalid(f"unknown row flag {self.state!r}; one of: {', '.join(ROW_FLAGS)}", "flag")
        return FlagChange(self.state, _text_arg(self.reason, "reason"))


class ValueUpdate(TypedDict, total=False):
    """The columns of ``row_values`` a save sets (the parameters of its conditional ``UPDATE``)."""

    value_json: str | None
    version: int
    edited: bool
    updated_by: int
    updated_at: datetime
    reviewed: bool
    reviewed_by: int | None
    reviewed_at: datetime | None
    flag: str | None
    flag_reason: str | None


class AuditRow(TypedDict):
    """One ``audit_log`` row a save inserts (the parameters of its ``INSERT``)."""

    at: datetime
    user_id: int
    segment_id: int
    row_id: int
    copy_id: int
    version: int
    note: str | None
    action: str
    field: str
    old_json: str | None
    new_json: str | None


@dataclass(frozen=True)
class SavePlan:
    """A save worked out in a read transaction, to be applied by :func:`apply_save` in a short write
    transaction that only checks the version and writes (SQLite has one writer at a time: the less
    a writer does, the shorter everyone queues)."""

    user_id: int
    username: str
    segment_id: int
    segment_status: str
    copy_id: int
    row_id: int
    value_id: int
    position: int
    version: int
    values: ValueUpdate
    audit: list[AuditRow]
    result: RowState


class StaleWrite(RescueError):
    """The row's version moved (or the segment was discarded) between planning and applying a save."""


def prepare_save(
    session: Session,
    user: User,
    segment: Segment,
    position: int,
    *,
    version: int,
    fields: dict[str, Any],
    reviewed: bool | None = None,
    now: datetime | None = None,
    max_chars: int = MAX_FIELD_CHARS,
    copy: CopyRef | None = None,
    flag: FlagChange | None = None,
) -> SavePlan | RowState:
    """Check and work out a save; a :class:`RowState` when there is nothing to write.

    ``flag``: skip or discard the row with a reason, or clear its flag (:class:`FlagChange`); a
    flagged row is not reviewed, and marking a row reviewed clears its flag.

    ``copy``: the copy ``user`` edits as the request read it with the segment
    (:func:`~rescue_bench.review.access.get_segment_and_copy`: no query for it here); looked up when
    not given.

    Raises :class:`Conflict` (with the current row) when the row is no longer at ``version``,
    :class:`Invalid` for a value the release format refuses, :class:`Locked` when the segment is
    discarded.
    """
    copy = copy or copy_for(session, user, segment)
    return plan_copy_save(
        session, user, segment, copy.id, position, version=version, fields=fields, reviewed=reviewed, now=now,
        max_chars=max_chars, copy_status=copy.status, flag=flag,
    )


def plan_copy_save(
    session: Session,
    user: User,
    segment: Segment,
    copy_id: int,
    position: int,
    *,
    version: int,
    fields: dict[str, Any],
    reviewed: bool | None = None,
    now: datetime | None = None,
    action: str = "edit",
    notes: dict[str, str] | None = None,
    always_audit: tuple[str, ...] = (),
    max_chars: int = MAX_FIELD_CHARS,
    copy_status: str | None = None,
    flag: FlagChange | None = None,
) -> SavePlan | RowState:
    """:func:`prepare_save` on a given copy (adjudication writes the final copy this way).

    ``action`` names the audit entries (``edit``; ``adjudicate``), ``notes`` adds a note per field
    (e.g. whose value was taken), and the fields in ``always_audit`` get an entry even when their
    value does not change (an adjudicator who keeps the draft made a choice too). ``copy_status``:
    the copy's status as the request read it (else it is read here).
    """
    if segment.status == "discarded":
        raise Locked("this segment is discarded; restore it before editing")
    # the copy's status as the request read it with the segment (one round trip less per save); the
    # write's conditional UPDATE checks it again, so a discard in between still refuses the save
    if copy_status is None:
        copy_status = session.scalar(_COPY_STATUS, {"copy_id": copy_id})
    if copy_status == "discarded":
        raise Locked("you discarded your copy of this segment; restore it before editing")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= MAX_DB_INT:
        raise Invalid("version must be an integer the row has had", "version")
    validate_fields(fields, max_chars=max_chars)
    if flag is not None:
        flag = flag.checked()
        if flag.state is not None and reviewed:
            raise Invalid("a row is either marked reviewed or flagged, not both", "flag")
    now = now or utcnow()
    notes = notes or {}
    row, value, updated_by, reviewed_by = _load(session, copy_id, segment, position)
    if value.version != version:
        raise Conflict(_state(segment, row, value, updated_by, reviewed_by).to_api())
    current = json.loads(value.value_json if value.value_json is not None else row.draft_json)
    # the row as the release format writes it (declared fields in order, then unknown keys)
    new = Row.model_validate({**current, **fields}).model_dump(mode="json", exclude_unset=True)
    changes = []
    for name in fields:
        old_v, new_v = current.get(name, _ABSENT), new.get(name, _ABSENT)
        old_j = None if old_v is _ABSENT else dumps(old_v)
        new_j = None if new_v is _ABSENT else dumps(new_v)
        if old_j != new_j:
            changes.append((name, old_j, new_j))
    if changes:
        check_row_rules(segment, row.position, current, new)
    kept = [(name, dumps(current[name]) if name in current else None) for name in always_audit if name not in {c[0] for c in changes}]
    # a flag set un-reviews the row; marking it reviewed clears its flag
    if flag is not None and flag.state is not None:
        reviewed = False
    elif reviewed and value.flag is not None:
        flag = FlagChange(None, None)
    review_change = reviewed is not None and bool(reviewed) != value.reviewed
    flag_change = flag is not None and (flag.state, flag.reason) != (value.flag, value.flag_reason if value.flag else None)
    if not changes and not review_change and not kept and not flag_change:
        return _state(segment, row, value, updated_by, reviewed_by)
    new_json = dumps(new)
    edited = new_json != row.draft_json  # the draft is stored in the same canonical form
    values: ValueUpdate = {
        "value_json": new_json if changes or value.value_json is not None else None,
        "version": version + 1,
        "edited": edited,
        "updated_by": user.id,
        "updated_at": now,
    }
    if review_change:
        values["reviewed"] = bool(reviewed)
        values["reviewed_by"] = user.id if reviewed else None
        values["reviewed_at"] = now if reviewed else None
    if flag is not None and flag_change:
        values["flag"], values["flag_reason"] = flag.state, flag.reason

    def entry(action: str, field: str, old_json: str | None, new_json: str | None, note: str | None) -> AuditRow:
        return {
            "at": now, "user_id": user.id, "segment_id": segment.id, "row_id": row.id, "copy_id": copy_id, "version": version + 1,
            "note": note, "action": action, "field": field, "old_json": old_json, "new_json": new_json,
        }

    audit = [entry(action, name, old_j, new_j, notes.get(name)) for name, old_j, new_j in changes]
    audit += [entry(action, name, same, same, notes.get(name)) for name, same in kept]
    if review_change:
        audit.append(entry("review" if action == "edit" else action, "reviewed", dumps(value.reviewed), dumps(bool(reviewed)), None))
    if flag is not None and flag_change:
        audit.append(entry("flag", "flag", dumps(value.flag), dumps(flag.state), flag.reason))
    result = RowState(
        position=row.position,
        row=new,
        draft=json.loads(row.draft_json),
        version=version + 1,
        reviewed=bool(reviewed) if review_change else value.reviewed,
        edited=edited,
        updated_by=user.username,
        updated_at=now,
        reviewed_by=(user.username if reviewed else None) if review_change else reviewed_by,
        segment_status=segment.status,
        row_id=row.id,
        flag=flag.state if flag is not None and flag_change else value.flag,
        flag_reason=flag.reason if flag is not None and flag_change else value.flag_reason,
    )
    return SavePlan(user.id, user.username, segment.id, segment.status, copy_id, row.id, value.id, row.position, version, values, audit, result)


def apply_save(session: Session, plan: SavePlan) -> RowState:
    """Write a planned save if the row is still at its version and the segment still open.

    One conditional ``UPDATE`` (the version check) and the audit entries, in the caller's write
    transaction; raises :class:`StaleWrite` when the condition fails, and nothing is written.
    """
    connection = session.connection()
    result = connection.execute(
        _APPLY,
        {**plan.values, "b_value_id": plan.value_id, "b_version": plan.version, "b_segment_id": plan.segment_id, "b_copy_id": plan.copy_id},
    )
    if result.rowcount != 1:
        raise StaleWrite()
    connection.execute(_AUDIT_INSERT, plan.audit)
    return plan.result


# The save's two statements, built once on the tables (Core, not the ORM's bulk paths): building the
# UPDATE per call and the ORM's bulk insert cost about half of a save's CPU. The UPDATE's SET clause
# is the columns named in the parameters (the plan's ``values``); the WHERE parameters are prefixed
# so they never collide with a column's name.
_VALUES_TABLE, _SEGMENTS_TABLE, _COPIES_TABLE = (cast(Table, m.__table__) for m in (RowValue, Segment, Copy))
_APPLY = update(_VALUES_TABLE).where(
    _VALUES_TABLE.c.id == bindparam("b_value_id"),
    _VALUES_TABLE.c.version == bindparam("b_version"),
    exists().where(_SEGMENTS_TABLE.c.id == bindparam("b_segment_id"), _SEGMENTS_TABLE.c.status == "open"),
    exists().where(_COPIES_TABLE.c.id == bindparam("b_copy_id"), _COPIES_TABLE.c.status == "open"),
)
_AUDIT_INSERT = insert(cast(Table, AuditEntry.__table__))


def stale_error(session: Session, user: User, segment: Segment, position: int) -> ReviewError:
    """The error to answer a save that lost the race: :class:`Locked` or :class:`Conflict` with the row now."""
    session.refresh(segment)
    if segment.status == "discarded":
        return Locked("this segment is discarded; restore it before editing")
    copy_id = copy_for(session, user, segment).id
    if session.scalar(_COPY_STATUS.execution_options(populate_existing=True), {"copy_id": copy_id}) == "discarded":
        return Locked("you discarded your copy of this segment; restore it before editing")
    return Conflict(_state(segment, *_fresh(session, copy_id, segment, position)).to_api())


def _fresh(session: Session, copy_id: int, segment: Segment, position: int) -> tuple[SegmentRow, RowValue, str | None, str | None]:
    """The row as committed now (a new statement sees other transactions' commits under READ COMMITTED)."""
    return _load(session, copy_id, segment, position, fresh=True)


# ------------------------------------------------------------------------------------------------
# comments, discard, restore
# ------------------------------------------------------------------------------------------------


def _text_arg(text: Any, name: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise Invalid(f"{name} must be a non-empty text", name)
    found = value_problem(text, name, max_chars=MAX_TEXT)
    if found is not None:
        raise Invalid(f"{name}: {found[1]}", name)
    return text.strip()


def add_comment(session: Session, user: User, segment: Segment, text: str, *, position: int | None = None, now: datetime | None = None) -> Comment:
    """A comment on the segment, or on one of its rows (``position``)."""
    text = _text_arg(text, "text")
    copy_for(session, user, segment)  # may the user work on it at all?
    row = get_row(session, segment, position) if position is not None else None
    now = now or utcnow()
    comment = Comment(segment_id=segment.id, row_id=row.id if row else None, user_id=user.id, created_at=now, text=text)
    session.add(comment)
    session.add(AuditEntry(at=now, user_id=user.id, action="comment", segment_id=segment.id, row_id=row.id if row else None, field="comment", new_json=dumps(text)))
    session.flush()
    return comment


_COMMENTS = (
    select(Comment, User.username, SegmentRow.position, User.role)
    .join(User, User.id == Comment.user_id)
    .outerjoin(SegmentRow, SegmentRow.id == Comment.row_id)
    .where(Comment.segment_id == bindparam("segment_id"))
    .order_by(Comment.id)
)


def comments(session: Session, segment: Segment, *, viewer: User | None = None) -> list[CommentOut]:
    """The segment's comments, oldest first.

    With ``viewer``: what that user may read. An annotator of an independent segment reads only their
    own comments and the admins' until the others' values are revealed to them (a comment can quote
    a value, and the copies are meant to be blind).
    """
    from rescue_bench.review.access import may_see_others

    rows = session.execute(_COMMENTS, {"segment_id": segment.id}).all()
    blind = viewer is not None and segment.review_mode == "independent" and not may_see_others(session, viewer, segment)
    return [
        CommentOut(id=c.id, user=name, at=c.created_at.isoformat(), row=pos, text=c.text)
        for c, name, pos, role in rows
        if not blind or viewer is None or name == viewer.username or role == "admin"
    ]


def set_status(session: Session, user: User, segment: Segment, status: str, reason: str | None = None, now: datetime | None = None) -> Segment:
    """Discard (``reason`` required) or restore (``status="open"``) a segment; audited.

    An annotator of an independent segment discards and restores their own copy only: the other
    annotators neither see it nor are locked by it, and none of them can restore it. Admins (and
    everyone in shared mode) discard and restore the segment itself, which locks every copy. The
    segment returned is unchanged in the first case: :func:`~rescue_bench.review.access.status_for`
    says what the user sees.
    """
    if status not in ("open", "discarded"):
        raise Invalid(f"unknown status {status!r}", "status")
    if status == "discarded":
        reason = _text_arg(reason, "reason")
    now = now or utcnow()
    mine = own_copy(session, user, segment, copy_for(session, user, segment))  # NotFound if not theirs
    if mine is not None and not (segment.status == "discarded" and status == "open"):
        if segment.status == "discarded":
            raise Locked("this segment was discarded by an admin")
        if mine.status == status:
            raise Invalid(f"your copy is already {'discarded' if status == 'discarded' else 'open'}", "status")
        old_copy = mine.status
        result = session.execute(
            update(Copy)
            .where(Copy.id == mine.id, Copy.status == old_copy)
            .values(status=status, status_reason=reason if status == "discarded" else None, status_at=now)
            .execution_options(synchronize_session=False)
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            raise Invalid("your copy's status was changed meanwhile; reload", "status")
        session.add(
            AuditEntry(at=now, user_id=user.id, action="discard" if status == "discarded" else "restore", segment_id=segment.id, copy_id=mine.id,
                       field="status", old_json=dumps(old_copy), new_json=dumps(status), note=reason)
        )
        session.flush()
        return segment
    if mine is not None:
        raise Forbidden("this segment was discarded by an admin; an admin restores it")
    if segment.status == status:
        raise Invalid(f"segment is already {'discarded' if status == 'discarded' else 'open'}", "status")
    old = segment.status
    result = session.execute(
        update(Segment)
        .where(Segment.id == segment.id, Segment.status == old)
        .values(status=status, status_reason=reason if status == "discarded" else None, status_by=user.id, status_at=now)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise Invalid("the segment's status was changed by someone else; reload", "status")
    session.add(AuditEntry(at=now, user_id=user.id, action="discard" if status == "discarded" else "restore", segment_id=segment.id, field="status", old_json=dumps(old), new_json=dumps(status), note=reason))
    session.flush()
    session.refresh(segment)
    return segment


# ------------------------------------------------------------------------------------------------
# the audit log
# ------------------------------------------------------------------------------------------------


_AUDIT = (
    select(AuditEntry, User.username, Segment.sample_id, SegmentRow.position)
    .outerjoin(User, User.id == AuditEntry.user_id)
    .outerjoin(Segment, Segment.id == AuditEntry.segment_id)
    .outerjoin(SegmentRow, SegmentRow.id == AuditEntry.row_id)
    .order_by(AuditEntry.id.desc())
    .limit(bindparam("limit"))
)
_AUDIT_SEGMENT = _AUDIT.where(AuditEntry.segment_id == bindparam("segment_id"))
_AUDIT_ROW = _AUDIT.where(AuditEntry.row_id == bindparam("row_id"))
_AUDIT_ROW_COPY = _AUDIT_ROW.where(AuditEntry.copy_id == bindparam("copy_id"))


def audit_entries(
    session: Session,
    *,
    segment: Segment | None = None,
    row: SegmentRow | None = None,
    row_id: int | None = None,
    copy_id: int | None = None,
    limit: int = 200,
) -> list[AuditOut]:
    """Newest first (:class:`AuditOut`).

    ``row`` / ``row_id`` narrow to one row (and ``copy_id`` to the changes of one copy of it: an
    annotator of an independent segment sees only the history of their own values), ``segment`` to
    one segment, neither: everything.
    """
    if row is not None:
        row_id = row.id
    if row_id is not None and copy_id is not None:
        query, params = _AUDIT_ROW_COPY, {"row_id": row_id, "copy_id": copy_id, "limit": limit}
    elif row_id is not None:
        query, params = _AUDIT_ROW, {"row_id": row_id, "limit": limit}
    elif segment is not None:
        query, params = _AUDIT_SEGMENT, {"segment_id": segment.id, "limit": limit}
    else:
        query, params = _AUDIT, {"limit": limit}
    result = session.execute(query, params).all()
    out = []
    for entry, username, sample_id, position in result:
        out.append(
            AuditOut(
                id=entry.id,
                at=entry.at.isoformat(),
                user=username,
                action=entry.action,
                segment=sample_id,
                row=position,
                field=entry.field,
                old=None if entry.old_json is None else json.loads(entry.old_json),
                new=None if entry.new_json is None else json.loads(entry.new_json),
                old_absent=entry.old_json is None,
                new_absent=entry.new_json is None,
                version=entry.version,
                note=entry.note,
            )
        )
    return out


def segment_rows(session: Session, user: User, segment: Segment, positions: list[int] | None = None, *, copy: CopyRef | None = None) -> list[RowState]:
    """Every row of the segment (or those at ``positions``) as ``user``'s copy holds it, in order
    (``copy``: that copy, when the caller has it)."""
    params: dict[str, int | list[int]] = {"copy_id": (copy or copy_for(session, user, segment)).id, "segment_id": segment.id}
    query = _ALL_ROWS
    if positions is not None:
        query = _SOME_ROWS
        params["positions"] = list(positions)
    rows = session.execute(query, params).all()
    return [_state(segment, row, value, updated_by, reviewed_by) for row, value, updated_by, reviewed_by in rows]
