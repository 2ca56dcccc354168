"""The draft answer contract and its validation (pure functions, no model calls).

The model answers one window of cues with::

    {"rows": [{"cues": [3, 4], "primary_speaker": "...", "target": ["..."], ...}, ...],
     "summary": "..."}

Each row names the cues it groups and fills the annotated fields of the release (SPEC section 1).
The tool, not the model, sets ``row_index``, ``start_time`` and ``end_time`` (from the cues), and
``dialogue_cleaned`` when the model leaves it out.

:func:`check_answer` validates an answer against the window and the scenario and returns the rows
it could keep, each with the fields that passed (names and labels in canonical spelling) and the
problems of the fields that did not. Rules:

- **Cues**: every cue of the window used exactly once, in order. A row whose cue list is not the
  next stretch of unused cues is rejected as a whole; cues no kept row covers are listed.
- **Labels** in the scenario's taxonomy (``rescue_bench.labels``): utterance types, relation
  patterns, strategies. Matching forgives case, spaces/hyphens and the known aliases of
  :func:`rescue_bench.parse.match_label`.
- **Names** resolvable to a participant, ``Therapist`` or the scenario's group label; a group
  label stands alone in a target list; nobody targets themselves.
- **Intensities** integers 0-10; **evidence rows** existing rows up to the current one.
- **Roles**: ``support_strategy`` and ``relation_cycle_state`` only on therapist rows;
  ``utterance_type`` only on client rows (the release has none on therapist rows).
- **Faithful cleaning**: ``dialogue_cleaned`` must be a cleaning of the row's cues' text (fillers,
  false starts and repeats removed, nothing added; measured by :mod:`rescue_bench.annotate.cleaning`);
  otherwise it is dropped and the row keeps the cues' text.
- **Speaker vs subtitles**: when the subtitles name one known speaker for all of a row's cues, the
  row's ``primary_speaker`` must be that speaker, and a row may not group cues of two known speakers.

Any problem makes the caller re-ask once with :func:`problem_lines`; after that, what is still
invalid is dropped field by field (or item by item) and kept on the row as ``draft_problems``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, TypeVar

from rescue_bench.annotate.cleaning import cleaning_check
from rescue_bench.annotate.manifest import ManifestCue
from rescue_bench.labels import GROUP_LABELS, PATTERNS, STRATEGIES, THERAPIST, UTTERANCE_TYPES
from rescue_bench.parse import extract_json, match_label

TOOL_FIELDS = ("row_index", "start_time", "end_time")
"""Row fields the tool sets; a model's values for them are ignored."""

INTENSITY = (0, 10)

THERAPIST_ONLY = ("support_strategy", "relation_cycle_state")
CLIENT_ONLY = ("utterance_type",)

ROW_FIELDS: dict[str, str] = {
    "primary_speaker": "who speaks: a participant, Therapist, or the group label when all clients speak together",
    "target": "list of addressees (participants, Therapist, or the group label alone)",
    "dialogue_cleaned": "what was said: the cues' words, fillers and false starts may be removed, nothing added",
    "utterance_type": "client rows only: one utterance type",
    "background_dialogue": "overlapping talk by others: list of {speaker, target: [...], content}",
    "tone_of_voice": "how it sounds (pace, volume, warmth, tension)",
    "body_posture": "list of {person, description}",
    "facial_expressions": "list of {person, description}",
    "self_directed_behavior": "list of {person, description} (touching face, fidgeting, looking down ...)",
    "interaction_behavior": "visible behaviour between people: list of {initiator, target: [...], description}",
    "internal_emotion": "list of {person, emotion_description, intensity 0-10}: what each person feels inside here",
    "viewpoints_attitudes": "list of {source, target (one name), viewpoint, attitude}: what source thinks of target",
    "support_strategy": "therapist rows only: list of {provider: Therapist, target: [...], strategy_type, strategy_content}",
    "relation_cycle_state": "therapist rows only: the relation pattern active as the therapist speaks, or \"\" when none is clear",
    "relation_pattern": "the relation pattern this row takes part in, or \"\"",
    "relation_pattern_reason": "one sentence: why that pattern",
    "relation_pattern_evidence_rows": "row numbers (this row or earlier) that show the pattern",
}
"""Every annotated row field the model fills, with the one-line meaning the prompt shows."""


