"""The files of the judge-rating study (the paper's Table 12), read and written in one place.

- The **sample** humans rate (``rescue agreement sample`` writes it): :data:`SAMPLE_COLUMNS`, one
  judged ER/VP record per line with the reference (``gold``), the model's answer (``prediction``)
  and the judge's score. :func:`read_sample_csv` reads what a rater may be shown and nothing else
  (never the judge's score, never an unknown column such as a model name): the blind rule of the
  rating questionnaire (``rescue review import-ratings``) starts here.
- The **ratings** file ``rescue agreement score`` reads (:func:`read_human_csv`): ``id``, ``task``,
  ``human_score`` and optionally ``rater`` (several raters per item); ``rescue review
  export-ratings`` writes :data:`RATINGS_COLUMNS`.

Both ``rescue_bench.report`` and ``rescue_bench.review`` use these files, so they live below both.
Every problem is a :class:`RatingFileError` naming the file and line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from rescue_bench.errors import RescueError
from rescue_bench.labels import JUDGED_TASKS

SCORES = (1, 2, 3, 4, 5)
"""The rating scale (the judge's rubric)."""
RATER_COLUMN = "rater"
HUMAN_COLUMNS = ("id", "task", "human_score")
"""Columns a ratings file must have (``rater`` is optional)."""
SAMPLE_COLUMNS = ("id", "task", "sample_id", "scenario", "row", "gold", "prediction", "judge_score", "human_score")
SAMPLE_REQUIRED = ("id", "task", "gold", "prediction")
"""Columns :func:`read_sample_csv` needs (the rest of :data:`SAMPLE_COLUMNS` is optional)."""
RATINGS_COLUMNS = ("id", "task", "sample_id", "scenario", "row", RATER_COLUMN, "human_score")
"""Columns of the ratings file ``rescue review export-ratings`` writes."""


class RatingFileError(RescueError):
    """A bad sample or ratings file; ``str(error)`` is one line ``file:line: message``."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(self.path + (f":{line}" if line is not None else "") + f": {message}")


class HumanRating(TypedDict):
    """A rated line of a ratings file (:func:`read_human_csv`); ``rater`` is ``""`` without a rater column."""

    id: str
    task: str
    human_score: int
    rater: str
    line: int


class SampleItem(TypedDict):
    """A line of a sample as a rater may be shown it (:func:`read_sample_csv`): no judge score."""

    id: str
    task: str
    sample_id: str
    scenario: str
    row: int | None
    gold: str
    prediction: str
    line: int


LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
"""Every character ``str.splitlines()`` breaks a line at: a cell holding one is quoted when written
(csv itself quotes CR and LF; :func:`write_sample` quotes the row for the others)."""
_UNQUOTED_BREAKS = LINE_BREAKS - {"\n", "\r"}


TEXT_PARTS = " | "
"""How a VP answer (a list of viewpoints) is one text of the sample: its viewpoints, each as
``source -> target: viewpoint``, joined with this; the rating page shows them one per line."""


def answer_text(task: str, value: Any, client: str | None = None) -> str:
    """A gold or a prediction as a rater reads it in the sample: ER ``emotion (intensity N)``, VP its
    viewpoints joined with :data:`TEXT_PARTS` (``client`` is the source of a viewpoint that names
    none), anything else (an invalid answer's raw value) as it is."""
    if value is None:
        return ""
    if task == "er" and isinstance(value, dict):
        return f"{value.get('emotion', '')} (intensity {value.get('intensity', '?')})"
    if task == "vp" and isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict):
                source = item.get("source") or client or ""
                arrow = f"{source} -> " if source else "-> "
                parts.append(f"{arrow}{item.get('target', '')}: {item.get('viewpoint', '')}")
        return TEXT_PARTS.join(parts)
    return str(value)


def text_parts(task: str, text: str) -> list[str]:
    """The lines a rater sees of a sample text (:func:`answer_text`'s inverse for VP: one per viewpoint)."""
    return text.split(TEXT_PARTS) if task == "vp" else [text]


def _open_csv(path: Path) -> tuple[csv.DictReader[str], list[str]]:
    """The one CSV reader of both files: ``(rows, stripped header)``. The bytes are decoded as they
    are (UTF-8, a BOM allowed) and split into records by the csv module alone, so a quoted cell
    keeps every line break in it (CR LF, a lone CR, U+2028 ...) exactly as written."""
    if not path.is_file():
        raise RatingFileError(path, "no such file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RatingFileError(path, f"not UTF-8 text ({exc.reason})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    return reader, [h.strip() for h in (reader.fieldnames or [])]


def _score(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    value = float(text)  # ValueError for non-numbers
    if not value.is_integer():
        raise ValueError(f"{text!r} is not an integer")
    return int(value)


def read_human_csv(path: str | Path) -> tuple[list[HumanRating], int]:
    """``(rated rows, number of unrated rows)``."""
    path = Path(path)
    reader, header = _open_csv(path)
    missing = [c for c in HUMAN_COLUMNS if c not in header]
    if missing:
        raise RatingFileError(path, f"missing column(s) {', '.join(missing)} (expected a header with {', '.join(HUMAN_COLUMNS)})", 1)
    with_rater = RATER_COLUMN in header
    rows: list[HumanRating] = []
    unrated = 0
    seen: dict[tuple[str, str], int] = {}
    for raw in reader:
        line = reader.line_num
        row = {(k or "").strip(): (v or "") for k, v in raw.items() if k is not None}
        if None in raw:
            raise RatingFileError(path, "more cells than header columns", line)
        rid, task = row["id"].strip(), row["task"].strip().lower()
        rater = row.get(RATER_COLUMN, "").strip()
        if not rid and not task and not row["human_score"].strip():
            continue
        if not rid:
            raise RatingFileError(path, "empty id", line)
        if task not in JUDGED_TASKS:
            raise RatingFileError(path, f"task must be er or vp, got {row['task']!r}", line)
        if with_rater and not rater:
            raise RatingFileError(path, "empty rater", line)
        try:
            score = _score(row["human_score"])
        except ValueError:
            raise RatingFileError(path, f"human_score must be an integer 1-5, got {row['human_score']!r}", line) from None
        if score is None:
            unrated += 1
            continue
        if score not in SCORES:
            raise RatingFileError(path, f"human_score must be an integer 1-5, got {score}", line)
        if (rid, rater) in seen:
            who = f" by rater {rater!r}" if with_rater else ""
            raise RatingFileError(path, f"duplicate id {rid!r}{who} (first on line {seen[(rid, rater)]})", line)
        seen[(rid, rater)] = line
        rows.append({"id": rid, "task": task, "human_score": score, "rater": rater, "line": line})
    return rows, unrated


def read_sample_csv(path: str | Path) -> list[SampleItem]:
    """The items of a sample written by ``rescue agreement sample`` (what raters are shown), in file order. The judge's score and any other column are *not* returned: what a rater may
    see is decided here, once (the blind rule of the rating questionnaire). Problems (missing
    column, empty id, a task other than er/vp, a duplicate id, an empty reference or answer, a row
    that is not a number) name the file and line.
    """
    path = Path(path)
    reader, header = _open_csv(path)
    missing = [c for c in SAMPLE_REQUIRED if c not in header]
    if missing:
        raise RatingFileError(path, f"missing column(s) {', '.join(missing)} (a sample from `rescue agreement sample` has {', '.join(SAMPLE_COLUMNS)})", 1)
    items: list[SampleItem] = []
    seen: dict[str, int] = {}
    for raw in reader:
        line = reader.line_num
        if None in raw:
            raise RatingFileError(path, "more cells than header columns", line)
        row = {(k or "").strip(): (v or "") for k, v in raw.items() if k is not None}
        if not any(v.strip() for v in row.values()):
            continue
        rid, task = row["id"].strip(), row["task"].strip().lower()
        if not rid:
            raise RatingFileError(path, "empty id", line)
        if task not in JUDGED_TASKS:
            raise RatingFileError(path, f"task must be er or vp, got {row['task']!r}", line)
        if rid in seen:
            raise RatingFileError(path, f"duplicate id {rid!r} (first on line {seen[rid]})", line)
        seen[rid] = line
        for column in ("gold", "prediction"):
            if not row[column].strip():
                raise RatingFileError(path, f"empty {column} for id {rid!r}", line)
        number = row.get("row", "").strip()
        if number and not number.isdigit():
            raise RatingFileError(path, f"row must be a row number, got {number!r}", line)
        items.append(
            {
                "id": rid,
                "task": task,
                "sample_id": row.get("sample_id", "").strip(),
                "scenario": row.get("scenario", "").strip(),
                "row": int(number) if number else None,
                "gold": row["gold"],
                "prediction": row["prediction"],
                "line": line,
            }
        )
    if not items:
        raise RatingFileError(path, "no items (an empty sample)")
    return items


def write_sample(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write the sample raters fill in (:data:`SAMPLE_COLUMNS`), whole or not at all.

    csv quotes a cell with a comma, a quote, CR or LF; a row with any other line break in a cell
    (U+2028 in a model's answer, a form feed ...) is written with every cell quoted, so a tool that
    splits lines on them (``str.splitlines()``, some spreadsheets) still sees whole records.
    """
    from rescue_bench.fileio import atomic_open

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as fh:  # newline="": csv writes its own CR LF
        writer = csv.DictWriter(fh, fieldnames=list(SAMPLE_COLUMNS))
        quoted = csv.DictWriter(fh, fieldnames=list(SAMPLE_COLUMNS), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        for row in rows:
            awkward = any(isinstance(v, str) and not _UNQUOTED_BREAKS.isdisjoint(v) for v in row.values())
            (quoted if awkward else writer).writerow(row)
    return path
