"""Routes for several annotators per segment: assigning k annotators per segment, review modes, the reveal rule,
adjudication and inter-annotator agreement (JSON API under ``/api`` and the admins' pages)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from rescue_bench.labels import SCENARIOS
from rescue_bench.review import access, adjudication, edits, progress
from rescue_bench.review.agreement import ALL, MEASURES, AgreementReport, cached_report, collect, database_report, disagreements
from rescue_bench.review.api import RowIndex
from rescue_bench.review.deps import Auth
from rescue_bench.review.errors import Forbidden, NotFound
from rescue_bench.review.fields import FIELDS, compact
from rescue_bench.review.limits import MAX_DB_INT
from rescue_bench.review.models import REVIEW_MODES, Segment
from rescue_bench.review.pages import adjudication_media, render
from rescue_bench.review.store import segment_key

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


class OverlapOut(BaseModel):
    dry_run: bool
    k: int
    segments: int = Field(description="segments considered")
    added: list[dict[str, str]] = Field(description="assignments made: {segment, user}")
    switched: list[str] = Field(description="segments switched to independent copies")
    skipped: list[str] = Field(description="segments left alone: saved work in their shared copy")
    over: list[str] = Field(description="segments that already have more than k assignees")
    load: dict[str, int] = Field(description="rows assigned to each annotator afterwards")


class ModeOut(BaseModel):
    mode: str
    assignees: list[str]


class RevealOut(BaseModel):
    reveal: str


class RevealChoicesOut(RevealOut):
    choices: list[str]


class AdjudicationOut(BaseModel):
    id: str
    segment_id: str
    scenario: str
    mode: str
    status: str
    annotators: list[str]
    summary: adjudication.SummaryOut
    rows: list[adjudication.RowComparisonOut] = Field(description="per row: its annotator copies, the final copy and the fields they dispute")


class AcceptedOut(BaseModel):
    accepted: int = Field(description="rows adjudicated")


# ------------------------------------------------------------------------------------------------
# overlap, modes, reveal
# ------------------------------------------------------------------------------------------------


@api.post("/overlap")
def assign_overlap(body: OverlapIn, auth: Auth) -> OverlapOut:
    """Give every open segment (or the ``segments`` named) ``k`` annotators (of ``usernames``), balanced
    by rows (``rescue review assign --overlap K``). With ``dry_run`` the same plan is worked out and
    answered, and nothing is written: show it, then send the request again without ``dry_run``
    (same seed, same state: same plan)."""
    with auth.write(admin=True) as (session, user):
        people = access.users_named(session, body.usernames, field="usernames") if body.usernames is not None else None
        chosen = access.segments_named(session, body.segments, field="segments") if body.segments is not None else None
        summary = access.assign_overlap(session, body.k, seed=body.seed, annotators=people, segments=chosen, by=user)
        if body.dry_run:
            session.rollback()  # the plan was made by doing it; undo every bit of it
        return OverlapOut(
            dry_run=body.dry_run,
            k=summary.k,
            segments=summary.segments,
            added=[{"segment": s, "user": u} for s, u in summary.added],
            switched=summary.switched,
            skipped=summary.skipped,
            over=summary.over,
            load=summary.load,
        )


@api.put("/segments/{segment}/mode")
def set_mode(segment: str, body: ModeIn, auth: Auth) -> ModeOut:
    with auth.write(admin=True) as (session, user):
        seg = access.get_segment(session, user, segment)
        access.set_mode(session, seg, body.mode, by=user)
        return ModeOut(mode=seg.review_mode, assignees=access.assignees(session, seg))


@api.get("/settings/reveal")
def get_reveal(auth: Auth) -> RevealChoicesOut:
    with auth.read(admin=True) as (session, user):
        return RevealChoicesOut(reveal=access.reveal_rule(session), choices=list(access.REVEAL_CHOICES))


@api.put("/settings/reveal")
def set_reveal(body: RevealIn, auth: Auth) -> RevealOut:
    with auth.write(admin=True) as (session, user):
        return RevealOut(reveal=access.set_reveal_rule(session, body.reveal, by=user))


# ------------------------------------------------------------------------------------------------
# adjudication
# ------------------------------------------------------------------------------------------------


def _adjudication(session: Session, seg: Segment) -> AdjudicationOut:
    rows = adjudication.compare_segment(session, seg)
    return AdjudicationOut(
        id=seg.key,
        segment_id=seg.sample_id,
        scenario=seg.scenario,
        mode=seg.review_mode,
        status=seg.status,
        annotators=sorted({c.annotator for r in rows for c in r.copies}),
        summary=adjudication.summary(rows),
        rows=[r.to_api() for r in rows],
    )


@api.get("/segments/{segment}/adjudication")
def get_adjudication(segment: str, auth: Auth) -> AdjudicationOut:
    """Every row's annotator copies beside the final copy, with the fields they dispute (admins)."""
    with auth.read(admin=True) as (session, user):
        return _adjudication(session, access.get_segment(session, user, segment))


