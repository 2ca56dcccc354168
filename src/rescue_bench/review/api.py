"""The JSON API under ``/api``: what the pages use, and what scripts use (OpenAPI page: ``/api/docs``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, Field

from rescue_bench.review import access, copies, edits, progress, store, users
from rescue_bench.review.assets import clip_stale
from rescue_bench.review.deps import AppState, Auth, State, require_admin
from rescue_bench.review.edits import AuditOut, CommentOut, RowStateOut
from rescue_bench.review.errors import WrongCredentials
from rescue_bench.review.limits import MAX_DB_INT
from rescue_bench.review.progress import AnnotatorActivity, CountsOut, Figures, SegmentOut
from rescue_bench.review.security import verify_password
from rescue_bench.review.users import UserOut

API_DESCRIPTION = """
Log in with `POST /api/login` (`{"username", "password"}`): the answer sets an HttpOnly session
cookie and returns `{"csrf_token"}`. Send that token as the `X-CSRF-Token` header with every
unsafe request (POST, PUT, DELETE); without it the answer is 403.

Segments are addressed by an opaque, URL-safe `id` (sample ids contain slashes); rows by their
1-based position. A save (`PUT .../rows/{row_index}`) sends the `version` it started from and the
changed `fields`; if someone saved the row since, the answer is **409** with the current `row` and
`version`, and nothing is applied. Annotators see only the segments assigned to them (others answer
404); admins see everything.
""".strip()

router = APIRouter(prefix="/api", tags=["api"])

RowIndex = Annotated[int, Path(ge=1, le=MAX_DB_INT, description="the row's 1-based position")]
"""A row number of a URL: past what a database integer holds is 422, never a 500."""

__all__ = ["AuditOut", "CommentOut", "CountsOut", "RowIndex", "RowOut", "RowStateOut", "SegmentOut", "UserOut", "require_admin", "router"]


# ------------------------------------------------------------------------------------------------
# request and response models (documented in the OpenAPI page)
# ------------------------------------------------------------------------------------------------


class LoginIn(BaseModel):
    username: str = Field(max_length=200)
    password: str = Field(max_length=1000)


class LoginOut(BaseModel):
    csrf_token: str
    username: str
    role: str


class MeOut(BaseModel):
    username: str
    role: str
    csrf_token: str | None


class RowSummaryOut(BaseModel):
    """A row in a segment's list. Values taken from the row are passed through as stored (``Any``:
    a time of ``3`` stays ``3``, never ``3.0``)."""

    row_index: int
    speaker: Any
    target: Any
    start_time: Any
    end_time: Any
    duration: float | None
    status: str = Field(description="pending | edited | skipped | discarded | reviewed (as for one row)")
    edited: bool
    reviewed: bool
    version: int
    flag_reason: str | None = Field(default=None, description="why the row is skipped or discarded")


class SegmentDetailOut(BaseModel):
    id: str
    segment_id: str
    scenario: str
    participants: list[str]
    status: str = Field(description="as you see it: your own copy's in independent mode, unless an admin discarded the segment")
    status_reason: str | None
    mode: str
    rows: list[RowSummaryOut]
    comments: list[CommentOut]
    assignees: list[str] | None = Field(description="admins only")


class RowOut(RowStateOut):
    clip_stale: bool = Field(default=False, description="the row's times were edited since its clip was cut (re-cut it: rescue annotate clips --data)")


class ConflictOut(RowStateOut):
    detail: str


class StatusOut(BaseModel):
    status: str
    status_reason: str | None


class AssigneesOut(BaseModel):
    assignees: list[str]


class RowsProgressOut(BaseModel):
    """Segment rows counted once each, as the final data will have them."""

    rows: int
    reviewed: int = Field(description="decided: the final copy holds it reviewed (a shared review or an adjudication)")
    awaiting: int = Field(description="independent copies: every annotator submitted the same values; awaiting adjudication")
    conflicting: int = Field(description="independent copies: two or more annotators submitted different values")
    discarded: int
    pending: int


class CopyProgressOut(BaseModel):
    user: str
    status: str
    counts: CountsOut


class SegmentProgressOut(BaseModel):
    id: str
    rows: int
    reviewed: int
    progress: str
    final: RowsProgressOut | None = Field(default=None, description="admins only")
    copies: list[CopyProgressOut] | None = Field(default=None, description="admins, independent segments: each annotator copy")


class ProgressOut(BaseModel):
    totals: Figures
    segments: list[SegmentProgressOut] = Field(default_factory=list, description="the segments you see, as the segment list counts them")
    annotators: list[AnnotatorActivity] | None = Field(default=None, description="admins only (absent otherwise); `progress`: the rows of the copies each edits, by state")
    rows: RowsProgressOut | None = Field(default=None, description="admins only: every segment row once, as the final data will have it")


class FlagIn(BaseModel):
    state: Literal["skipped", "discarded"] | None = Field(description="skipped (left for later) | discarded (cannot be annotated as it is) | null (clear the flag)")
    reason: str | None = Field(default=None, description="why (required to set a flag)")


class SaveIn(BaseModel):
    version: int = Field(strict=True, ge=0, le=MAX_DB_INT, description="the version your edit started from")
    fields: dict[str, Any] = Field(default_factory=dict, description="changed fields only, release-format values")
    reviewed: bool | None = Field(None, strict=True, description="mark the row reviewed (true) or not (false); marking it reviewed clears its flag")
    flag: FlagIn | None = Field(default=None, description="skip or discard the row with a reason, or clear its flag (a flagged row is not reviewed)")

    def flag_change(self) -> edits.FlagChange | None:
        return None if self.flag is None else edits.FlagChange(self.flag.state, self.flag.reason)


class CommentIn(BaseModel):
    text: str
    row: int | None = Field(None, ge=1, le=MAX_DB_INT, description="row position, or none for the whole segment")


class ReasonIn(BaseModel):
    reason: str


class AssigneesIn(BaseModel):
    usernames: list[str]


# ------------------------------------------------------------------------------------------------
# session
# ------------------------------------------------------------------------------------------------


@router.post("/login", responses={401: {"description": "wrong credentials"}, 429: {"description": "too many failed logins (Retry-After)"}})
def login(body: LoginIn, request: Request, response: Response, st: AppState) -> LoginOut:
    client_ip = request.client.host if request.client else None
    # three transactions of its own: count the attempt in advance under the throttle rows' lock
    # (short), check the password with no lock held (argon2 is the slow part), record the outcome
    with st.db.write() as session:
        attempt = users.begin_login(session, body.username, client_ip=client_ip, policy=st.config.throttle)
    ok = verify_password(attempt.password_hash, body.password)
    with st.db.write() as session:
        user = users.finish_login(session, attempt, ok, policy=st.config.throttle)
        if user is None:
            session.commit()  # the failure's audit entry must stay
            raise WrongCredentials("wrong user name or password")
        token, data = st.signer.issue(user.id, user.auth_epoch)
        out = LoginOut(csrf_token=data.csrf, username=user.username, role=user.role)
    st.set_cookie(response, token)
    return out


@router.post("/logout", status_code=204, response_class=Response)
def logout(request: Request, auth: Auth) -> Response:
    with auth.write(hold="update") as (session, user):  # this transaction changes the row: lock it for that at once
        users.end_sessions(session, user.id)
        users.audit_logout(session, user, client_ip=request.client.host if request.client else None)
    response = Response(status_code=204)
    auth.state.clear_cookie(response)
    return response


@router.get("/me")
def me(auth: Auth) -> MeOut:
    with auth.read() as (_session, user):
        return MeOut(username=user.username, role=user.role, csrf_token=auth.data.csrf)


# ------------------------------------------------------------------------------------------------
# segments and rows
# ------------------------------------------------------------------------------------------------


@router.get("/segments")
def list_segments(auth: Auth) -> list[SegmentOut]:
    with auth.read() as (session, user):
        return progress.segment_list(session, user)


def _row_summary(r: edits.RowState) -> RowSummaryOut:
    row = r.row
    start, end = row.get("start_time"), row.get("end_time")
    duration = round(float(end) - float(start), 2) if isinstance(start, (int, float)) and isinstance(end, (int, float)) else None
    return RowSummaryOut(
        row_index=r.position,
        speaker=row.get("primary_speaker"),
        target=row.get("target"),
        start_time=start,
        end_time=end,
        duration=duration,
        status=r.status,
        edited=r.edited,
        reviewed=r.reviewed,
        version=r.version,
        flag_reason=r.flag_reason if r.flag else None,
    )


@router.get("/segments/{segment}")
def get_segment(segment: str, auth: Auth) -> SegmentDetailOut:
    with auth.read() as (session, user):
        seg, copy = access.get_segment_and_copy(session, user, segment)
        status, reason = access.status_for(session, user, seg, copy)
        return SegmentDetailOut(
            id=seg.key,
            segment_id=seg.sample_id,
            scenario=seg.scenario,
            participants=seg.participants,
            status=status,
            status_reason=reason,
            mode=seg.review_mode,
            rows=[_row_summary(r) for r in edits.segment_rows(session, user, seg, copy=copy)],
            comments=edits.comments(session, seg, viewer=user),
            assignees=access.assignees(session, seg) if user.is_admin else None,
        )


@router.get("/segments/{segment}/rows/{row_index}")
def get_row(segment: str, row_index: RowIndex, st: AppState, auth: Auth) -> RowOut:
    with auth.read() as (session, user):
        seg, copy = access.get_segment_and_copy(session, user, segment)
        out = row_out(st, seg.sample_id, edits.read_row(session, user, seg, row_index, copy=copy))
        out.segment_status = access.status_for(session, user, seg, copy)[0]
        return out


def row_out(st: State, sample_id: str, r: edits.RowState) -> RowOut:
    """A row as the API answers it: :meth:`~rescue_bench.review.edits.RowState.to_api` and whether its clip is stale."""
    return r.as_api(RowOut, clip_stale=clip_stale(st.assets, sample_id, r.position, r.row, r.draft))


@router.put(
    "/segments/{segment}/rows/{row_index}",
    responses={409: {"model": ConflictOut, "description": "stale version: nothing applied; the current row is returned"}, 422: {"description": "a value the release format refuses"}, 423: {"description": "segment discarded"}},
)
def save_row(segment: str, row_index: RowIndex, body: SaveIn, auth: Auth) -> RowOut:
    # how a save is split into transactions depends on the backend, known only at run time
    st = auth.state
    try:
        if st.db.single_writer:
            # SQLite: worked out in a read transaction; the write transaction (which every other
            # writer queues for) only checks the version and writes
            with st.db.read() as session:
                user = auth.user(session)
                seg, copy = access.get_segment_and_copy(session, user, segment)
                sample_id = seg.sample_id
                plan = edits.prepare_save(
                    session, user, seg, row_index, version=body.version, fields=body.fields, reviewed=body.reviewed, max_chars=st.config.max_field_chars, copy=copy,
                    flag=body.flag_change(),
                )
            if isinstance(plan, edits.RowState):
                return row_out(st, sample_id, plan)
            with st.db.write() as session:
                auth.user(session, hold="share")  # a logout may have committed since the check above
                result = edits.apply_save(session, plan)
        else:
            # PostgreSQL locks rows, not the database: plan and apply in one transaction on one
            # connection (one checkout and one commit fewer; the conditional UPDATE is the same check)
            with st.db.write() as session:
                user = auth.user(session, hold="share")  # a logout waits for this save, or it is refused
                seg, copy = access.get_segment_and_copy(session, user, segment)
                sample_id = seg.sample_id
                plan = edits.prepare_save(
                    session, user, seg, row_index, version=body.version, fields=body.fields, reviewed=body.reviewed, max_chars=st.config.max_field_chars, copy=copy,
                    flag=body.flag_change(),
                )
                result = plan if isinstance(plan, edits.RowState) else edits.apply_save(session, plan)
    except edits.StaleWrite:
        with st.db.read() as session:
            user = auth.user(session)
            seg = access.get_segment(session, user, segment)
            raise edits.stale_error(session, user, seg, row_index) from None
    return row_out(st, sample_id, result)


@router.get("/segments/{segment}/rows/{row_index}/audit")
def row_audit(segment: str, row_index: RowIndex, auth: Auth) -> list[AuditOut]:
    with auth.read() as (session, user):
        seg = access.get_segment(session, user, segment)
        own = copies.own_copy(session, user, seg)  # an annotator of an independent segment: their copy's history only
        found = edits.audit_entries(session, segment=seg, row=access.get_row(session, seg, row_index), copy_id=own.id if own else None)
        return found


@router.get("/segments/{segment}/comments")
def list_comments(segment: str, auth: Auth) -> list[CommentOut]:
    with auth.read() as (session, user):
        return edits.comments(session, access.get_segment(session, user, segment), viewer=user)


@router.post("/segments/{segment}/comments", status_code=201)
def add_comment(segment: str, body: CommentIn, auth: Auth) -> CommentOut:
    with auth.write() as (session, user):
        seg = access.get_segment(session, user, segment)
        comment = edits.add_comment(session, user, seg, body.text, position=body.row)
        return CommentOut(id=comment.id, user=user.username, at=comment.created_at.isoformat(), row=body.row, text=comment.text)


@router.post("/segments/{segment}/discard")
def discard(segment: str, body: ReasonIn, auth: Auth) -> StatusOut:
    with auth.write() as (session, user):
        seg = edits.set_status(session, user, access.get_segment(session, user, segment), "discarded", body.reason)
        status, reason = access.status_for(session, user, seg)
        return StatusOut(status=status, status_reason=reason)


@router.post("/segments/{segment}/restore")
def restore(segment: str, auth: Auth) -> StatusOut:
    with auth.write() as (session, user):
        seg = edits.set_status(session, user, access.get_segment(session, user, segment), "open")
        status, reason = access.status_for(session, user, seg)
        return StatusOut(status=status, status_reason=reason)


@router.put("/segments/{segment}/assignees")
def set_assignees(segment: str, body: AssigneesIn, auth: Auth) -> AssigneesOut:
    with auth.write(admin=True) as (session, user):
        seg = access.get_segment(session, user, segment)
        return AssigneesOut(assignees=access.set_assignees(session, seg, body.usernames, by=user))


# ------------------------------------------------------------------------------------------------
# progress, audit, users, export
# ------------------------------------------------------------------------------------------------


@router.get("/progress", response_model_exclude_unset=True)
def get_progress(auth: Auth) -> ProgressOut:
    """The dashboard's figures, small enough to poll: it refreshes itself from this."""
    with auth.read() as (session, user):
        segs = progress.segment_list(session, user)
        out = ProgressOut(
            totals=progress.figures(session, user, segs),
            segments=[SegmentProgressOut(id=s.id, rows=s.rows, reviewed=s.reviewed, progress=s.progress) for s in segs],
        )
        if not user.is_admin:
            return out  # no admin keys at all (response_model_exclude_unset)
        ov = progress.overview(session)
        for seg in out.segments:
            p = ov.segments[seg.id]
            seg.final = RowsProgressOut(**p.rows.to_json())
            if p.copies:
                seg.copies = [CopyProgressOut(user=c.user, status=c.status, counts=CountsOut(**c.counts.to_json())) for c in p.copies]
        out.annotators = progress.with_progress(progress.per_annotator(session), ov)
        out.rows = RowsProgressOut(**ov.rows.to_json())
        return out


