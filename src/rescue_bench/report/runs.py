"""Reading ``rescue eval`` output folders for the report.

A run folder (see :mod:`rescue_bench.engine.run`) holds ``results/<task>.jsonl`` (one scored record per
instance), ``summary.json`` and ``run.json``. :func:`load_run` reads one, checks every record line and
raises :class:`ReportInputError` with the file and line of the first problem; nothing is skipped.
``run.json`` is optional (the model is then the folder name), ``summary.json`` and ``results/`` are not.

A run whose records were read elsewhere (the logs of ``inspect eval rescue_bench/<task>``, read by
:mod:`rescue_bench.engine.inspect_logs`) becomes a :class:`Run` through :func:`records_run`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from rescue_bench.agent.points import AGENT_TASK
from rescue_bench.errors import RescueError
from rescue_bench.labels import TASKS, is_baseline
from rescue_bench.records import ResultRow
from rescue_bench.runinfo import RUN_JSON, RunInfo, RunInfoError, read_run_info
from rescue_bench.scoring import ResultRecord, summarize
from rescue_bench.sim.episode import SIM_TASK
from rescue_bench.sim.fidelity import FIDELITY_TASK
from rescue_bench.summary import EvalSummary, RunSummary, parse_summary

SIM_TASKS = (SIM_TASK, FIDELITY_TASK)


class ReportInputError(RescueError):
    """Bad report input; ``str(error)`` is one line naming the file (and line) at fault."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        where = self.path + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {message}")


@dataclass
class Run:
    """One evaluated run: its records per task, its summary and its recorded configuration."""

    path: Path
    model: str
    records: dict[str, list[dict[str, Any]]]
    """The records of each results file, by task (the six tasks', the agent's chain, the closed loop's)."""
    summary: RunSummary
    info: RunInfo = field(default_factory=RunInfo)
    """The run's ``run.json`` (empty when the folder has none)."""
    name: str = ""
    """Unique display name among the runs of one report (the model string, disambiguated)."""

    @property
    def is_baseline(self) -> bool:
        return is_baseline(self.model)

    @property
    def tasks(self) -> list[str]:
        return [t for t in TASKS if self.records.get(t)]

    def task_records(self) -> dict[str, list[ResultRow]]:
        """The six tasks' result records, by task (each line was checked against
        :class:`~rescue_bench.scoring.ResultRecord` when read)."""
        return {t: cast(list[ResultRow], self.records[t]) for t in self.tasks}

    def all_records(self) -> list[ResultRow]:
        return [r for records in self.task_records().values() for r in records]


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReportInputError(path, f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise ReportInputError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportInputError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None


def _check_record(record: Any, path: Path, line: int, task: str) -> dict[str, Any]:
    """``record`` validated against :class:`~rescue_bench.scoring.ResultRecord` (one error, naming the field)."""
    if not isinstance(record, dict):
        raise ReportInputError(path, f"a record must be a JSON object, got {type(record).__name__}", line)
    try:
        ResultRecord.model_validate(record)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(part) for part in err["loc"]) or "(record)"
        message = "is missing" if err["type"] == "missing" else f"{err['msg'][0].lower()}{err['msg'][1:]}, got {err.get('input')!r}"
        raise ReportInputError(path, f"field {field} {message}", line) from None
    if record["task"] != task:
        raise ReportInputError(path, f"record of task {record['task']!r} in the file of task {task!r}", line)
    return record


