"""Reading the logs of ``inspect eval rescue_bench/<task>`` as runs for ``rescue report``.

The tasks' scorer puts each sample's whole result record in its score's metadata
(``Score.metadata["record"]``), so a log holds what a ``rescue eval`` folder's
``results/<task>.jsonl`` holds. :func:`read_log_runs` reads one log file, or the logs of a folder (not
its sub-folders), with inspect_ai's public ``inspect_ai.log`` API and groups them into runs: the logs
of one model, with one judge (the ``grader`` role), on the same data, cue mode and context, are one
run, one log per task. The report turns each :class:`LoggedRun` into its own run type (the CLI
routes a log path here; the report itself never reads inspect_ai's files).

Refused, with one line naming the file (:class:`InspectLogError`): a file that is no inspect log or a
corrupt one; a log of another inspect task, or of ``rescue eval`` (whose run folder is the report's
input); an eval that did not finish (``error``, ``cancelled``, ``started``); more than one epoch; a
log without samples (``--no-log-samples``); a sample without a score (an error the eval tolerated)
or a record whose judge call failed (``rescue eval`` fails such a run too); a record that does not
fit the result record's schema; two logs of one task in one run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote, urlparse

from inspect_ai.log import EvalLog, EvalSample, list_eval_logs, read_eval_log
from pydantic import ValidationError

from rescue_bench.errors import RescueError
from rescue_bench.labels import TASKS
from rescue_bench.records import ResultRow
from rescue_bench.runinfo import EvalRunInfo, RecordedSettings, Usage, merge_usage
from rescue_bench.scoring import ResultRecord
from rescue_bench.task_table import rule

SCORER = "rescue_scorer"
"""The name of the tasks' scorer in a log (the scorer function's name)."""
RECORD_KEY = "record"
"""The key of the result record in a score's metadata."""
LOG_SUFFIXES = (".eval", ".json")
"""The files inspect_ai writes logs as."""
REGISTRY_PREFIX = "rescue_bench/"
"""The registered tasks' names: ``rescue_bench/itp`` ... (``inspect eval rescue_bench/<task>``)."""


class InspectLogError(RescueError):
    """An inspect log the report cannot use; ``str(error)`` is one line naming the file."""

    def __init__(self, path: str | Path, message: str):
        self.path = str(path)
        self.message = message
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class TaskLog:
    """One task's finished log: where it is, what ran, and its result records in sample order."""

    path: Path
    task: str
    model: str
    judge: str | None
    data: str | None
    """The ``data`` task parameter (``None``: the bundled demo)."""
    mode: str
    context: int | None
    vp_rubric: str | None
    created: str
    usage: dict[str, Usage]
    records: list[ResultRow]

    @property
    def run_key(self) -> tuple[str, str | None, str | None, str, int | None]:
        """What makes two logs parts of one run: model, judge, data, cue mode and context."""
        return (self.model, self.judge, self.data, self.mode, self.context)


@dataclass(frozen=True)
class LoggedRun:
    """The logs of one run (:attr:`TaskLog.run_key`): the report's input for it."""

    path: Path
    """The log file or folder the user named."""
    logs: tuple[TaskLog, ...]

    @property
    def model(self) -> str:
        return self.logs[0].model

    @property
    def records(self) -> dict[str, list[ResultRow]]:
        """The result records by task, in the tasks' order."""
        by_task = {log.task: log.records for log in self.logs}
        return {task: by_task[task] for task in TASKS if task in by_task}

    @property
    def info(self) -> EvalRunInfo:
        """What ``run.json`` would say of the run: model, judge, the task parameters, the first log's
        start and the token usage summed over the logs."""
        first = self.logs[0]
        rubrics = {log.vp_rubric for log in self.logs if rule(log.task).authors_rubric}
        rubric = {"vp_rubric": rubrics.pop()} if rubrics else {}
        settings = RecordedSettings.model_validate({"data": first.data, "mode": first.mode, "context": first.context, **rubric})
        return EvalRunInfo(
            model=first.model,
            judge=first.judge,
            settings=settings,
            created=min(log.created for log in self.logs),
            usage=merge_usage([log.usage for log in self.logs]),
        )


def read_log_runs(path: str | Path) -> list[LoggedRun]:
    """The runs of a log file, or of the logs in a folder (sorted by file name: inspect_ai's names
    start with the time), each with one log per task; :class:`InspectLogError` on any problem."""
    root = Path(path)
    if root.is_dir():
        files = sorted(_local_path(info.name) for info in list_eval_logs(str(root), recursive=False))
        if not files:
            raise InspectLogError(root, "neither a `rescue eval` output folder (no summary.json) nor a folder of inspect logs (*.eval, *.json)")
    elif root.suffix not in LOG_SUFFIXES:
        raise InspectLogError(root, "neither an inspect log (*.eval, *.json) nor a `rescue eval` output folder")
    elif root.is_file():
        files = [root]
    else:
        raise InspectLogError(root, "no such file or folder")
    return group_runs(root, [read_task_log(file) for file in files])


