"""The model simulator's prompt and the parser of its answer (the transition F of Eq. 13 as JSON).

One conversation per step: a system message holding the role cards and the state's closed scales
(stable over an episode, so a prefix cache serves it), and a user message with the transcript's
recent rows, the current hidden state and what the therapist just did. The answer names who speaks
next (or ``null``: the floor passes back to the therapist), that client's turn, and the complete
updated state. It is parsed leniently about form and strictly about content, like every answer
(:mod:`rescue_bench.parse`); an unusable answer is asked again once with the reason
(:func:`reask`), and if still unusable the step has no state: it is excluded from the objective
and counted (the episode's ``invalid_simulator_steps``).

The simulator is told what the clients heard (:class:`rescue_bench.sim.hearing.Heard`): whom the
therapist spoke to and the words, never the strategy label the agent declared, and never a rule of
how clients should react.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rescue_bench.agent.answers import field
from rescue_bench.labels import PATTERNS
from rescue_bench.parse import ParsedAnswer, extract_json, match_label
from rescue_bench.prompts.render import SETTING, render_rows
from rescue_bench.sim.cards import RoleCard
from rescue_bench.sim.record import ClientStateJson, Heard
from rescue_bench.sim.state import STANCES, VALENCES, HiddenState, pair_key, pairs
from rescue_bench.tasks.er import integer_intensity
from rescue_bench.tasks.instance import RowView

SIMULATOR_TITLE = "Simulator step."
"""The first line of every simulator request (names it for a log reader and the test servers)."""
RECENT_ROWS = 12
"""Rows of the transcript shown to the simulator, ending with the newest."""

FORMAT = (
    '{"speaker": "<client name, or null when the floor passes back to the therapist>", '
    '"turn": "<what that client says, one to three sentences>", '
    '"state": {"emotions": [{"client": "<name>", "emotion": "<short phrase>", "valence": "negative|neutral|positive", '
    '"intensity": <integer 0-10>}], "stances": [{"source": "<name>", "target": "<name>", "stance": "hostile|guarded|neutral|warm"}], '
    '"pattern": "<relation pattern label>"}}'
)


def system_prompt(scenario: str, cards: Mapping[str, RoleCard]) -> str:
    card_text = json.dumps({c: card.model_dump(mode="json") for c, card in cards.items()}, ensure_ascii=False, indent=1)
    return "\n\n".join(
        [
            f"You play the clients (never the therapist) in {SETTING[scenario]}. The session really happened up to the "
            "transcript's start; from there you continue it, turn by turn, reacting to what the therapist does.",
            "Each client's role card, from the session so far (their emotion and its intensity 0-10, their viewpoints "
            "of the others, the active relation pattern, how they usually speak and what they have revealed):\n" + card_text,
            "You also keep the hidden state of the group on closed scales: per client an emotion, its valence "
            f"({', '.join(VALENCES)}) and intensity 0-10; per ordered pair of clients a stance ({', '.join(STANCES)}); "
            f"the active relation pattern, one of: {', '.join(PATTERNS[scenario])}. Update it after each step as these "
            "clients would react to what the therapist said, or to the therapist's silence.",
            "Answer with JSON only, in this form, listing every client and every ordered pair:\n" + FORMAT,
        ]
    )


def describe_action(heard: Heard, clients: Sequence[str]) -> str:
    """What the therapist did, as the clients heard it: whom they spoke to and their words (never a
    strategy label)."""
    if heard["silent"]:
        return "The therapist stayed silent this turn."
    whom = "everyone" if len(heard["recipients"]) == len(clients) > 1 else " and ".join(heard["recipients"])
    return f'The therapist spoke to {whom} and said: "{heard.get("words")}"'


def user_prompt(transcript: Sequence[RowView], state: HiddenState, heard: Heard, t: int, horizon: int) -> str:
    """The step's request: the recent rows, the state before, what the therapist did. It names the
    step (``t`` of ``horizon``), so no two requests of an episode are the same, even after a step
    with no client turn."""
    clients = list(state.emotions)
    return "\n".join(
        [
            f"{SIMULATOR_TITLE} Step {t} of {horizon}.",
            "Transcript (newest last):",
            render_rows(list(transcript[-RECENT_ROWS:])),
            "",
            "Hidden state before this turn: " + json.dumps(state.to_json(), ensure_ascii=False),
            describe_action(heard, clients),
            "Who speaks next, what do they say, and what is the state now? Answer (JSON only): " + FORMAT,
        ]
    )


def reask(error: str) -> str:
    return f"{SIMULATOR_TITLE}\nThat answer could not be used ({error}). Answer again with JSON only, in this form: {FORMAT}"


def _bad(error: str) -> ParsedAnswer:
    return ParsedAnswer(prediction=None, valid=False, error=error)


def _items(value: Any, keys: tuple[str, ...]) -> list[tuple[Any, Any]]:
    if isinstance(value, Mapping):
        return list(value.items())[:200]
    if isinstance(value, list):
        return [(field(v, keys), v) for v in value[:200]]
    return []


def parse_state_json(value: Any, clients: Sequence[str], patterns: Sequence[str]) -> tuple[HiddenState | None, str | None]:
    """A complete hidden state from a JSON value, or the first reason it is not one."""
    if not isinstance(value, Mapping):
        return None, "no state object"
    emotions: dict[str, ClientStateJson] = {}
    for name, item in _items(field(value, ("emotions",)), ("client", "person", "name")):
        c = match_label(name, clients) if isinstance(name, str) else None
        if c is None or not isinstance(item, Mapping):
            continue
        emotion = field(item, ("emotion", "feeling"))
        vale = match_label(field(item, ("valence",)), VALENCES)
        intensity = integer_intensity(field(item, ("intensity",)))
        if isinstance(emotion, str) and emotion.strip() and vale is not None and intensity is not None:
            emotions[c] = {"emotion": emotion.strip(), "valence": vale, "intensity": intensity}
    missing = [c for c in clients if c not in emotions]
    if missing:
        return None, f"no usable emotion (emotion, valence, integer intensity 0-10) for {', '.join(missing)}"
    stances: dict[str, str] = {}
    raw_stances = field(value, ("stances",))
    items: list[tuple[Any, Any, Any]] = []
    if isinstance(raw_stances, list):
        items = [(field(i, ("source", "from")), field(i, ("target", "to")), field(i, ("stance", "attitude"))) for i in raw_stances[:200]]
    elif isinstance(raw_stances, Mapping):
        for key, v in list(raw_stances.items())[:200]:
            if isinstance(key, str) and "->" in key:
                a, b = key.split("->", 1)
                items.append((a.strip(), b.strip(), v))
    for a, b, v in items:
        s = match_label(a, clients) if isinstance(a, str) else None
        t = match_label(b, clients) if isinstance(b, str) else None
        st = match_label(v, STANCES)
        if s and t and s != t and st:
            stances[pair_key(s, t)] = st
    missing_pairs = [pair_key(a, b) for a, b in pairs(list(clients)) if pair_key(a, b) not in stances]
    if missing_pairs:
        return None, f"no usable stance ({', '.join(STANCES)}) for {', '.join(missing_pairs)}"
    pattern = match_label(field(value, ("pattern",)), patterns)
    if pattern is None:
        return None, "no valid pattern label"
    return HiddenState.model_validate({"emotions": emotions, "stances": stances, "pattern": pattern}), None


def parse_simulator(raw: Any, clients: Sequence[str], patterns: Sequence[str]) -> ParsedAnswer:
    """``{"speaker": client | None, "turn": str | None, "state": state JSON}``, or invalid with a reason."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return _bad("empty answer")
    payload = extract_json(raw, ("state", "speaker"))
    if not isinstance(payload, Mapping):
        return _bad("no JSON object")
    speaker_raw = field(payload, ("speaker", "next_speaker"))
    speaker = None
    if speaker_raw not in (None, "", "null", "none", "Therapist", "therapist"):
        speaker = match_label(speaker_raw, clients)
        if speaker is None:
            return _bad(f"speaker {str(speaker_raw)[:40]!r} is not a client (or null)")
    turn = field(payload, ("turn", "text", "utterance"))
    if speaker is not None and not (isinstance(turn, str) and turn.strip()):
        return _bad("a speaker without a turn")
    state, error = parse_state_json(field(payload, ("state",)), clients, patterns)
    if state is None:
        return _bad(error or "no state")
    return ParsedAnswer(
        prediction={"speaker": speaker, "turn": turn.strip() if speaker is not None and isinstance(turn, str) else None, "state": state.to_json()},
        valid=True,
        error=None,
    )
