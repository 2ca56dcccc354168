"""The answer parsers: a raw model reply to a validated prediction of one task or judge.

Each parser reads the format :mod:`rescue_bench.contract` declares (keys, tolerated synonyms, score
scales), finds the JSON with :func:`~rescue_bench.parse.extract.extract_json`, matches labels with
:func:`~rescue_bench.parse.matching.match_label` and validates the content against the closed set the
caller passes. An invalid answer is a :class:`ParsedAnswer` with ``valid=False``, never an exception.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, TypedDict, TypeGuard, cast

from rescue_bench import contract
from rescue_bench.contract import ANSWER, EMOTION, FORMATS, INTENSITY, RANKING, SCORE, VIEWPOINT, VIEWPOINTS, VP_TARGET
from rescue_bench.labels import ITP_LABELS
from rescue_bench.parse.extract import MAX_SCAN_CHARS, extract_json, has_key, lookup, to_text
from rescue_bench.parse.matching import match_label, normalize_label
from rescue_bench.records import InvalidCause

__all__ = [
    "ER_EMOTION_KEYS",
    "ER_INTENSITY_KEYS",
    "ER_KEYS",
    "ITP_KEYS",
    "JUDGE_KEYS",
    "MAX_BARE_LIST_CHARS",
    "RANKING_KEYS",
    "VP_KEYS",
    "VP_RUBRIC_KEYS",
    "VP_RUBRIC_RANGES",
    "ParsedAnswer",
    "is_placeholder",
    "parse_er",
    "parse_itp",
    "parse_judge",
    "parse_ranking",
    "parse_vp",
    "parse_vp_rubric",
]

# --------------------------------------------------------------------------------------------------
# Keys of the answer contract, with the few tolerated synonyms (declared in rescue_bench.contract)
# --------------------------------------------------------------------------------------------------

ITP_KEYS: tuple[str, ...] = contract.ANSWER.accepted
RANKING_KEYS: tuple[str, ...] = contract.RANKING.accepted
ER_EMOTION_KEYS: tuple[str, ...] = contract.EMOTION.accepted
ER_INTENSITY_KEYS: tuple[str, ...] = contract.INTENSITY.accepted
ER_KEYS: tuple[str, ...] = ER_EMOTION_KEYS + ER_INTENSITY_KEYS
VP_KEYS: tuple[str, ...] = contract.VIEWPOINTS.accepted
JUDGE_KEYS: tuple[str, ...] = contract.SCORE.accepted
_AUTHORS = contract.FORMATS["judge_authors"]
VP_RUBRIC_KEYS: tuple[str, ...] = tuple(key.name for key in _AUTHORS.keys)
VP_RUBRIC_RANGES: dict[str, tuple[int, int]] = {name: (s.lo, s.hi) for name, s in _AUTHORS.scales.items()}

# Keys under which a ranking item written as an object carries its label: [{"label": "track"}, ...].
_ITEM_LABEL_KEYS: tuple[str, ...] = contract.RANKING_ITEM.accepted

# --------------------------------------------------------------------------------------------------
# Result type
# --------------------------------------------------------------------------------------------------


class ParsedJson(TypedDict):
    """A :class:`ParsedAnswer` as plain data."""

    prediction: Any
    """The task's prediction: a label, a ranking, an emotion object ... (its shape is the parser's)."""
    valid: bool
    error: str | None
    cause: InvalidCause | None


@dataclass(frozen=True)
class ParsedAnswer:
    """The outcome of parsing one answer.

    Attributes
    ----------
    prediction
        The validated prediction, or ``None`` when the answer is invalid. Per task:
        ITP ``"yes"``/``"no"``; RPP/STP/SSP a list of 1..k distinct valid labels, most likely first
        (canonical spelling); ER ``{"emotion": str, "intensity": int}``; VP a list of
        ``{"target": str, "viewpoint": str}``; judge an ``int``.
    valid
        ``True`` iff ``prediction`` is not ``None``.
    error
        Why the answer is invalid (``None`` when valid), for humans; the wording is not a stable API.
    cause
        Why the answer is invalid, for counting (``None`` when valid): no answer, no JSON, JSON without
        the key, an unknown label, an out-of-range value (:class:`~rescue_bench.records.InvalidCause`).
    """

    prediction: Any = None
    valid: bool = False
    error: str | None = None
    cause: InvalidCause | None = None

    def to_dict(self) -> ParsedJson:
        """A JSON-ready dict (``prediction``, ``valid``, ``error``, ``cause``)."""
        return cast(ParsedJson, asdict(self))


def _ok(prediction: Any) -> ParsedAnswer:
    return ParsedAnswer(prediction=prediction, valid=True, error=None)


def _bad(error: str, cause: InvalidCause) -> ParsedAnswer:
    return ParsedAnswer(prediction=None, valid=False, error=error, cause=cause)


def _empty() -> ParsedAnswer:
    return _bad("empty answer", InvalidCause.NO_ANSWER)


def _no_json(error: str = "no JSON answer") -> ParsedAnswer:
    return _bad(error, InvalidCause.NO_JSON)


def _missing(name: str, payload: Any = None) -> ParsedAnswer:
    where = "" if payload is None else f" in {_short(payload)}"
    return _bad(f"missing key {name!r}{where}", InvalidCause.MISSING_KEY)


def _unknown(error: str, value: Any) -> ParsedAnswer:
    """No label in ``value``; a ``null`` under the key is no value at all (the key's value is missing)."""
    return _bad(error, InvalidCause.MISSING_KEY if value is None else InvalidCause.UNKNOWN_LABEL)


def _echo(what: str = "") -> ParsedAnswer:
    return _bad(f"the reply repeats the answer template{what} instead of answering", InvalidCause.ECHO)


# --------------------------------------------------------------------------------------------------
# What a reply copies from its prompt: the answer template, the transcript's row numbers
# --------------------------------------------------------------------------------------------------

_PLACEHOLDER_RE = re.compile(r"<[^<>\n]{1,200}>")


def is_placeholder(value: Any) -> TypeGuard[str]:
    """Whether ``value`` is one of the answer template's ``<placeholders>`` (``"<target>"``, ``"<short
    description of what the client feels>"``) rather than an answer: never a label, a text or a number."""
    return isinstance(value, str) and len(value) <= 300 and _PLACEHOLDER_RE.fullmatch(value.strip()) is not None


_ROW_NUMBER_RE = re.compile(r"\[\d{1,6}\](?=[ \t]+[^\W\d_])")
"""A transcript row's number as the prompts write it, before the row's words (``[6] CURRENT Dana
-> ...``, ``[12] The next step``): text a reply copied, never a JSON answer."""


@lru_cache(maxsize=32)
def _template_re(example: str) -> re.Pattern[str]:
    """The JSON of an answer format's example (its objects, without the words after them) as a
    pattern that ignores spacing and case: ``{"answer": "yes"} or {"answer": "no"}`` as a model
    copies it."""
    json_part = example[: example.rfind("}") + 1]
    return re.compile(r"\s*".join(re.escape(c) for c in json_part if not c.isspace()), re.IGNORECASE)


def _prepared(raw: Any, *formats: str) -> tuple[Any, bool]:
    """The reply as the parsers read it, and whether it held the answer template of one of the
    ``formats`` (:data:`~rescue_bench.contract.FORMATS`): the transcript's row numbers and every
    copy of a template taken out, so the answer that may follow is read, and a reply that is only
    the template is named an echo. Decoded JSON (a dict, a list) is returned as it is."""
    text = to_text(raw)
    if text is None:
        return raw, False
    text = _ROW_NUMBER_RE.sub(" ", text)
    echoed = False
    for name in formats:
        text, copies = _template_re(FORMATS[name].example).subn(" ", text)
        echoed = echoed or copies > 0
    return text, echoed


def _unless_echo(parsed: ParsedAnswer, echoed: bool) -> ParsedAnswer:
    """``parsed``, or an echo when the reply held the template and nothing usable besides it."""
    return _echo() if echoed and not parsed.valid and parsed.cause is not InvalidCause.ECHO else parsed


# --------------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------------

_BARE_CLEAN_RE = re.compile(r"^```[^\n]*\n?|```$")


def _bare_text(raw: Any) -> str:
    """The reply as plain text, code fence markers removed (for no-JSON fallbacks)."""
    text = to_text(raw)
    if text is None:
        return ""
    text = text.strip()
    if len(text) > MAX_SCAN_CHARS:
        text = text[-MAX_SCAN_CHARS:]
    return _BARE_CLEAN_RE.sub("", text).strip()


def _is_empty(raw: Any) -> bool:
    if raw is None:
        return True
    text = to_text(raw)
    return text is not None and not text.strip()


_NUMBER_RE = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?:/\s*(\d+(?:\.\d*)?))?\s*$")