class ProblemRecord(TypedDict):
    """A problem as a draft row keeps it (``draft_problems``): the field, what is wrong, the value answered."""

    field: str
    problem: str
    value: NotRequired[Any]


# The list items of a checked row, as the release row holds them (the keys marked NotRequired only
# when the answer gave them).


class PersonCueItem(TypedDict):
    person: str
    description: str


class TalkItem(TypedDict):
    speaker: str
    target: list[str]
    content: str


class InteractionItem(TypedDict):
    initiator: str
    target: list[str]
    description: str


class EmotionItem(TypedDict):
    person: str
    emotion_description: str
    intensity: NotRequired[int]


class ViewpointItem(TypedDict):
    source: str
    target: str
    viewpoint: str
    attitude: NotRequired[str]


class StrategyItem(TypedDict):
    provider: str
    target: list[str]
    strategy_type: str
    strategy_content: NotRequired[str]


Item = TypeVar("Item", PersonCueItem, TalkItem, InteractionItem, EmotionItem, ViewpointItem, StrategyItem)


@dataclass(frozen=True)
class DraftProblem:
    """One finding about a draft answer. ``row`` is the 1-based position of the row in the answer."""

    field: str
    message: str
    row: int | None = None
    value: Any = None

    def line(self) -> str:
        where = f"rows[{self.row - 1}]." if self.row is not None else ""
        return f"{where}{self.field}: {self.message}"

    def record(self) -> ProblemRecord:
        """The problem as kept on a row's ``draft_problems``."""
        out: ProblemRecord = {"field": self.field, "problem": self.message}
        if self.value is not None:
            out["value"] = _json_value(self.value)
        return out


def _json_value(value: Any) -> Any:
    """``value`` as JSON can hold it: a model's ``NaN`` / ``Infinity`` (Python's json reads them from
    the reply) is kept as its text, so the reviewer sees what was answered instead of ``null``."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


@dataclass
class CheckedRow:
    """A row the checker kept: its cues, the fields that passed, and the problems of the rest."""

    cues: list[int]
    fields: dict[str, Any]
    problems: list[DraftProblem] = field(default_factory=list)


@dataclass
class AnswerCheck:
    """What :func:`check_answer` found."""

    usable: bool
    """False when the answer has no JSON object with a ``rows`` list at all."""
    rows: list[CheckedRow] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    """Cues of the window that no kept row covers, in order."""
    problems: list[DraftProblem] = field(default_factory=list)
    """Every problem: structural ones (row is None, or a rejected row) and each kept row's."""
    summary: str | None = None

    @property
    def valid(self) -> bool:
        return self.usable and not self.problems


@dataclass(frozen=True)
class Context:
    """What validation needs to know about the segment and the window."""

    scenario: str
    participants: tuple[str, ...]
    cues: tuple[ManifestCue, ...]
    """The window's cues."""
    first_row: int
    """The row_index the window's first row will get (rows of earlier windows come before)."""

    @property
    def group(self) -> str:
        return GROUP_LABELS[self.scenario]

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.participants, THERAPIST, self.group)


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