def group_runs(root: Path, logs: Sequence[TaskLog]) -> list[LoggedRun]:
    """``logs`` grouped by :attr:`TaskLog.run_key`, in first-seen order; a task twice in a run is refused."""
    groups: dict[tuple[Any, ...], list[TaskLog]] = {}
    for log in logs:
        group = groups.setdefault(log.run_key, [])
        twin = next((other for other in group if other.task == log.task), None)
        if twin is not None:
            raise InspectLogError(
                root,
                f"two logs of rescue_bench/{log.task} with model {log.model} ({twin.path.name} and {log.path.name}); "
                "name the log file to report, or move the other one out of the folder",
            )
        group.append(log)
    return [LoggedRun(root, tuple(group)) for group in groups.values()]


def read_task_log(file: Path) -> TaskLog:
    """One finished log of a registered rescue_bench task (see the module's documentation)."""
    header = _read(file, header_only=True)
    spec = header.eval
    task = (spec.metadata or {}).get("rescue_task")
    if spec.task_registry_name != f"{REGISTRY_PREFIX}{task}" or task not in TASKS:
        if task in TASKS:
            raise InspectLogError(file, "a log written by `rescue eval`: report its run folder (the folder holding summary.json) instead")
        if isinstance(task, str):
            raise InspectLogError(file, f"a log of rescue_bench/{task}: `rescue report` reads the six tasks' logs; report the `rescue {task} eval` folder instead")
        raise InspectLogError(file, f"a log of the inspect task {spec.task!r}, not of a RESCUE-Bench task (rescue_bench/{', rescue_bench/'.join(TASKS)})")
    if header.status != "success":
        cause = f": {_one_line(header.error.message)}" if header.error is not None else ""
        raise InspectLogError(
            file, f"the eval did not finish (status {header.status}{cause}); re-run it, or `inspect eval-retry` it, and report the new log"
        )
    if spec.config.epochs not in (None, 1):
        raise InspectLogError(file, f"the eval ran {spec.config.epochs} epochs; the report scores each instance once (run it with --epochs 1)")
    samples = _read(file, header_only=False).samples or []
    if not samples:
        raise InspectLogError(file, "the log holds no samples (written with --no-log-samples?), so it holds no records")
    return TaskLog(
        path=file,
        task=task,
        model=spec.model,
        judge=_grader(spec.model_roles),
        data=spec.task_args.get("data"),
        mode=str((spec.metadata or {}).get("mode", "dialogue")),
        context=(spec.metadata or {}).get("context"),
        vp_rubric=(spec.metadata or {}).get("vp_rubric"),
        created=spec.created,
        usage={model: Usage.model_validate(usage.model_dump(exclude_none=True)) for model, usage in (header.stats.model_usage or {}).items()},
        records=_records(file, task, samples),
    )


def _records(file: Path, task: str, samples: Sequence[EvalSample]) -> list[ResultRow]:
    """The records of ``samples``, each checked against the result record's schema."""
    unscored = [s for s in samples if _record_of(s) is None]
    if unscored:
        first = unscored[0]
        why = f": {_one_line(first.error.message)}" if first.error is not None else ""
        raise InspectLogError(
            file, f"{len(unscored)} of {len(samples)} samples have no score (first: sample {first.id}{why}); re-run the eval or `inspect eval-retry` it"
        )
    records: list[ResultRow] = []
    for sample in samples:
        record = _record_of(sample)
        where = f"sample {sample.id}"
        if not isinstance(record, dict):
            raise InspectLogError(file, f"{where}: its record is a {type(record).__name__}, not a JSON object")
        try:
            ResultRecord.model_validate(record)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "(record)"
            message = "is missing" if error["type"] == "missing" else f"{error['msg'][0].lower()}{error['msg'][1:]}"
            raise InspectLogError(file, f"{where}: record field {field} {message}") from None
        if record["task"] != task or record["id"] != str(sample.id):
            raise InspectLogError(file, f"{where}: its record is of {record['task']} {record['id']!r}, not of this task's sample")
        records.append(cast(ResultRow, record))
    failed = [r for r in records if r.get("judge_failed")]
    if failed:
        raise InspectLogError(
            file,
            f"{len(failed)} of {len(records)} records have no judge score because the judge's call failed "
            f"(first: sample {failed[0]['id']}: {_one_line(str(failed[0].get('judge_error')))}); "
            "re-run the eval (finished calls come from the cache)",
        )
    return records


def _record_of(sample: EvalSample) -> object | None:
    score = (sample.scores or {}).get(SCORER)
    if score is None or not score.metadata:
        return None
    return score.metadata.get(RECORD_KEY)


def _read(file: Path, *, header_only: bool) -> EvalLog:
    try:
        return read_eval_log(str(file), header_only=header_only)
    except OSError as exc:
        raise InspectLogError(file, f"cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever a corrupt file raises inside inspect_ai's reader
        raise InspectLogError(file, f"not a readable inspect log ({type(exc).__name__}: {_one_line(str(exc))})") from None


def _grader(roles: dict[str, Any] | None) -> str | None:
    """The model bound to the ``grader`` role (the ER/VP judge), if any."""
    bound = (roles or {}).get("grader")
    if bound is None:
        return None
    configs = bound if isinstance(bound, list) else [bound]
    return ", ".join(str(config.model) for config in configs)


def _local_path(name: str) -> Path:
    """A local file of :func:`inspect_ai.log.list_eval_logs` (it names files as ``file://`` URIs)."""
    parsed = urlparse(name)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(name)


def _one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut at ``limit`` characters (an error's message can hold a traceback's worth)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