@router.get("/audit")
def get_audit(auth: Auth, limit: int = Query(200, ge=1, le=5000)) -> list[AuditOut]:
    with auth.read(admin=True) as (session, user):
        return edits.audit_entries(session, limit=limit)


@router.get("/users")
def get_users(auth: Auth) -> list[UserOut]:
    with auth.read(admin=True) as (session, user):
        return users.list_users(session)


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {}}, "description": "the release JSONL"}, 409: {"description": "segments await adjudication (named)"}},
)
def export(auth: Auth, include_discarded: bool = False, annotator: str | None = None, include_saved: bool = False, mark_unadjudicated: bool = False) -> Response:
    """The release: adjudicated value, else a single annotator's, else the draft (``annotator``: one
    annotator's version of the segments they have a copy of; ``include_saved``: saved edits not marked
    reviewed too). Refused (409, the segments named) while segments await adjudication, unless
    ``mark_unadjudicated``: then their clips carry ``"review_status": "awaiting_adjudication"``. Audited."""
    counts = store.ExportCounts()
    with auth.read(admin=True) as (session, user):
        person = users.get_user(session, annotator) if annotator else None
        lines = store.export_lines(
            session, include_discarded=include_discarded, annotator=person, include_saved=include_saved, mark_unadjudicated=mark_unadjudicated, counts=counts
        )
    with auth.state.db.write() as session:  # the read has ended before the audit entry's write transaction begins
        store.audit_export(session, user_id=user.id, counts=counts, include_discarded=include_discarded, include_saved=include_saved, annotator=annotator)
    body = "".join(lines)
    return Response(body.encode("utf-8"), media_type="application/x-ndjson", headers={"Content-Disposition": 'attachment; filename="reviewed.jsonl"'})
