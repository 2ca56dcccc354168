"""Routes of the practice page: a logged-in person plays the therapist against an offline simulator
(the catalogue's: the fitted default, which hears the words, or the scripted smoke test).

Every route needs a session (401 / the login page otherwise) and every POST the CSRF header (the
app's guard). A person sees and plays only their own episodes (anyone else's answers 404). What a
view may hold is fixed in :func:`rescue_bench.review.practice._view`: what the simulator listens to,
the transcript (with how each of the person's turns was heard), the choices of the next step and,
at the end, the score and the debrief; never a role card or an annotation's text, and the hidden
state only in the debrief.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from rescue_bench.review import practice
from rescue_bench.review.deps import Auth
from rescue_bench.review.limits import MAX_DB_INT
from rescue_bench.review.pages import render

api = APIRouter(prefix="/api/practice", tags=["practice"])
pages = APIRouter(include_in_schema=False)

# ids and step numbers past a database integer are a 422, never a driver overflow (a 500)
EpisodeId = Annotated[int, Path(ge=1, le=MAX_DB_INT, description="an episode of yours")]


class NewEpisodeIn(BaseModel):
    start: int = Field(strict=True, ge=1, le=MAX_DB_INT, description="a start of the catalogue (GET /api/practice)")


class StepIn(BaseModel):
    step: int = Field(strict=True, ge=1, le=MAX_DB_INT, description="the step you are taking (the view's `step`): a repeated step is refused with 409")
    speak: bool = Field(strict=True, description="true: take the turn now; false: keep listening")
    whom: str | None = Field(None, max_length=1200, description="one of the view's `targets` (a client, a pair or subgroup, the group)")
    how: str | None = Field(None, max_length=64, description="one of the view's `strategies`")
    turn: str | None = Field(None, max_length=practice.MAX_TURN_CHARS * 2, description="what you say")


class CatalogueOut(BaseModel):
    starts: list[practice.StartSummary] = Field(description="id, scenario, clients, rows, horizon, simulator")
    episodes: list[practice.EpisodeSummary] = Field(description="your episodes: id, start, steps, finished, J, simulator")


@api.get("")
def catalogue(auth: Auth) -> CatalogueOut:
    """The starts you can play and your episodes."""
    with auth.read() as (session, user):
        return CatalogueOut(starts=practice.list_starts(session), episodes=practice.my_episodes(session, user))


# a view's unset fields are left out of the answer (a transcript row's `heard`: the person's turns only)
@api.post("/episodes", status_code=201, response_model_exclude_unset=True)
def new_episode(body: NewEpisodeIn, auth: Auth) -> practice.EpisodeView:
    """Start a new episode at a catalogue start; returns its first view."""
    with auth.write() as (session, user):
        episode_id = practice.create(session, user, body.start)
        return practice.view(session, user, episode_id)


@api.get("/episodes/{episode_id}", response_model_exclude_unset=True)
def get_episode(episode_id: EpisodeId, auth: Auth) -> practice.EpisodeView:
    """Your episode: the transcript so far, the next step's choices, the score once it is over."""
    with auth.read() as (session, user):
        return practice.view(session, user, episode_id)


@api.post("/episodes/{episode_id}/steps", response_model_exclude_unset=True)
def take_step(episode_id: EpisodeId, body: StepIn, auth: Auth) -> practice.EpisodeView:
    """Take the next step: keep listening, or speak to someone with a strategy; the clients answer."""
    with auth.write() as (session, user):
        return practice.act(session, user, episode_id, body.step, speak=body.speak, whom=body.whom, how=body.how, turn=body.turn)


@pages.get("/practice")
def practice_page(request: Request, auth: Auth) -> Response:
    with auth.read() as (session, user):
        starts = practice.list_starts(session)
        episodes = practice.my_episodes(session, user)
        return render(request, "practice.html", {"user": user, "starts": starts, "episodes": episodes})


@pages.get("/practice/{episode_id}")
def episode_page(episode_id: EpisodeId, request: Request, auth: Auth) -> Response:
    with auth.read() as (session, user):
        view = practice.view(session, user, episode_id).page_data()
        return render(request, "practice_episode.html", {"user": user, "view": view})
