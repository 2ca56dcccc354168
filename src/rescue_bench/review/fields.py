"""The row editor's form: every row field of SPEC section 1, how it is edited, and its choices.

Choices never copy a label list: relation patterns, strategies and utterance types come from
:mod:`rescue_bench.labels` for the segment's scenario; names from the segment's participants plus
``Therapist`` and the scenario's group label. A value outside the choices (the real release has some)
stays selectable and is marked, so opening and saving a row never changes it silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rescue_bench import labels


@dataclass(frozen=True)
class Sub:
    """One key of a list item (e.g. ``intensity`` of an ``internal_emotion`` item)."""

    name: str
    label: str
    kind: str
    """person | names | text | longtext | intensity | strategy | name"""


@dataclass(frozen=True)
class FieldSpec:
    name: str
    label: str
    kind: str
    """int | number | speaker | names | text | longtext | utterance | pattern | ints | list"""
    section: str
    subs: tuple[Sub, ...] = field(default_factory=tuple)
    help: str = ""


_PERSON_DESC = (Sub("person", "person", "person"), Sub("description", "description", "text"))

FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("primary_speaker", "Speaker", "speaker", "Utterance"),
    FieldSpec("target", "Target", "names", "Utterance", help="a group target stands alone"),
    FieldSpec("start_time", "Start (s)", "number", "Utterance"),
    FieldSpec("end_time", "End (s)", "number", "Utterance"),
    FieldSpec("row_index", "Row index", "int", "Utterance"),
    FieldSpec("dialogue_cleaned", "Dialogue", "longtext", "Utterance"),
    FieldSpec("utterance_type", "Utterance type", "utterance", "Utterance", help="client rows"),
    FieldSpec("tone_of_voice", "Tone of voice", "text", "Utterance"),
    FieldSpec("relation_cycle_state", "Relation cycle state (RPP gold)", "pattern", "Relation", help="therapist rows; — = none seen"),
    FieldSpec("relation_pattern", "Relation pattern", "pattern", "Relation", help="client rows"),
    FieldSpec("relation_pattern_reason", "Pattern reason", "longtext", "Relation"),
    FieldSpec("relation_pattern_evidence_rows", "Evidence rows", "ints", "Relation", help="row numbers, e.g. 3, 4, 7"),
    FieldSpec(
        "internal_emotion",
        "Internal emotion (ER gold)",
        "list",
        "Emotions and viewpoints",
        (Sub("person", "person", "person"), Sub("emotion_description", "emotion", "text"), Sub("intensity", "0-10", "intensity")),
    ),
    FieldSpec(
        "viewpoints_attitudes",
        "Viewpoints (VP gold)",
        "list",
        "Emotions and viewpoints",
        (Sub("source", "source", "person"), Sub("target", "target", "name"), Sub("viewpoint", "viewpoint", "text"), Sub("attitude", "attitude", "text")),
    ),
    FieldSpec(
        "support_strategy",
        "Support strategy (STP/SSP gold: first item)",
        "list",
        "Support strategy",
        (Sub("provider", "provider", "person"), Sub("target", "target", "names"), Sub("strategy_type", "strategy", "strategy"), Sub("strategy_content", "content", "longtext")),
        help="therapist rows",
    ),
    FieldSpec("body_posture", "Body posture", "list", "Visual cues", _PERSON_DESC),
    FieldSpec("facial_expressions", "Facial expressions", "list", "Visual cues", _PERSON_DESC),
    FieldSpec("self_directed_behavior", "Self-directed behaviour", "list", "Visual cues", _PERSON_DESC),
    FieldSpec(
        "interaction_behavior",
        "Interaction behaviour",
        "list",
        "Visual cues",
        (Sub("initiator", "initiator", "person"), Sub("target", "target", "names"), Sub("description", "description", "text")),
    ),
    FieldSpec(
        "background_dialogue",
        "Background talk",
        "list",
        "Background talk",
        (Sub("speaker", "speaker", "person"), Sub("target", "target", "names"), Sub("content", "content", "text")),
    ),
)
"""Every editable field, in the order the row page shows them."""

SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(f.section for f in FIELDS))


@dataclass(frozen=True)
class Choices:
    """The options of a segment's choice fields."""

    names: tuple[str, ...]
    """Participants, then ``Therapist``, then the group label."""
    patterns: tuple[str, ...]
    strategies: tuple[str, ...]
    utterance_types: tuple[str, ...]

    def for_kind(self, kind: str) -> tuple[str, ...]:
        return {
            "speaker": self.names,
            "person": self.names,
            "name": self.names,
            "names": self.names,
            "pattern": self.patterns,
            "strategy": self.strategies,
            "utterance": self.utterance_types,
        }.get(kind, ())

    def to_json(self) -> dict[str, list[str]]:
        return {k: list(self.for_kind(k)) for k in ("speaker", "person", "name", "names", "pattern", "strategy", "utterance")}


def choices(scenario: str, participants: list[str]) -> Choices:
    names = [p for p in participants if p not in labels.NON_CLIENT_SPEAKERS]
    names += [labels.THERAPIST, labels.group_label(scenario)]
    return Choices(
        names=tuple(dict.fromkeys(names)),
        patterns=labels.patterns(scenario),
        strategies=labels.strategies(scenario),
        utterance_types=labels.UTTERANCE_TYPES,
    )


def compact(value: Any) -> str:
    """A one-line rendering of a field value for the draft and conflict boxes (text, not HTML)."""
    if value is None:
        return "(empty)"
    if isinstance(value, str):
        return value if value.strip() else '""'
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        if not value:
            return "(none)"
        return " | ".join(compact(v) if not isinstance(v, dict) else _item(v) for v in value)
    if isinstance(value, dict):
        return _item(value)
    return str(value)


def _item(item: dict[str, Any]) -> str:
    parts = []
    for key, v in item.items():
        if v in (None, "", []):
            continue
        parts.append(f"{key}: {', '.join(map(str, v)) if isinstance(v, list) else v}")
    return "; ".join(parts) if parts else "(empty item)"