@api.put(
    "/segments/{segment}/rows/{row_index}/adjudication",
    responses={409: {"description": "someone adjudicated this row since: nothing applied"}, 422: {"description": "a dispute left undecided, or a bad value"}},
)
def adjudicate(segment: str, row_index: RowIndex, body: AdjudicateIn, auth: Auth) -> edits.RowStateOut:
    """Write the final value of a row from the annotators' values (``take``) or typed ones (``values``)."""
    with auth.write(admin=True) as (session, user):
        seg = access.get_segment(session, user, segment)
        result = adjudication.adjudicate_row(session, user, seg, row_index, version=body.version, take=body.take, values=body.values)
        return result.to_api()


@api.post("/segments/{segment}/adjudication/accept-agreed")
def accept_agreed(segment: str, auth: Auth) -> AcceptedOut:
    """Adjudicate every row all annotators reviewed and agree on."""
    with auth.write(admin=True) as (session, user):
        seg = access.get_segment(session, user, segment)
        return AcceptedOut(accepted=adjudication.accept_agreed(session, user, seg))


@api.get("/segments/{segment}/rows/{row_index}/others", responses={403: {"description": "hidden until the segment is adjudicated"}})
def get_others(segment: str, row_index: RowIndex, auth: Auth) -> adjudication.OthersOut:
    """The other annotators' values of a row and the final one (admins; annotators per the reveal rule)."""
    with auth.read() as (session, user):
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
    auth: Auth,
    resamples: int = Query(1000, ge=0, le=10000),
    seed: int = 0,
    confidence: float = Query(0.95, gt=0.5, lt=1.0),
    bertscore: bool = True,
) -> AgreementReport:
    """Inter-annotator agreement per field and scope with bootstrap intervals, text similarity and
    draft-vs-human change rates (``rescue review agreement --json`` gives the same)."""
    with auth.read(admin=True) as (session, user):
        return database_report(session, n_resamples=resamples, seed=seed, confidence=confidence, use_bertscore=bertscore)


@pages.get("/agreement")
def agreement_page(
    request: Request,
    auth: Auth,
    scope: str = ALL,
    resamples: int = Query(1000, ge=0, le=10000),
    bertscore: bool = True,
    full: bool = False,
) -> Response:
    """The report. Its bootstrap intervals and BERTScore take seconds: unless they are computed for
    this state of the database already (or ``full`` asks to wait for them), the page answers at once
    with the point estimates and exact-match shares, and its script fetches the ``full`` page and
    puts it in place."""
    with auth.read(admin=True) as (session, user):
        report = cached_report(session, n_resamples=resamples, use_bertscore=bertscore)
        pending = report is None and not full and (resamples > 0 or bertscore)  # else the quick report is the whole one
        if report is None:
            report = database_report(session, n_resamples=0 if pending else resamples, use_bertscore=bertscore and not pending)
        found = {f.scope for f in report.fields} | {c.scope for c in report.changes}
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
                "pooled": ALL,
                "labels": labels,
                "fields": [f for f in report.fields if f.scope == scope],
                "texts": [t for t in report.text if t.scope == scope],
                "changes": sorted((c for c in report.changes if c.scope == scope and c.rows), key=lambda c: -(c.rate or 0)),
                "resamples": resamples,
                "bertscore": bertscore,
                "pending": pending,
                "query": urlencode({"scope": scope, "resamples": resamples, "bertscore": str(bertscore).lower()}),
            },
        )


@pages.get("/agreement/rows")
def disagreement_page(request: Request, auth: Auth, field: str, scope: str = ALL) -> Response:
    """The rows behind one agreement value: every unit of ``field`` the annotators rated differently,
    each linked to its row on the adjudication page."""
    measure = next((m for m in MEASURES if m.name == field), None)
    if measure is None:
        raise NotFound(f"no agreement measure {field!r}")
    with auth.read(admin=True) as (session, user):
        rows, _reviews = collect(session)
    compared = [r for r in rows if len(r.copies) >= 2 and (scope == ALL or r.scenario == scope)]
    found = disagreements(measure, compared)
    keys = {d.segment: segment_key(d.segment) for d in found}
    return render(request, "disagreements.html", {"user": user, "measure": measure, "scope": scope, "found": found, "keys": keys, "pooled": ALL})


@pages.get("/segments/{segment}/adjudicate")
def adjudication_page(segment: str, request: Request, auth: Auth, show: str = "open") -> Response:
    with auth.read(admin=True) as (session, user):
        seg = access.get_segment(session, user, segment)
        data = _adjudication(session, seg)
        rows = data.rows
        if show != "all":
            rows = [r for r in rows if not r.final.reviewed]
        labels = {f.name: f.label for f in FIELDS}
        media = adjudication_media(request, seg, rows)  # clip, subtitles and own-value choices per row
        listed = progress.segment_list(session, user)
        at = next((i for i, s in enumerate(listed) if s.id == seg.key), -1) + 1
        onward = next((s for s in listed[at:] + listed[:at] if s.ready_to_adjudicate and s.id != seg.key), None)
        return render(
            request,
            "adjudicate.html",
            {
                "user": user, "seg": seg, "data": data.model_dump(), "rows": rows, "show": show, "labels": labels, "compact": compact, "modes": REVIEW_MODES,
                "onward": onward, "annotator_keys": {name: str(i) for i, name in enumerate(data.annotators[:9], 1)}, **media,
            },
        )
