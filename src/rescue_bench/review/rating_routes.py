"""Routes of the judge-rating questionnaire (the paper's Table 12 study): the raters' pages and API.

A rater sees one item at a time: the task, the judge's rubric, the reference annotation and the
model's answer, and gives a 1-5 score. What an item payload may hold is fixed in
:func:`rescue_bench.review.ratings.item_view` (never the judge's score, never the model's name).
"""

from __future__ import annotations

import csv
import io

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field

from rescue_bench.judge_ratings import text_parts
from rescue_bench.review import access, ratings
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
    csv: str = Field(max_length=MAX_SAMPLE_CHARS, description="the sample CSV of `rescue agreement sample`, as text")
    raters: list[str] = Field(default_factory=list, max_length=500, description="usernames who rate it")


class RateIn(BaseModel):
    score: int = Field(strict=True, ge=1, le=5, description="1-5 on the judge's rubric")
    note: str | None = Field(None, max_length=ratings.MAX_NOTE, description="optional remark")


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
        from rescue_bench.judge_ratings import RatingFileError, read_sample_csv

        file_name = Path(body.file_name).name or "sample.csv"
        with tempfile.TemporaryDirectory() as folder:  # read_sample_csv reads a file: the one check of a sample
            path = Path(folder) / "sample.csv"  # the given name only in messages, never as a path
            atomic_write(path, body.csv)
            try:
                items = read_sample_csv(path)
            except RatingFileError as exc:
                where = f":{exc.line}" if exc.line is not None else ""
                raise Invalid(f"{file_name}{where}: {exc.message}", "csv") from None
        people = access.active_users_named(session, body.raters, field="raters")
        digest = hashlib.sha256(body.csv.encode("utf-8")).hexdigest()
        rating_set = ratings.import_ratings(session, items, name=body.name.strip(), file_name=file_name, sha256=digest, raters=people, by=user)
        return CreatedSetOut(id=rating_set.key, items=len(items), raters=sorted(p.username for p in people))


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


@api.get("/ratings/export", response_class=Response, responses={200: {"content": {"text/csv": {}}, "description": "id, task, sample_id, scenario, row, rater, human_score"}})
def export(auth: Auth, set: str | None = None) -> Response:  # noqa: A002 - the query parameter's name
    """The scores as the CSV ``rescue agreement score`` reads (admins)."""
    with auth.read(admin=True) as (session, user):
        from rescue_bench.judge_ratings import RATINGS_COLUMNS

        rating_set = ratings.find_set(session, set) if set else None
        rows = ratings.export_rows(session, rating_set)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(RATINGS_COLUMNS), lineterminator="\n")
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
        first = ratings.item_view(session, user, rating_set, 1)
        position = 1 if first.score is None else (first.next_unrated or 1)
        return RedirectResponse(f"/ratings/{set_key}/{position}", status_code=303)


@pages.get("/ratings/{set_key}/{position}")
def rating_page(set_key: str, position: RowIndex, request: Request, auth: Auth) -> Response:
    with auth.read() as (session, user):
        rating_set = ratings.get_set(session, user, set_key)
        if not 1 <= position <= rating_set.items:
            raise Invalid(f"this questionnaire has items 1 to {rating_set.items}", "position")
        view = ratings.item_view(session, user, rating_set, position)
        can_rate = ratings.is_rater(session, rating_set, user)
        # the sample's VP texts hold their viewpoints joined: shown one per line
        parts = {f"{side}_parts": text_parts(view.task, text or "") for side, text in (("reference", view.reference), ("answer", view.answer))}
        return render(request, "rate.html", {"user": user, "item": view, "can_rate": can_rate, **parts})
