"""Routes for several annotators per segment: assigning k annotators per segment, review modes, the reveal rule,
adjudication and inter-annotator agreement (JSON API under ``/api`` and the admins' pages)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from rescue_bench.labels import SCENARIOS
from rescue_bench.review import access, adjudication
from rescue_bench.review.agreement import ALL, MEASURES, database_report
from rescue_bench.review.api import RowIndex, RowOut, require_admin
from rescue_bench.review.context import state
from rescue_bench.review.errors import Forbidden, Invalid
from rescue_bench.review.fields import FIELDS, compact
from rescue_bench.review.limits import MAX_DB_INT
from rescue_bench.review.models import REVIEW_MODES, Segment, User
from rescue_bench.review.pages import adjudication_media, render

api = APIRouter(prefix="/api", tags=["overlap and agreement"])
pages = APIRouter(include_in_schema=False)


class OverlapIn(BaseModel):
    k: int = Field(ge=1, le=20, description="annotators per segment; k > 1 gives each an independent copy")
    seed: int = Field(0, description="tie-break order of equally loaded annotators")
    usernames: list[str] | None = Field(None, description="the annotators to draw from (default: every active annotator)")
    segments: list[str] | None = Field(None, description="sample ids to assign (default: every open segment)")
    dry_run: bool = Field(False, description="only answer what would change (the plan a confirmation shows); nothing is written")


class ModeIn(BaseModel):
    mode: str = Field(description="shared | independent")


class RevealIn(BaseModel):
    reveal: str = Field(description="adjudicated | never | always: when annotators of an independent segment see the others' values")


class AdjudicateIn(BaseModel):
    version: int = Field(strict=True, ge=0, le=MAX_DB_INT, description="the final copy's version the adjudication started from")
    take: dict[str, str] = Field(default_factory=dict, description="field -> annotator whose value is kept, or 'draft'")
    values: dict[str, Any] = Field(default_factory=dict, description="field -> a value typed by the adjudicator")


# ------------------------------------------------------------------------------------------------
# overlap, modes, reveal
# ------------------------------------------------------------------------------------------------


@api.post("/overlap")
def assign_overlap(body: OverlapIn, request: Request) -> dict[str, Any]:
    """Give every open segment (or the ``segments`` named) ``k`` annotators (of ``usernames``), balanced
    by rows (``rescue review assign --overlap K``). With ``dry_run`` the same plan is worked out and
    answered, and nothing is written: show it, then send the request again without ``dry_run``
    (same seed, same state: same plan)."""
    from sqlalchemy import select

    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        people = None
        if body.usernames is not None:
            people = list(session.scalars(select(User).where(User.username.in_(body.usernames))))
            missing = sorted(set(body.usernames) - {u.username for u in people})
            if missing:
                raise Invalid(f"no such user: {', '.join(missing)}", "usernames")
        chosen = None
        if body.segments is not None:
            chosen = list(session.scalars(select(Segment).where(Segment.sample_id.in_(body.segments)).order_by(Segment.position)))
            missing = sorted(set(body.segments) - {s.sample_id for s in chosen})
            if missing:
                raise Invalid(f"no such segment: {', '.join(missing)}", "segments")
        summary = access.assign_overlap(session, body.k, seed=body.seed, annotators=people, segments=chosen, by=user)
        if body.dry_run:
            session.rollback()  # the plan was made by doing it; undo every bit of it
        return {
            "dry_run": body.dry_run,
            "k": summary.k,
            "segments": summary.segments,
            "added": [{"segment": s, "user": u} for s, u in summary.added],
            "switched": summary.switched,
            "skipped": summary.skipped,
            "over": summary.over,
            "load": summary.load,
        }


@api.put("/segments/{segment}/mode")
def set_mode(segment: str, body: ModeIn, request: Request) -> dict[str, Any]:
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        seg = access.get_segment(session, user, segment)
        access.set_mode(session, seg, body.mode, by=user)
        return {"mode": seg.review_mode, "assignees": access.assignees(session, seg)}


@api.get("/settings/reveal")
def get_reveal(request: Request) -> dict[str, Any]:
    with state(request).db.read() as session:
        require_admin(state(request).auth(session, request))
        return {"reveal": access.reveal_rule(session), "choices": list(access.REVEAL_CHOICES)}


@api.put("/settings/reveal")
def set_reveal(body: RevealIn, request: Request) -> dict[str, Any]:
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        return {"reveal": access.set_reveal_rule(session, body.reveal, by=user)}


# ------------------------------------------------------------------------------------------------
# adjudication
# ------------------------------------------------------------------------------------------------


def _adjudication(session: Any, seg: Segment) -> dict[str, Any]:
    rows = adjudication.compare_segment(session, seg)
    return {
        "id": seg.key,
        "segment_id": seg.sample_id,
        "scenario": seg.scenario,
        "mode": seg.review_mode,
        "status": seg.status,
        "annotators": sorted({c.annotator for r in rows for c in r.copies}),
        "summary": adjudication.summary(rows),
        "rows": [r.to_api() for r in rows],
    }


@api.get("/segments/{segment}/adjudication")
def get_adjudication(segment: str, request: Request) -> dict[str, Any]:
    """Every row's annotator copies beside the final copy, with the fields they dispute (admins)."""
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        return _adjudication(session, access.get_segment(session, user, segment))


