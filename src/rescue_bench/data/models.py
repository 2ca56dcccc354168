"""Pydantic models of the RESCUE-Bench release format (SPEC section 1).

Every field may be missing, ``null`` or empty in the release; the models accept all three and the
accessors (``Row.speaker``, ``Row.targets`` ...) treat them the same. Unknown keys are kept
(``extra="allow"``) and ``Clip.to_json()`` writes back only what was read, so a clip loaded and
written back loses nothing: ``null`` stays ``null``, a missing key stays missing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt

from rescue_bench.labels import GROUP_LABELS, NON_CLIENT_SPEAKERS, THERAPIST, is_client

Number = StrictInt | StrictFloat


class _Item(BaseModel):
    """Base of every record: unknown keys kept, no silent type coercion, no NaN or infinities.

    ``allow_inf_nan=False`` makes a number that is not finite an error wherever a record is built,
    from a JSON file (where :func:`rescue_bench.fileio.loads` already refuses ``NaN``) or from
    Python values (a web form, a draft): such a number is not JSON and breaks every sum over it.
    """

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)


def _text(value: str | None) -> str:
    return (value or "").strip()


def _names(values: list[str] | None) -> list[str]:
    return [v.strip() for v in values or [] if v and v.strip()]


class BackgroundTalk(_Item):
    """Overlapping talk during a row."""

    speaker: str | None = None
    target: list[str] | None = None
    content: str | None = None


class PersonCue(_Item):
    """A visual cue of one person (posture, face, self-directed behaviour)."""

    person: str | None = None
    description: str | None = None


class InteractionCue(_Item):
    """A visual cue between people."""

    initiator: str | None = None
    target: list[str] | None = None
    description: str | None = None


class Emotion(_Item):
    """One person's internal emotion: the ER gold."""

    person: str | None = None
    emotion_description: str | None = None
    intensity: Number | None = None


class Viewpoint(_Item):
    """What ``source`` thinks of ``target``: the VP gold."""

    source: str | None = None
    target: str | None = None
    viewpoint: str | None = None
    attitude: str | None = None


class Strategy(_Item):
    """A therapist's support move: STP/SSP gold (first item only)."""

    provider: str | None = None
    target: list[str] | None = None
    strategy_type: str | None = None
    strategy_content: str | None = None


class Row(_Item):
    """One annotated interaction segment of a clip."""

    row_index: StrictInt | None = None
    start_time: Number | None = None
    end_time: Number | None = None
    primary_speaker: str | None = None
    target: list[str] | None = None
    dialogue_cleaned: str | None = None
    utterance_type: str | None = None
    background_dialogue: list[BackgroundTalk] | None = None
    tone_of_voice: str | None = None
    body_posture: list[PersonCue] | None = None
    facial_expressions: list[PersonCue] | None = None
    self_directed_behavior: list[PersonCue] | None = None
    interaction_behavior: list[InteractionCue] | None = None
    internal_emotion: list[Emotion] | None = None
    viewpoints_attitudes: list[Viewpoint] | None = None
    support_strategy: list[Strategy] | None = None
    relation_cycle_state: str | None = None
    relation_pattern: str | None = None
    relation_pattern_reason: str | None = None
    relation_pattern_evidence_rows: list[StrictInt] | None = None

    # -- accessors: missing, null and empty are one and the same ---------------------------------
    @property
    def speaker(self) -> str:
        return _text(self.primary_speaker)

    @property
    def text(self) -> str:
        return _text(self.dialogue_cleaned)

    @property
    def targets(self) -> list[str]:
        return _names(self.target)

    @property
    def is_therapist(self) -> bool:
        return self.speaker == THERAPIST

    @property
    def is_client(self) -> bool:
        return is_client(self.speaker)

    @property
    def cycle_state(self) -> str:
        return _text(self.relation_cycle_state)

    @property
    def pattern(self) -> str:
        return _text(self.relation_pattern)

    @property
    def duration(self) -> float | None:
        if self.start_time is None or self.end_time is None:
            return None
        return float(self.end_time) - float(self.start_time)


class Clip(_Item):
    """One therapy clip: an ordered list of rows."""

    sample_id: str
    scenario: Literal["couple", "family"]
    participants: list[str] | None = None
    source_file: str | None = None
    rows: list[Row]

    @property
    def group_label(self) -> str:
        return GROUP_LABELS[self.scenario]

    @property
    def clients(self) -> list[str]:
        """The clip's clients: ``participants`` as given, else inferred from speakers and targets."""
        given = [p for p in _names(self.participants) if p not in NON_CLIENT_SPEAKERS]
        if given:
            return list(dict.fromkeys(given))
        return infer_participants(self.rows)

    def to_json(self) -> dict[str, Any]:
        """The clip as a release-format dict holding exactly the keys that were read."""
        return self.model_dump(mode="json", exclude_unset=True)


def infer_participants(rows: list[Row]) -> list[str]:
    """Clients named as speakers or targets anywhere in the rows, in order of first mention."""
    seen: dict[str, None] = {}
    for row in rows:
        names = [row.speaker, *row.targets]
        for item in row.support_strategy or []:
            names.extend(_names(item.target))
        for name in names:
            if is_client(name):
                seen.setdefault(name.strip(), None)
    return list(seen)
