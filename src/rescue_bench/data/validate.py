"""Validation of release data: one set of rules for every layer that reads or writes clips.

Hard errors that stop a clip from loading (not JSON, ``NaN`` or another number JSON does not have,
wrong type, missing required field, a row without a speaker, duplicate ``sample_id``, unreadable
file) come from :mod:`rescue_bench.data.load`. This module adds the rules about the content, each a
:class:`~rescue_bench.data.load.Problem` naming file, line, clip, row and field:

- **errors** (``severity="error"``, ``rescue data validate`` exits 2; ``rescue eval`` and ``rescue
  tasks build`` refuse the data): an ``end_time`` before its ``start_time``; a ``row_index`` that is
  not the row's 1-based position, or repeats an earlier one; a value outside its closed set or range
  (a relation pattern, strategy or utterance type that is not a label of the scenario, an intensity
  that is not a whole number 0-10, a strategy ``provider`` that is not ``Therapist``); a person or
  target that is not one of the clip's clients, ``Therapist`` or the clip's group label (speakers,
  targets, emotion persons, viewpoint sources and targets, cue persons, strategy targets).
- **quirks** the published release has: an evidence row outside the clip
  (``relation_pattern_evidence_rows`` not in 1..rows; the release has ``0``), a group target
  (``Couple``/``Family``) beside names, and leftover ``draft_problems`` from ``rescue annotate
  draft``. They are warnings by default and errors with ``strict=True`` (``rescue data validate
  --strict``): data our own tools write (drafts, review exports) must pass strict.
- **warnings** whatever the mode: mojibake, an empty target, a participant that is not a client.

The checks of one value (:func:`label_problem`, :func:`intensity_problem`, :func:`name_problem`,
:func:`provider_problem`) are public: the task builders use them on the gold they read, so an
instance is left out for exactly the reasons ``rescue data validate`` gives.

The public API other layers call (the drafting checks, the review app's editor):

- :func:`clip_findings` on a loaded :class:`~rescue_bench.data.models.Clip`;
- :func:`clip_problems` on a raw clip dict (the loader's hard rules, then :func:`clip_findings`);
- :func:`row_problems` on one raw row dict, e.g. from a web form (the release ``Row`` model, then
  the row rules; strict by default, since it checks what we are about to write);
- :func:`validate_paths` on files, as ``rescue data validate`` does.

Each returns a list of problems; callers split them by ``Problem.severity``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from rescue_bench.data.load import DataError, LoadResult, Problem, input_paths, parse_clip, read_paths, validation_problems
from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import (
    GROUP_LABELS,
    NON_CLIENT_SPEAKERS,
    PATTERNS,
    STRATEGIES,
    THERAPIST,
    UTTERANCE_TYPES,
)

Severity = Literal["error", "warning"]

INTENSITY_RANGE = (0, 10)
"""Inclusive range of ``internal_emotion[].intensity`` (SPEC section 1)."""


def has_mojibake(text: str) -> bool:
    """True when ``ftfy`` would repair an encoding mix-up in ``text`` (e.g. ``â€™`` for ``’``).

    ``ftfy.fix_encoding`` only undoes mojibake, so curly quotes, HTML entities and other legitimate
    characters are never reported.
    """
    if text.isascii():  # mojibake is made of non-ASCII characters (ftfy returns ASCII unchanged)
        return False
    import ftfy

    return ftfy.fix_encoding(text) != text


def _mojibake_example(text: str) -> str:
    """A short excerpt of the first broken stretch in ``text`` and its repair, for the message."""
    import ftfy

    fixed = ftfy.fix_encoding(text)
    start = 0
    while start < min(len(text), len(fixed)) and text[start] == fixed[start]:
        start += 1
    lo = max(0, start - 8)
    bad = text[lo : start + 12]
    good = fixed[lo : start + 10]
    return f"{bad!r} -> {good!r}"


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside a JSON-like value, with its field path (``a[0].b``)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))


# ------------------------------------------------------------------------------------------------
# the checks of one value: closed sets, ranges and references (used by the row rules and by the
# task builders on the gold they read)
# ------------------------------------------------------------------------------------------------

LABEL_SETS: dict[str, Callable[[str], Collection[str]]] = {
    "relation_cycle_state": lambda scenario: PATTERNS[scenario],
    "relation_pattern": lambda scenario: PATTERNS[scenario],
    "strategy_type": lambda scenario: STRATEGIES[scenario],
    "utterance_type": lambda scenario: UTTERANCE_TYPES,
}
"""The closed label set of each label field of a row, for a scenario (SPEC section 2)."""
_LABEL_NAMES = {
    "relation_cycle_state": "relation pattern",
    "relation_pattern": "relation pattern",
    "strategy_type": "strategy",
    "utterance_type": "utterance type",
}


def label_problem(value: str | None, field: str, scenario: str) -> str | None:
    """Why ``value`` of the label field ``field`` (a key of :data:`LABEL_SETS`) is not a label of
    ``scenario``, or ``None`` when it is one or is empty (an empty label means none was given)."""
    text = (value or "").strip()
    if not text or text in LABEL_SETS[field](scenario):
        return None
    kind = _LABEL_NAMES[field] if field == "utterance_type" else f"{scenario} {_LABEL_NAMES[field]}"
    article = "an" if kind[0] in "aeiou" else "a"
    return f"{text!r} is not {article} {kind} (one of {', '.join(LABEL_SETS[field](scenario))})"


def intensity_problem(value: Any) -> str | None:
    """Why an emotion intensity is not a whole number 0-10 (``7.0`` is one, ``6.5`` is not), or
    ``None`` when it is one or is missing."""
    lo, hi = INTENSITY_RANGE
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"intensity {value!r} is not a number"
    if isinstance(value, float) and not value.is_integer():
        return f"intensity {value!r} is not a whole number {lo}-{hi}"
    if not lo <= value <= hi:
        return f"intensity {value!r} is outside {lo}-{hi}"
    return None


def name_problem(name: str | None, clients: Collection[str], scenario: str) -> str | None:
    """Why ``name`` (a speaker, target or person) is not one of the clip's ``clients``,
    ``Therapist`` or the scenario's group label, or ``None`` when it is one or is empty."""
    text = (name or "").strip()
    group = GROUP_LABELS[scenario]
    if not text or text in clients or text in (THERAPIST, group):
        return None
    if text in GROUP_LABELS.values():
        return f"{text!r} names the other scenario's group in a {scenario} clip"
    shown = ", ".join([*clients, THERAPIST, group])
    return f"{text!r} is not one of the clip's participants ({shown})"


