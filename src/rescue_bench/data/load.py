"""Loading the release: JSON Lines, the older per-clip folder layout, and the bundled demo.

Every problem is reported as a :class:`Problem` naming file, line, sample_id, row_index and field.
``read_*`` functions collect problems and never raise for bad content; ``load_clips`` raises one
:class:`DataError` that carries all of them. Nothing is ever skipped silently.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from rescue_bench.data.models import Clip, Row, infer_participants
from rescue_bench.errors import RescueError
from rescue_bench.fileio import dumps, loads
from rescue_bench.labels import GROUP_LABELS

MAX_PROBLEMS_PER_FILE = 200
"""Cap on hard problems reported per file (a broken file can have thousands)."""


@dataclass(frozen=True)
class Problem:
    """One finding about the input. ``severity`` is ``error`` (hard) or ``warning`` (soft)."""

    file: str
    message: str
    line: int | None = None
    sample_id: str | None = None
    row_index: int | None = None
    field: str | None = None
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        parts = [where]
        if self.sample_id is not None:
            parts.append(f"clip {self.sample_id}")
        if self.row_index is not None:
            parts.append(f"row {self.row_index}")
        if self.field:
            parts.append(f"field {self.field}")
        return f"{self.severity}: " + ", ".join(parts) + f": {self.message}"


class DataError(RescueError):
    """Raised by :func:`load_clips` when the input has hard problems; ``problems`` lists them all.

    ``hint``: the next step, one line a command prints after the problems."""

    def __init__(self, problems: list[Problem], hint: str | None = None):
        self.problems = problems
        self.hint = hint
        first = str(problems[0]) if problems else "invalid data"
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first + more)


@dataclass
class LoadResult:
    """Clips that loaded, and every problem found on the way."""

    clips: list[Clip] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    locations: list[tuple[str, int | None]] = field(default_factory=list)
    """(file, line) where each clip of ``clips`` was read, in the same order."""

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def extend(self, other: LoadResult) -> None:
        self.clips.extend(other.clips)
        self.problems.extend(other.problems)
        self.locations.extend(other.locations)

    def add(self, clip: Clip, file: str, line: int | None) -> None:
        self.clips.append(clip)
        self.locations.append((file, line))


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def repair_text(obj: Any) -> Any:
    """Return ``obj`` with mojibake repaired in every string; structure is untouched.

    Uses ``ftfy.fix_encoding``, which only undoes encoding mix-ups (``â€™`` -> ``’``). ``ftfy.fix_text``
    would also straighten curly quotes, unescape HTML entities and expand ligatures, i.e. change gold
    text that is not broken.
    """
    import ftfy

    if isinstance(obj, str):
        return ftfy.fix_encoding(obj)
    if isinstance(obj, list):
        return [repair_text(v) for v in obj]
    if isinstance(obj, dict):
        return {k: repair_text(v) for k, v in obj.items()}
    return obj


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            if not text.isprintable():  # a key holding a line break must not split the one-line message
                text = repr(text)[1:-1]
            out += ("." if out else "") + text
    return out


_NUMBER_UNION_TAGS = frozenset({"int", "float"})
"""Location tags pydantic appends for the members of a ``StrictInt | StrictFloat`` field."""


def _row_number(raw_row: Any, position: int) -> int:
    """The row's own ``row_index`` when it is an int, else its 1-based position."""
    ri = raw_row.get("row_index") if isinstance(raw_row, dict) else None
    return ri if isinstance(ri, int) and not isinstance(ri, bool) else position


def _locate(raw: Any, loc: tuple[Any, ...]) -> tuple[int | None, str]:
    """(row_index, field path) of a location inside a clip dict (``("rows", 2, "target")``)."""
    if len(loc) >= 2 and loc[0] == "rows" and isinstance(loc[1], int):
        rows = raw.get("rows") if isinstance(raw, dict) else None
        rows = rows if isinstance(rows, list) else []
        raw_row = rows[loc[1]] if loc[1] < len(rows) else None
        return _row_number(raw_row, loc[1] + 1), _field_path(loc[2:]) or "(row)"
    return None, _field_path(loc)


