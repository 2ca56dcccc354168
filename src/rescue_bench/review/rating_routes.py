"""Routes of the judge-rating questionnaire (the paper's Table 12 study): the raters' pages and API.

A rater sees one item at a time: the task, the judge's rubric, the reference annotation and the
model's answer, and gives a 1-5 score. What an item payload may hold is fixed in
:func:`rescue_bench.review.ratings.item_view` (never the judge's score, never the model's name).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field

from rescue_bench.review import ratings
from rescue_bench.review.api import RowIndex, require_admin
from rescue_bench.review.context import state
from rescue_bench.review.errors import Invalid
from rescue_bench.review.pages import render

api = APIRouter(prefix="/api", tags=["rating questionnaire"])
pages = APIRouter(include_in_schema=False)


class RateIn(BaseModel):
    score: int = Field(strict=True, ge=1, le=5, description="1-5 on the judge's rubric")
    note: str | None = Field(None, max_length=ratings.MAX_NOTE, description="optional remark")


@api.get("/ratings")
def list_sets(request: Request) -> list[dict[str, Any]]:
    """The questionnaires you rate, with your progress (admins: every set, with its name and every rater's progress)."""
    with state(request).db.read() as session:
        return ratings.sets_for(session, state(request).auth(session, request))


@api.get("/ratings/{set_key}/items/{position}")
def get_item(set_key: str, position: RowIndex, request: Request) -> dict[str, Any]:
    """One item: the rubric, the reference annotation, the model's answer and your score."""
    with state(request).db.read() as session:
        user = state(request).auth(session, request)
        rating_set = ratings.get_set(session, user, set_key)
        return ratings.item_view(session, user, rating_set, position)


@api.put("/ratings/{set_key}/items/{position}")
def rate(set_key: str, position: RowIndex, body: RateIn, request: Request) -> dict[str, Any]:
    """Give (or change) your 1-5 score of one item."""
    with state(request).db.write() as session:
        user = state(request).auth(session, request)
        rating_set = ratings.get_set(session, user, set_key)
        return ratings.rate(session, user, rating_set, position, body.score, body.note)


@api.get("/ratings/export", responses={200: {"content": {"text/csv": {}}, "description": "id, task, sample_id, scenario, row, rater, human_score"}})
def export(request: Request, set: str | None = None) -> Response:  # noqa: A002 - the query parameter's name
    """The scores as the CSV ``rescue agreement score`` reads (admins)."""
    from rescue_bench.judge_ratings import RATINGS_COLUMNS

    with state(request).db.read() as session:
        require_admin(state(request).auth(session, request))
        rating_set = ratings.find_set(session, set) if set else None
        rows = ratings.export_rows(session, rating_set)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(RATINGS_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return Response(buffer.getvalue(), media_type="text/csv; charset=utf-8", headers={"Content-Disposition": 'attachment; filename="ratings.csv"'})


@pages.get("/ratings")
def ratings_page(request: Request) -> Response:
    st = state(request)
    with st.db.read() as session:
        user = st.auth(session, request)
        sets = ratings.sets_for(session, user)
    return render(request, "ratings.html", {"user": user, "sets": sets})


@pages.get("/ratings/{set_key}")
def first_open_item(set_key: str, request: Request) -> Response:
    st = state(request)
    with st.db.read() as session:
        user = st.auth(session, request)
        rating_set = ratings.get_set(session, user, set_key)
        first = ratings.item_view(session, user, rating_set, 1)
    position = 1 if first["score"] is None else (first["next_unrated"] or 1)
    return RedirectResponse(f"/ratings/{set_key}/{position}", status_code=303)


@pages.get("/ratings/{set_key}/{position}")
def rating_page(set_key: str, position: RowIndex, request: Request) -> Response:
    st = state(request)
    with st.db.read() as session:
        user = st.auth(session, request)
        rating_set = ratings.get_set(session, user, set_key)
        if not 1 <= position <= rating_set.items:
            raise Invalid(f"this questionnaire has items 1 to {rating_set.items}", "position")
        view = ratings.item_view(session, user, rating_set, position)
        can_rate = ratings.is_rater(session, rating_set, user)
    return render(request, "rate.html", {"user": user, "item": view, "can_rate": can_rate})
