"""The files of the judge-rating study (the paper's Table 12), read and written in one place.

- The **sample** humans rate (``rescue agreement sample`` writes it): :data:`SAMPLE_COLUMNS`, one
  judged ER/VP record per line with the reference (``gold``), the model's answer (``prediction``)
  and the judge's score. :func:`read_sample_csv` reads what a rater may be shown and nothing else
  (never the judge's score, never an unknown column such as a model name): the blind rule of the
  rating questionnaire (``rescue review import-ratings``) starts here.
- The **ratings** file ``rescue agreement score`` reads (:func:`read_human_csv`): ``id``, ``task``,
  ``human_score`` and optionally ``rater`` (several raters per item); ``rescue review
  export-ratings`` writes :data:`RATINGS_COLUMNS`.

The closed loop's study (people compare two agents' continuations of the same start) has the same
two files:

- the **pair sample** (``rescue agreement sample`` on ``rescue sim eval`` folders): JSON Lines, one
  :class:`PairLine` a line: ``pair_id``, ``a`` and ``b`` (each the ``run`` folder's name, the
  ``episode`` id of its ``results/sim.jsonl`` and the ``turns`` a rater reads) and the real session
  up to the start (``context``). :func:`read_pair_sample` keeps these fields only (never a J, never
  an agent's name: the blind rule of the pairwise questionnaire starts here too);
- the **pair ratings** (:func:`read_pair_ratings`): one line per rater and pair, ``preferred``
  ``A``, ``B`` or ``tie`` in the sample's A/B terms; ``rescue review export-ratings`` writes
  :data:`PAIR_RATINGS_COLUMNS`.

Both ``rescue_bench.report`` and ``rescue_bench.review`` use these files, so they live below both.
Every problem is a :class:`RatingFileError` naming the file and line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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


# ------------------------------------------------------------------------------------------------
# the closed loop's pairwise study: the pair sample (JSON Lines) and the pair ratings (CSV)
# ------------------------------------------------------------------------------------------------

PREFERENCES = ("A", "B", "tie")
"""What a rater answers of a pair, in the sample's A/B terms."""
SUPPORT_SCORES = (1, 2, 3, 4, 5)
"""How well a continuation supports the group (optional)."""
PAIR_RATINGS_COLUMNS = (
    "pair_id", "a_run", "a_episode", "b_run", "b_episode", "scenario", "sample_id",
    "rater", "preferred", "reason", "support_a", "support_b", "shown_first",
)
"""Columns of the pair ratings ``rescue review export-ratings`` writes (``shown_first``: the side
the rater saw as their first continuation, ``A`` or ``B``)."""
PAIR_RATINGS_REQUIRED = ("pair_id", "rater", "preferred")
"""Columns :func:`read_pair_ratings` needs; the runs and episodes come from the sample when absent."""
MAX_PAIR_ID = 200


class PairTurn(BaseModel):
    """One line of a session as a rater reads it: who speaks, to whom, what they say; ``listening``:
    the therapist kept listening at this step (no words)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    speaker: str = Field(min_length=1, max_length=200)
    to: list[str] = Field(default_factory=list, max_length=20)
    text: str = Field(default="", max_length=20_000)
    listening: bool = False


class PairSide(BaseModel):
    """One side of a pair: an episode of a run, and its continuation as a rater reads it."""

    model_config = ConfigDict(extra="ignore")

    run: str = Field(min_length=1, max_length=1024, description="the run folder's name")
    episode: str = Field(min_length=1, max_length=1200, description="the episode id of results/sim.jsonl")
    turns: list[PairTurn] = Field(default_factory=list, max_length=500)


class PairLine(BaseModel):
    """A line of the pair sample: two agents' episodes from the same start. Any other key (a J, an
    agent's name) is not read."""

    model_config = ConfigDict(extra="ignore")

    pair_id: str = Field(min_length=1, max_length=MAX_PAIR_ID)
    a: PairSide
    b: PairSide
    scenario: str = Field(default="", max_length=16)
    sample_id: str = Field(default="", max_length=1024)
    start_row: int | None = Field(default=None, ge=1)
    context: list[PairTurn] = Field(default_factory=list, max_length=2000)


class PairRatingRow(TypedDict):
    """A rated line of a pair ratings file (:func:`read_pair_ratings`); a run or episode the file
    does not hold is ``""``."""

    pair_id: str
    rater: str
    preferred: Literal["A", "B", "tie"]
    reason: str
    support_a: int | None
    support_b: int | None
    a_run: str
    a_episode: str
    b_run: str
    b_episode: str
    line: int


def _pair_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "(line)"
    return f"field {where}: {'missing' if err['type'] == 'missing' else err['msg']}"