def validation_problems(
    exc: ValidationError, raw: Any, file: str, line: int | None, sample_id: str | None,
    *, prefix: tuple[Any, ...] = (),
) -> list[Problem]:
    """One problem per failing field of a model validation. Locations are resolved in ``raw``, a
    clip dict; ``prefix`` is put before each location (``("rows", 2)`` for a row validated alone)."""
    problems = []
    errors = exc.errors()
    not_finite = {(*prefix, *tuple(e["loc"])[:-1]) for e in errors if e["type"] == "finite_number"}
    seen: set[tuple[Any, ...]] = set()
    for err in errors:
        loc = (*prefix, *tuple(err["loc"]))
        number_union = len(loc) > 1 and loc[-1] in _NUMBER_UNION_TAGS
        if number_union:  # int | float fields fail once per member: report the field once
            loc = loc[:-1]
        if loc in seen:
            continue
        seen.add(loc)
        row_index, fld = _locate(raw, loc)
        msg = "Input should be a number" if number_union else err["msg"]
        if loc in not_finite or err["type"] == "finite_number":
            msg = "Input should be a finite number (NaN and infinities are not JSON)"
        if err["type"] == "missing":
            msg = "required field is missing"
        elif "input" in err and err["type"] not in ("missing",):
            shown = json.dumps(err["input"], ensure_ascii=False, default=str)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            msg = f"{msg} (got {shown})"
        problems.append(Problem(file, msg, line, sample_id, row_index, fld))
    return problems


