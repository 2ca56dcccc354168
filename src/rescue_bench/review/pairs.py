"""The pairwise questionnaire of the closed loop: which of two agents handled the same moment better.

``rescue agreement sample`` on ``rescue sim eval`` folders draws pairs of episodes from the same
start played by two agents (JSON Lines); :func:`import_pairs` makes them a rating set of kind
``pairs``; each rater reads the real session up to the start, then the two continuations (the
agent's turns and the simulated clients' replies), and answers which one supports the group
better, or that they are as good, with a reason, and optionally how well each supports the group
(1-5); :func:`export_rows` writes the answers in the sample's A/B terms for ``rescue agreement
score``.

The blind rule: a rater never sees an agent's name, a run, an episode id or a J. The sample reader
(:func:`rescue_bench.judge_ratings.read_pair_sample`) reads no J and no agent; the runs and episodes
are stored for the export (admins) only; :func:`pair_view` builds the only payload the pages and the
API show, from an explicit list of keys (:data:`PAIR_KEYS`), in the rater's own terms: the sides
are shown in an order drawn for each rater and pair (:func:`shown_first`, from the set's secret
salt), recorded with the answer, so the sample's A is the first continuation for some raters and
the second for others.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue_bench.judge_ratings import PairLine, PairTurn
from rescue_bench.review.errors import Invalid, NotFound
from rescue_bench.review.models import AuditEntry, PairItem, PairRating, RatingSet, User, dumps, utcnow
from rescue_bench.review.ratings import PAIRS_KIND, add_rater, is_rater, set_key, title

PAIRS = PAIRS_KIND
"""``RatingSet.kind`` of a pairwise questionnaire."""
CHOICES: tuple[str, ...] = ("first", "second", "tie")
"""A rater's answer in their own terms: the continuation shown first or second, or as good."""
MAX_REASON = 2000
SUPPORT = (1, 2, 3, 4, 5)

PAIR_KEYS: tuple[str, ...] = (
    "set", "title", "position", "items", "scenario", "clip", "start_row", "context", "first", "second",
    "preferred", "reason", "support_first", "support_second", "rated", "next_unrated",
)
"""Everything a rater's pair payload may hold (a test checks the API answers exactly these)."""


class Turn(BaseModel):
    """One line of the session as the rater reads it."""

    speaker: str
    to: list[str]
    text: str
    listening: bool


class PairOut(BaseModel):
    """A rater's pair payload: exactly :data:`PAIR_KEYS`, in the rater's terms (``first`` /
    ``second``), never a run, an episode id, an agent's name or a J."""

    set: str
    title: str
    position: int
    items: int
    scenario: str
    clip: str
    start_row: int | None
    context: list[Turn]
    first: list[Turn]
    second: list[Turn]
    preferred: Literal["first", "second", "tie"] | None
    reason: str | None
    support_first: int | None
    support_second: int | None
    rated: int
    next_unrated: int | None


assert tuple(PairOut.model_fields) == PAIR_KEYS


def _turns_json(turns: Sequence[PairTurn]) -> str:
    return json.dumps([t.model_dump(mode="json") for t in turns], ensure_ascii=False)


def _turns(text: str) -> list[Turn]:
    return [Turn(speaker=t["speaker"], to=list(t.get("to") or []), text=t.get("text") or "", listening=bool(t.get("listening"))) for t in json.loads(text)]


