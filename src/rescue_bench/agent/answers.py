"""Parsing the agent's step answers (formats in :data:`rescue_bench.agent.prompts.CONTRACT`).

Lenient about form, strict about content, like :mod:`rescue_bench.parse` (whose public functions do
the work: :func:`extract_json` finds the JSON, :func:`match_label` checks labels and names against
the closed sets, :func:`parse_itp` reads the timing step, :func:`parse_er` each emotion). No function
here raises on any input. An answer that cannot be used is invalid (``valid=False``, ``prediction=None``,
an ``error`` saying why); it is scored as wrong, never dropped and never filled from the gold.

Predictions
-----------
state      ``{"emotions": {client: {"emotion", "intensity"}}, "stances": {source: [{"target",
           "viewpoint"}]}, "pattern": label | None}``; valid when a JSON object gives at least one
           usable part (a client it leaves out is scored as an invalid answer for that client).
when       ``"yes"`` / ``"no"`` (ITP's parser).
whom_how   ``{"whom": target | None, "how": strategy | None}``; valid when both are; a part that is
           usable still counts on its own.
turn       the text; a reply without any JSON is taken as the turn when it is at most
           :data:`MAX_BARE_TURN_CHARS` long. The template's ``<placeholder>`` is no turn (nor a
           stance's viewpoint: :func:`~rescue_bench.parse.is_placeholder`).
how_gold   a strategy label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from rescue_bench.parse import ParsedAnswer, extract_json, is_placeholder, match_label, parse_er, parse_itp

STATE_KEYS = ("emotions", "stances", "pattern")
WHOM_KEYS = ("target", "whom", "addressee")
HOW_KEYS = ("strategy", "how")
TURN_KEYS = ("turn", "utterance", "text")
PERSON_KEYS = ("client", "person", "name")
SOURCE_KEYS = ("source", "from")
TARGET_KEYS = ("target", "to")
VIEW_KEYS = ("viewpoint", "stance")
PATTERN_KEYS = ("label", "pattern", "name")

MAX_BARE_TURN_CHARS = 1_000
"""A reply without JSON longer than this is not taken as a turn (it is reasoning, not speech)."""
MAX_ITEMS = 200
"""At most this many emotion or stance items are read from one answer (bounded work)."""

_FENCE = re.compile(r"^```[^\n]*\n?|```$")


def _ok(prediction: Any) -> ParsedAnswer:
    return ParsedAnswer(prediction=prediction, valid=True, error=None)


def _bad(error: str) -> ParsedAnswer:
    return ParsedAnswer(prediction=None, valid=False, error=error)


def _empty(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def field(obj: Any, keys: Sequence[str]) -> Any:
    """The value of the first of ``keys`` in mapping ``obj``, compared ignoring case (else ``None``)."""
    if not isinstance(obj, Mapping):
        return None
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _label(value: Any, candidates: Sequence[str]) -> str | None:
    if isinstance(value, list):  # a ranking instead of one label: its first valid entry
        for item in value[:MAX_ITEMS]:
            hit = _label(item, candidates)
            if hit is not None:
                return hit
        return None
    if isinstance(value, Mapping):
        return _label(field(value, PATTERN_KEYS + HOW_KEYS + WHOM_KEYS), candidates)
    return match_label(value, candidates)


# --------------------------------------------------------------------------------------------------
# state
# --------------------------------------------------------------------------------------------------


def _emotion_items(value: Any) -> list[tuple[Any, Any]]:
    """(name, item) pairs from a list of objects or a mapping ``{name: {...}}``."""
    if isinstance(value, Mapping):
        return list(value.items())[:MAX_ITEMS]
    if isinstance(value, list):
        return [(field(item, PERSON_KEYS), item) for item in value[:MAX_ITEMS]]
    return []


class EmotionAnswer(TypedDict):
    """A client's emotion in the state step's answer, as ER's parser reads it."""

    emotion: str
    intensity: float


def _emotions(value: Any, clients: Sequence[str]) -> dict[str, EmotionAnswer]:
    out: dict[str, EmotionAnswer] = {}
    for name, item in _emotion_items(value):
        client = match_label(name, clients) if isinstance(name, str) else None
        if client is None or client in out or not isinstance(item, Mapping):
            continue
        parsed = parse_er(dict(item))
        if parsed.valid:
            out[client] = parsed.prediction
    return out


def _stance_items(value: Any) -> list[tuple[Any, Any, Any]]:
    """(source, target, viewpoint) triples from a list of objects or ``{source: {target: text}}`` /
    ``{source: [{"target", "viewpoint"}]}``."""
    out: list[tuple[Any, Any, Any]] = []
    if isinstance(value, list):
        for item in value[:MAX_ITEMS]:
            out.append((field(item, SOURCE_KEYS), field(item, TARGET_KEYS), field(item, VIEW_KEYS)))
    elif isinstance(value, Mapping):
        for source, inner in list(value.items())[:MAX_ITEMS]:
            if isinstance(inner, Mapping):
                out += [(source, t, v) for t, v in list(inner.items())[:MAX_ITEMS]]
            elif isinstance(inner, list):
                out += [(source, field(i, TARGET_KEYS), field(i, VIEW_KEYS)) for i in inner[:MAX_ITEMS]]
    return out