def read_results(path: Path, task: str) -> list[dict[str, Any]]:
    """The records of one ``results/<task>.jsonl`` file, checked line by line."""
    records: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise ReportInputError(path, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ReportInputError(path, f"not UTF-8 text ({exc.reason})", number) from None
            if not text.strip():
                continue
            try:
                record = json.loads(text.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                raise ReportInputError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", number) from None
            record = _check_record(record, path, number, task)
            if record["id"] in seen:
                raise ReportInputError(path, f"duplicate record id {record['id']!r} (first on line {seen[record['id']]})", number)
            seen[record["id"]] = number
            records.append(record)
    return records


def load_run(path: str | Path) -> Run:
    """Read one run folder (:data:`RUN_KINDS`; raises :class:`ReportInputError` on any problem, a
    failed or unfinished run among them)."""
    root = Path(path)
    if not root.exists():
        raise ReportInputError(root, "no such run folder")
    if not root.is_dir():
        raise ReportInputError(root, "not a folder (expected a `rescue eval` output folder)")
    summary_path = root / "summary.json"
    if not summary_path.is_file():
        raise _no_summary(root, summary_path)
    value = _read_json(summary_path)
    if not isinstance(value, dict):
        raise ReportInputError(summary_path, "expected a JSON object {task: {scenario: {metric: value}}}")
    try:
        summary = parse_summary(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "(summary)"
        raise ReportInputError(summary_path, f"{where}: {err['msg']}") from None
    results = root / "results"
    if not results.is_dir():
        raise ReportInputError(results, "missing results folder (expected results/<task>.jsonl)")
    records: dict[str, list[dict[str, Any]]] = {}
    for file in sorted(results.glob("*.jsonl")):
        task = file.stem
        known = (*TASKS, AGENT_TASK, *SIM_TASKS)  # agent.jsonl: `rescue agent eval`; sim/fidelity.jsonl: `rescue sim`
        if task not in known:
            raise ReportInputError(file, f"unknown task {task!r} (expected one of {', '.join(known)})")
        records[task] = read_results(file, task)
    if not any(records.values()):
        raise ReportInputError(results, "no records (expected results/<task>.jsonl files)")
    info = RunInfo()
    run_json = root / RUN_JSON
    if run_json.is_file():
        try:
            info = read_run_info(run_json)
        except RunInfoError as exc:
            raise ReportInputError(exc.path, exc.message, exc.line) from None
        except OSError as exc:
            raise ReportInputError(run_json, f"cannot read: {exc.strerror or exc}") from None
    model = info.model_name or root.resolve().name
    return Run(path=root, model=str(model), records=records, summary=summary, info=info, name=str(model))


RUN_KINDS = "`rescue eval`, `rescue agent eval`, `rescue sim eval` or `rescue sim fidelity`"
"""The commands whose output folders the report reads (besides the logs of ``inspect eval``)."""


def _no_summary(root: Path, summary_path: Path) -> ReportInputError:
    """Why a folder has no ``summary.json``, in one line: its run failed (``run.json``'s own line),
    has not finished, or the folder is no run's."""
    run_json = root / RUN_JSON
    try:
        info = read_run_info(run_json) if run_json.is_file() else None
    except (OSError, RunInfoError):
        info = None
    if info is not None and info.status == "failed":
        return ReportInputError(
            run_json, f"the run failed: {info.failure or 'no cause recorded'}; a failed run has no scores to report "
            "(fix the cause and run the same command to resume)"
        )
    if info is not None and info.status == "running":
        return ReportInputError(run_json, "the run has not finished (status running): run the same command again to finish it")
    return ReportInputError(summary_path, f"missing (expected the output folder of {RUN_KINDS})")


def is_run_folder(path: str | Path) -> bool:
    """Whether ``path`` is meant as a ``rescue eval`` output folder: it has ``summary.json`` or
    ``results/``, or it does not exist and has no file suffix (:func:`load_run` then names it); else
    it is an inspect log or a folder of logs."""
    root = Path(path)
    if not root.exists():
        return not root.suffix
    return root.is_dir() and ((root / "summary.json").exists() or (root / "results").exists())


def records_run(path: str | Path, records: dict[str, list[ResultRow]], info: RunInfo) -> Run:
    """A run from result records read elsewhere (an inspect log), checked against the result
    record's schema where they were read; its summary is computed from them as ``summary.json`` is."""
    model = info.model_name or Path(path).name
    every = [r for task in records.values() for r in task]
    plain = cast(dict[str, list[dict[str, Any]]], dict(records))
    return Run(path=Path(path), model=model, records=plain, summary=EvalSummary.model_validate(summarize(every)), info=info, name=model)


def disambiguate(runs: Sequence[Run]) -> None:
    """Give every run a unique ``name``: its model, with the folder name appended when shared."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.model] = counts.get(run.model, 0) + 1
    used: set[str] = set()
    for run in runs:
        name = run.model
        if counts[name] > 1:
            name = f"{run.model} ({run.path.resolve().name})"
        base, k = name, 2
        while name in used:
            name = f"{base} #{k}"
            k += 1
        used.add(name)
        run.name = name


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """Read every run folder, in the order given, with unique display names."""
    runs = [load_run(p) for p in paths]
    disambiguate(runs)
    return runs


def run_data_paths(run: Run) -> list[str] | None:
    """The ``--data`` paths recorded in ``run.json`` (``None`` means the bundled demo)."""
    return None if run.info.settings is None else run.info.settings.data_paths
