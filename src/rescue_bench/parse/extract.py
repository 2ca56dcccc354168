"""JSON extraction from model replies: find the JSON a reply holds, whatever surrounds it.

No domain knowledge: nothing here knows a task, a label or a key of the answer contract (callers pass
the keys they expect). No function raises on any input, and the work per text is bounded (see
:data:`MAX_SCAN_CHARS`, :data:`MAX_DECODE_ATTEMPTS`, :data:`MAX_SCAN_WORK`).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DECODE_ATTEMPTS",
    "MAX_LITERAL_CHARS",
    "MAX_REPAIR_WORK",
    "MAX_SCAN_CHARS",
    "MAX_SCAN_WORK",
    "MAX_WHOLE_CHARS",
    "extract_json",
    "has_key",
    "lookup",
    "to_text",
]

MAX_WHOLE_CHARS = 1_000_000
"""Texts up to this length are first tried as one JSON document (C-speed, linear)."""

MAX_SCAN_CHARS = 100_000
"""Only the *last* this-many characters are scanned for embedded JSON. Answers come at the end of a
reply (after any reasoning), so the tail is the part worth keeping when a reply is huge."""

MAX_DECODE_ATTEMPTS = 1_000
"""At most this many start positions (``{`` / ``[``) are tried with ``JSONDecoder.raw_decode``."""

MAX_SCAN_WORK = 2_000_000
"""Budget, in characters the decoder walked over, for all decode attempts of one text together (its
fenced blocks and the scan of the whole tail share it). A single attempt can walk to the end of the
text before failing, so without a budget adversarial input (thousands of unclosed brackets before a
long list) would cost quadratic time; with one budget per fenced block instead of per text, 33 fenced
blocks of 3,000 nested brackets cost 16 s per parse (measured before the budget was shared)."""

MAX_LITERAL_CHARS = 20_000
"""Lenient repair (trailing commas, curly quotes, ``ast.literal_eval``) is only tried on snippets up to
this length."""

MAX_REPAIR_WORK = 200_000
"""Budget, in characters, for the (pure-Python) bracket matching that finds snippets to repair (one
budget per text, like :data:`MAX_SCAN_WORK`)."""

_FENCE_RE = re.compile(r"```[ \t]*[A-Za-z0-9_+.\-]*[ \t]*\n?(.*?)```", re.DOTALL)
# A '{' or '[' that can start a JSON (or, after repair, Python-literal) object/array.
_START_RE = re.compile(r"""\{\s*["'}]|\[\s*[\[\]{"'\-0-9tfnTFN]""")
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"'})
_DECODER = json.JSONDecoder()


def to_text(raw: Any) -> str | None:
    """Text of a raw answer: ``str`` as is, ``bytes`` decoded as UTF-8 with replacement."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw).decode("utf-8", errors="replace")
    return None


def lookup(obj: Any, keys: Iterable[str]) -> tuple[bool, Any]:
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


def has_key(obj: Any, keys: Sequence[str]) -> bool:
    return lookup(obj, keys)[0]


def _find_keyed(value: Any, keys: Sequence[str], max_nodes: int = 2_000) -> Any:
    """The dict holding one of ``keys``: ``value`` itself if it does, else the last such dict nested
    in it (document order, pre-order walk over at most ``max_nodes`` containers, not descending into
    a dict that already matched); ``None`` when there is none."""
    if has_key(value, keys):
        return value
    found = None
    stack: list[Any] = [value]
    seen = 0
    while stack and seen < max_nodes:
        node = stack.pop()
        seen += 1
        if node is not value and has_key(node, keys):
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
        with warnings.catch_warnings():  # a reply's "\d" is the model's text, not our code: no SyntaxWarning
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
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


@dataclass
class _Budget:
    """What the scans of one text have spent so far: characters decoded, characters bracket-matched."""

    work: int = 0
    repair_work: int = 0


def _scan(text: str, budget: _Budget) -> list[Any]:
    """Every top-level JSON object/array embedded in ``text``, in document order.

    Tries ``JSONDecoder.raw_decode`` from each plausible ``{`` / ``[`` left to right and skips over
    what it decoded, so nested objects are returned inside their parent, not twice. Spans that fail
    strict JSON get one lenient retry (:func:`_loads_lenient`) on their balanced extent. Bounded by
    :data:`MAX_DECODE_ATTEMPTS` per call, and by :data:`MAX_SCAN_WORK` and :data:`MAX_REPAIR_WORK`
    for all the calls sharing ``budget`` (the scans of one text).
    """
    found: list[Any] = []
    pos = 0
    attempts = 0
    n = len(text)
    while attempts < MAX_DECODE_ATTEMPTS and budget.work < MAX_SCAN_WORK:
        m = _START_RE.search(text, pos)
        if m is None:
            break
        start = m.start()
        attempts += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            budget.work += max(1, exc.pos - start)
        except Exception:  # noqa: BLE001 - RecursionError on deep nesting, MemoryError
            budget.work += n - start
        else:
            budget.work += end - start
            found.append(value)
            pos = end
            continue
        # strict JSON failed here: try a lenient decode of the balanced span
        if budget.repair_work >= MAX_REPAIR_WORK:
            pos = start + 1
            continue
        end_b, walked = _balanced_end(text, start)
        budget.repair_work += walked
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
    :data:`MAX_SCAN_CHARS` characters are fenced-matched and scanned, and a scan stops after
    :data:`MAX_DECODE_ATTEMPTS` start positions, or when the scans of the text (fenced blocks and
    tail together) have decoded :data:`MAX_SCAN_WORK` characters. On
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
    text = to_text(raw)
    if text is None:
        return None
    stripped = text.strip()
    if not stripped:
        return None
    fallback: list[Any] = []
    budget = _Budget()  # one for every scan of this text: its fenced blocks and its tail

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
                fenced.extend(_scan(block, budget))
        ok_k, hit = _select(fenced, keys)
        if ok_k:
            return hit
        fallback.extend(fenced)

    # 3. scan the text
    scanned = _scan(tail, budget)
    ok_k, hit = _select(scanned, keys)
    if ok_k:
        return hit
    if not fallback:
        fallback = scanned
    return fallback[-1] if fallback else None