def provider_problem(value: str | None) -> str | None:
    """Why a support strategy's ``provider`` is not the therapist, or ``None`` (empty is allowed)."""
    text = (value or "").strip()
    if not text or text == THERAPIST:
        return None
    return f"provider {text!r} is not {THERAPIST!r} (a support strategy is the therapist's)"


def _row_names(row: Row) -> Iterator[tuple[str, str | None]]:
    """Every (field path, name) of a row that names a person: speaker, targets, and the persons of
    every list field."""
    yield "primary_speaker", row.primary_speaker
    for i, name in enumerate(row.target or []):
        yield f"target[{i}]", name
    for i, strategy in enumerate(row.support_strategy or []):
        for j, name in enumerate(strategy.target or []):
            yield f"support_strategy[{i}].target[{j}]", name
    for i, emotion in enumerate(row.internal_emotion or []):
        yield f"internal_emotion[{i}].person", emotion.person
    for i, view in enumerate(row.viewpoints_attitudes or []):
        yield f"viewpoints_attitudes[{i}].source", view.source
        yield f"viewpoints_attitudes[{i}].target", view.target
    for key in ("body_posture", "facial_expressions", "self_directed_behavior"):
        for i, cue in enumerate(getattr(row, key) or []):
            yield f"{key}[{i}].person", cue.person
    for i, act in enumerate(row.interaction_behavior or []):
        yield f"interaction_behavior[{i}].initiator", act.initiator
        for j, name in enumerate(act.target or []):
            yield f"interaction_behavior[{i}].target[{j}]", name
    for i, talk in enumerate(row.background_dialogue or []):
        yield f"background_dialogue[{i}].speaker", talk.speaker
        for j, name in enumerate(talk.target or []):
            yield f"background_dialogue[{i}].target[{j}]", name


def draft_problems_of(row: Row) -> list[Any]:
    """The ``draft_problems`` left on a row by ``rescue annotate draft`` (empty when none)."""
    value = (row.model_extra or {}).get("draft_problems")
    if not value:
        return []
    return list(value) if isinstance(value, list) else [value]


def _problem_fields(items: list[Any]) -> str:
    fields = [str(p.get("field")) for p in items if isinstance(p, dict) and p.get("field")]
    return ", ".join(dict.fromkeys(fields))


