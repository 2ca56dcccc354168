"""The judge-rating questionnaire (the paper's Table 12 study): import a sample, rate, export.

``rescue agreement sample`` draws judged ER/VP records of a run into a CSV; :func:`import_ratings`
turns its lines into rating items of a *rating set* and names its raters; a rater sees one item at a
time (the reference annotation, the model's answer, the rubric the judge used) and gives a 1-5 score;
:func:`export_rows` writes the scores for ``rescue agreement score``, which compares them with the
judge's scores of the run and prints Table 12.

The blind rule: a rater never sees the judge's score or the model's name. Neither is stored: the
sample reader (:func:`rescue_bench.judge_ratings.read_sample_csv`) returns no judge score and no
unknown column, and the set's name (which often names the model) is shown to admins only; a rater
sees "Questionnaire N". :func:`item_view` builds the only item payload the pages and the API show,
from an explicit list of keys. Raters do not see each other's scores either.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rescue_bench.judge_ratings import SampleItem
from rescue_bench.labels import TASK_NAMES
from rescue_bench.review.errors import Invalid, NotFound
from rescue_bench.review.models import (
    RATING_KINDS,
    AuditEntry,
    PairItem,
    PairRating,
    Rating,
    RatingItem,
    RatingRater,
    RatingSet,
    User,
    dumps,
    utcnow,
)

SCORES: tuple[int, ...] = (1, 2, 3, 4, 5)
SCORES_KIND, PAIRS_KIND = RATING_KINDS
"""``RatingSet.kind`` of the Table 12 questionnaire, and of the closed loop's pairs (:mod:`rescue_bench.review.pairs`)."""
MAX_NOTE = 2000

ITEM_KEYS: tuple[str, ...] = (
    "set", "title", "position", "items", "task", "task_name", "scenario", "clip", "row",
    "rubric", "anchors", "reference", "answer", "score", "note", "rated", "next_unrated",
)
"""Everything a rater's item payload may hold (a test checks the API answers exactly these)."""


class Anchor(BaseModel):
    score: int
    meaning: str


class ItemOut(BaseModel):
    """A rater's item payload: exactly :data:`ITEM_KEYS`, never the judge's score or the model's name."""

    set: str
    title: str
    position: int
    items: int
    task: str
    task_name: str
    scenario: str
    clip: str
    row: Any
    rubric: str
    anchors: list[Anchor]
    reference: str
    answer: str
    score: int | None
    note: str | None
    rated: int
    next_unrated: int | None


assert tuple(ItemOut.model_fields) == ITEM_KEYS


class RatingSetOut(BaseModel):
    """A questionnaire in the list (:func:`sets_for`); the admins' fields are left unset for raters."""

    id: str
    title: str
    kind: str = Field(description="scores: rate answers 1-5; pairs: which of two continuations supports the group better")
    items: int
    rated: int = Field(description="items you rated")
    rater: bool = Field(description="you rate this questionnaire")
    name: str | None = Field(default=None, description="admins only: the set's name")
    file: str | None = Field(default=None, description="admins only: the sample file's name")
    raters: dict[str, int] | None = Field(default=None, description="admins only: items rated per rater")


def set_key() -> str:
    """A new opaque, URL-safe id of a rating set: 16 random characters (96 bits). Random, not derived
    from the name: a rater could otherwise hash guessed names (often a model's) and compare."""
    return secrets.token_urlsafe(12)


def title(rating_set: RatingSet) -> str:
    """What raters see as the set's name (its real name may say which model was rated)."""
    return f"Questionnaire {rating_set.id}"


@lru_cache(maxsize=4)
def rubric(task: str) -> tuple[str, tuple[tuple[int, str], ...]]:
    """The judge's rubric for ``task`` (the same text the judge model is given) and its 1-5 anchors."""
    from rescue_bench.prompts.render import JUDGE_RUBRICS

    text = JUDGE_RUBRICS[task]  # type: ignore[index]  # a sample's tasks are judged ones (read_sample_csv checks)
    anchors = tuple(sorted(((int(n), what.strip().rstrip(".")) for n, what in re.findall(r"\b([1-5]) = ([^;\n]+)", text)), reverse=True))
    return text, anchors