def import_pairs(
    session: Session,
    pairs: Sequence[PairLine],
    *,
    name: str,
    file_name: str,
    sha256: str,
    raters: Sequence[User] = (),
    by: User | None = None,
    now: datetime | None = None,
) -> RatingSet:
    """A new pairwise rating set of ``pairs`` (from :func:`~rescue_bench.judge_ratings.read_pair_sample`),
    rated by ``raters``; nothing is written on an error."""
    name = name.strip()
    if not name or len(name) > 200:
        raise Invalid("a rating set needs a name of 1-200 characters", "name")
    if session.scalars(select(RatingSet.id).where(RatingSet.name == name)).first() is not None:
        raise Invalid(f"a rating set named {name!r} already exists; choose another --name", "name")
    if not pairs:
        raise Invalid("the sample has no pairs", "items")
    now = now or utcnow()
    rating_set = RatingSet(
        key=set_key(), name=name, file_name=file_name, sha256=sha256, items=len(pairs), created_at=now, kind=PAIRS, salt=secrets.token_hex(16)
    )
    session.add(rating_set)
    session.flush()
    session.add_all(
        [
            PairItem(
                set_id=rating_set.id, position=i, pair_id=p.pair_id, sample_id=p.sample_id, scenario=p.scenario, start_row=p.start_row,
                context=_turns_json(p.context), a_run=p.a.run, a_episode=p.a.episode, a_turns=_turns_json(p.a.turns),
                b_run=p.b.run, b_episode=p.b.episode, b_turns=_turns_json(p.b.turns),
            )
            for i, p in enumerate(pairs, 1)
        ]
    )
    session.add(AuditEntry(at=now, user_id=by.id if by else None, action="ratings", field="import", new_json=dumps(name), note=file_name))
    for user in raters:
        add_rater(session, rating_set, user, by=by, now=now)
    session.flush()
    return rating_set


def shown_first(rating_set: RatingSet, item: PairItem, user: User) -> Literal["A", "B"]:
    """The side ``user`` sees first of ``item``: drawn from the set's secret salt, the pair and the
    user (the same every time they open it; about half the pairs each way)."""
    key = (rating_set.salt or rating_set.key).encode()
    digest = hmac.new(key, f"{item.pair_id}\0{user.id}".encode(), hashlib.sha256).digest()
    return "A" if digest[0] % 2 == 0 else "B"


def _to_sample(choice: str, first: str) -> Literal["A", "B", "tie"]:
    if choice == "tie":
        return "tie"
    other = "B" if first == "A" else "A"
    return first if choice == "first" else other  # type: ignore[return-value]


def _to_rater(preferred: str, first: str) -> Literal["first", "second", "tie"]:
    if preferred == "tie":
        return "tie"
    return "first" if preferred == first else "second"


def _item(session: Session, rating_set: RatingSet, position: int) -> PairItem:
    if rating_set.kind != PAIRS:
        raise NotFound("this questionnaire has no pairs")
    item = session.scalars(select(PairItem).where(PairItem.set_id == rating_set.id, PairItem.position == position)).first()
    if item is None:
        raise NotFound(f"questionnaire has no pair {position}")
    return item


def rated_positions(session: Session, rating_set: RatingSet, user: User) -> set[int]:
    return set(
        session.scalars(
            select(PairItem.position).join(PairRating, PairRating.item_id == PairItem.id).where(PairItem.set_id == rating_set.id, PairRating.user_id == user.id)
        )
    )


def pair_view(session: Session, user: User, rating_set: RatingSet, position: int) -> PairOut:
    """What a rater is shown of one pair (exactly :data:`PAIR_KEYS`), sides in their own order."""
    item = _item(session, rating_set, position)
    first = shown_first(rating_set, item, user)
    sides = {"A": _turns(item.a_turns), "B": _turns(item.b_turns)}
    mine = session.scalars(select(PairRating).where(PairRating.item_id == item.id, PairRating.user_id == user.id)).first()
    done = rated_positions(session, rating_set, user)
    unrated = [p for p in range(1, rating_set.items + 1) if p not in done and p != position]
    later = [p for p in unrated if p > position]
    supports = {"A": mine.support_a, "B": mine.support_b} if mine else {"A": None, "B": None}
    second = "B" if first == "A" else "A"
    return PairOut(
        set=rating_set.key,
        title=title(rating_set),
        position=item.position,
        items=rating_set.items,
        scenario=item.scenario,
        clip=item.sample_id,
        start_row=item.start_row,
        context=_turns(item.context),
        first=sides[first],
        second=sides[second],
        preferred=_to_rater(mine.preferred, mine.shown_first) if mine else None,
        reason=mine.reason if mine else None,
        support_first=supports[first],
        support_second=supports[second],
        rated=len(done),
        next_unrated=(later or unrated)[0] if (later or unrated) else None,
    )


