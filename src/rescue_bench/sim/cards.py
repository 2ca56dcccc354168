"""Role cards and the initial hidden state of an episode, from a clip's annotations up to its start.

An episode starts at a decision point (after 0-based row ``k``). Everything here reads only rows
``0..k`` (what the session has shown so far), never a later row, and belongs to the environment:
the simulator plays from the cards, the agent sees none of it (``tests/sim`` checks the prompts as
sent).

A client's card: their latest annotated emotion and intensity; their latest viewpoint and attitude
toward each other client; the active relation pattern; their three most frequent utterance types
and their most frequent tone of voice; and what the session has revealed about them (the texts of
their latest disclosure, recollection or request rows, at most three).

The initial state reads the same annotations onto the state's closed scales
(:mod:`rescue_bench.sim.lexicon`): a client never annotated starts ``neutral`` at intensity 3
("unknown"); a pair never annotated starts ``neutral``; the pattern is the latest annotated one up
to the start (a therapist row's cycle state or a client row's pattern, in the scenario's set), else
the first annotated later in the clip (the environment may know the session), else the scenario's
most frequent pattern in the paper's data (couple ``pursue_withdraw``, family
``cooperative_family_alliance``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import cast

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import patterns
from rescue_bench.sim.lexicon import stance, valence
from rescue_bench.sim.record import RoleCardJson
from rescue_bench.sim.state import ClientState, HiddenState, pair_key, pairs
from rescue_bench.tasks.er import integer_intensity

DEFAULT_PATTERN = {"couple": "pursue_withdraw", "family": "cooperative_family_alliance"}
UNKNOWN_EMOTION = ClientState(emotion="unknown", valence="neutral", intensity=3)
REVEALING = ("disclosure", "recollection", "request")
MAX_REVEALED = 3
MAX_REVEALED_CHARS = 240


class StanceCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str
    viewpoint: str
    attitude: str = ""


class RoleCard(BaseModel):
    """What the simulator knows of one client at the start of an episode."""

    model_config = ConfigDict(extra="forbid")

    client: str
    emotion: str | None = None
    intensity: int | None = None
    stances: list[StanceCard] = Field(default_factory=list)
    pattern: str
    utterance_types: list[str] = Field(default_factory=list)
    tone: str | None = None
    revealed: list[str] = Field(default_factory=list)


def _latest_emotion(rows: Sequence[Row], client: str) -> tuple[str, int] | None:
    found = None
    for row in rows:
        for item in row.internal_emotion or []:
            if (item.person or "").strip() != client:
                continue
            description = (item.emotion_description or "").strip()
            intensity = integer_intensity(item.intensity)
            if description and intensity is not None:
                found = (description, intensity)
                break  # the first usable item of the person in a row, as ER takes it
    return found


def _latest_stances(rows: Sequence[Row], clients: Sequence[str]) -> dict[tuple[str, str], StanceCard]:
    out: dict[tuple[str, str], StanceCard] = {}
    for row in rows:
        for item in row.viewpoints_attitudes or []:
            s, t, v = ((x or "").strip() for x in (item.source, item.target, item.viewpoint))
            if s in clients and t in clients and s != t and v:
                out[(s, t)] = StanceCard(target=t, viewpoint=v, attitude=(item.attitude or "").strip())
    return out


def active_pattern(clip: Clip, k: int) -> str:
    """The pattern at the start after 0-based row ``k`` (see the module doc for the fallbacks)."""
    labels = patterns(clip.scenario)

    def of(row: Row) -> str | None:
        for value in (row.cycle_state, row.pattern):
            if value in labels:
                return value
        return None

    for row in reversed(clip.rows[: k + 1]):
        if (p := of(row)) is not None:
            return p
    for row in clip.rows[k + 1 :]:
        if (p := of(row)) is not None:
            return p
    return DEFAULT_PATTERN[clip.scenario]


def role_cards(clip: Clip, k: int) -> dict[str, RoleCard]:
    """Every client's card at the start after 0-based row ``k``."""
    rows = clip.rows[: k + 1]
    clients = clip.clients
    pattern = active_pattern(clip, k)
    stances = _latest_stances(rows, clients)
    cards = {}
    for c in clients:
        own = [r for r in rows if r.speaker == c]
        types = Counter((r.utterance_type or "").strip() for r in own if (r.utterance_type or "").strip())
        tones = Counter((r.tone_of_voice or "").strip() for r in own if (r.tone_of_voice or "").strip())
        revealed = [r.text[:MAX_REVEALED_CHARS] for r in own if (r.utterance_type or "").strip() in REVEALING and r.text]
        emotion = _latest_emotion(rows, c)
        cards[c] = RoleCard(
            client=c,
            emotion=emotion[0] if emotion else None,
            intensity=emotion[1] if emotion else None,
            stances=[stances[(c, t)] for t in clients if (c, t) in stances],
            pattern=pattern,
            utterance_types=[t for t, _ in sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))[:3]],
            tone=min(tones, key=lambda t: (-tones[t], t)) if tones else None,
            revealed=revealed[-MAX_REVEALED:],
        )
    return cards


def initial_state(cards: dict[str, RoleCard], clients: Sequence[str]) -> HiddenState:
    """The state the cards describe, on the state's closed scales (see the module doc)."""
    emotions = {}
    stances: dict[str, str] = {}
    for c in clients:
        card = cards[c]
        if card.emotion is None or card.intensity is None:
            emotions[c] = UNKNOWN_EMOTION
        else:
            emotions[c] = ClientState(emotion=card.emotion, valence=valence(card.emotion), intensity=card.intensity)  # type: ignore[arg-type]
    for a, b in pairs(list(clients)):
        item = {s.target: s for s in cards[a].stances}.get(b)
        stances[pair_key(a, b)] = stance(f"{item.viewpoint} {item.attitude}") if item else "neutral"
    pattern = next(iter(cards.values())).pattern if cards else ""
    return HiddenState(emotions=emotions, stances=stances, pattern=pattern)


def cards_json(cards: dict[str, RoleCard]) -> dict[str, RoleCardJson]:
    return {c: cast(RoleCardJson, card.model_dump(mode="json")) for c, card in cards.items()}