def _row_rules(
    row: Row,
    position: int,
    *,
    scenario: str,
    names: Sequence[str],
    n_rows: int | None,
    strict: bool,
    file: str,
    line: int | None,
    sample_id: str | None,
    earlier: Mapping[int, int] | None = None,
) -> list[Problem]:
    """Every content rule of one row. ``names``: the clip's clients; ``earlier``: row_index ->
    position of the rows before it (to name a repeat)."""
    out: list[Problem] = []
    row_index = row.row_index if row.row_index is not None else position
    quirk: Severity = "error" if strict else "warning"

    def add(fld: str, message: str, severity: Severity = "warning") -> None:
        out.append(Problem(file, message, line, sample_id, row_index, fld, severity=severity))

    group = GROUP_LABELS[scenario]

    if not row.speaker:
        add("primary_speaker", "row has no primary_speaker (every row needs one)", "error")
    if row.row_index is not None and row.row_index != position:
        first = (earlier or {}).get(row.row_index)
        repeat = f"; it repeats the row_index of position {first}" if first is not None else ""
        add("row_index", f"row_index {row.row_index} at position {position} (expected {position}){repeat}", "error")
    if row.start_time is not None and row.end_time is not None and row.end_time < row.start_time:
        add("end_time", f"end_time {row.end_time} is before start_time {row.start_time}", "error")

    for name in ("relation_cycle_state", "relation_pattern", "utterance_type"):
        why = label_problem(getattr(row, name), name, scenario)
        if why:
            add(name, why, "error")
    for i, item in enumerate(row.support_strategy or []):
        why = label_problem(item.strategy_type, "strategy_type", scenario)
        if why:
            add(f"support_strategy[{i}].strategy_type", why, "error")
        why = provider_problem(item.provider)
        if why:
            add(f"support_strategy[{i}].provider", why, "error")
    for i, emo in enumerate(row.internal_emotion or []):
        why = intensity_problem(emo.intensity)
        if why:
            add(f"internal_emotion[{i}].intensity", why, "error")
    for fld, person in _row_names(row):
        why = name_problem(person, names, scenario)
        if why:
            add(fld, why, "error")

    targets = row.targets
    if not targets:
        add("target", "empty target")
    if len(targets) > 1 and group in targets:
        add("target", f"group target {group!r} should stand alone (got {targets})", quirk)

    bad_evidence = [
        n for n in row.relation_pattern_evidence_rows or [] if n < 1 or (n_rows is not None and n > n_rows)
    ]
    if bad_evidence:
        span = f"1-{n_rows}" if n_rows is not None else "1 or more"
        add("relation_pattern_evidence_rows", f"evidence rows {bad_evidence} are outside the clip's rows ({span})", quirk)

    left = draft_problems_of(row)
    if left:
        fields = _problem_fields(left)
        add("draft_problems", f"{len(left)} draft problems left" + (f" ({fields})" if fields else "")
            + ": review them, then delete the key", quirk)

    for fld, text in _strings(row.model_dump(mode="json", exclude_unset=True), ""):
        if has_mojibake(text):
            add(fld, f"possible mojibake {_mojibake_example(text)} (repair with --repair-mojibake)")
    return out


def row_findings(
    clip: Clip, position: int, row: Row, file: str, line: int | None, *, strict: bool = False,
    earlier: Mapping[int, int] | None = None,
) -> list[Problem]:
    """The findings of one row of ``clip`` (``position`` is its 1-based place in the clip)."""
    return _row_rules(
        row, position, scenario=clip.scenario, names=clip.clients, n_rows=len(clip.rows), strict=strict,
        file=file, line=line, sample_id=clip.sample_id, earlier=earlier,
    )


def clip_findings(clip: Clip, file: str, line: int | None = None, *, strict: bool = False) -> list[Problem]:
    """Every content finding of one loaded clip: its participants, then each row in order.

    Errors (``severity="error"``): reversed times, a ``row_index`` off its position or repeated, a
    row without a speaker, a label, intensity or provider outside its closed set or range, a name
    that is not the clip's. Quirks (evidence rows outside the clip, a group target beside names,
    leftover ``draft_problems``) are warnings, or errors when ``strict``. The rest are warnings. ``file`` and ``line`` are only used to name the place.
    """
    out: list[Problem] = []
    for i, name in enumerate(clip.participants or []):
        if name and name.strip() in NON_CLIENT_SPEAKERS:
            kind = "the therapist" if name.strip() == THERAPIST else "a group label"
            out.append(
                Problem(file, f"participant {name!r} is {kind}, not a client", line, clip.sample_id,
                        None, f"participants[{i}]", severity="warning")
            )
    if not clip.rows:
        out.append(Problem(file, "clip has no rows", line, clip.sample_id, None, "rows", severity="warning"))
    for fld in ("sample_id", "source_file"):
        value = getattr(clip, fld)
        if isinstance(value, str) and has_mojibake(value):
            out.append(Problem(file, f"possible mojibake {_mojibake_example(value)}", line, clip.sample_id,
                               None, fld, severity="warning"))
    earlier: dict[int, int] = {}
    for position, row in enumerate(clip.rows, 1):
        out.extend(row_findings(clip, position, row, file, line, strict=strict, earlier=earlier))
        if row.row_index is not None:
            earlier.setdefault(row.row_index, position)
    return out


