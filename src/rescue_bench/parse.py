"""Lenient parsing and strict validation of model answers (SPEC sections 4-5).

Every task asks the model for a small JSON object (the *answer contract*):

=========================  =========================================================
task                       answer
=========================  =========================================================
ITP                        ``{"answer": "yes" | "no"}``
RPP, STP, SSP              ``{"ranking": [three labels, most likely first]}``
ER                         ``{"emotion": "...", "intensity": 0-10}``
VP                         ``{"viewpoints": [{"target": "...", "viewpoint": "..."}]}``
judges (ER, VP)            ``{"score": 1-5}``
=========================  =========================================================

Models rarely follow a contract to the letter, so parsing is *lenient* about form and *strict* about
content:

* **Form.** The JSON may sit inside a Markdown code fence, be surrounded by prose, use the wrong case,
  write ``pursue-withdraw`` or ``Pursue Withdraw`` for ``pursue_withdraw``, use a few well known
  aliases (:data:`ALIASES`), or carry small syntax slips (trailing commas, curly quotes, Python-style
  single quotes / ``True``). All of that is accepted.
* **Content.** Every value is then validated against the closed set of the task. An answer that cannot
  be parsed, or that names no valid label, is *invalid*: :class:`ParsedAnswer` has ``valid=False``,
  ``prediction=None`` and an ``error`` saying why. Scoring counts it as wrong and reports the
  invalid-answer rate; it is never dropped and never filled from the gold (SPEC section 5).

No function in this module raises on any input (``str``, ``bytes``, already-decoded JSON, ``None``,
huge or binary-ish text) and the work per answer is bounded (see :data:`MAX_SCAN_CHARS`,
:data:`MAX_DECODE_ATTEMPTS`, :data:`MAX_SCAN_WORK`). The module is pure: no engine, no I/O, and every
label set comes from :mod:`rescue_bench.labels` through the ``candidates`` / ``participants`` the
caller passes.

Examples
--------
>>> parse_itp('Sure! ```json\\n{"answer": "Yes"}\\n```').prediction
'yes'
>>> parse_ranking('{"ranking": ["Pursue-Withdraw", "bogus", "attack attack"]}',
...               ["pursue_withdraw", "attack_attack", "withdraw_withdraw"]).prediction
['pursue_withdraw', 'attack_attack']
>>> parse_judge('{"score": 4.5}').error
'score 4.5 is not an integer'
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rescue_bench.labels import GROUP_LABELS

__all__ = [
    "ALIASES",
    "ITP_KEYS",
    "RANKING_KEYS",
    "ER_KEYS",
    "VP_KEYS",
    "JUDGE_KEYS",
    "MAX_SCAN_CHARS",
    "MAX_DECODE_ATTEMPTS",
    "MAX_SCAN_WORK",
    "ParsedAnswer",
    "extract_json",
    "normalize_label",
    "match_label",
    "parse_itp",
    "parse_ranking",
    "parse_er",
    "parse_vp",
    "parse_judge",
]

# --------------------------------------------------------------------------------------------------
# Limits (bounded work for any input)
# --------------------------------------------------------------------------------------------------

MAX_WHOLE_CHARS = 1_000_000
"""Texts up to this length are first tried as one JSON document (C-speed, linear)."""

MAX_SCAN_CHARS = 100_000
"""Only the *last* this-many characters are scanned for embedded JSON. Answers come at the end of a
reply (after any reasoning), so the tail is the part worth keeping when a reply is huge."""

MAX_DECODE_ATTEMPTS = 1_000
"""At most this many start positions (``{`` / ``[``) are tried with ``JSONDecoder.raw_decode``."""

MAX_SCAN_WORK = 2_000_000
"""Budget, in characters the decoder walked over, for all decode attempts of one text together. A
single attempt can walk to the end of the text before failing, so without a budget adversarial input
(thousands of unclosed brackets before a long list) would cost quadratic time."""

MAX_LITERAL_CHARS = 20_000
"""Lenient repair (trailing commas, curly quotes, ``ast.literal_eval``) is only tried on snippets up to
this length."""

MAX_REPAIR_WORK = 200_000
"""Budget, in characters, for the (pure-Python) bracket matching that finds snippets to repair."""

# --------------------------------------------------------------------------------------------------
# Keys of the answer contract, with the few tolerated synonyms
# --------------------------------------------------------------------------------------------------

ITP_KEYS: tuple[str, ...] = ("answer", "prediction", "label", "intervene")
RANKING_KEYS: tuple[str, ...] = ("ranking", "labels", "prediction", "answer")
ER_EMOTION_KEYS: tuple[str, ...] = ("emotion", "emotion_description")
ER_INTENSITY_KEYS: tuple[str, ...] = ("intensity",)
ER_KEYS: tuple[str, ...] = ER_EMOTION_KEYS + ER_INTENSITY_KEYS
VP_KEYS: tuple[str, ...] = ("viewpoints",)
JUDGE_KEYS: tuple[str, ...] = ("score", "rating")

# Keys under which a ranking item written as an object carries its label: [{"label": "track"}, ...].
_ITEM_LABEL_KEYS: tuple[str, ...] = ("label", "target", "strategy", "pattern", "name")

# --------------------------------------------------------------------------------------------------
# Aliases
# --------------------------------------------------------------------------------------------------

ALIASES: dict[str, str | tuple[str, ...]] = {
    # relation patterns
    "pursuer_distancer": "pursue_withdraw",
    "pursue_distance": "pursue_withdraw",
    "pursuer_withdrawer": "pursue_withdraw",
    "demand_withdraw": "pursue_withdraw",
    # strategies
    "goal_alignment": "goal_align",
    "goal_aligning": "goal_align",
    "boundary_making": "boundary",
    "boundaries": "boundary",
    # targets: the group label of the scenario
    "both": GROUP_LABELS["couple"],
    "both_partners": GROUP_LABELS["couple"],
    "the_couple": GROUP_LABELS["couple"],
    "the_family": GROUP_LABELS["family"],
    "whole_family": GROUP_LABELS["family"],
    "the_whole_family": GROUP_LABELS["family"],
    "everyone": (GROUP_LABELS["family"], GROUP_LABELS["couple"]),
    "all": (GROUP_LABELS["family"], GROUP_LABELS["couple"]),
}
"""Known aliases, keyed by :func:`normalize_label` form, mapped to the canonical label.

A value may be a tuple of labels: the first one that is among the caller's candidates wins (so
``"everyone"`` is ``Family`` in a family and ``Couple`` in a couple). An alias only ever resolves to a
label that is in ``candidates``; ``"both"`` in a family therefore matches nothing (two of several
members are not the whole family). Case and space/hyphen/underscore variants need no alias: they
are matched by normalisation. The list is deliberately short; an alias is added only for a
phrasing that models are seen to use and that cannot mean another label.
"""

# --------------------------------------------------------------------------------------------------
# Result type
# --------------------------------------------------------------------------------------------------


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
        Why the answer is invalid (``None`` when valid). Meant for humans and for counting failure
        kinds; the wording is not a stable API.
    """

    prediction: Any = None
    valid: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``prediction``, ``valid``, ``error``)."""
        return asdict(self)


def _ok(prediction: Any) -> ParsedAnswer:
    return ParsedAnswer(prediction=prediction, valid=True, error=None)


def _bad(error: str) -> ParsedAnswer:
    return ParsedAnswer(prediction=None, valid=False, error=error)


# --------------------------------------------------------------------------------------------------
# JSON extraction
# --------------------------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"```[ \t]*[A-Za-z0-9_+.\-]*[ \t]*\n?(.*?)```", re.DOTALL)
# A '{' or '[' that can start a JSON (or, after repair, Python-literal) object/array.
_START_RE = re.compile(r"""\{\s*["'}]|\[\s*[\[\]{"'\-0-9tfnTFN]""")
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"'})
_DECODER = json.JSONDecoder()


def _to_text(raw: Any) -> str | None:
    """Text of a raw answer: ``str`` as is, ``bytes`` decoded as UTF-8 with replacement."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw).decode("utf-8", errors="replace")
    return None


def _get(obj: Any, keys: Iterable[str]) -> tuple[bool, Any]:
    """Look ``keys`` up in a dict in order, ignoring case and surrounding space of the dict's keys."""
    if not isinstance(obj, Mapping):
        return False, None
    lowered: dict[str, Any] = {}
    for k, v in obj.items():
        if isinstance(k, str):
            lowered.setdefault(k.strip().lower(), v)
    for key in keys:
        if key in lowered:
            return True, lowered[key]
    return False, None


def _has_key(obj: Any, keys: Sequence[str]) -> bool:
    return _get(obj, keys)[0]


def _find_keyed(value: Any, keys: Sequence[str], max_nodes: int = 2_000) -> Any:
    """The dict holding one of ``keys``: ``value`` itself if it does, else the last such dict nested
    in it (document order, pre-order walk over at most ``max_nodes`` containers, not descending into
    a dict that already matched); ``None`` when there is none."""
    if _has_key(value, keys):
        return value
    found = None
    stack: list[Any] = [value]
    seen = 0
    while stack and seen < max_nodes:
        node = stack.pop()
        seen += 1
        if node is not value and _has_key(node, keys):
            found = node  # pre-order visits in document order: the last hit is the latest one
            continue
        if isinstance(node, Mapping):
            children = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            continue
        stack.extend(c for c in reversed(children) if isinstance(c, (Mapping, list)))
    return found


def _normalise_literal(value: Any) -> Any:
    """Make an ``ast.literal_eval`` result JSON-like (tuples/sets become lists)."""
    if isinstance(value, (tuple, set, frozenset)):
        return [_normalise_literal(v) for v in value]
    if isinstance(value, list):
        return [_normalise_literal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalise_literal(v) for k, v in value.items()}
    return value


def _loads_lenient(snippet: str) -> tuple[bool, Any]:
    """Decode a whole snippet: strict JSON, then JSON with curly quotes / trailing commas repaired,
    then a Python literal (single quotes, ``True``/``None``). Never raises."""
    s = snippet.strip()
    if not s:
        return False, None
    try:
        return True, json.loads(s)
    except Exception:  # noqa: BLE001 - JSONDecodeError, RecursionError, ...
        pass
    if len(s) > MAX_LITERAL_CHARS or s[0] not in "{[":
        return False, None
    repaired = _TRAILING_COMMA_RE.sub(r"\1", s.translate(_SMART_QUOTES))
    try:
        return True, json.loads(repaired)
    except Exception:  # noqa: BLE001
        pass
    try:
        value = ast.literal_eval(repaired.replace("\n", " "))
    except Exception:  # noqa: BLE001 - SyntaxError, ValueError, RecursionError, MemoryError ...
        return False, None
    if isinstance(value, (dict, list, tuple)):
        return True, _normalise_literal(value)
    return False, None


def _balanced_end(text: str, start: int, limit: int = MAX_LITERAL_CHARS) -> tuple[int | None, int]:
    """End (exclusive) of the bracketed span opening at ``start``, honouring '...' and "..." strings
    (``None`` when unbalanced within ``limit`` characters), and the number of characters walked."""
    depth = 0
    quote: str | None = None
    escaped = False
    end = min(len(text), start + limit)
    for i in range(start, end):
        ch = text[i]
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            # an apostrophe inside a word (don't, Alan's) is not a quote
            if ch == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < len(text) and text[i + 1].isalnum():
                continue
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1, i + 1 - start
    return None, end - start


def _scan(text: str) -> list[Any]:
    """Every top-level JSON object/array embedded in ``text``, in document order.

    Tries ``JSONDecoder.raw_decode`` from each plausible ``{`` / ``[`` left to right and skips over
    what it decoded, so nested objects are returned inside their parent, not twice. Spans that fail
    strict JSON get one lenient retry (:func:`_loads_lenient`) on their balanced extent. Bounded by
    :data:`MAX_DECODE_ATTEMPTS` and :data:`MAX_SCAN_WORK`.
    """
    found: list[Any] = []
    pos = 0
    attempts = 0
    work = 0
    repair_work = 0
    n = len(text)
    while attempts < MAX_DECODE_ATTEMPTS and work < MAX_SCAN_WORK:
        m = _START_RE.search(text, pos)
        if m is None:
            break
        start = m.start()
        attempts += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            work += max(1, exc.pos - start)
        except Exception:  # noqa: BLE001 - RecursionError on deep nesting, MemoryError
            work += n - start
        else:
            work += end - start
            found.append(value)
            pos = end
            continue
        # strict JSON failed here: try a lenient decode of the balanced span
        if repair_work >= MAX_REPAIR_WORK:
            pos = start + 1
            continue
        end_b, walked = _balanced_end(text, start)
        repair_work += walked
        if end_b is not None:
            ok, value = _loads_lenient(text[start:end_b])
            if ok:
                found.append(value)
                pos = end_b
                continue
        pos = start + 1
    return found


def _select(candidates: list[Any], keys: Sequence[str] | None) -> tuple[bool, Any]:
    """Pick from candidates in document order: the last one having (or containing) the primary key
    ``keys[0]``, else the last one having any of ``keys``."""
    if not candidates:
        return False, None
    if not keys:
        return True, candidates[-1]
    for tier in (keys[:1], keys):
        for cand in reversed(candidates):
            hit = _find_keyed(cand, tier)
            if hit is not None:
                return True, hit
    return False, None


def extract_json(text: Any, keys: Sequence[str] | None = None) -> Any | None:
    """Find the JSON answer in a model reply.

    Parameters
    ----------
    text
        The reply. ``bytes`` are decoded as UTF-8 (invalid bytes replaced); an already decoded
        ``dict`` or ``list`` is used as is (structured-output APIs); anything else gives ``None``.
    keys
        The keys the answer is expected to have (e.g. ``("ranking",)``). When given, a candidate
        (or a dict nested in it) that has one of them, compared ignoring case, is preferred over
        one that has not.

    Returns
    -------
    The decoded value (usually a ``dict``; may be a ``list`` or, for a whole-text JSON scalar, a
    scalar), or ``None`` when no JSON object or array can be found.

    Notes
    -----
    Search order, stopping at the first stage that yields a keyed candidate:

    1. the whole text (stripped) as one JSON document;
    2. the contents of Markdown code fences (```` ```json ... ``` ````), each decoded whole, else
       scanned;
    3. a scan of the text: ``JSONDecoder.raw_decode`` from each ``{`` / ``[`` left to right,
       skipping over whatever was decoded (top-level values only; nested ones stay inside).

    Snippets that fail strict JSON get a lenient retry: curly double quotes, trailing commas and
    Python-literal syntax (single quotes, ``True``/``None``) are repaired.

    **When several candidates exist, the last one wins** (the last keyed one when ``keys`` is
    given): models that restate the format, quote an example or correct themselves put the final
    answer last. ``keys[0]`` is the contract's key and the others tolerated synonyms: an object with
    ``keys[0]`` is preferred over a later one that only has a synonym. When ``keys`` is given and no candidate has them, the last candidate of the
    earliest stage that found any is returned, so the caller can still use a bare list (e.g.
    ``["track", "join"]``) or report what was wrong.

    A dict nested inside a candidate is returned when it is the one holding the key, e.g.
    ``{"result": {"ranking": [...]}}`` gives ``{"ranking": [...]}``.

    Bounded work: texts longer than :data:`MAX_WHOLE_CHARS` skip stage 1, only the last
    :data:`MAX_SCAN_CHARS` characters are fenced-matched and scanned, and the scan stops after
    :data:`MAX_DECODE_ATTEMPTS` start positions or :data:`MAX_SCAN_WORK` decoded characters. On
    adversarial input the result may therefore be ``None`` although JSON exists somewhere; it
    never hangs and never raises.
    """
    try:
        return _extract_json(text, tuple(keys) if keys else None)
    except Exception:  # noqa: BLE001 - last line of defence: this function never raises
        return None


def _extract_json(raw: Any, keys: tuple[str, ...] | None) -> Any | None:
    if isinstance(raw, (Mapping, list)):
        ok, hit = _select([raw], keys)
        return hit if ok else raw
    text = _to_text(raw)
    if text is None:
        return None
    stripped = text.strip()
    if not stripped:
        return None
    fallback: list[Any] = []

    # 1. the whole text
    if len(stripped) <= MAX_WHOLE_CHARS:
        ok, value = _loads_lenient(stripped)
        if ok:
            ok_k, hit = _select([value], keys)
            return hit if ok_k else value

    tail = text[-MAX_SCAN_CHARS:] if len(text) > MAX_SCAN_CHARS else text

    # 2. fenced blocks
    if "```" in tail:
        fenced: list[Any] = []
        for block in _FENCE_RE.findall(tail):
            ok, value = _loads_lenient(block)
            if ok:
                fenced.append(value)
            else:
                fenced.extend(_scan(block))
        ok_k, hit = _select(fenced, keys)
        if ok_k:
            return hit
        fallback.extend(fenced)

    # 3. scan the text
    scanned = _scan(tail)
    ok_k, hit = _select(scanned, keys)
    if ok_k:
        return hit
    if not fallback:
        fallback = scanned
    return fallback[-1] if fallback else None


# --------------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------------

_SEP_RE = re.compile(r"[\s\-\u2010-\u2015_]+")
MAX_LABEL_CHARS = 300
"""Strings longer than this are never a label or a name: :func:`match_label` returns ``None`` at once
(only the first 300 characters are split to find a head such as ``"track: ..."``)."""
_ENUM_RE = re.compile(r"^\s*(?:#?\d{1,2}\s*[.):\-]\s*|[-*\u2022]\s+)")
_HEAD_SPLIT_RE = re.compile(r"\s*(?::|\(|\s[-\u2013\u2014]\s)")


def normalize_label(s: Any) -> str:
    """Normal form used to compare labels and names.

    Lowercases, strips, turns runs of whitespace, hyphens/dashes and underscores into one ``_``, and
    trims punctuation at both ends (quotes, periods, Markdown ``**``/backticks). Non-strings give
    ``""``.

    >>> normalize_label("  Pursue - Withdraw. ")
    'pursue_withdraw'
    >>> normalize_label("**goal__align**")
    'goal_align'
    """
    if not isinstance(s, str):
        return ""
    out = _SEP_RE.sub("_", s.strip().lower())
    # trim non-alphanumerics at both ends (a linear loop: a regex like [\W_]+$ is quadratic)
    start, end = 0, len(out)
    while start < end and not out[start].isalnum():
        start += 1
    while end > start and not out[end - 1].isalnum():
        end -= 1
    return out[start:end]


def _candidate_map(candidates: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in candidates:
        if isinstance(c, str):
            out.setdefault(normalize_label(c), c)
    out.pop("", None)
    return out


def _match(value: str, cmap: Mapping[str, str], aliases: Mapping[str, str | tuple[str, ...]]) -> str | None:
    key = normalize_label(value)
    if not key:
        return None
    if key in cmap:
        return cmap[key]
    target = aliases.get(key)
    if target is not None:
        for t in (target,) if isinstance(target, str) else target:
            hit = cmap.get(normalize_label(t))
            if hit is not None:
                return hit
    return None


def match_label(
    value: Any,
    candidates: Iterable[str],
    aliases: Mapping[str, str | tuple[str, ...]] | None = None,
) -> str | None:
    """The candidate that ``value`` names, in the candidate's canonical spelling, or ``None``.

    Matching ignores case, surrounding punctuation and the difference between spaces, hyphens and
    underscores (so it works for labels and for participant names alike: ``"alan"`` matches
    ``"Alan"``). Then, in order:

    1. an alias (``aliases``; ``None`` means :data:`ALIASES`, pass ``{}`` to disable) that resolves
       to one of the candidates;
    2. the value without a leading enumeration (``"1. track"``, ``"- track"``);
    3. the head of the value before an explanation (``"track: describe ..."``,
       ``"track (names the cycle)"``, ``"track - describe"``).

    Only exact matches after normalisation count: no fuzzy or substring matching, so ``"trac"`` or
    ``"tracking"`` are ``None``. A non-string value gives ``None``.
    """
    if not isinstance(value, str):
        return None
    if len(value) > MAX_LABEL_CHARS:
        value = value[:MAX_LABEL_CHARS]
        only_head = True
    else:
        only_head = False
    cmap = _candidate_map(candidates)
    if not cmap:
        return None
    alias_map = ALIASES if aliases is None else aliases
    alias_norm = {normalize_label(k): v for k, v in alias_map.items()}
    hit = None if only_head else _match(value, cmap, alias_norm)
    if hit is not None:
        return hit
    unenumerated = _ENUM_RE.sub("", value, count=1)
    if unenumerated != value and not only_head:
        hit = _match(unenumerated, cmap, alias_norm)
        if hit is not None:
            return hit
    head = _HEAD_SPLIT_RE.split(unenumerated.strip(), maxsplit=1)[0]
    if head and head != unenumerated.strip():
        return _match(head, cmap, alias_norm)
    return None


# --------------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------------

_BARE_CLEAN_RE = re.compile(r"^```[^\n]*\n?|```$")


def _bare_text(raw: Any) -> str:
    """The reply as plain text, code fence markers removed (for no-JSON fallbacks)."""
    text = _to_text(raw)
    if text is None:
        return ""
    text = text.strip()
    if len(text) > MAX_SCAN_CHARS:
        text = text[-MAX_SCAN_CHARS:]
    return _BARE_CLEAN_RE.sub("", text).strip()


def _is_empty(raw: Any) -> bool:
    if raw is None:
        return True
    text = _to_text(raw)
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
        return "yes" if value else "no"
    if isinstance(value, str):
        norm = normalize_label(value)
        if norm in ("yes", "no"):
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
    if _is_empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, ITP_KEYS)
    has, value = _get(payload, ITP_KEYS)
    if has:
        label = _yes_no(value)
        if label is not None:
            return _ok(label)
        return _bad(f"answer {_short(value)} is not yes/no")
    if isinstance(payload, (bool, str)):  # whole reply was a JSON scalar: "yes" or true
        label = _yes_no(payload)
        if label is not None:
            return _ok(label)
    m = _BARE_YES_NO_RE.match(_bare_text(raw)[:_BARE_PREFIX])
    if m:
        return _ok(m.group(1).lower())
    if payload is None:
        return _bad("no JSON answer and no bare yes/no")
    return _bad(f"missing key 'answer' in {_short(payload)}")


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
                has, inner = _get(item, _ITEM_LABEL_KEYS)
                items.append(inner if has else None)
            else:
                items.append(item)
        return items
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        has, inner = _get(value, _ITEM_LABEL_KEYS)
        return [inner] if has else []
    return []


def _validate_ranking(
    items: list[Any], cmap_candidates: Sequence[str], k: int, aliases: Mapping | None
) -> tuple[list[str], list[Any]]:
    out: list[str] = []
    rejected: list[Any] = []
    for item in items:
        hit = match_label(item, cmap_candidates, aliases)
        if (
            hit is None
            and isinstance(item, str)
            and len(item) <= MAX_BARE_LIST_CHARS
            and _LIST_SPLIT_RE.search(item.strip())
        ):
            # a single string holding several labels: "track, reframe, join"
            for piece in _LIST_SPLIT_RE.split(item.strip()):
                sub = match_label(piece, cmap_candidates, aliases)
                if sub is None:
                    rejected.append(piece)
                elif sub not in out:
                    out.append(sub)
            continue
        if hit is None:
            rejected.append(item)
        elif hit not in out:
            out.append(hit)
    return out[:k], rejected


def parse_ranking(
    raw: Any,
    candidates: Sequence[str],
    k: int = 3,
    aliases: Mapping[str, str | tuple[str, ...]] | None = None,
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
    * Without any JSON, a bare reply is accepted only when *every* piece of it (split as above,
      enumeration like ``"1."`` removed) is a valid label; prose is not mined for label names,
      because a label mentioned while reasoning is not an answer.
    """
    if _is_empty(raw):
        return _bad("empty answer")
    cands = [c for c in candidates if isinstance(c, str)]
    if not cands:
        return _bad("no candidate labels")
    payload = extract_json(raw, RANKING_KEYS)
    bare = _bare_text(raw)
    if payload is None and len(bare) <= MAX_BARE_LIST_CHARS:
        pieces = [p for p in _LIST_SPLIT_RE.split(bare) if p.strip()]
        if pieces and len(pieces) <= 4 * max(k, 1):
            labels = [match_label(p, cands, aliases) for p in pieces]
            if all(lab is not None for lab in labels):
                out: list[str] = []
                for lab in labels:
                    if lab not in out:
                        out.append(lab)  # type: ignore[arg-type]
                return _ok(out[:k])
    if payload is None:
        return _bad("no JSON answer")
    has, value = _get(payload, RANKING_KEYS)
    if not has:
        if isinstance(payload, (list, str)):
            value = payload
        else:
            return _bad(f"missing key 'ranking' in {_short(payload)}")
    items = _ranking_items(value)
    if not items:
        return _bad(f"ranking {_short(value)} is not a list of labels")
    labels, rejected = _validate_ranking(items, cands, k, aliases)
    if not labels:
        return _bad(f"no valid label in {_short(rejected or value)}")
    return _ok(labels)


# --------------------------------------------------------------------------------------------------
# ER
# --------------------------------------------------------------------------------------------------


def parse_er(raw: Any, lo: int = 0, hi: int = 10) -> ParsedAnswer:
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
    if _is_empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, ER_KEYS)
    if not isinstance(payload, Mapping):
        return _bad("no JSON object" if payload is None else f"not an object: {_short(payload)}")
    has_e, emotion = _get(payload, ER_EMOTION_KEYS)
    has_i, intensity = _get(payload, ER_INTENSITY_KEYS)
    if not has_e:
        return _bad("missing key 'emotion'")
    if isinstance(emotion, list) and emotion and all(isinstance(e, str) for e in emotion):
        emotion = ", ".join(e.strip() for e in emotion if e.strip())
    if not isinstance(emotion, str) or not emotion.strip():
        return _bad(f"emotion {_short(emotion)} is not a non-empty string")
    if not has_i:
        return _bad("missing key 'intensity'")
    checked = _check_scaled(intensity, "intensity", lo, hi, integer=False)
    if not checked.valid:
        return checked
    return _ok({"emotion": emotion.strip(), "intensity": checked.prediction})


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
    if _is_empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, VP_KEYS)
    if payload is None:
        return _bad("no JSON answer")
    has, value = _get(payload, VP_KEYS)
    if not has:
        if isinstance(payload, list):
            value = payload
        elif _has_key(payload, ("viewpoint",)):
            value = [payload]
        else:
            return _bad(f"missing key 'viewpoints' in {_short(payload)}")
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return _bad(f"viewpoints {_short(value)} is not a list")
    people = [p for p in participants if isinstance(p, str)]
    out: list[dict[str, str]] = []
    for item in value:
        has_v, viewpoint = _get(item, ("viewpoint",))
        if not has_v or not isinstance(viewpoint, str) or not viewpoint.strip():
            continue
        _, target = _get(item, ("target",))
        out.append({"target": _vp_target(target, people, aliases), "viewpoint": viewpoint.strip()})
    if not out:
        return _bad("no viewpoint with a non-empty 'viewpoint'")
    return _ok(out)


# --------------------------------------------------------------------------------------------------
# Judges
# --------------------------------------------------------------------------------------------------


def parse_judge(raw: Any, lo: int = 1, hi: int = 5) -> ParsedAnswer:
    """Parse a judge score ``{"score": n}`` with ``lo <= n <= hi`` an integer.

    Accepted: an int, an integral float (``4.0``), a numeric string (``"4"``, ``"4.0"``, ``"4/5"``
    when the denominator is ``hi``); ``"rating"`` is tolerated as the key. Invalid: non-integral
    values (``4.5`` is not rounded: a judge that cannot follow the scale is not trusted), values
    out of range, booleans. A bare number as the whole reply (``"4"``) is accepted too, since a
    JSON scalar is still unambiguous; numbers inside prose are not guessed at.
    """
    if _is_empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, JUDGE_KEYS)
    has, value = _get(payload, JUDGE_KEYS)
    if not has:
        if isinstance(payload, (int, float, str)) and not isinstance(payload, bool):
            value = payload
        elif payload is None and len(bare := _bare_text(raw)) < 100 and _NUMBER_RE.match(bare):
            value = bare
        else:
            return _bad("no JSON answer" if payload is None else f"missing key 'score' in {_short(payload)}")
    return _check_scaled(value, "score", lo, hi)


def _check_scaled(value: Any, what: str, lo: int, hi: int, *, integer: bool = True) -> ParsedAnswer:
    """``value`` as a number on the ``lo..hi`` scale, rounded to an int (half to even), else invalid.

    The scale rules of ER intensities and judge scores: a number or numeric string, a fraction only
    over ``hi``, within ``lo..hi`` before rounding; with ``integer`` (judge scores) also whole.
    """
    number = _number(value)
    if number is None:
        return _bad(f"{what} {_short(value)} is not a number")
    denom = _denominator(value)
    if denom is not None and denom != hi:
        return _bad(f"{what} {_short(value)} is not on a {lo}-{hi} scale")
    if integer and number != int(number):
        return _bad(f"{what} {_short(value)} is not an integer")
    if not lo <= number <= hi:
        return _bad(f"{what} {_short(value)} is outside {lo}-{hi}")
    return _ok(int(round(number)))


VP_RUBRIC_KEYS = ("target_score", "viewpoint_score")
VP_RUBRIC_RANGES = {"target_score": (0, 2), "viewpoint_score": (0, 4)}


def parse_vp_rubric(raw: Any) -> ParsedAnswer:
    """Parse the authors' VP rubric ``{"target_score": 0-2, "viewpoint_score": 0-4}``.

    The prediction is ``{"target_score": int, "viewpoint_score": int}``; both parts follow the judge
    scale rules of :func:`parse_judge` (integers in range, no rounding).
    """
    if _is_empty(raw):
        return _bad("empty answer")
    payload = extract_json(raw, VP_RUBRIC_KEYS)
    if not isinstance(payload, Mapping):
        return _bad("no JSON answer")
    parts = {}
    for key in VP_RUBRIC_KEYS:
        has, value = _get(payload, (key,))  # keys compared ignoring case, like every parser here
        if not has:
            return _bad(f"missing key {key!r} in {_short(payload)}")
        checked = _check_scaled(value, "score", *VP_RUBRIC_RANGES[key])
        if not checked.valid:
            return _bad(f"{key}: {checked.error}")
        parts[key] = checked.prediction
    return _ok(parts)
