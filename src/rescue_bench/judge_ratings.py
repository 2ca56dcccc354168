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
from typing import Any

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


def _score(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    value = float(text)  # ValueError for non-numbers
    if not value.is_integer():
        raise ValueError(f"{text!r} is not an integer")
    return int(value)


def read_human_csv(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """``(rated rows, number of unrated rows)``; a rated row is ``{"id", "task", "human_score", "rater", "line"}``
    (``rater`` is ``""`` without a rater column)."""
    path = Path(path)
    if not path.is_file():
        raise RatingFileError(path, "no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RatingFileError(path, f"not UTF-8 text ({exc.reason})") from None
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in HUMAN_COLUMNS if c not in header]
    if missing:
        raise RatingFileError(path, f"missing column(s) {', '.join(missing)} (expected a header with {', '.join(HUMAN_COLUMNS)})", 1)
    with_rater = RATER_COLUMN in header
    rows: list[dict[str, Any]] = []
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


def read_sample_csv(path: str | Path) -> list[dict[str, Any]]:
    """The items of a sample written by ``rescue agreement sample`` (what raters are shown).

    Returns ``{"id", "task", "sample_id", "scenario", "row", "gold", "prediction", "line"}`` per
    line, in file order. The judge's score and any other column are *not* returned: what a rater may
    see is decided here, once (the blind rule of the rating questionnaire). Problems (missing
    column, empty id, a task other than er/vp, a duplicate id, an empty reference or answer, a row
    that is not a number) name the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise RatingFileError(path, "no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RatingFileError(path, f"not UTF-8 text ({exc.reason})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))  # quoted cells may hold line breaks
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in SAMPLE_REQUIRED if c not in header]
    if missing:
        raise RatingFileError(path, f"missing column(s) {', '.join(missing)} (a sample from `rescue agreement sample` has {', '.join(SAMPLE_COLUMNS)})", 1)
    items: list[dict[str, Any]] = []
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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(SAMPLE_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    return path
