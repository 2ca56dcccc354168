"""Routes of the rating questionnaires: the raters' pages and API.

Of scores (the paper's Table 12 study), a rater sees one item at a time: the task, the judge's
rubric, the reference annotation and the model's answer, and gives a 1-5 score. What an item
payload may hold is fixed in :func:`rescue_bench.review.ratings.item_view` (never the judge's
score, never the model's name). Of pairs (the closed loop's study), a rater sees the session up to
a start and two continuations and says which supports the group better: :func:`rescue_bench.review.pairs.pair_view`
(never an agent's name, a run, an episode id or a J).
"""

from __future__ import annotations

import csv
import io
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field

from rescue_bench.judge_ratings import text_parts
from rescue_bench.review import access, pairs, ratings
from rescue_bench.review.api import RowIndex
from rescue_bench.review.deps import Auth
from rescue_bench.review.errors import Invalid
from rescue_bench.review.limits import MAX_SAMPLE_CHARS
from rescue_bench.review.pages import render
from rescue_bench.review.users import list_users

api = APIRouter(prefix="/api", tags=["rating questionnaire"])
pages = APIRouter(include_in_schema=False)


class QuestionnaireIn(BaseModel):
    name: str = Field(min_length=1, max_length=200, description="the set's name (shown to admins only)")
    file_name: str = Field("sample.csv", max_length=200, description="the uploaded file's name (for messages and the audit)")
    csv: str = Field(max_length=MAX_SAMPLE_CHARS, description="the sample `rescue agreement sample` wrote, as text: its CSV, or its JSON Lines of pairs")
    raters: list[str] = Field(default_factory=list, max_length=500, description="usernames who rate it")


class RateIn(BaseModel):
    score: int = Field(strict=True, ge=1, le=5, description="1-5 on the judge's rubric")
    note: str | None = Field(None, max_length=ratings.MAX_NOTE, description="optional remark")


class RatePairIn(BaseModel):
    preferred: Literal["first", "second", "tie"] = Field(description="the continuation shown first or second supports the group better, or they are as good")
    reason: str = Field(min_length=1, max_length=pairs.MAX_REASON, description="why, in a few words")
    support_first: int | None = Field(None, strict=True, ge=1, le=5, description="optional: how well the first continuation supports the group, 1-5")
    support_second: int | None = Field(None, strict=True, ge=1, le=5, description="optional: the same of the second")


class CreatedSetOut(BaseModel):
    id: str
    items: int
    raters: list[str]


@api.get("/ratings", response_model_exclude_unset=True)
def list_sets(auth: Auth) -> list[ratings.RatingSetOut]:
    """The questionnaires you rate, with your progress (admins: every set, with its name and every rater's progress)."""
    with auth.read() as (session, user):
        return ratings.sets_for(session, user)


@api.post("/ratings", status_code=201, responses={422: {"description": "a bad sample (file and line named) or an unknown rater"}})
def create_set(body: QuestionnaireIn, auth: Auth) -> CreatedSetOut:
    """Set up a questionnaire from a sample CSV and its raters (admins; as ``rescue review import-ratings``)."""
    with auth.write(admin=True) as (session, user):
        import hashlib
        import tempfile
        from pathlib import Path

        from rescue_bench.fileio import atomic_write
        from rescue_bench.judge_ratings import RatingFileError, is_pair_sample, read_pair_sample, read_sample_csv

        file_name = Path(body.file_name).name or "sample.csv"
        with tempfile.TemporaryDirectory() as folder:  # the readers read a file: the one check of a sample
            path = Path(folder) / "sample"  # the given name only in messages, never as a path
            atomic_write(path, body.csv)
            paired = is_pair_sample(path)
            try:
                found = read_pair_sample(path) if paired else read_sample_csv(path)
            except RatingFileError as exc:
                where = f":{exc.line}" if exc.line is not None else ""
                raise Invalid(f"{file_name}{where}: {exc.message}", "csv") from None
        people = access.active_users_named(session, body.raters, field="raters")
        digest = hashlib.sha256(body.csv.encode("utf-8")).hexdigest()
        made = dict(name=body.name.strip(), file_name=file_name, sha256=digest, raters=people, by=user)
        rating_set = pairs.import_pairs(session, found, **made) if paired else ratings.import_ratings(session, found, **made)  # type: ignore[arg-type]
        return CreatedSetOut(id=rating_set.key, items=len(found), raters=sorted(p.username for p in people))