def _non_finite(value: Any, loc: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], float]]:
    """Location and value of every NaN or infinity inside a JSON-like value."""
    if isinstance(value, float) and not math.isfinite(value):
        yield loc, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _non_finite(item, (*loc, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, (*loc, key))


def _constant(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def parse_json(
    text: str, file: str, line: int | None = None, *, sample_id: str | None = None
) -> tuple[Any, list[Problem]]:
    """Strict JSON (:func:`rescue_bench.fileio.loads`): ``(value, [])`` or ``(None, problems)``.

    ``NaN``, ``Infinity`` and numbers too large for a double (``1e999``) are not JSON: each is a
    problem naming the clip, row and field where it stands (``start_time`` of row 3), found by
    reading the text once more with Python's lenient reader, which takes them as floats.
    ``line`` is the JSON Lines line number (``None`` for a whole-file JSON document).
    """
    try:
        return loads(text), []
    except json.JSONDecodeError as exc:
        where = f"at column {exc.colno}" if line is not None else f"at line {exc.lineno}"
        return None, [Problem(file, f"not valid JSON: {exc.msg} {where}", line, sample_id)]
    except ValueError as exc:  # a NaN or infinity (fileio.loads refuses them)
        try:
            lenient = json.loads(text)
        except json.JSONDecodeError as broken:  # refused at the constant, and broken further on too
            where = f"at column {broken.colno}" if line is not None else f"at line {broken.lineno}"
            return None, [Problem(file, f"not valid JSON: {broken.msg} {where}", line, sample_id)]
        if sample_id is None and isinstance(lenient, dict) and isinstance(lenient.get("sample_id"), str):
            sample_id = lenient["sample_id"]
        problems = []
        for loc, value in _non_finite(lenient):
            row_index, fld = _locate(lenient, loc)
            problems.append(Problem(
                file, f"{_constant(value)} is not a valid JSON number (NaN, Infinity and numbers beyond "
                "about 1.8e308 are not JSON)", line, sample_id, row_index, fld or None,
            ))
        return None, problems or [Problem(file, f"not valid JSON: {exc}", line, sample_id)]


def parse_clip(
    raw: Any, file: str, line: int | None = None, repair: bool = False
) -> tuple[Clip | None, list[Problem]]:
    """A clip dict validated into a :class:`Clip` with the loader's hard rules (the release model's
    types, a ``primary_speaker`` on every row): ``(clip, [])`` or ``(None, errors)``."""
    if not isinstance(raw, dict):
        return None, [Problem(file, f"expected a JSON object, got {type(raw).__name__}", line)]
    sid = raw.get("sample_id") if isinstance(raw.get("sample_id"), str) else None
    if repair:
        raw = repair_text(raw)
    try:
        clip = Clip.model_validate(raw)
    except ValidationError as exc:
        return None, validation_problems(exc, raw, file, line, sid)
    problems = _speakerless_rows(clip, file, line)
    return (None, problems) if problems else (clip, [])


def _speakerless_rows(clip: Clip, file: str, line: int | None) -> list[Problem]:
    """A hard error for each row without a ``primary_speaker``: every task depends on who speaks
    (the ITP boundaries, the therapist rows of RPP/STP/SSP, the client rows of ER/VP), so such a row
    would silently change the instance sets. The real release has none."""
    return [
        Problem(file, "row has no primary_speaker (every row needs one)", line, clip.sample_id,
                row.row_index if row.row_index is not None else position, "primary_speaker")
        for position, row in enumerate(clip.rows, 1)
        if not row.speaker
    ]


# ------------------------------------------------------------------------------------------------
# readers
# ------------------------------------------------------------------------------------------------


def read_jsonl(path: str | Path, *, repair_mojibake: bool = False) -> LoadResult:
    """Read a release JSON Lines file (one clip per line). Blank lines are allowed.

    Lines are decoded one by one, so a line that is not UTF-8 is reported with its number and the
    lines after it are still checked; a UTF-8 byte-order mark at the start of the file is ignored.
    """
    path = Path(path)
    result = LoadResult()
    file = str(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        result.problems.append(Problem(file, f"cannot read file: {exc.strerror or exc}"))
        return result
    lines = 0
    with handle:
        try:
            for lineno, data in enumerate(handle, 1):
                if lineno == 1 and data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                if not data.strip():
                    continue
                lines += 1
                if len(result.errors) >= MAX_PROBLEMS_PER_FILE:
                    result.problems.append(Problem(file, "too many problems; stopped reading", lineno))
                    break
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    result.problems.append(Problem(file, f"not UTF-8 text: {exc.reason} at byte {exc.start + 1}", lineno))
                    continue
                raw, problems = parse_json(text, file, lineno)
                if problems:
                    result.problems.extend(problems)
                    continue
                clip, problems = parse_clip(raw, file, lineno, repair_mojibake)
                result.problems.extend(problems)
                if clip is not None:
                    result.add(clip, file, lineno)
        except OSError as exc:
            result.problems.append(Problem(file, f"cannot read file: {exc.strerror or exc}"))
            return result
    if not lines:  # almost always a wrong path or a failed download, never a data set
        result.problems.append(Problem(file, "no clips: the file is empty or holds only blank lines"))
    return result


def _folder_scenario(sample_id: str, rows: list[dict[str, Any]]) -> str:
    if sample_id.startswith("family_therapy/"):
        return "family"
    family = GROUP_LABELS["family"]
    for row in rows:
        if not isinstance(row, dict):
            continue
        names: list[Any] = [row.get("primary_speaker"), *(row.get("target") or [])]
        for item in row.get("support_strategy") or []:
            if isinstance(item, dict):
                names.extend(item.get("target") or [])
        if any(isinstance(n, str) and n.strip() == family for n in names):
            return "family"
    return "couple"


def read_folder(root: str | Path, *, repair_mojibake: bool = False) -> LoadResult:
    """Read the older per-clip layout: ``<root>/<group>/<clip>.json`` files holding ``{"rows": [...]}``.

    The sample id is the path below ``root`` without extension; the scenario is ``family`` when the
    path starts with ``family_therapy/`` or a row names the ``Family`` group; participants are inferred.
    """
    root = Path(root)
    result = LoadResult()
    files = sorted(root.rglob("*.json"))
    if not files:
        result.problems.append(Problem(str(root), "no .json clip files found in this folder"))
    for path in files:
        file = str(path)
        sample_id = path.relative_to(root).with_suffix("").as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            result.problems.append(Problem(file, f"cannot read file: {exc.strerror or exc}", sample_id=sample_id))
            continue
        except UnicodeDecodeError as exc:
            result.problems.append(Problem(file, f"not UTF-8 text: {exc.reason}", sample_id=sample_id))
            continue
        payload, problems = parse_json(text, file, sample_id=sample_id)
        if problems:
            result.problems.extend(problems)
            continue
        if not isinstance(payload, dict):
            result.problems.append(Problem(file, "expected a JSON object with a 'rows' list", sample_id=sample_id))
            continue
        rows = payload.get("rows")
        raw = dict(payload)
        raw.setdefault("sample_id", sample_id)
        if isinstance(rows, list):
            raw.setdefault("scenario", _folder_scenario(sample_id, rows))
            if "participants" not in raw:
                try:
                    parsed_rows = [Row.model_validate(r) for r in rows]
                    raw["participants"] = infer_participants(parsed_rows)
                except ValidationError:
                    pass  # the row errors are reported by parse_clip below
        clip, problems = parse_clip(raw, file, None, repair_mojibake)
        result.problems.extend(problems)
        if clip is not None:
            result.add(clip, file, None)
    return result


def read_path(path: str | Path, *, repair_mojibake: bool = False) -> LoadResult:
    """Read a JSONL file or a per-clip folder, whichever ``path`` is.

    A folder holding no ``.json`` clip files but top-level ``.jsonl`` files is read as those
    release-format files, so a folder of release shards can be passed as one path.
    """
    path = Path(path)
    if path.is_dir():
        if not any(path.rglob("*.json")):
            lines_files = sorted(path.glob("*.jsonl"))
            if lines_files:  # a folder of release-format files (e.g. ../shared/data/rescue_real)
                result = LoadResult()
                for file in lines_files:
                    result.extend(read_jsonl(file, repair_mojibake=repair_mojibake))
                return result
        return read_folder(path, repair_mojibake=repair_mojibake)
    if not path.exists():
        return LoadResult(problems=[Problem(str(path), "no such file or folder")])
    return read_jsonl(path, repair_mojibake=repair_mojibake)


def read_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, repair_mojibake: bool = False) -> LoadResult:
    """Read one input or several; a sample_id seen twice (in one file or across files) is a hard error."""
    total = LoadResult()
    for path in input_paths(paths):
        total.extend(read_path(path, repair_mojibake=repair_mojibake))
    seen: dict[str, tuple[str, int | None]] = {}
    unique = LoadResult(problems=total.problems)
    for clip, (file, line) in zip(total.clips, total.locations):
        if clip.sample_id in seen:
            first_file, first_line = seen[clip.sample_id]
            first = f"{first_file}:{first_line}" if first_line is not None else first_file
            total.problems.append(
                Problem(file, f"duplicate sample_id (first seen at {first})", line, clip.sample_id, field="sample_id")
            )
            continue
        seen[clip.sample_id] = (file, line)
        unique.add(clip, file, line)
    total = unique
    return total


def demo_path() -> Path:
    """Path of the bundled synthetic demo set (release format): 9 clips written for this project.

    >>> demo_path().name
    'demo.jsonl'
    """
    return Path(str(resources.files("rescue_bench.data").joinpath("demo/demo.jsonl")))


def input_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None) -> list[Path]:
    """One path (a string or a ``Path``) or several, as a list (``None``: the bundled demo): a string
    is one path, never a sequence of one-character paths."""
    if paths is None:
        return [demo_path()]
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    if isinstance(paths, (bytes, Mapping)):
        raise TypeError(f"expected a path or a list of paths, got {type(paths).__name__}")
    return [Path(p) for p in paths]


def load_clips(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None, *, repair_mojibake: bool = False
) -> list[Clip]:
    """Load the clips of the release (or of any data in its format).

    Parameters
    ----------
    paths
        A JSON Lines file (one clip per line, as ``benchmark_191.jsonl``) or a folder of the older
        per-clip layout, as a string or a ``Path``, or a list of them, read in order. ``None``: the
        bundled synthetic demo (:func:`demo_path`).
    repair_mojibake
        Undo encoding mix-ups in every string (``â€™`` -> ``’``) before validating.

    Returns
    -------
    list of Clip
        Every clip, in file order. Soft problems (warnings) do not stop the load; ``rescue data
        validate`` lists them.

    Raises
    ------
    DataError
        Any hard problem (malformed JSON, a missing field, a clip seen twice ...); its ``problems``
        list every one, each naming file, line, clip, row and field.

    Examples
    --------
    >>> clips = load_clips()
    >>> len(clips), clips[0].sample_id, clips[0].scenario, clips[0].clients
    (9, 'demo_couple/c01_dana_and_marcus', 'couple', ['Dana', 'Marcus'])
    """
    result = read_paths(input_paths(paths), repair_mojibake=repair_mojibake)
    if result.errors:
        raise DataError(result.errors)
    return result.clips


def iter_jsonl_lines(clips: Iterable[Clip]) -> Iterator[str]:
    """Release-format JSON lines for ``clips`` (the inverse of :func:`read_jsonl`)."""
    for clip in clips:
        yield dumps(clip.to_json())