def _stances(value: Any, clients: Sequence[str]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for source, target, view in _stance_items(value):
        s = match_label(source, clients) if isinstance(source, str) else None
        t = match_label(target, clients) if isinstance(target, str) else None
        if s is None or t is None or s == t or not isinstance(view, str) or not view.strip() or is_placeholder(view):
            continue
        out.setdefault(s, []).append({"target": t, "viewpoint": view.strip()})
    return out


def parse_state(raw: Any, clients: Sequence[str], patterns: Sequence[str]) -> ParsedAnswer:
    """Parse the state step (see the module doc)."""
    if _empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, STATE_KEYS)
    if not isinstance(payload, Mapping):
        return _bad("no JSON object" if payload is None else "the state is not a JSON object")
    emotions = _emotions(field(payload, ("emotions", "emotion")), clients)
    stances = _stances(field(payload, ("stances", "stance", "viewpoints")), clients)
    pattern = _label(field(payload, ("pattern", "relation_pattern")), patterns)
    if not emotions and not stances and pattern is None:
        return _bad("no usable emotion, stance or pattern in the state")
    return _ok({"emotions": emotions, "stances": stances, "pattern": pattern})


# --------------------------------------------------------------------------------------------------
# whom and how, the turn, the strategy for a given target
# --------------------------------------------------------------------------------------------------


def parse_whom_how(raw: Any, targets: Sequence[str], strategies: Sequence[str]) -> ParsedAnswer:
    """Parse ``{"target": ..., "strategy": ...}``; a usable part is kept even when the other is not
    (the prediction is then returned with ``valid=False`` so the step still counts as invalid)."""
    if _empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, WHOM_KEYS + HOW_KEYS)
    if not isinstance(payload, Mapping):
        return _bad("no JSON object" if payload is None else "the answer is not a JSON object")
    whom = _label(field(payload, WHOM_KEYS), targets)
    how = _label(field(payload, HOW_KEYS), strategies)
    if whom is not None and how is not None:
        return _ok({"whom": whom, "how": how})
    problems = [w for w, v in (("no valid target", whom), ("no valid strategy", how)) if v is None]
    partial = {"whom": whom, "how": how} if (whom or how) else None
    return ParsedAnswer(prediction=partial, valid=False, error="; ".join(problems))


def parse_turn(raw: Any) -> ParsedAnswer:
    """Parse ``{"turn": "..."}``; a reply holding no JSON at all is the turn itself when short."""
    if _empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, TURN_KEYS)
    if payload is None:
        text = raw.strip() if isinstance(raw, str) else ""
        text = _FENCE.sub("", text).strip().strip('"').strip()
        if is_placeholder(text):
            return _bad(f"the reply repeats the answer template's placeholder {text[:80]!r}")
        if text and len(text) <= MAX_BARE_TURN_CHARS:
            return _ok(text)
        return _bad("no JSON answer, and the reply is too long to be a turn")
    value = field(payload, TURN_KEYS)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = " ".join(v.strip() for v in value)
    if is_placeholder(value):
        return _bad(f"the reply repeats the answer template's placeholder {value.strip()[:80]!r}")
    if isinstance(value, str) and value.strip():
        return _ok(value.strip())
    return _bad("missing key 'turn'" if value is None else "the turn is not a non-empty string")


def parse_strategy(raw: Any, strategies: Sequence[str]) -> ParsedAnswer:
    """Parse ``{"strategy": "<label>"}``; a bare label as the whole reply is accepted too."""
    if _empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, HOW_KEYS)
    if payload is None:
        text = _FENCE.sub("", raw.strip()).strip() if isinstance(raw, str) else ""
        hit = match_label(text, strategies)
        return _ok(hit) if hit else _bad("no JSON answer and no bare strategy label")
    hit = _label(field(payload, HOW_KEYS + ("answer", "ranking")), strategies)
    return _ok(hit) if hit else _bad("no valid strategy label")


def parse_step(step: str, raw: Any, point: Any) -> ParsedAnswer:
    """Parse the answer to ``step`` of the chain at decision point ``point``."""
    if step == "state":
        return parse_state(raw, point.participants, point.patterns)
    if step == "when":
        return parse_itp(raw)
    if step == "whom_how":
        return parse_whom_how(raw, point.targets, point.strategies)
    if step == "turn":
        return parse_turn(raw)
    if step == "how_gold":
        return parse_strategy(raw, point.strategies)
    raise ValueError(f"unknown step {step!r}")
