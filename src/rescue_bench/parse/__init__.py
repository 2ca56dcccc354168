"""Lenient parsing and strict validation of model answers (SPEC sections 4-5).

Every task asks the model for a small JSON object, the *answer contract* declared in
:mod:`rescue_bench.contract`:

=========================  =========================================================
task                       answer
=========================  =========================================================
ITP                        ``{"answer": "yes" | "no"}``
RPP, STP, SSP              ``{"ranking": [three labels, most likely first]}``
ER                         ``{"emotion": "...", "intensity": 0-10}``
VP                         ``{"viewpoints": [{"target": "...", "viewpoint": "..."}]}``
judges (ER, VP)            ``{"score": 1-5}``
VP, authors' rubric        ``{"target_score": 0-2, "viewpoint_score": 0-4}``
=========================  =========================================================

Models rarely follow a contract to the letter, so parsing is *lenient* about form and *strict* about
content:

* **Form.** The JSON may sit inside a Markdown code fence, be surrounded by prose, use the wrong case
  (values and keys), write ``pursue-withdraw`` or ``Pursue Withdraw`` for ``pursue_withdraw``, use a
  few well known aliases (:data:`ALIASES`), or carry small syntax slips (trailing commas, curly
  quotes, Python-style single quotes / ``True``). All of that is accepted.
* **Content.** Every value is then validated against the closed set of the task. An answer that cannot
  be parsed, or that names no valid label, is *invalid*: :class:`ParsedAnswer` has ``valid=False``,
  ``prediction=None``, an ``error`` saying why and its ``cause`` (:class:`~rescue_bench.records.InvalidCause`:
  no answer, no JSON, an echo of the answer template, JSON without the key, an unknown label, an
  out-of-range value), the one place that knows why a parse failed. Scoring counts it as wrong and
  reports the invalid-answer rate by cause; it is never dropped and never filled from the gold (SPEC
  section 5).
* **What the prompt showed.** A reply that only sends the answer template back (its alternatives,
  ``{"answer": "yes"} or {"answer": "no"}``, or its ``<placeholders>``, :func:`is_placeholder`) is an
  echo, never an answer; a template copied before an answer leaves the answer to be read. A
  transcript row's number copied into a reply (``[6] Dana -> ...``) is text, never JSON.

No function in this package raises on any input (``str``, ``bytes``, already-decoded JSON, ``None``,
huge or binary-ish text) and the work per answer is bounded (see :data:`MAX_SCAN_CHARS`,
:data:`MAX_DECODE_ATTEMPTS`, :data:`MAX_SCAN_WORK`). The package is pure: no engine, no I/O, and every
label set comes from :mod:`rescue_bench.labels` through the ``candidates`` / ``participants`` the
caller passes.

Its three sections, one module each:

* :mod:`~rescue_bench.parse.extract`: JSON extraction (:func:`extract_json`), no domain knowledge;
* :mod:`~rescue_bench.parse.matching`: label matching (:func:`normalize_label`, :func:`match_label`,
  :data:`ALIASES`);
* :mod:`~rescue_bench.parse.answers`: the answer parsers (:func:`parse_itp`, :func:`parse_ranking`,
  :func:`parse_er`, :func:`parse_vp`, :func:`parse_judge`, :func:`parse_vp_rubric`).

Examples
--------
>>> parse_itp('Sure! ```json\\n{"answer": "Yes"}\\n```').prediction
'yes'
>>> parse_ranking('{"ranking": ["Pursue-Withdraw", "bogus", "attack attack"]}',
...               ["pursue_withdraw", "attack_attack", "withdraw_withdraw"]).prediction
['pursue_withdraw', 'attack_attack']
>>> parse_judge('{"score": 4.5}').error
'score 4.5 is not an integer'
>>> parse_judge('{"score": 4.5}').cause
<InvalidCause.OUT_OF_RANGE: 'out_of_range'>
"""

from rescue_bench.parse.answers import (
    ER_EMOTION_KEYS,
    ER_INTENSITY_KEYS,
    ER_KEYS,
    ITP_KEYS,
    JUDGE_KEYS,
    MAX_BARE_LIST_CHARS,
    RANKING_KEYS,
    VP_KEYS,
    VP_RUBRIC_KEYS,
    VP_RUBRIC_RANGES,
    ParsedAnswer,
    is_placeholder,
    parse_er,
    parse_itp,
    parse_judge,
    parse_ranking,
    parse_vp,
    parse_vp_rubric,
)
from rescue_bench.parse.extract import (
    MAX_DECODE_ATTEMPTS,
    MAX_LITERAL_CHARS,
    MAX_REPAIR_WORK,
    MAX_SCAN_CHARS,
    MAX_SCAN_WORK,
    MAX_WHOLE_CHARS,
    extract_json,
)
from rescue_bench.parse.matching import ALIASES, MAX_LABEL_CHARS, match_label, normalize_label

__all__ = [
    "ALIASES",
    "ER_EMOTION_KEYS",
    "ER_INTENSITY_KEYS",
    "ER_KEYS",
    "ITP_KEYS",
    "JUDGE_KEYS",
    "MAX_BARE_LIST_CHARS",
    "MAX_DECODE_ATTEMPTS",
    "MAX_LABEL_CHARS",
    "MAX_LITERAL_CHARS",
    "MAX_REPAIR_WORK",
    "MAX_SCAN_CHARS",
    "MAX_SCAN_WORK",
    "MAX_WHOLE_CHARS",
    "RANKING_KEYS",
    "VP_KEYS",
    "VP_RUBRIC_KEYS",
    "VP_RUBRIC_RANGES",
    "ParsedAnswer",
    "extract_json",
    "is_placeholder",
    "match_label",
    "normalize_label",
    "parse_er",
    "parse_itp",
    "parse_judge",
    "parse_ranking",
    "parse_vp",
    "parse_vp_rubric",
]