def import_ratings(
    session: Session,
    items: Sequence[SampleItem],
    *,
    name: str,
    file_name: str,
    sha256: str,
    raters: Sequence[User] = (),
    by: User | None = None,
    now: datetime | None = None,
) -> RatingSet:
    """A new rating set of ``items`` (from :func:`~rescue_bench.judge_ratings.read_sample_csv`),
    rated by ``raters``; nothing is written on an error."""
    name = name.strip()
    if not name or len(name) > 200:
        raise Invalid("a rating set needs a name of 1-200 characters", "name")
    if session.scalars(select(RatingSet.id).where(RatingSet.name == name)).first() is not None:
        raise Invalid(f"a rating set named {name!r} already exists; choose another --name", "name")
    if not items:
        raise Invalid("the sample has no items", "items")
    now = now or utcnow()
    rating_set = RatingSet(key=set_key(), name=name, file_name=file_name, sha256=sha256, items=len(items), created_at=now, kind=SCORES_KIND)
    session.add(rating_set)
    session.flush()
    session.add_all(
        [
            RatingItem(
                set_id=rating_set.id, position=i, record_id=item["id"], task=item["task"], sample_id=item.get("sample_id") or "",
                scenario=item.get("scenario") or "", row=item.get("row"), reference=item["gold"], answer=item["prediction"],
            )
            for i, item in enumerate(items, 1)
        ]
    )
    session.add(AuditEntry(at=now, user_id=by.id if by else None, action="ratings", field="import", new_json=dumps(name), note=file_name))
    for user in raters:
        add_rater(session, rating_set, user, by=by, now=now)
    session.flush()
    return rating_set


def add_rater(session: Session, rating_set: RatingSet, user: User, *, by: User | None, now: datetime | None = None) -> bool:
    """Let ``user`` rate every item of the set; False if they already do."""
    if not user.active:
        raise Invalid(f"user {user.username!r} is deactivated", "username")
    if session.scalars(select(RatingRater.id).where(RatingRater.set_id == rating_set.id, RatingRater.user_id == user.id)).first():
        return False
    now = now or utcnow()
    session.add(RatingRater(set_id=rating_set.id, user_id=user.id, created_at=now))
    session.add(AuditEntry(at=now, user_id=by.id if by else None, action="ratings", field="rater", new_json=dumps(user.username), note=rating_set.name))
    session.flush()
    return True


def remove_rater(session: Session, rating_set: RatingSet, user: User, *, by: User | None) -> bool:
    """Stop ``user`` rating the set (their scores stay and are exported); False if they did not."""
    found = session.scalars(select(RatingRater).where(RatingRater.set_id == rating_set.id, RatingRater.user_id == user.id)).first()
    if found is None:
        return False
    session.delete(found)
    session.add(AuditEntry(at=utcnow(), user_id=by.id if by else None, action="ratings", field="rater", old_json=dumps(user.username), note=rating_set.name))
    session.flush()
    return True


def find_set(session: Session, name_or_key: str) -> RatingSet:
    """A rating set by name or opaque key (command line and admins)."""
    found = session.scalars(select(RatingSet).where((RatingSet.name == name_or_key) | (RatingSet.key == name_or_key))).first()
    if found is None:
        raise NotFound(f"no rating set {name_or_key!r}")
    return found


def is_rater(session: Session, rating_set: RatingSet, user: User) -> bool:
    return session.scalars(select(RatingRater.id).where(RatingRater.set_id == rating_set.id, RatingRater.user_id == user.id)).first() is not None


def get_set(session: Session, user: User, key: str) -> RatingSet:
    """The rating set with opaque ``key`` if ``user`` rates it (admins: any); :class:`NotFound` otherwise."""
    found = session.scalars(select(RatingSet).where(RatingSet.key == key)).first()
    if found is None or not (user.is_admin or is_rater(session, found, user)):
        raise NotFound("no such questionnaire")
    return found


def sets_for(session: Session, user: User) -> list[RatingSetOut]:
    """The questionnaires ``user`` rates (admins: every set, with its name and raters' progress)."""
    query = select(RatingSet).order_by(RatingSet.id)
    if not user.is_admin:
        query = query.join(RatingRater, RatingRater.set_id == RatingSet.id).where(RatingRater.user_id == user.id)
    out = []
    for s in session.scalars(query):
        # a set of scores counts its ratings, a set of pairs its answers (review.pairs)
        item, answer = (PairItem, PairRating) if s.kind == PAIRS_KIND else (RatingItem, Rating)
        mine = session.scalar(select(func.count(answer.id)).join(item, item.id == answer.item_id).where(item.set_id == s.id, answer.user_id == user.id)) or 0
        entry = RatingSetOut(id=s.key, title=title(s), kind=s.kind, items=s.items, rated=int(mine), rater=is_rater(session, s, user))
        if user.is_admin:
            progress = dict(
                session.execute(
                    select(User.username, func.count(answer.id))
                    .select_from(RatingRater)
                    .join(User, User.id == RatingRater.user_id)
                    .outerjoin(item, item.set_id == RatingRater.set_id)
                    .outerjoin(answer, (answer.item_id == item.id) & (answer.user_id == RatingRater.user_id))
                    .where(RatingRater.set_id == s.id)
                    .group_by(User.username)
                ).all()
            )
            entry.name, entry.file, entry.raters = s.name, s.file_name, {k: int(v) for k, v in sorted(progress.items())}
        out.append(entry)
    return out