def clip_problems(
    raw: Any, *, file: str = "<clip>", line: int | None = None, strict: bool = True
) -> list[Problem]:
    """Every problem of a raw clip dict (e.g. a draft about to be written): the loader's hard
    errors (types, missing fields, NaN, rows without a speaker) when it does not load, else
    :func:`clip_findings`. Strict by default: it is meant for data we write."""
    clip, problems = parse_clip(raw, file, line)
    if clip is None:
        return problems
    return clip_findings(clip, file, line, strict=strict)


def row_problems(
    row: Any,
    *,
    position: int,
    participants: Sequence[str],
    scenario: str,
    n_rows: int | None = None,
    strict: bool = True,
    file: str = "<row>",
    line: int | None = None,
    sample_id: str | None = None,
) -> list[Problem]:
    """Every problem of one raw row dict, e.g. a row edited in a web form, before it is saved.

    The row is validated with the release :class:`~rescue_bench.data.models.Row` model (strict types,
    no NaN: each failing field is an error), then with the row rules of :func:`clip_findings`.
    ``position`` is the row's 1-based place in its clip, ``participants`` the clip's clients (one
    row cannot infer them: an empty list makes every client name unknown),
    ``scenario`` ``"couple"`` or ``"family"``, ``n_rows`` the clip's row count (evidence rows above it
    are out of range; ``None`` checks only the lower bound). A repeated ``row_index`` cannot be seen
    from one row: a repeat is always off its position, which is an error here too. Strict by default.
    """
    if scenario not in GROUP_LABELS:
        raise ValueError(f"unknown scenario {scenario!r}; expected one of {sorted(GROUP_LABELS)}")
    if not isinstance(row, Mapping):
        return [Problem(file, f"expected a row object, got {type(row).__name__}", line, sample_id, position, "(row)")]
    try:
        parsed = Row.model_validate(dict(row))
    except ValidationError as exc:
        rows: list[Any] = [{}] * (position - 1) + [dict(row)]
        return validation_problems(exc, {"rows": rows}, file, line, sample_id, prefix=("rows", position - 1))
    names = [n.strip() for n in participants if n and n.strip() and n.strip() not in NON_CLIENT_SPEAKERS]
    return _row_rules(
        parsed, position, scenario=scenario, names=names, n_rows=n_rows, strict=strict,
        file=file, line=line, sample_id=sample_id,
    )


def validate_paths(
    paths: Iterable[str | Path], *, repair_mojibake: bool = False, strict: bool = False
) -> LoadResult:
    """Load ``paths`` and return every hard error and finding, in input order (``strict``: the
    release's quirks are errors, see :func:`clip_findings`).

    The clips that loaded are in the result too, so a caller can validate and use the data in one pass.
    """
    result = read_paths(input_paths(paths), repair_mojibake=repair_mojibake)
    for clip, (file, line) in zip(result.clips, result.locations):
        result.problems.extend(clip_findings(clip, file, line, strict=strict))
    return result


def draft_problem_counts(clips: Iterable[Clip]) -> tuple[int, int]:
    """(leftover ``draft_problems`` entries, rows holding them) over ``clips``."""
    entries = rows = 0
    for clip in clips:
        for row in clip.rows:
            n = len(draft_problems_of(row))
            entries += n
            rows += bool(n)
    return entries, rows


def count_rows(clips: Iterable[Clip]) -> int:
    """Total number of rows in ``clips``."""
    return sum(len(c.rows) for c in clips)


class ContentError(DataError):
    """Clips that load but break a content rule (:func:`load_checked`): a label outside its closed
    set, an intensity off 0-10, an unknown name ... (``problems`` names each)."""


def load_checked(
    paths: str | Path | Iterable[str | Path] | None = None, *, repair_mojibake: bool = False, lenient: bool = False
) -> LoadResult:
    """Load clips for a command that evaluates or builds instances (``rescue eval``, ``rescue tasks``).

    Hard errors (what stops a clip from loading) always raise :class:`~rescue_bench.data.load.DataError`.
    The content errors of :func:`clip_findings` (a label outside its closed set, an intensity off
    0-10, an unknown name, reversed times ...) raise it too, each naming file, line, clip, row and
    field, unless ``lenient``: then they are the result's problems (warnings stay out), and the task
    builders leave out the instances whose gold is invalid, naming each
    (:func:`rescue_bench.tasks.build_checked`). ``None``: the bundled demo.
    """
    result = read_paths(input_paths(paths), repair_mojibake=repair_mojibake)
    if result.errors:
        raise DataError(result.errors)
    content = [
        p for clip, (file, line) in zip(result.clips, result.locations)
        for p in clip_findings(clip, file, line) if p.severity == "error"
    ]
    if content and not lenient:
        raise ContentError(content)
    result.problems = content
    return result