def read_pair_sample(path: str | Path, *, for_raters: bool = True) -> list[PairLine]:
    """The pairs of a sample written by ``rescue agreement sample`` (JSON Lines), in file order.

    Each line is a JSON object with ``pair_id``, ``a`` and ``b`` (``run``, ``episode``); ``a`` and
    ``b`` are two runs' episodes of the same start. ``for_raters``: each side must also hold the
    ``turns`` a rater reads (the questionnaire shows nothing else). Problems (not JSON, a missing or
    bad field, a duplicate pair id, both sides one run, two starts) name the file and line.
    """
    from rescue_bench.fileio import loads

    path = Path(path)
    if not path.is_file():
        raise RatingFileError(path, "no such file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RatingFileError(path, f"not UTF-8 text ({exc.reason})") from None
    pairs: list[PairLine] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = loads(raw)
        except ValueError as exc:
            raise RatingFileError(path, f"not a JSON object ({exc})", number) from None
        if not isinstance(value, dict):
            raise RatingFileError(path, f"a pair must be a JSON object, got {type(value).__name__}", number)
        try:
            pair = PairLine.model_validate(value)
        except ValidationError as exc:
            raise RatingFileError(path, _pair_error(exc), number) from None
        if pair.pair_id in seen:
            raise RatingFileError(path, f"duplicate pair_id {pair.pair_id!r} (first on line {seen[pair.pair_id]})", number)
        seen[pair.pair_id] = number
        if pair.a.run == pair.b.run:
            raise RatingFileError(path, f"pair {pair.pair_id!r}: a and b are both of run {pair.a.run!r} (a pair compares two agents)", number)
        if pair.a.episode != pair.b.episode:
            raise RatingFileError(path, f"pair {pair.pair_id!r}: a and b start at different points ({pair.a.episode!r}, {pair.b.episode!r})", number)
        if for_raters and not (pair.a.turns and pair.b.turns):
            raise RatingFileError(path, f"pair {pair.pair_id!r}: a side without turns (write the sample with `rescue agreement sample`)", number)
        pairs.append(pair)
    if not pairs:
        raise RatingFileError(path, "no pairs (an empty sample)")
    return pairs


def write_pair_sample(pairs: Sequence[PairLine], path: str | Path) -> Path:
    """Write the pair sample (JSON Lines), whole or not at all."""
    from rescue_bench.fileio import atomic_write_jsonl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_jsonl(path, [p.model_dump(mode="json", exclude_defaults=True) for p in pairs])
    return path


def is_pair_sample(path: str | Path) -> bool:
    """Whether ``path`` is a pair sample (JSON Lines: its first non-blank character opens an object)
    rather than the CSV sample of judged records."""
    try:
        with Path(path).open("rb") as fh:
            head = fh.read(4096).decode("utf-8-sig", errors="replace").lstrip()
    except OSError:
        return False
    return head.startswith("{")


def is_pair_ratings(path: str | Path) -> bool:
    """Whether ``path`` is a pair ratings CSV (its header has ``pair_id``)."""
    try:
        _, header = _open_csv(Path(path))
    except RatingFileError:
        return False
    return "pair_id" in header


def _support(text: str) -> int | None:
    value = _score(text)
    if value is not None and value not in SUPPORT_SCORES:
        raise ValueError(f"{value} is not 1-5")
    return value


def read_pair_ratings(path: str | Path) -> tuple[list[PairRatingRow], int]:
    """``(rated lines, number of lines not rated yet)`` of a pair ratings CSV: ``pair_id``,
    ``rater``, ``preferred`` (``A``, ``B``, ``tie``; empty: not rated yet), optionally ``reason``,
    ``support_a``/``support_b`` (1-5) and the runs and episodes of each side. A problem (a missing
    column, an unknown preference, a support outside 1-5, the same pair twice for one rater) names
    the file and line."""
    path = Path(path)
    reader, header = _open_csv(path)
    missing = [c for c in PAIR_RATINGS_REQUIRED if c not in header]
    if missing:
        raise RatingFileError(path, f"missing column(s) {', '.join(missing)} (expected a header with {', '.join(PAIR_RATINGS_REQUIRED)})", 1)
    rows: list[PairRatingRow] = []
    unrated = 0
    seen: dict[tuple[str, str], int] = {}
    canonical = {p.lower(): p for p in PREFERENCES}
    for raw in reader:
        line = reader.line_num
        if None in raw:
            raise RatingFileError(path, "more cells than header columns", line)
        row = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        if not any(row.values()):
            continue
        pair_id, rater, said = row["pair_id"], row["rater"], row["preferred"]
        if not pair_id:
            raise RatingFileError(path, "empty pair_id", line)
        if not rater:
            raise RatingFileError(path, "empty rater", line)
        if not said:
            unrated += 1
            continue
        if said.lower() not in canonical:
            raise RatingFileError(path, f"preferred must be A, B or tie, got {said!r}", line)
        supports = {}
        for column in ("support_a", "support_b"):
            try:
                supports[column] = _support(row.get(column, ""))
            except ValueError:
                raise RatingFileError(path, f"{column} must be an integer 1-5 or empty, got {row.get(column)!r}", line) from None
        if (pair_id, rater) in seen:
            raise RatingFileError(path, f"duplicate pair_id {pair_id!r} by rater {rater!r} (first on line {seen[(pair_id, rater)]})", line)
        seen[(pair_id, rater)] = line
        preferred: Literal["A", "B", "tie"] = canonical[said.lower()]  # type: ignore[assignment]
        rows.append(
            {
                "pair_id": pair_id, "rater": rater, "preferred": preferred, "reason": row.get("reason", ""),
                "support_a": supports["support_a"], "support_b": supports["support_b"],
                "a_run": row.get("a_run", ""), "a_episode": row.get("a_episode", ""),
                "b_run": row.get("b_run", ""), "b_episode": row.get("b_episode", ""), "line": line,
            }
        )
    return rows, unrated
