"""The row editor's form: every row field of SPEC section 1, how it is edited, and its choices.

Choices never copy a label list: relation patterns, strategies and utterance types come from
:mod:`rescue_bench.labels` for the segment's scenario; names from the segment's participants plus
``Therapist`` and the scenario's group label. A value outside the choices (the real release has some)
stays selectable and is marked, so opening and saving a row never changes it silently.
"""

from __future__ import annotations

import re
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
    role: str = ""
    """``therapist`` or ``client`` when SPEC section 1 scopes the field to rows of that speaker role
    (the form hides it on other rows unless it holds a value); empty for every row."""


_PERSON_DESC = (Sub("person", "person", "person"), Sub("description", "description", "text"))

FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("primary_speaker", "Speaker", "speaker", "Utterance"),
    FieldSpec("target", "Target", "names", "Utterance", help="a group target stands alone"),
    FieldSpec("start_time", "Start (s)", "number", "Utterance"),
    FieldSpec("end_time", "End (s)", "number", "Utterance"),
    FieldSpec("row_index", "Row index", "int", "Utterance"),
    FieldSpec("dialogue_cleaned", "Dialogue", "longtext", "Utterance"),
    FieldSpec("utterance_type", "Utterance type", "utterance", "Utterance", help="client rows", role="client"),
    FieldSpec("tone_of_voice", "Tone of voice", "text", "Utterance"),
    FieldSpec(
        "relation_cycle_state", "Relation cycle state (RPP gold)", "pattern", "Relation", help="therapist rows; — = none seen", role="therapist"
    ),
    FieldSpec("relation_pattern", "Relation pattern", "pattern", "Relation", help="client rows", role="client"),
    FieldSpec("relation_pattern_reason", "Pattern reason", "longtext", "Relation", help="client rows", role="client"),
    FieldSpec("relation_pattern_evidence_rows", "Evidence rows", "ints", "Relation", help="client rows; row numbers, e.g. 3, 4, 7", role="client"),
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
        role="therapist",
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
    definitions: dict[str, dict[str, str]] = field(default_factory=dict)
    """kind (``pattern``, ``strategy``) -> label -> its definition in :mod:`rescue_bench.labels`."""

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

    def option(self, kind: str, value: str) -> Option:
        """How a choice is shown: its hotkey, its readable name, and for labels its definition and boundary rules."""
        return Option(value, readable(value) if kind in LABEL_KINDS else value, *self._hint(kind, value), key=self.key(kind, value))

    def key(self, kind: str, value: str) -> str:
        """The key that picks ``value`` in a focused select of ``kind``: a label's fixed letter
        (:data:`HOTKEYS`), ``T`` for the therapist, ``G`` for the group, a participant's place 1-9;
        empty when it has none (a tenth participant, a value outside the choices)."""
        if kind in LABEL_KINDS:
            return HOTKEYS[kind].get(value, "")
        if value == labels.THERAPIST:
            return "T"
        if value in labels.GROUP_LABELS.values():
            return "G"
        clients = [n for n in self.names if n not in labels.NON_CLIENT_SPEAKERS]
        place = clients.index(value) + 1 if value in clients else 0
        return str(place) if 1 <= place <= 9 else ""

    def _hint(self, kind: str, value: str) -> tuple[str, tuple[str, ...]]:
        definition = self.definitions.get(kind, {}).get(value, "")
        rules = tuple(r for r in labels.BOUNDARY_RULES if re.search(rf"\b{re.escape(value)}\b", r)) if definition else ()
        return definition, rules

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
        definitions={"pattern": labels.PATTERNS[scenario], "strategy": labels.STRATEGIES[scenario], "utterance": labels.UTTERANCE_TYPE_DEFINITIONS},
    )


LABEL_KINDS = frozenset({"pattern", "strategy", "utterance"})
"""Choice kinds whose values are label keys (shown by a readable name); the others are names."""

HOTKEYS: dict[str, dict[str, str]] = {
    "pattern": {
        "pursue_withdraw": "P",
        "attack_attack": "A",
        "withdraw_withdraw": "W",
        "repair_softening": "R",
        "constructive_alignment": "C",
        "mixed_transition": "M",
        "escalation_conflict": "E",
        "mutual_disengagement": "D",
        "cross_generational_coalition": "G",
        "boundary_hierarchy_strain": "B",
        "cooperative_family_alliance": "F",
    },
    "strategy": {
        "track": "T",
        "reframe": "F",
        "evoke": "E",
        "enact": "N",
        "join": "J",
        "detach": "D",
        "repair": "R",
        "counterbalance": "C",
        "safeguard": "S",
        "goal_align": "G",
        "boundary": "B",
    },
    "utterance": {
        "accusation": "A",
        "defense": "D",
        "disclosure": "S",
        "request": "Q",
        "recollection": "C",
        "reflection": "F",
        "repair": "R",
        "withdrawal": "W",
        "validation": "V",
        "other": "O",
    },
}
"""The letter that picks each label in its focused select, the same in every scenario (a pattern
both scenarios have keeps its letter; a repair is R in every label set). Digits pick names."""


@dataclass(frozen=True)
class Option:
    """One choice of a select as the form shows it (the value stays the exact label key)."""

    value: str
    text: str
    definition: str = ""
    rules: tuple[str, ...] = ()
    key: str = ""
    """The key that picks it in a focused select (see :meth:`Choices.key`)."""


def readable(key: str) -> str:
    """A label key as people read it: ``pursue_withdraw`` -> ``Pursue withdraw`` (the saved value stays the key)."""
    words = key.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


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