@api.get("/ratings/{set_key}/items/{position}")
def get_item(set_key: str, position: RowIndex, auth: Auth) -> ratings.ItemOut:
    """One item: the rubric, the reference annotation, the model's answer and your score."""
    with auth.read() as (session, user):
        rating_set = ratings.get_set(session, user, set_key)
        return ratings.item_view(session, user, rating_set, position)


@api.put("/ratings/{set_key}/items/{position}")
def rate(set_key: str, position: RowIndex, body: RateIn, auth: Auth) -> ratings.ItemOut:
    """Give (or change) your 1-5 score of one item."""
    with auth.write() as (session, user):
        rating_set = ratings.get_set(session, user, set_key)
        return ratings.rate(session, user, rating_set, position, body.score, body.note)


@api.get("/ratings/{set_key}/pairs/{position}")
def get_pair(set_key: str, position: RowIndex, auth: Auth) -> pairs.PairOut:
    """One pair: the session up to the start, the two continuations in your order, and your answer."""
    with auth.read() as (session, user):
        rating_set = ratings.get_set(session, user, set_key)
        return pairs.pair_view(session, user, rating_set, position)


@api.put("/ratings/{set_key}/pairs/{position}")
def rate_pair(set_key: str, position: RowIndex, body: RatePairIn, auth: Auth) -> pairs.PairOut:
    """Give (or change) your answer to one pair: which continuation supports the group better, and why."""
    with auth.write() as (session, user):
        rating_set = ratings.get_set(session, user, set_key)
        return pairs.rate_pair(session, user, rating_set, position, body.preferred, body.reason, body.support_first, body.support_second)


@api.get(
    "/ratings/export", response_class=Response,
    responses={200: {"content": {"text/csv": {}}, "description": "id, task, sample_id, scenario, row, rater, human_score (pairs: pair_id, a_run, ..., preferred)"}},
)
def export(auth: Auth, set: str | None = None) -> Response:  # noqa: A002 - the query parameter's name
    """The answers as the CSV ``rescue agreement score`` reads (admins): every questionnaire of scores, or the one named."""
    with auth.read(admin=True) as (session, user):
        from rescue_bench.judge_ratings import PAIR_RATINGS_COLUMNS, RATINGS_COLUMNS

        rating_set = ratings.find_set(session, set) if set else None
        columns: tuple[str, ...]
        if rating_set is not None and rating_set.kind == pairs.PAIRS:
            columns, rows = PAIR_RATINGS_COLUMNS, pairs.export_rows(session, rating_set)
        else:
            columns, rows = RATINGS_COLUMNS, ratings.export_rows(session, rating_set)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return Response(buffer.getvalue(), media_type="text/csv; charset=utf-8", headers={"Content-Disposition": 'attachment; filename="ratings.csv"'})


@pages.get("/ratings")
def ratings_page(request: Request, auth: Auth) -> Response:
    with auth.read() as (session, user):
        sets = ratings.sets_for(session, user)
        people = [u.username for u in list_users(session) if u.active and u.role != "admin"] if user.is_admin else []
        return render(request, "ratings.html", {"user": user, "sets": sets, "people": people})


@pages.get("/ratings/{set_key}")
def first_open_item(set_key: str, auth: Auth) -> Response:
    with auth.read() as (session, user):
        rating_set = ratings.get_set(session, user, set_key)
        if rating_set.kind == pairs.PAIRS:
            pair = pairs.pair_view(session, user, rating_set, 1)
            position = 1 if pair.preferred is None else (pair.next_unrated or 1)
        else:
            first = ratings.item_view(session, user, rating_set, 1)
            position = 1 if first.score is None else (first.next_unrated or 1)
        return RedirectResponse(f"/ratings/{set_key}/{position}", status_code=303)


@pages.get("/ratings/{set_key}/{position}")
def rating_page(set_key: str, position: RowIndex, request: Request, auth: Auth) -> Response:
    with auth.read() as (session, user):
        rating_set = ratings.get_set(session, user, set_key)
        if not 1 <= position <= rating_set.items:
            raise Invalid(f"this questionnaire has items 1 to {rating_set.items}", "position")
        can_rate = ratings.is_rater(session, rating_set, user)
        if rating_set.kind == pairs.PAIRS:
            pair = pairs.pair_view(session, user, rating_set, position)
            return render(request, "pair.html", {"user": user, "pair": pair, "data": pair.model_dump(mode="json"), "can_rate": can_rate})
        view = ratings.item_view(session, user, rating_set, position)
        # the sample's VP texts hold their viewpoints joined: shown one per line
        parts = {f"{side}_parts": text_parts(view.task, text or "") for side, text in (("reference", view.reference), ("answer", view.answer))}
        return render(request, "rate.html", {"user": user, "item": view, "can_rate": can_rate, **parts})