def _number(value: Any) -> float | None:
    """A finite number from an int/float or a numeric string (``"7"``, ``"7.0"``, ``"7/10"``).
    Booleans are not numbers. For ``"a/b"`` only ``a`` is returned (the scale is checked by callers
    through ``_denominator``)."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            f = float(value)
            return f if math.isfinite(f) else None
        if isinstance(value, str) and len(value) < 100:
            m = _NUMBER_RE.match(value)
            if m:
                f = float(m.group(1))
                return f if math.isfinite(f) else None
    except (OverflowError, ValueError):  # 10**400 does not fit a float
        return None
    return None


def _denominator(value: Any) -> float | None:
    if isinstance(value, str) and len(value) < 100:
        m = _NUMBER_RE.match(value)
        if m and m.group(2):
            return float(m.group(2))
    return None


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except Exception:  # noqa: BLE001
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------------
# ITP
# --------------------------------------------------------------------------------------------------

_BARE_PREFIX = 200
"""Only the first this-many characters of a reply are looked at for a bare yes/no."""

_BARE_YES_NO_RE = re.compile(
    r"^[\W_]{0,20}(?:(?:final\s+)?answer\s*(?:is)?\s*[:=\-]?[\W_]{0,20})?(yes|no)"
    r"(?:[\W_]{0,20}$|\s{0,3}[.,!;:*)\]\n\u2013\u2014\-])",
    re.IGNORECASE,
)
"""A bare yes/no: the first word (after an optional "Answer:"), followed by the end of the text or by
punctuation / a line break, so "No idea" or "Not sure" are not read as "no"."""


def _yes_no(value: Any) -> str | None:
    if isinstance(value, bool):
        return ITP_LABELS[0] if value else ITP_LABELS[1]
    if isinstance(value, str):
        norm = normalize_label(value)
        if norm in ITP_LABELS:
            return norm
        m = _BARE_YES_NO_RE.match(value[:_BARE_PREFIX])  # "Yes, the client paused."
        if m:
            return m.group(1).lower()
    return None


def parse_itp(raw: Any) -> ParsedAnswer:
    """Parse an intervention-time answer ``{"answer": "yes" | "no"}``.

    Accepted: ``"yes"``/``"no"`` in any case and with surrounding punctuation (``"Yes."``), JSON
    booleans ``true``/``false``, and the tolerated keys :data:`ITP_KEYS`. When the reply holds no
    usable JSON, a *bare* answer is accepted: text whose first word is yes/no, optionally after
    ``"Answer:"`` (``"No."``, ``"Yes, the client paused"``, ``"Answer: no"``). A yes/no buried later
    in prose is not guessed at. Numbers (``1``/``0``) are not accepted: the contract asks for words.
    """
    text, echoed = _prepared(raw, "itp")
    return _unless_echo(_parse_itp(text), echoed)


def _parse_itp(raw: Any) -> ParsedAnswer:
    if _is_empty(raw):
        return _empty()
    payload = extract_json(raw, ITP_KEYS)
    has, value = lookup(payload, ITP_KEYS)
    if has:
        label = _yes_no(value)
        if label is not None:
            return _ok(label)
        if is_placeholder(value):
            return _echo(f"'s placeholder {_short(value)}")
        return _unknown(f"answer {_short(value)} is not yes/no", value)
    if isinstance(payload, (bool, str)):  # whole reply was a JSON scalar: "yes" or true
        label = _yes_no(payload)
        if label is not None:
            return _ok(label)
    m = _BARE_YES_NO_RE.match(_bare_text(raw)[:_BARE_PREFIX])
    if m:
        return _ok(m.group(1).lower())
    if payload is None:
        return _no_json("no JSON answer and no bare yes/no")
    return _missing(ANSWER.name, payload)


# --------------------------------------------------------------------------------------------------
# Ranking tasks (RPP, STP, SSP)
# --------------------------------------------------------------------------------------------------

_LIST_SPLIT_RE = re.compile(r"[ \t]*(?:,|;|\n|>|\|)\s*")
MAX_BARE_LIST_CHARS = 2_000
"""A reply without JSON is read as a bare list of labels only when it is at most this long."""


def _ranking_items(value: Any) -> list[Any]:
    if isinstance(value, list):
        items: list[Any] = []
        for item in value:
            if isinstance(item, Mapping):
                has, inner = lookup(item, _ITEM_LABEL_KEYS)
                items.append(inner if has else None)
            else:
                items.append(item)
        return items
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        has, inner = lookup(value, _ITEM_LABEL_KEYS)
        return [inner] if has else []
    return []


def _validate_ranking(
    items: list[Any], cmap_candidates: Sequence[str], k: int, aliases: Mapping | None, keep_positions: bool = False
) -> tuple[list[str | None], list[Any]]:
    slots: list[str | None] = []  # one per position answered: the label, or None (invalid or repeat)
    rejected: list[Any] = []

    def place(label: str | None, item: Any) -> None:
        if label is None:
            rejected.append(item)
        slots.append(label if label is not None and label not in slots else None)

    for item in items:
        hit = match_label(item, cmap_candidates, aliases)
        if (
            hit is None
            and isinstance(item, str)
            and len(item) <= MAX_BARE_LIST_CHARS
            and not is_placeholder(item)
            and _LIST_SPLIT_RE.search(item.strip())
        ):
            # a single string holding several labels: "track, reframe, join"
            for piece in _LIST_SPLIT_RE.split(item.strip()):
                place(match_label(piece, cmap_candidates, aliases), piece)
            continue
        place(hit, item)
    if keep_positions:
        return slots[:k], rejected
    labels: list[str | None] = [label for label in slots if label is not None]
    return labels[:k], rejected


def parse_ranking(
    raw: Any,
    candidates: Sequence[str],
    k: int = contract.RANK_SIZE,
    aliases: Mapping[str, str | tuple[str, ...]] | None = None,
    keep_positions: bool = False,
) -> ParsedAnswer:
    """Parse a ranking answer ``{"ranking": [label, label, label]}`` against a closed label set.

    Parameters
    ----------
    raw
        The model reply.
    candidates
        The valid labels (patterns, strategies, or participants plus the group label for STP).
        Returned labels use the candidates' spelling.
    k
        Keep at most this many labels.
    aliases
        See :func:`match_label`.

    Rules
    -----
    * The list may sit under ``"ranking"`` or, tolerated, ``"labels"`` / ``"prediction"`` /
      ``"answer"``; a top-level JSON array is taken as the ranking itself; items may be objects
      carrying the label under ``"label"``/``"target"``/``"strategy"``/``"pattern"``/``"name"``.
    * A single string instead of a list is one label; if it is not a label but reads as a list
      (``"track, reframe, join"``, separated by ``, ; | >`` or newlines) its pieces are matched.
    * Labels are matched with :func:`match_label`; invalid labels and repeats are dropped, the order
      of the remaining ones is kept, and the first ``k`` are returned.
    * Valid iff at least one valid label remains.
    * With ``keep_positions`` (how the tasks are scored) an invalid label or a repeat keeps its
      place as ``None`` instead of moving later labels up: ``["attack", "nonsense", "track"]`` puts
      ``track`` at rank 3, so padding a ranking with invented labels wins nothing. The first ``k``
      positions are kept, and the answer is valid iff one of them holds a valid label.
    * Without any JSON, a bare reply is accepted only when *every* piece of it (split as above,
      enumeration like ``"1."`` removed) is a valid label; prose is not mined for label names,
      because a label mentioned while reasoning is not an answer.
    """
    raw, echoed = _prepared(raw, "rpp", "stp", "ssp")
    return _unless_echo(_parse_ranking(raw, candidates, k, aliases, keep_positions), echoed)


def _parse_ranking(
    raw: Any, candidates: Sequence[str], k: int, aliases: Mapping[str, str | tuple[str, ...]] | None, keep_positions: bool
) -> ParsedAnswer:
    if _is_empty(raw):
        return _empty()
    cands = [c for c in candidates if isinstance(c, str)]
    if not cands:
        return _bad("no candidate labels", InvalidCause.UNKNOWN_LABEL)
    payload = extract_json(raw, RANKING_KEYS)
    bare = _bare_text(raw)
    if payload is None and len(bare) <= MAX_BARE_LIST_CHARS:
        pieces = [p for p in _LIST_SPLIT_RE.split(bare) if p.strip()]
        if pieces and len(pieces) <= 4 * max(k, 1):
            matched = [match_label(p, cands, aliases) for p in pieces]
            if all(lab is not None for lab in matched):
                out: list[str | None] = []
                for lab in matched:
                    if lab not in out:
                        out.append(lab)
                    elif keep_positions:
                        out.append(None)
                return _ok(out[:k])
    if payload is None:
        return _no_json()
    has, value = lookup(payload, RANKING_KEYS)
    if not has:
        if isinstance(payload, (list, str)):
            value = payload
        else:
            return _missing(RANKING.name, payload)
    items = _ranking_items(value)
    if not items:
        return _unknown(f"ranking {_short(value)} is not a list of labels", None if value == [] else value)
    labels, rejected = _validate_ranking(items, cands, k, aliases, keep_positions)
    if not any(label is not None for label in labels):
        if rejected and all(is_placeholder(item) for item in rejected):
            return _echo(f"'s placeholders {_short(rejected)}")
        return _bad(f"no valid label in {_short(rejected or value)}", InvalidCause.UNKNOWN_LABEL)
    return _ok(labels)


# --------------------------------------------------------------------------------------------------
# ER
# --------------------------------------------------------------------------------------------------


def parse_er(raw: Any, lo: int = contract.INTENSITY_SCALE.lo, hi: int = contract.INTENSITY_SCALE.hi) -> ParsedAnswer:
    """Parse an emotion answer ``{"emotion": "...", "intensity": 0-10}``.

    * ``emotion``: a non-empty string after stripping (``"emotion_description"`` tolerated); a list
      of strings is joined with ``", "``.
    * ``intensity``: an int, a float or a numeric string (``"7"``, ``"6.5"``, ``"7/10"`` where the
      denominator must be ``hi``). The value must lie in ``[lo, hi]`` *before* rounding (so ``10.4``
      is invalid, not 10); it is then rounded with Python's ``round`` (half to even: ``6.5 -> 6``).
      Booleans, NaN and infinities are invalid.

    Both parts are required: a missing or bad one makes the whole answer invalid, since the ER score
    averages the two.
    """
    raw, echoed = _prepared(raw, "er")
    return _unless_echo(_parse_er(raw, lo, hi), echoed)


def _parse_er(raw: Any, lo: int, hi: int) -> ParsedAnswer:
    if _is_empty(raw):
        return _empty()
    payload = extract_json(raw, ER_KEYS)
    if payload is None:
        return _no_json("no JSON object")
    if not isinstance(payload, Mapping):
        return _bad(f"not an object: {_short(payload)}", InvalidCause.MISSING_KEY)
    has_e, emotion = lookup(payload, ER_EMOTION_KEYS)
    has_i, intensity = lookup(payload, ER_INTENSITY_KEYS)
    if not has_e:
        return _missing(EMOTION.name)
    placeholders = [v for v in (emotion, intensity) if is_placeholder(v)]
    if placeholders:
        return _echo(f"'s placeholder {_short(placeholders[0])}")
    if isinstance(emotion, list) and emotion and all(isinstance(e, str) for e in emotion):
        emotion = ", ".join(e.strip() for e in emotion if e.strip())
    if not isinstance(emotion, str) or not emotion.strip():
        return _bad(f"emotion {_short(emotion)} is not a non-empty string", InvalidCause.MISSING_KEY)
    if not has_i:
        return _missing(INTENSITY.name)
    checked = _check_scaled(intensity, "intensity", lo, hi, integer=False)
    if not checked.valid:
        return checked
    return _ok({EMOTION.name: emotion.strip(), INTENSITY.name: checked.prediction})


# --------------------------------------------------------------------------------------------------
# VP
# --------------------------------------------------------------------------------------------------


def _vp_target(value: Any, participants: Sequence[str], aliases: Mapping | None) -> str:
    if isinstance(value, list):
        names = [_vp_target(v, participants, aliases) for v in value]
        return ", ".join(n for n in names if n)
    if not isinstance(value, str):
        return ""
    value = value.strip()
    return match_label(value, participants, aliases) or value


def parse_vp(
    raw: Any,
    participants: Sequence[str],
    aliases: Mapping[str, str | tuple[str, ...]] | None = None,
) -> ParsedAnswer:
    """Parse a viewpoint answer ``{"viewpoints": [{"target": "...", "viewpoint": "..."}]}``.

    * The list may also be the top-level JSON array, or a single ``{"target", "viewpoint"}`` object.
    * Each item needs a non-empty string ``viewpoint``; items without one are dropped (the answer
      stays valid when at least one item remains).
    * ``target`` is matched to ``participants`` (pass the group label too if it is allowed) with
      :func:`match_label`, returning the canonical spelling; an unknown name is kept as written
      (the judge decides whether it is the right person), a missing one becomes ``""``, a list of
      names is matched one by one and joined with ``", "``.
    * Valid iff at least one item remains. Items are returned as ``{"target": str,
      "viewpoint": str}``; other keys (e.g. ``attitude``) are not kept.
    """
    raw, echoed = _prepared(raw, "vp")
    return _unless_echo(_parse_vp(raw, participants, aliases), echoed)


def _parse_vp(raw: Any, participants: Sequence[str], aliases: Mapping[str, str | tuple[str, ...]] | None) -> ParsedAnswer:
    if _is_empty(raw):
        return _empty()
    payload = extract_json(raw, VP_KEYS)
    if payload is None:
        return _no_json()
    has, value = lookup(payload, VP_KEYS)
    if not has:
        if isinstance(payload, list):
            value = payload
        elif has_key(payload, VIEWPOINT.accepted):
            value = [payload]
        else:
            return _missing(VIEWPOINTS.name, payload)
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return _bad(f"viewpoints {_short(value)} is not a list", InvalidCause.MISSING_KEY)
    people = [p for p in participants if isinstance(p, str)]
    out: list[dict[str, str]] = []
    placeholders: list[str] = []
    for item in value:
        has_v, viewpoint = lookup(item, VIEWPOINT.accepted)
        if is_placeholder(viewpoint):
            placeholders.append(viewpoint)
            continue
        if not has_v or not isinstance(viewpoint, str) or not viewpoint.strip():
            continue
        _, target = lookup(item, VP_TARGET.accepted)
        target = "" if is_placeholder(target) else target
        out.append({VP_TARGET.name: _vp_target(target, people, aliases), VIEWPOINT.name: viewpoint.strip()})
    if not out:
        if placeholders:
            return _echo(f"'s placeholder {_short(placeholders[0])}")
        return _bad(f"no viewpoint with a non-empty {VIEWPOINT.name!r}", InvalidCause.MISSING_KEY)
    return _ok(out)


# --------------------------------------------------------------------------------------------------
# Judges
# --------------------------------------------------------------------------------------------------


def parse_judge(raw: Any, lo: int = contract.JUDGE_SCALE.lo, hi: int = contract.JUDGE_SCALE.hi) -> ParsedAnswer:
    """Parse a judge score ``{"score": n}`` with ``lo <= n <= hi`` an integer.

    Accepted: an int, an integral float (``4.0``), a numeric string (``"4"``, ``"4.0"``, ``"4/5"``
    when the denominator is ``hi``); ``"rating"`` is tolerated as the key. Invalid: non-integral
    values (``4.5`` is not rounded: a judge that cannot follow the scale is not trusted), values
    out of range, booleans. A bare number as the whole reply (``"4"``) is accepted too, since a
    JSON scalar is still unambiguous; numbers inside prose are not guessed at.
    """
    raw, echoed = _prepared(raw, "judge")
    return _unless_echo(_parse_judge(raw, lo, hi), echoed)


def _parse_judge(raw: Any, lo: int, hi: int) -> ParsedAnswer:
    if _is_empty(raw):
        return _empty()
    payload = extract_json(raw, JUDGE_KEYS)
    has, value = lookup(payload, JUDGE_KEYS)
    if not has:
        if isinstance(payload, (int, float, str)) and not isinstance(payload, bool):
            value = payload
        elif payload is None and len(bare := _bare_text(raw)) < 100 and _NUMBER_RE.match(bare):
            value = bare
        else:
            return _no_json() if payload is None else _missing(SCORE.name, payload)
    return _check_scaled(value, "score", lo, hi)


def _check_scaled(value: Any, what: str, lo: int, hi: int, *, integer: bool = True) -> ParsedAnswer:
    """``value`` as a number on the ``lo..hi`` scale, rounded to an int (half to even), else invalid.

    The scale rules of ER intensities and judge scores: a number or numeric string, a fraction only
    over ``hi``, within ``lo..hi`` before rounding; with ``integer`` (judge scores) also whole.
    """
    if value is None:  # a null under the key: no value at all
        return _bad(f"{what} is null", InvalidCause.MISSING_KEY)
    if is_placeholder(value):
        return _echo(f"'s placeholder {_short(value)}")
    number = _number(value)
    out = InvalidCause.OUT_OF_RANGE
    if number is None:
        return _bad(f"{what} {_short(value)} is not a number", out)
    denom = _denominator(value)
    if denom is not None and denom != hi:
        return _bad(f"{what} {_short(value)} is not on a {lo}-{hi} scale", out)
    if integer and number != int(number):
        return _bad(f"{what} {_short(value)} is not an integer", out)
    if not lo <= number <= hi:
        return _bad(f"{what} {_short(value)} is outside {lo}-{hi}", out)
    return _ok(int(round(number)))


def parse_vp_rubric(raw: Any) -> ParsedAnswer:
    """Parse the authors' VP rubric ``{"target_score": 0-2, "viewpoint_score": 0-4}``.

    The prediction is ``{"target_score": int, "viewpoint_score": int}``; both parts follow the judge
    scale rules of :func:`parse_judge` (integers in range, no rounding).
    """
    raw, echoed = _prepared(raw, "judge_authors")
    return _unless_echo(_parse_vp_rubric(raw), echoed)


def _parse_vp_rubric(raw: Any) -> ParsedAnswer:
    if _is_empty(raw):
        return _empty()
    payload = extract_json(raw, VP_RUBRIC_KEYS)
    if payload is None:
        return _no_json()
    if not isinstance(payload, Mapping):
        return _bad(f"not an object: {_short(payload)}", InvalidCause.MISSING_KEY)
    parts = {}
    for key in VP_RUBRIC_KEYS:
        has, value = lookup(payload, (key,))  # keys compared ignoring case, like every parser here
        if not has:
            return _missing(key, payload)
        checked = _check_scaled(value, "score", *VP_RUBRIC_RANGES[key])
        if not checked.valid:
            return checked if checked.cause is InvalidCause.ECHO else _bad(f"{key}: {checked.error}", checked.cause or InvalidCause.OUT_OF_RANGE)
        parts[key] = checked.prediction
    return _ok(parts)
