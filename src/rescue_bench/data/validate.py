"""Validation of release data: one set of rules for every layer that reads or writes clips.

Hard errors that stop a clip from loading (not JSON, ``NaN`` or another number JSON does not have,
wrong type, missing required field, a row without a speaker, duplicate ``sample_id``, unreadable
file) come from :mod:`rescue_bench.data.load`. This module adds the rules about the content, each a
:class:`~rescue_bench.data.load.Problem` naming file, line, clip, row and field:

- **errors** (``severity="error"``, ``rescue data validate`` exits 2): an ``end_time`` before its
  ``start_time``; a ``row_index`` that is not the row's 1-based position, or repeats an earlier one.
- **quirks** the published release tolerates: an evidence row outside the clip
  (``relation_pattern_evidence_rows`` not in 1..rows; the release has ``0``), a group target
  (``Couple``/``Family``) beside names, an unknown name (a ``primary_speaker`` or ``target`` that is
  not a participant, ``Therapist`` or the clip's group label; the other scenario's group counts as
  unknown), and leftover ``draft_problems`` from ``rescue annotate draft``. They are warnings by
  default and errors with ``strict=True`` (``rescue data validate --strict``): data our own tools
  write (drafts, review exports) must pass strict.
- **warnings** whatever the mode: mojibake, labels outside the closed sets (the task builders skip
  them), intensities outside 0-10, an empty target, a participant that is not a client.

The public API other layers call (the drafting checks, the review app's editor):

- :func:`clip_findings` on a loaded :class:`~rescue_bench.data.models.Clip`;
- :func:`clip_problems` on a raw clip dict (the loader's hard rules, then :func:`clip_findings`);
- :func:`row_problems` on one raw row dict, e.g. from a web form (the release ``Row`` model, then
  the row rules; strict by default, since it checks what we are about to write);
- :func:`validate_paths` on files, as ``rescue data validate`` does.

Each returns a list of problems; callers split them by ``Problem.severity``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from rescue_bench.data.load import LoadResult, Problem, parse_clip, read_paths, validation_problems
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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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

    pattern_set = PATTERNS[scenario]
    strategy_set = STRATEGIES[scenario]
    group = GROUP_LABELS[scenario]
    other_group = next(g for s, g in GROUP_LABELS.items() if s != scenario)
    known = {*names, THERAPIST, group}

    if not row.speaker:
        add("primary_speaker", "row has no primary_speaker (every row needs one)", "error")
    if row.row_index is not None and row.row_index != position:
        first = (earlier or {}).get(row.row_index)
        repeat = f"; it repeats the row_index of position {first}" if first is not None else ""
        add("row_index", f"row_index {row.row_index} at position {position} (expected {position}){repeat}", "error")
    if row.start_time is not None and row.end_time is not None and row.end_time < row.start_time:
        add("end_time", f"end_time {row.end_time} is before start_time {row.start_time}", "error")

    for name in ("relation_cycle_state", "relation_pattern"):
        value = (getattr(row, name) or "").strip()
        if value and value not in pattern_set:
            add(name, f"{value!r} is not a {scenario} relation pattern")
    for i, item in enumerate(row.support_strategy or []):
        value = (item.strategy_type or "").strip()
        if value and value not in strategy_set:
            add(f"support_strategy[{i}].strategy_type", f"{value!r} is not a {scenario} strategy")
    utype = (row.utterance_type or "").strip()
    if utype and utype not in UTTERANCE_TYPES:
        add("utterance_type", f"{utype!r} is not an utterance type")

    lo, hi = INTENSITY_RANGE
    for i, emo in enumerate(row.internal_emotion or []):
        value = emo.intensity
        if value is None:
            continue
        if not _is_int(value):
            add(f"internal_emotion[{i}].intensity", f"intensity {value!r} is not an integer")
        elif not lo <= value <= hi:
            add(f"internal_emotion[{i}].intensity", f"intensity {value} is outside {lo}-{hi}")

    targets = row.targets
    if not targets:
        add("target", "empty target")
    if len(targets) > 1 and group in targets:
        add("target", f"group target {group!r} should stand alone (got {targets})", quirk)
    mentioned = [row.speaker, *targets]
    for item in row.support_strategy or []:
        mentioned.extend(t.strip() for t in item.target or [] if t and t.strip())
    if other_group in mentioned:
        add("target", f"{other_group!r} names the other scenario's group in a {scenario} clip", quirk)
    if row.speaker and row.speaker != other_group and row.speaker not in known:
        add("primary_speaker", f"speaker {row.speaker!r} is not a participant, {THERAPIST!r} or {group!r}", quirk)
    for i, name in enumerate(targets):
        if name != other_group and name not in known:
            add(f"target[{i}]", f"target {name!r} is not a participant, {THERAPIST!r} or {group!r}", quirk)

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
    row without a speaker. Quirks (evidence rows outside the clip, a group target beside names,
    unknown speakers or targets, leftover ``draft_problems``) are warnings, or errors when
    ``strict``. The rest are warnings. ``file`` and ``line`` are only used to name the place.
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
    result = read_paths(paths, repair_mojibake=repair_mojibake)
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