@api.put(
    "/segments/{segment}/rows/{row_index}/adjudication",
    response_model=RowOut,
    responses={409: {"description": "someone adjudicated this row since: nothing applied"}, 422: {"description": "a dispute left undecided, or a bad value"}},
)
def adjudicate(segment: str, row_index: RowIndex, body: AdjudicateIn, request: Request) -> Response:
    """Write the final value of a row from the annotators' values (``take``) or typed ones (``values``)."""
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        seg = access.get_segment(session, user, segment)
        result = adjudication.adjudicate_row(session, user, seg, row_index, version=body.version, take=body.take, values=body.values)
        return JSONResponse(result.to_api())


@api.post("/segments/{segment}/adjudication/accept-agreed")
def accept_agreed(segment: str, request: Request) -> dict[str, Any]:
    """Adjudicate every row all annotators reviewed and agree on."""
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        require_admin(user)
        seg = access.get_segment(session, user, segment)
        return {"accepted": adjudication.accept_agreed(session, user, seg)}


@api.get("/segments/{segment}/rows/{row_index}/others", responses={403: {"description": "hidden until the segment is adjudicated"}})
def get_others(segment: str, row_index: RowIndex, request: Request) -> dict[str, Any]:
    """The other annotators' values of a row and the final one (admins; annotators per the reveal rule)."""
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        seg = access.get_segment(session, user, segment)
        found = adjudication.other_copies(session, user, seg, row_index)
        if found is None:
            raise Forbidden("the other annotators' values are hidden until this segment is adjudicated")
        return found


# ------------------------------------------------------------------------------------------------
# agreement
# ------------------------------------------------------------------------------------------------


@api.get("/agreement")
def get_agreement(
    request: Request,
    resamples: int = Query(1000, ge=0, le=10000),
    seed: int = 0,
    confidence: float = Query(0.95, gt=0.5, lt=1.0),
    bertscore: bool = True,
) -> dict[str, Any]:
    """Inter-annotator agreement per field and scope with bootstrap intervals, text similarity and
    draft-vs-human change rates (``rescue review agreement --json`` gives the same)."""
    with state(request).db.read() as session:
        require_admin(state(request).auth(session, request))
        return database_report(session, n_resamples=resamples, seed=seed, confidence=confidence, use_bertscore=bertscore)


@pages.get("/agreement")
def agreement_page(
    request: Request,
    scope: str = ALL,
    resamples: int = Query(1000, ge=0, le=10000),
    bertscore: bool = True,
) -> Response:
    st = state(request)
    with st.db.read() as session:
        user = st.auth(session, request)
        require_admin(user)
        report = database_report(session, n_resamples=resamples, use_bertscore=bertscore)
    found = {f["scope"] for f in report["fields"]} | {c["scope"] for c in report["changes"]}
    scopes = [ALL] + [s for s in SCENARIOS if s in found]
    if scope not in scopes:
        scope = ALL
    labels = {m.name: m.label for m in MEASURES}
    return render(
        request,
        "agreement.html",
        {
            "user": user,
            "report": report,
            "scope": scope,
            "scopes": scopes,
            "labels": labels,
            "fields": [f for f in report["fields"] if f["scope"] == scope],
            "texts": [t for t in report["text"] if t["scope"] == scope],
            "changes": sorted((c for c in report["changes"] if c["scope"] == scope and c["rows"]), key=lambda c: -(c["rate"] or 0)),
            "resamples": resamples,
            "bertscore": bertscore,
        },
    )


@pages.get("/segments/{segment}/adjudicate")
def adjudication_page(segment: str, request: Request, show: str = "open") -> Response:
    st = state(request)
    with st.db.read() as session:
        user = st.auth(session, request)
        require_admin(user)
        seg = access.get_segment(session, user, segment)
        data = _adjudication(session, seg)
    rows = data["rows"]
    if show != "all":
        rows = [r for r in rows if not r["final"]["reviewed"]]
    labels = {f.name: f.label for f in FIELDS}
    media = adjudication_media(request, seg, rows)  # clip, subtitles and own-value choices per row
    return render(
        request,
        "adjudicate.html",
        {"user": user, "seg": seg, "data": data, "rows": rows, "show": show, "labels": labels, "compact": compact, "modes": REVIEW_MODES, **media},
    )
