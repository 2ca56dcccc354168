"""Validation of release data: hard errors from the loader plus soft findings about the content.

Hard errors (the clip cannot be loaded: not JSON, wrong type, missing required field, duplicate
``sample_id``, unreadable or missing file) come from :mod:`rescue_bench.data.load`. This module adds
the *soft* findings: things a careful maintainer wants to see but that do not stop a clip from being
used, because the real release has some of them (mojibake, labels outside the closed sets that the
task builders then skip). Every finding is a :class:`~rescue_bench.data.load.Problem` with
``severity="warning"`` that names file, line, clip, row and field, exactly like a hard error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rescue_bench.data.load import LoadResult, Problem, read_paths
from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import (
    GROUP_LABELS,
    NON_CLIENT_SPEAKERS,
    PATTERNS,
    STRATEGIES,
    THERAPIST,
    UTTERANCE_TYPES,
)

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


def row_findings(clip: Clip, position: int, row: Row, file: str, line: int | None) -> list[Problem]:
    """Soft findings of one row (``position`` is its 1-based place in the clip)."""
    out: list[Problem] = []
    row_index = row.row_index if row.row_index is not None else position

    def warn(fld: str, message: str) -> None:
        out.append(Problem(file, message, line, clip.sample_id, row_index, fld, severity="warning"))

    scenario = clip.scenario
    pattern_set = PATTERNS[scenario]
    strategy_set = STRATEGIES[scenario]
    group = GROUP_LABELS[scenario]
    other_group = next(g for s, g in GROUP_LABELS.items() if s != scenario)

    if row.row_index is not None and row.row_index != position:
        warn("row_index", f"row_index {row.row_index} at position {position} (expected {position})")
    if row.start_time is not None and row.end_time is not None and row.end_time < row.start_time:
        warn("end_time", f"end_time {row.end_time} is before start_time {row.start_time}")

    for name in ("relation_cycle_state", "relation_pattern"):
        value = (getattr(row, name) or "").strip()
        if value and value not in pattern_set:
            warn(name, f"{value!r} is not a {scenario} relation pattern")
    for i, item in enumerate(row.support_strategy or []):
        value = (item.strategy_type or "").strip()
        if value and value not in strategy_set:
            warn(f"support_strategy[{i}].strategy_type", f"{value!r} is not a {scenario} strategy")
    utype = (row.utterance_type or "").strip()
    if utype and utype not in UTTERANCE_TYPES:
        warn("utterance_type", f"{utype!r} is not an utterance type")

    lo, hi = INTENSITY_RANGE
    for i, emo in enumerate(row.internal_emotion or []):
        value = emo.intensity
        if value is None:
            continue
        if not _is_int(value):
            warn(f"internal_emotion[{i}].intensity", f"intensity {value!r} is not an integer")
        elif not lo <= value <= hi:
            warn(f"internal_emotion[{i}].intensity", f"intensity {value} is outside {lo}-{hi}")

    targets = row.targets
    if not targets:
        warn("target", "empty target")
    if len(targets) > 1 and group in targets:
        warn("target", f"group target {group!r} should stand alone (got {targets})")
    names = [row.speaker, *targets]
    for item in row.support_strategy or []:
        names.extend(t.strip() for t in item.target or [] if t and t.strip())
    if other_group in names:
        warn("target", f"{other_group!r} names the other scenario's group in a {scenario} clip")

    for fld, text in _strings(row.model_dump(mode="json", exclude_unset=True), ""):
        if has_mojibake(text):
            warn(fld, f"possible mojibake {_mojibake_example(text)} (repair with --repair-mojibake)")
    return out


def clip_findings(clip: Clip, file: str, line: int | None = None) -> list[Problem]:
    """Soft findings of one loaded clip: its participants, then each row in order."""
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
    for position, row in enumerate(clip.rows, 1):
        out.extend(row_findings(clip, position, row, file, line))
    return out


def validate_paths(paths: Iterable[str | Path], *, repair_mojibake: bool = False) -> LoadResult:
    """Load ``paths`` and return every hard error and soft finding, in input order.

    The clips that loaded are in the result too, so a caller can validate and use the data in one pass.
    """
    result = read_paths(paths, repair_mojibake=repair_mojibake)
    for clip, (file, line) in zip(result.clips, result.locations):
        result.problems.extend(clip_findings(clip, file, line))
    return result


def count_rows(clips: Iterable[Clip]) -> int:
    """Total number of rows in ``clips``."""
    return sum(len(c.rows) for c in clips)