def rate_pair(
    session: Session, user: User, rating_set: RatingSet, position: int, preferred: Any, reason: Any,
    support_first: Any = None, support_second: Any = None, *, now: datetime | None = None,
) -> PairOut:
    """Set ``user``'s answer to one pair (``first``, ``second`` or ``tie``, in the order they were
    shown), with a reason and optionally each side's 1-5 support; stored in the sample's A/B terms
    with the side shown first; audited (action ``rate``)."""
    if not is_rater(session, rating_set, user):
        raise NotFound("no such questionnaire")
    if preferred not in CHOICES:
        raise Invalid("preferred must be first, second or tie", "preferred")
    text = reason.strip() if isinstance(reason, str) else ""
    if not text:
        raise Invalid("say in a few words why (the reason is part of the answer)", "reason")
    if len(text) > MAX_REASON:
        raise Invalid(f"the reason is longer than {MAX_REASON} characters", "reason")
    for field, value in (("support_first", support_first), ("support_second", support_second)):
        if value is not None and (isinstance(value, bool) or value not in SUPPORT):
            raise Invalid(f"{field} must be an integer 1-5 or empty", field)
    item = _item(session, rating_set, position)
    first = shown_first(rating_set, item, user)
    answer = _to_sample(preferred, first)
    by_side = {first: support_first, ("B" if first == "A" else "A"): support_second}
    now = now or utcnow()
    mine = session.scalars(select(PairRating).where(PairRating.item_id == item.id, PairRating.user_id == user.id)).first()
    old = mine.preferred if mine else None
    if mine is None:
        mine = PairRating(item_id=item.id, user_id=user.id, preferred=answer, reason=text, support_a=by_side["A"], support_b=by_side["B"],
                          shown_first=first, created_at=now, updated_at=now)
        session.add(mine)
    else:
        mine.preferred, mine.reason, mine.support_a, mine.support_b, mine.shown_first, mine.updated_at = answer, text, by_side["A"], by_side["B"], first, now
    if old != answer:
        session.add(
            AuditEntry(at=now, user_id=user.id, action="rate", field="preferred", old_json=None if old is None else dumps(old), new_json=dumps(answer),
                       note=f"{rating_set.key}#{position}")
        )
    session.flush()
    return pair_view(session, user, rating_set, position)


def export_rows(session: Session, rating_set: RatingSet) -> list[dict[str, Any]]:
    """The answers as rows of :data:`~rescue_bench.judge_ratings.PAIR_RATINGS_COLUMNS`: one per pair
    and rater (every rater of the set, and anyone who answered), ``preferred`` empty where not
    answered yet, in the sample's A/B terms; pairs in set order, raters by name."""
    from rescue_bench.review.models import RatingRater

    raters = set(session.scalars(select(User.username).join(RatingRater, RatingRater.user_id == User.id).where(RatingRater.set_id == rating_set.id)))
    answers: dict[tuple[int, str], PairRating] = {}
    for rating, name in session.execute(
        select(PairRating, User.username).join(User, User.id == PairRating.user_id).join(PairItem, PairItem.id == PairRating.item_id)
        .where(PairItem.set_id == rating_set.id)
    ):
        answers[(rating.item_id, name)] = rating
        raters.add(name)
    out = []
    for item in session.scalars(select(PairItem).where(PairItem.set_id == rating_set.id).order_by(PairItem.position)):
        for name in sorted(raters):
            given = answers.get((item.id, name))
            out.append(
                {
                    "pair_id": item.pair_id, "a_run": item.a_run, "a_episode": item.a_episode, "b_run": item.b_run, "b_episode": item.b_episode,
                    "scenario": item.scenario, "sample_id": item.sample_id, "rater": name,
                    "preferred": given.preferred if given else "", "reason": given.reason if given else "",
                    "support_a": "" if given is None or given.support_a is None else given.support_a,
                    "support_b": "" if given is None or given.support_b is None else given.support_b,
                    "shown_first": given.shown_first if given else "",
                }
            )
    return out
