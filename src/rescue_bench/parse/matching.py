"""Label matching: which candidate label (or participant name) a piece of model text names.

Lenient about form (case, spaces / hyphens / underscores, surrounding punctuation, an enumeration or
an explanation after the label, a few known :data:`ALIASES`), strict about content: only exact
matches after normalisation count, and only to a label the caller offers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from rescue_bench.labels import GROUP_LABELS

__all__ = ["ALIASES", "MAX_LABEL_CHARS", "match_label", "normalize_label"]

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
