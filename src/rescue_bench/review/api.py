"""The JSON API under ``/api``: what the pages use, and what scripts use (OpenAPI page: ``/api/docs``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from rescue_bench.review import access, edits, progress, store, users
from rescue_bench.review.assets import clip_stale
from rescue_bench.review.context import State, state
from rescue_bench.review.errors import Forbidden
from rescue_bench.review.limits import MAX_DB_INT
from rescue_bench.review.models import AuditEntry, User, utcnow
from rescue_bench.review.security import verify_password

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


def require_admin(user: User) -> None:
    if not user.is_admin:
        raise Forbidden("admins only")


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


class SegmentOut(BaseModel):
    id: str = Field(description="opaque, URL-safe segment id")
    segment_id: str = Field(description="the clip's sample_id")
    scenario: str
    rows: int
    reviewed: int
    edited: int
    comments: int
    status: str = Field(description="open | discarded")
    progress: str = Field(description="todo | in_progress | to_adjudicate (admins: every copy done) | done | discarded")
    status_reason: str | None = None
    mode: str = Field("shared", description="shared (one copy) | independent (a copy per annotator; admins' counts are of adjudicated rows)")
    assignees: list[str] | None = Field(None, description="admins only")
    copies: list[dict[str, Any]] | None = Field(None, description="admins, independent segments: each annotator copy's user, reviewed, edited, status, status_reason")
    ready_to_adjudicate: bool = Field(False, description="admins: every annotator reviewed every row of their copy, and rows await adjudication")


class RowOut(BaseModel):
    row: dict[str, Any] = Field(description="the row as your copy holds it now (release format)")
    draft: dict[str, Any] = Field(description="the imported draft, never changed")
    version: int
    status: str = Field(description="draft (untouched) | edited | reviewed")
    reviewed: bool
    edited: bool
    updated_by: str | None
    updated_at: str | None
    reviewed_by: str | None
    segment_status: str
    clip_stale: bool = Field(False, description="the row's times were edited since its clip was cut (re-cut it: rescue annotate clips --data)")


class ConflictOut(RowOut):
    detail: str


class SaveIn(BaseModel):
    version: int = Field(strict=True, ge=0, le=MAX_DB_INT, description="the version your edit started from")
    fields: dict[str, Any] = Field(default_factory=dict, description="changed fields only, release-format values")
    reviewed: bool | None = Field(None, strict=True, description="mark the row reviewed (true) or not (false)")


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


@router.post("/login", response_model=LoginOut, responses={401: {"description": "wrong credentials"}, 429: {"description": "too many failed logins (Retry-After)"}})
def login(body: LoginIn, request: Request) -> Response:
    st: State = state(request)
    client_ip = request.client.host if request.client else None
    # three steps: count the attempt in advance under the throttle rows' lock (short), check the
    # password with no lock held (argon2 is the slow part), then record the outcome
    with st.db.write() as session:
        attempt = users.begin_login(session, body.username, client_ip=client_ip, policy=st.config.throttle)
    ok = verify_password(attempt.password_hash, body.password)
    with st.db.write() as session:
        user = users.finish_login(session, attempt, ok, policy=st.config.throttle)
        if user is None:
            session.commit()  # the failure's audit entry must stay
            return JSONResponse({"detail": "wrong user name or password"}, status_code=401)
        token, data = st.signer.issue(user.id, user.auth_epoch)
        out = {"csrf_token": data.csrf, "username": user.username, "role": user.role}
    response = JSONResponse(out)
    st.set_cookie(response, token)
    return response


@router.post("/logout", status_code=204)
def logout(request: Request) -> Response:
    st = state(request)
    with st.db.write() as session:
        user = st.auth(session, request)
        users.end_sessions(session, user.id)
        session.add(AuditEntry(at=utcnow(), user_id=user.id, action="logout", note=request.client.host if request.client else None))
    response = Response(status_code=204)
    st.clear_cookie(response)
    return response


@router.get("/me")
def me(request: Request) -> dict[str, Any]:
    user = state(request).user(request)
    data = state(request).session_data(request)
    return {"username": user.username, "role": user.role, "csrf_token": data.csrf if data else None}


# ------------------------------------------------------------------------------------------------
# segments and rows
# ------------------------------------------------------------------------------------------------


@router.get("/segments", response_model=list[SegmentOut])
def list_segments(request: Request) -> Response:
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        return JSONResponse(progress.segment_list(session, user))


def _row_summary(r: edits.RowState) -> dict[str, Any]:
    row = r.row
    start, end = row.get("start_time"), row.get("end_time")
    duration = round(float(end) - float(start), 2) if isinstance(start, (int, float)) and isinstance(end, (int, float)) else None
    return {
        "row_index": r.position,
        "speaker": row.get("primary_speaker"),
        "target": row.get("target"),
        "start_time": start,
        "end_time": end,
        "duration": duration,
        "status": r.status,
        "edited": r.edited,
        "reviewed": r.reviewed,
        "version": r.version,
    }


@router.get("/segments/{segment}")
def get_segment(segment: str, request: Request) -> dict[str, Any]:
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        seg = access.get_segment(session, user, segment)
        status, reason = access.status_for(session, user, seg)
        return {
            "id": seg.key,
            "segment_id": seg.sample_id,
            "scenario": seg.scenario,
            "participants": seg.participants,
            "status": status,
            "status_reason": reason,
            "mode": seg.review_mode,
            "rows": [_row_summary(r) for r in edits.segment_rows(session, user, seg)],
            "comments": edits.comments(session, seg, viewer=user),
            "assignees": access.assignees(session, seg) if user.is_admin else None,
        }


@router.get("/segments/{segment}/rows/{row_index}", response_model=RowOut)
def get_row(segment: str, row_index: RowIndex, request: Request) -> Response:
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        seg = access.get_segment(session, user, segment)
        out = row_out(state(request), seg.sample_id, edits.read_row(session, user, seg, row_index))
        out["segment_status"] = access.status_for(session, user, seg)[0]
        return JSONResponse(out)


def row_out(st: State, sample_id: str, r: edits.RowState) -> dict[str, Any]:
    """A row as the API answers it: :meth:`~rescue_bench.review.edits.RowState.to_api` and whether its clip is stale."""
    return {**r.to_api(), "clip_stale": clip_stale(st.assets, sample_id, r.position, r.row, r.draft)}


@router.put(
    "/segments/{segment}/rows/{row_index}",
    response_model=RowOut,
    responses={409: {"model": ConflictOut, "description": "stale version: nothing applied; the current row is returned"}, 422: {"description": "a value the release format refuses"}, 423: {"description": "segment discarded"}},
)
def save_row(segment: str, row_index: RowIndex, body: SaveIn, request: Request) -> Response:
    st = state(request)
    try:
        if st.db.single_writer:
            # SQLite: worked out in a read transaction; the write transaction (which every other
            # writer queues for) only checks the version and writes
            with st.db.read() as session:
                user = st.auth(session, request)
                seg = access.get_segment(session, user, segment)
                sample_id = seg.sample_id
                plan = edits.prepare_save(
                    session, user, seg, row_index, version=body.version, fields=body.fields, reviewed=body.reviewed, max_chars=st.config.max_field_chars
                )
            if isinstance(plan, edits.RowState):
                return JSONResponse(row_out(st, sample_id, plan))
            with st.db.write() as session:
                result = edits.apply_save(session, plan)
        else:
            # PostgreSQL locks rows, not the database: plan and apply in one transaction on one
            # connection (one checkout and one commit fewer; the conditional UPDATE is the same check)
            with st.db.write() as session:
                user = st.auth(session, request)
                seg = access.get_segment(session, user, segment)
                sample_id = seg.sample_id
                plan = edits.prepare_save(
                    session, user, seg, row_index, version=body.version, fields=body.fields, reviewed=body.reviewed, max_chars=st.config.max_field_chars
                )
                result = plan if isinstance(plan, edits.RowState) else edits.apply_save(session, plan)
    except edits.StaleWrite:
        with st.db.read() as session:
            user = st.auth(session, request)
            seg = access.get_segment(session, user, segment)
            raise edits.stale_error(session, user, seg, row_index) from None
    return JSONResponse(row_out(st, sample_id, result))


@router.get("/segments/{segment}/rows/{row_index}/audit")
def row_audit(segment: str, row_index: RowIndex, request: Request) -> list[dict[str, Any]]:
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        seg = access.get_segment(session, user, segment)
        editing = access.copy_for(session, user, seg)
        own_copy = editing.id if seg.review_mode == "independent" and editing.kind != "final" else None
        return edits.audit_entries(session, segment=seg, row=access.get_row(session, seg, row_index), copy_id=own_copy)


@router.get("/segments/{segment}/comments")
def list_comments(segment: str, request: Request) -> list[dict[str, Any]]:
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        return edits.comments(session, access.get_segment(session, user, segment), viewer=user)


@router.post("/segments/{segment}/comments", status_code=201)
def add_comment(segment: str, body: CommentIn, request: Request) -> dict[str, Any]:
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        seg = access.get_segment(session, user, segment)
        comment = edits.add_comment(session, user, seg, body.text, position=body.row)
        return {"id": comment.id, "user": user.username, "at": comment.created_at.isoformat(), "row": body.row, "text": comment.text}


@router.post("/segments/{segment}/discard")
def discard(segment: str, body: ReasonIn, request: Request) -> dict[str, Any]:
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        seg = edits.set_status(session, user, access.get_segment(session, user, segment), "discarded", body.reason)
        status, reason = access.status_for(session, user, seg)
        return {"status": status, "status_reason": reason}


@router.post("/segments/{segment}/restore")
def restore(segment: str, request: Request) -> dict[str, Any]:
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        seg = edits.set_status(session, user, access.get_segment(session, user, segment), "open")
        status, reason = access.status_for(session, user, seg)
        return {"status": status, "status_reason": reason}


@router.put("/segments/{segment}/assignees")
def set_assignees(segment: str, body: AssigneesIn, request: Request) -> dict[str, Any]:
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        seg = access.get_segment(session, user, segment)
        return {"assignees": access.set_assignees(session, seg, body.usernames, by=user)}


# ------------------------------------------------------------------------------------------------
# progress, audit, users, export
# ------------------------------------------------------------------------------------------------


@router.get("/progress")
def get_progress(request: Request) -> dict[str, Any]:
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        out: dict[str, Any] = {"totals": progress.figures(session, user)}
        if user.is_admin:
            out["annotators"] = progress.per_annotator(session)
        return out


@router.get("/audit")
def get_audit(request: Request, limit: int = Query(200, ge=1, le=5000)) -> list[dict[str, Any]]:
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        return edits.audit_entries(session, limit=limit)


@router.get("/users")
def get_users(request: Request) -> list[dict[str, Any]]:
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        return users.list_users(session)


@router.get("/export", response_class=StreamingResponse, responses={200: {"content": {"application/x-ndjson": {}}, "description": "the release JSONL"}})
def export(request: Request, include_discarded: bool = False, annotator: str | None = None, include_saved: bool = False) -> Response:
    """The release: adjudicated value, else a single annotator's, else the draft (``annotator``: one
    annotator's version of the segments they have a copy of; ``include_saved``: saved edits not marked
    reviewed too). Audited."""
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        person = users.get_user(session, annotator) if annotator else None
        lines = list(store.export_lines(session, include_discarded=include_discarded, annotator=person, include_saved=include_saved))
    with state(request).db.write() as session:
        store.audit_export(session, user_id=user.id, clips=len(lines), include_discarded=include_discarded, include_saved=include_saved, annotator=annotator)
    body = "".join(lines)
    return Response(body.encode("utf-8"), media_type="application/x-ndjson", headers={"Content-Disposition": 'attachment; filename="reviewed.jsonl"'})