def _item(session: Session, rating_set: RatingSet, position: int) -> RatingItem:
    item = session.scalars(select(RatingItem).where(RatingItem.set_id == rating_set.id, RatingItem.position == position)).first()
    if item is None:
        raise NotFound(f"questionnaire has no item {position}")
    return item


def item_view(session: Session, user: User, rating_set: RatingSet, position: int) -> ItemOut:
    """What a rater is shown of one item (exactly :data:`ITEM_KEYS`): never the judge's score, never
    the model's name, never another rater's score."""
    item = _item(session, rating_set, position)
    mine = session.scalars(select(Rating).where(Rating.item_id == item.id, Rating.user_id == user.id)).first()
    rated_positions = set(
        session.scalars(select(RatingItem.position).join(Rating, Rating.item_id == RatingItem.id).where(RatingItem.set_id == rating_set.id, Rating.user_id == user.id))
    )
    unrated = [p for p in range(1, rating_set.items + 1) if p not in rated_positions and p != position]
    later = [p for p in unrated if p > position]
    text, anchors = rubric(item.task)
    return ItemOut(
        set=rating_set.key,
        title=title(rating_set),
        position=item.position,
        items=rating_set.items,
        task=item.task,
        task_name=TASK_NAMES.get(item.task, item.task),  # type: ignore[call-overload]
        scenario=item.scenario,
        clip=item.sample_id,
        row=item.row,
        rubric=text,
        anchors=[Anchor(score=n, meaning=what) for n, what in anchors],
        reference=item.reference,
        answer=item.answer,
        score=mine.score if mine else None,
        note=mine.note if mine else None,
        rated=len(rated_positions),
        next_unrated=(later or unrated)[0] if (later or unrated) else None,
    )


def rate(session: Session, user: User, rating_set: RatingSet, position: int, score: Any, note: str | None = None, *, now: datetime | None = None) -> ItemOut:
    """Set ``user``'s score (1-5) of one item, with an optional note; audited (action ``rate``)."""
    if not is_rater(session, rating_set, user):
        raise NotFound("no such questionnaire")
    if isinstance(score, bool) or not isinstance(score, int) or score not in SCORES:
        raise Invalid("score must be an integer 1-5", "score")
    if note is not None and len(note) > MAX_NOTE:
        raise Invalid(f"note is longer than {MAX_NOTE} characters", "note")
    note = (note or "").strip() or None
    now = now or utcnow()
    item = _item(session, rating_set, position)
    mine = session.scalars(select(Rating).where(Rating.item_id == item.id, Rating.user_id == user.id)).first()
    old = mine.score if mine else None
    if mine is None:
        mine = Rating(item_id=item.id, user_id=user.id, score=score, note=note, created_at=now, updated_at=now)
        session.add(mine)
    else:
        mine.score, mine.note, mine.updated_at = score, note, now
    if old != score:
        session.add(
            AuditEntry(at=now, user_id=user.id, action="rate", field="score", old_json=None if old is None else dumps(old), new_json=dumps(score), note=f"{rating_set.key}#{position}")
        )
    session.flush()
    return item_view(session, user, rating_set, position)


def export_rows(session: Session, rating_set: RatingSet | None = None) -> list[dict[str, Any]]:
    """The ratings as rows of :data:`~rescue_bench.judge_ratings.RATINGS_COLUMNS`: one per item and
    rater (every rater of the set, and anyone who rated), ``human_score`` empty where not rated yet,
    in set and item order, raters by name; without ``rating_set``, every questionnaire of scores."""
    sets = [rating_set] if rating_set is not None else list(session.scalars(select(RatingSet).where(RatingSet.kind == SCORES_KIND).order_by(RatingSet.id)))
    out = []
    for s in sets:
        raters = {
            name
            for name in session.scalars(select(User.username).join(RatingRater, RatingRater.user_id == User.id).where(RatingRater.set_id == s.id))
        }
        scores: dict[tuple[int, str], int] = {}
        for item_id, name, score in session.execute(
            select(Rating.item_id, User.username, Rating.score).join(User, User.id == Rating.user_id).join(RatingItem, RatingItem.id == Rating.item_id).where(RatingItem.set_id == s.id)
        ):
            scores[(item_id, name)] = score
            raters.add(name)
        for item in session.scalars(select(RatingItem).where(RatingItem.set_id == s.id).order_by(RatingItem.position)):
            for name in sorted(raters):
                given = scores.get((item.id, name))
                out.append(
                    {
                        "id": item.record_id, "task": item.task, "sample_id": item.sample_id, "scenario": item.scenario,
                        "row": "" if item.row is None else item.row, "rater": name, "human_score": "" if given is None else given,
                    }
                )
    return out