class _RowChecker:
    """Validates one row's fields; collects problems with field paths."""

    def __init__(self, ctx: Context, position: int, row_index: int, subtitle_speaker: str | None,
                 cues: Sequence[ManifestCue] = ()):
        self.ctx = ctx
        self.position = position
        self.row_index = row_index
        self.subtitle_speaker = subtitle_speaker
        self.cues = tuple(cues)
        """The row's cues (their text is what ``dialogue_cleaned`` must be a cleaning of)."""
        self.problems: list[DraftProblem] = []

    def problem(self, path: str, message: str, value: Any = None) -> None:
        self.problems.append(DraftProblem(path, message, self.position, value))

    # -- values --------------------------------------------------------------------------------
    def name(self, path: str, value: Any, *, allow: Sequence[str] | None = None) -> str | None:
        allowed = tuple(allow) if allow is not None else self.ctx.names
        hit = match_label(value, allowed) if isinstance(value, str) else None
        if hit is None:
            self.problem(path, f"{_short(value)} is not one of {', '.join(allowed)}", value)
        return hit

    def names(
        self, path: str, value: Any, *, speaker: str | None = None, allow: Sequence[str] | None = None
    ) -> list[str] | None:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            self.problem(path, f"expected a list of names, got {_short(value)}", value)
            return None
        out: list[str] = []
        for i, item in enumerate(items):
            hit = self.name(f"{path}[{i}]", item, allow=allow)
            if hit is None:
                return None
            if hit not in out:
                out.append(hit)
        if self.ctx.group in out and len(out) > 1:
            self.problem(path, f"the group label {self.ctx.group} stands alone (got {_short(items)})", value)
            return None
        if speaker is not None and speaker in out:
            self.problem(path, f"{speaker} cannot address themselves", value)
            return None
        return out

    def text(self, path: str, value: Any) -> str | None:
        if not isinstance(value, str):
            self.problem(path, f"expected text, got {_short(value)}", value)
            return None
        return value.strip()

    def cleaned(self, value: Any) -> str | None:
        """``dialogue_cleaned`` when it is a cleaning of the row's cues' text (empty: left to the tool)."""
        text = self.text("dialogue_cleaned", value)
        if not text or not self.cues:
            return text
        check = cleaning_check(text, " ".join(c.text for c in self.cues if c.text))
        if not check.faithful:
            self.problem("dialogue_cleaned", check.message(), value)
            return None
        return text

    def label(self, path: str, value: Any, labels: Sequence[str], what: str, *, allow_empty: bool = False) -> str | None:
        if allow_empty and isinstance(value, str) and not value.strip():
            return ""
        hit = match_label(value, labels) if isinstance(value, str) else None
        if hit is None:
            self.problem(path, f"{_short(value)} is not {what} (one of {', '.join(labels)})", value)
        return hit

    def items(self, path: str, value: Any, check: Callable[[str, dict[str, Any]], Item | None]) -> list[Item] | None:
        """The items of a list field (``value``: the answer's JSON) that ``check`` keeps."""
        if isinstance(value, dict):
            value = [value]
        if not isinstance(value, list):
            self.problem(path, f"expected a list, got {_short(value)}", value)
            return None
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                self.problem(f"{path}[{i}]", f"expected an object, got {_short(item)}", item)
                continue
            kept = check(f"{path}[{i}]", item)
            if kept is not None:
                out.append(kept)
        return out

    def keys(self, path: str, item: dict[str, Any], allowed: Sequence[str]) -> None:
        for key in item:
            if key not in allowed:
                self.problem(f"{path}.{key}", f"unknown key (expected {', '.join(allowed)})", item[key])

    # -- list items: an item with a bad name or no content is dropped whole; a bad optional part alone
    def person_cue(self, path: str, item: dict[str, Any]) -> PersonCueItem | None:
        self.keys(path, item, ("person", "description"))
        person = self.name(f"{path}.person", item.get("person"))
        description = self.text(f"{path}.description", item.get("description"))
        if person is None or not description:
            if description == "":
                self.problem(f"{path}.description", "empty description")
            return None
        return {"person": person, "description": description}

    def talk(self, path: str, item: dict[str, Any]) -> TalkItem | None:
        self.keys(path, item, ("speaker", "target", "content"))
        speaker = self.name(f"{path}.speaker", item.get("speaker"))
        content = self.text(f"{path}.content", item.get("content"))
        if speaker is None or not content:
            return None
        out: TalkItem = {"speaker": speaker, "target": [], "content": content}
        if not _empty(item.get("target")):
            target = self.names(f"{path}.target", item.get("target"), speaker=speaker)
            if target is not None:
                out["target"] = target
        return out

    def interaction(self, path: str, item: dict[str, Any]) -> InteractionItem | None:
        self.keys(path, item, ("initiator", "target", "description"))
        initiator = self.name(f"{path}.initiator", item.get("initiator"))
        description = self.text(f"{path}.description", item.get("description"))
        if initiator is None or not description:
            return None
        out: InteractionItem = {"initiator": initiator, "target": [], "description": description}
        if not _empty(item.get("target")):
            target = self.names(f"{path}.target", item.get("target"), speaker=initiator)
            if target is not None:
                out["target"] = target
        return out

    def emotion(self, path: str, item: dict[str, Any]) -> EmotionItem | None:
        self.keys(path, item, ("person", "emotion_description", "intensity"))
        person = self.name(f"{path}.person", item.get("person"))
        description = self.text(f"{path}.emotion_description", item.get("emotion_description"))
        if person is None or not description:
            return None
        out: EmotionItem = {"person": person, "emotion_description": description}
        raw = item.get("intensity")
        if raw is not None:
            value = _int(raw)
            lo, hi = INTENSITY
            if value is None or not lo <= value <= hi:
                self.problem(f"{path}.intensity", f"{_short(raw)} is not an integer {lo}-{hi}", raw)
            else:
                out["intensity"] = value
        return out

    def viewpoint(self, path: str, item: dict[str, Any]) -> ViewpointItem | None:
        self.keys(path, item, ("source", "target", "viewpoint", "attitude"))
        source = self.name(f"{path}.source", item.get("source"))
        target = item.get("target")
        if isinstance(target, list) and len(target) == 1:
            target = target[0]
        target_name = self.name(f"{path}.target", target)
        viewpoint = self.text(f"{path}.viewpoint", item.get("viewpoint"))
        if source is None or target_name is None or not viewpoint:
            return None
        if source == target_name:
            self.problem(f"{path}.target", f"{source} holds a viewpoint about themselves", target)
            return None
        out: ViewpointItem = {"source": source, "target": target_name, "viewpoint": viewpoint}
        attitude = item.get("attitude")
        if not _empty(attitude):
            value = self.text(f"{path}.attitude", attitude)
            if value is not None:
                out["attitude"] = value
        return out

    def strategy(self, path: str, item: dict[str, Any]) -> StrategyItem | None:
        self.keys(path, item, ("provider", "target", "strategy_type", "strategy_content"))
        provider = item.get("provider", THERAPIST)
        if self.name(f"{path}.provider", provider, allow=(THERAPIST,)) is None:
            return None
        target = None
        if not _empty(item.get("target")):  # clients or the group label: the therapist never targets themselves
            target = self.names(f"{path}.target", item.get("target"), allow=(*self.ctx.participants, self.ctx.group))
        strategy = self.label(f"{path}.strategy_type", item.get("strategy_type"), tuple(STRATEGIES[self.ctx.scenario]),
                              f"a {self.ctx.scenario} strategy")
        if strategy is None:
            return None
        out: StrategyItem = {"provider": THERAPIST, "target": target or [], "strategy_type": strategy}
        content = item.get("strategy_content")
        if not _empty(content):
            value = self.text(f"{path}.strategy_content", content)
            if value is not None:
                out["strategy_content"] = value
        return out

    def evidence(self, path: str, value: Any) -> list[int] | None:
        if not isinstance(value, list):
            value = [value]
        out = []
        for i, item in enumerate(value):
            number = _int(item)
            if number is None or not 1 <= number <= self.row_index:
                self.problem(f"{path}[{i}]", f"{_short(item)} is not a row number from 1 to this row ({self.row_index})", item)
                continue
            if number not in out:
                out.append(number)
        return out

    # -- a whole row -----------------------------------------------------------------------------
    def check(self, raw: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in raw.items():
            if key in ("cues", *TOOL_FIELDS):
                continue
            if key not in ROW_FIELDS:
                self.problem(key, "unknown field (not a release row field)", value)
        speaker = None
        if "primary_speaker" in raw and not _empty(raw["primary_speaker"]):
            speaker = self.name("primary_speaker", raw["primary_speaker"])
            if speaker is not None and self.subtitle_speaker and speaker != self.subtitle_speaker:
                self.problem("primary_speaker", f"{speaker} disagrees with the subtitles, which give {self.subtitle_speaker} for these cues", raw["primary_speaker"])
                speaker = None
            if speaker is not None:
                out["primary_speaker"] = speaker
        else:
            self.problem("primary_speaker", "missing: every row needs its speaker")
        role_speaker = speaker or self.subtitle_speaker
        therapist = role_speaker == THERAPIST
        for key in ROW_FIELDS:
            if key == "primary_speaker" or key not in raw:
                continue
            value = raw[key]
            if key in THERAPIST_ONLY and not therapist:
                if not _empty(value):
                    self.problem(key, f"only therapist rows have {key} (this row's speaker is {role_speaker or 'unknown'})", value)
                continue
            if key in CLIENT_ONLY and therapist:
                if not _empty(value):
                    self.problem(key, f"therapist rows have no {key}", value)
                continue
            if value is None:
                continue
            kept = self._field(key, value, role_speaker)
            if kept is not None:
                out[key] = kept
        return out

    def _field(self, key: str, value: Any, speaker: str | None) -> Any:
        scenario = self.ctx.scenario
        if key == "target":
            return self.names(key, value, speaker=speaker) if not _empty(value) else []
        if key == "dialogue_cleaned":
            return self.cleaned(value)
        if key in ("tone_of_voice", "relation_pattern_reason"):
            return self.text(key, value)
        if key == "utterance_type":
            return self.label(key, value, UTTERANCE_TYPES, "an utterance type", allow_empty=True)
        if key in ("relation_cycle_state", "relation_pattern"):
            return self.label(key, value, tuple(PATTERNS[scenario]), f"a {scenario} relation pattern", allow_empty=True)
        if key == "relation_pattern_evidence_rows":
            return self.evidence(key, value)
        if key == "background_dialogue":
            return self.items(key, value, self.talk)
        if key in ("body_posture", "facial_expressions", "self_directed_behavior"):
            return self.items(key, value, self.person_cue)
        if key == "interaction_behavior":
            return self.items(key, value, self.interaction)
        if key == "internal_emotion":
            return self.items(key, value, self.emotion)
        if key == "viewpoints_attitudes":
            return self.items(key, value, self.viewpoint)
        if key == "support_strategy":
            return self.items(key, value, self.strategy)
        raise KeyError(key)


def subtitle_speaker(cues: Sequence[ManifestCue], ctx: Context) -> tuple[str | None, list[str]]:
    """The one known speaker the subtitles give for ``cues`` (or ``None``), and all known speakers."""
    known: list[str] = []
    for cue in cues:
        hit = match_label(cue.speaker, ctx.names, aliases={}) if cue.speaker else None
        if hit is not None and hit not in known:
            known.append(hit)
    return (known[0] if len(known) == 1 else None), known


def _cue_list(value: Any) -> list[int] | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        return None
    out = [_int(v) for v in value]
    return None if any(v is None for v in out) else out  # type: ignore[return-value]


def check_answer(raw: Any, ctx: Context) -> AnswerCheck:
    """Validate one answer (text or parsed JSON) for the window in ``ctx``; see the module doc."""
    payload = extract_json(raw, ("rows",))
    rows = payload.get("rows") if isinstance(payload, dict) else None
    if not isinstance(payload, dict) or not isinstance(rows, list):
        return AnswerCheck(False, problems=[DraftProblem("rows", 'no JSON object with a "rows" list in the answer')])
    check = AnswerCheck(True)
    summary = payload.get("summary")
    if isinstance(summary, str) and summary.strip():
        check.summary = summary.strip()
    expected = [c.cue for c in ctx.cues]
    by_number = {c.cue: c for c in ctx.cues}
    used = 0  # cues expected[:used] are covered or skipped
    for position, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            check.problems.append(DraftProblem("(row)", f"expected an object, got {_short(row)}", position))
            continue
        cues = _cue_list(row.get("cues"))
        if cues is None:
            check.problems.append(DraftProblem("cues", f"expected a non-empty list of cue numbers, got {_short(row.get('cues'))}", position, row.get("cues")))
            continue
        start = expected.index(cues[0], used) if cues[0] in expected[used:] else None
        if start is None or expected[start : start + len(cues)] != cues:
            nxt = expected[used] if used < len(expected) else None
            want = f"the next unused cues in order, from cue {nxt}" if nxt is not None else "no more cues (all are used)"
            check.problems.append(DraftProblem("cues", f"{_short(cues)} is not {want}", position, cues))
            continue
        if start > used:
            check.missing += expected[used:start]
        used = start + len(cues)
        row_cues = [by_number[n] for n in cues]
        speaker, known = subtitle_speaker(row_cues, ctx)
        row_index = ctx.first_row + len(check.rows)
        checker = _RowChecker(ctx, position, row_index, speaker, row_cues)
        if len(known) > 1:
            checker.problem("cues", f"groups cues of different speakers ({', '.join(known)}); a row has one speaker", cues)
        fields = checker.check(row)
        check.rows.append(CheckedRow(cues, fields, checker.problems))
        check.problems += checker.problems
    check.missing += expected[used:]
    if check.missing:
        check.problems.append(DraftProblem("cues", f"cue(s) {', '.join(map(str, check.missing))} are in no row"))
    return check


def problem_lines(problems: Sequence[DraftProblem], limit: int = 40) -> list[str]:
    """The problems as lines for the re-ask message (at most ``limit``, then a count)."""
    lines = [p.line() for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more")
    return lines
