"""The output folder of a run, written once everything is evaluated.

    DIR/results/<task>.jsonl   one record per instance (rescue_bench.scoring.base_record + judge + BERTScore)
    DIR/summary.json           {task: {scenario: {metric: value, "n", "invalid_rate"}}}
    DIR/run.json               what the run was and how it went (rescue_bench.runinfo.EvalRunInfo): status and
                               counts, identity, settings, model, judge and its prompt, requests, data, workers, versions, usage
    DIR/logs/                  inspect_ai logs (``inspect view --log-dir DIR/logs``), written during the run

Files are written whole or not at all (:mod:`rescue_bench.fileio`), so a reader never sees half a
file. A failed run (instances without an answer, failed judge calls: :mod:`rescue_bench.engine.runfolder`)
writes ``results/`` and ``run.json`` (status ``failed`` with the counts) but no ``summary.json``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from rescue_bench.engine.runfolder import RunStart, RunStatus, counts, failure_line, finish_run
from rescue_bench.engine.runfolder import versions as versions  # rescue review export-practice records them too
from rescue_bench.engine.settings import JUDGE_TEMPERATURE, EvalSettings, Evaluated, RunSettings
from rescue_bench.fileio import atomic_write_json, atomic_write_jsonl
from rescue_bench.labels import POOLED
from rescue_bench.records import ResultRow
from rescue_bench.runinfo import (
    BertscoreUse,
    Counts,
    EvalRunInfo,
    GenerateRequest,
    OverflowReport,
    RequestRecord,
    RunResult,
    VideoReport,
    WorkersChoice,
)
from rescue_bench.summary import EvalSummary, LeftOutRecord, summary_json


def judge_fingerprint() -> str:
    """A hash of the judge prompts, recorded so judged numbers say which rubric made them."""
    from rescue_bench.prompts.render import ER_RUBRIC, JUDGE_SYSTEM, VP_RUBRIC, VP_RUBRIC_AUTHORS

    text = "\n".join([JUDGE_SYSTEM, ER_RUBRIC, VP_RUBRIC, VP_RUBRIC_AUTHORS])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def add_bertscore(records: list[ResultRow], backbone: str | None) -> str | None:
    """Fill ``bertscore`` of ER/VP records: valid ones scored in one batch, invalid ones BERTScore's
    floor; return the backbone used (``None``: BERTScore is not installed, or the run has no ER/VP
    record, and every ``bertscore`` stays empty)."""
    from rescue_bench.bertscore import BertScoreUnavailable, bertscore_f1, usable_backbone
    from rescue_bench.scoring import bertscore_pairs, with_bertscore_floor
    from rescue_bench.task_table import rule

    judged = [i for i, r in enumerate(records) if rule(r["task"]).judged]
    if not judged:
        return None
    # the log's metric scored some already (inspect eval, a resumed run): those are kept
    todo = [(r, pair) for r in records if r.get("bertscore") is None and (pair := bertscore_pairs(r)) is not None]
    try:
        backbone = usable_backbone(backbone)
        scores = bertscore_f1([p for _, (p, _) in todo], [g for _, (_, g) in todo], backbone=backbone) if todo else []
    except BertScoreUnavailable:
        return None
    for (record, _), value in zip(todo, scores):
        record["bertscore"] = value
    for i in judged:
        records[i] = with_bertscore_floor(records[i])
    return backbone


def preload() -> None:
    """Import what writing the outputs needs and a run does not: scikit-learn, for the summary's metrics.

    The parent of a multi-worker run calls it in a thread while the workers work, so the ~1 s import
    is not added to the end of the run (``rescue_bench.metrics`` imports it only when summarising)."""
    import sklearn.metrics  # noqa: F401


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """``rows`` as JSON Lines at ``path``, atomically (strict JSON: no NaN)."""
    atomic_write_jsonl(path, rows)


def write_json(path: Path, obj: Any) -> None:
    """``obj`` as indented JSON at ``path``, atomically (strict JSON: no NaN)."""
    atomic_write_json(path, obj)


def write_results(folder: Path, records: list[ResultRow], left_out: Mapping[str, Sequence[LeftOutRecord]] | None = None) -> EvalSummary:
    """``folder/results/<task>.jsonl`` and ``folder/summary.json`` of task records; returns the summary.

    The records are put in one canonical order (task, clip, row) first, and the summary is computed
    from them exactly as they are written, so anyone recomputing it from ``results/`` gets the same
    floats (with any number of workers). ``left_out``: per task, the instances ``--lenient`` left
    out, named in each scenario's entry.
    """
    from rescue_bench.scoring import summarize

    (folder / "results").mkdir(parents=True, exist_ok=True)
    records.sort(key=lambda r: (r["task"], r["sample_id"], r["row"]))
    by_task: dict[str, list[ResultRow]] = {}
    for record in records:
        by_task.setdefault(record["task"], []).append(record)
    for name, rows in by_task.items():
        write_jsonl(folder / "results" / f"{name}.jsonl", rows)
    computed = summarize(records)
    if left_out is not None:  # --lenient: each entry names the instances it left out
        for task, per in computed.items():
            for scenario, entry in per.items():
                entry["left_out"] = [r.model_dump() for r in left_out.get(task, ()) if scenario in (POOLED, r.scenario)]
    summary = EvalSummary.model_validate(computed)
    write_json(folder / "summary.json", summary_json(summary))
    return summary


def intended_request(settings: RunSettings) -> GenerateRequest:
    """The generation settings a run means to send with every call of the model under evaluation."""
    return GenerateRequest(temperature=settings.temperature, seed=settings.seed, max_tokens=settings.max_tokens, system_role="system")


def request_record(intended: GenerateRequest, sent: GenerateRequest | None, previous: RequestRecord | None) -> RequestRecord:
    """``run.json``'s record of a request: intended beside sent (kept from the run being resumed when
    every reply came from the cache this time)."""
    if sent is None and previous is not None and previous.sent:
        return RequestRecord(intended=intended, sent=previous.sent, sent_by="an earlier run of this folder (every reply cached now)")
    return RequestRecord(intended=intended, sent=sent, sent_by="this run" if sent is not None else None)


def run_status(
    records: Sequence[Mapping[str, Any]], evaluated: Evaluated[Any], absorbed: list[str] | None = None, numbers: Counts | None = None
) -> RunStatus:
    """``status``, ``counts`` and ``failure`` of ``run.json`` (``failure`` is the one line of a failed run).

    ``absorbed``: errors of calls that failed and that the caller went on without (an agent's chain
    steps and judge calls); they fail the run too. ``numbers``: the run's counts when its kind counts
    more than :func:`~rescue_bench.engine.runfolder.counts` does (``rescue eval``'s answers)."""
    tally: Counts = dict(numbers) if numbers is not None else dict(counts(records, evaluated.unanswered))
    messages = [m.removeprefix("no answer: ") for m in evaluated.unanswered.values()]
    messages += [str(r.get("judge_error")) for r in records if r.get("judge_failed")]
    if absorbed is not None:
        tally["failed_calls"] = len(absorbed)
        messages += absorbed
    errored = sum(1 for status in evaluated.statuses if status == "error")
    if errored:  # an inspect_ai task that ended in error (its scorer or metrics failed): not a finished run
        tally["task_errors"] = errored
        messages.append(f"{errored} inspect_ai task logs ended in error (inspect view --log-dir {evaluated.logs and Path(evaluated.logs[0]).parent})")
    line = failure_line(tally, messages)
    return RunStatus("failed" if line else "success", tally, line)


def overflow_report(records: Sequence[ResultRow], policy: str) -> OverflowReport:
    """``run.json``'s ``overflow``: the prompts that did not fit the model's window, and those trimmed to fit."""
    from rescue_bench.scoring import overflow_counts

    per_task = overflow_counts(records)
    total = {key: sum(per["both"][key] for per in per_task.values()) for key in ("instances", "overflow", "trimmed")}
    return OverflowReport(policy=policy, **total, per_task=per_task)


def overflow_failure(report: OverflowReport, records: Sequence[ResultRow]) -> str:
    """The one line of a run failed by ``--on-overflow fail``: the count, where, and the provider's words."""
    where = ", ".join(f"{task} {per['both']['overflow']}" for task, per in report.per_task.items() if per["both"]["overflow"])
    said = next((r["error"].removeprefix("context overflow: ") for r in records if r.get("cause") == "context_overflow" and r["error"]), "")
    return (
        f"context overflow: {report.overflow} of {report.instances} prompts do not fit the model's context window ({where}) "
        f"and --on-overflow is fail ({said}); use a model with a longer window, fewer rows (--context N) or --on-overflow trim"
    )


def write_outputs(
    start: RunStart,
    evaluated: Evaluated[ResultRow],
    *,
    clips: int,
    workers: int = 1,
    choice: WorkersChoice | None = None,
    video: VideoReport | None = None,
    left_out: Mapping[str, Sequence[LeftOutRecord]] | None = None,
) -> RunResult[EvalRunInfo, EvalSummary]:
    """BERTScore, then ``results/``, ``summary.json`` and ``run.json``; returns the summary and the run info.

    ``start``: the run's claim on its folder (its settings, and the ``run.json`` it resumes);
    ``workers``: the processes that made calls; ``choice``: how that number was chosen
    (``run.workers_choice``), recorded as ``workers_choice``; ``video``: the video mode's clip report
    (``run.json``'s ``video``); ``left_out``: per task, the instances ``--lenient`` left out (``run.json``'s
    ``left_out``, and each summary entry's). A failed run raises :class:`~rescue_bench.engine.runfolder.RunFailed`
    once ``results/`` and ``run.json`` are written (no ``summary.json``).
    """
    from rescue_bench.scoring import answer_counts
    from rescue_bench.tasks import DEFAULT_CONTEXT, BuildOptions

    settings = cast(EvalSettings, start.settings)
    out = Path(settings.out)
    records = evaluated.records
    backbone = add_bertscore(records, settings.bertscore_model) if settings.bertscore else None
    outcome = run_status(records, evaluated, numbers=cast(Counts, answer_counts(records, evaluated.unanswered).model_dump()))
    overflow = overflow_report(records, settings.on_overflow)
    if settings.on_overflow == "fail" and overflow.overflow and outcome.status != "failed":
        outcome = RunStatus("failed", outcome.counts, overflow_failure(overflow, records))
    if outcome.status == "failed":
        summary = write_failed_results(out, records)
    else:
        summary = write_results(out, records, left_out)
    options = BuildOptions.for_run(settings.mode, settings.context)
    before = start.previous
    info = finish_run(
        start,
        outcome,
        EvalRunInfo,
        judge_prompt_sha=judge_fingerprint() if settings.judge else None,
        request=request_record(intended_request(settings), evaluated.requests.get("model"), before.request if before else None),
        judge_request=request_record(
            judge_intended(settings), evaluated.requests.get("judge"), before.judge_request if before else None
        ) if settings.judge else None,
        context_windows={t: options.window(t) for t in DEFAULT_CONTEXT},
        clips=clips,
        workers=workers,
        workers_choice=choice,
        bertscore=BertscoreUse(requested=settings.bertscore, used=backbone is not None, backbone=backbone),
        bertscore_backbone=backbone,
        usage=evaluated.usage,
        usage_by_role=evaluated.role_usage,
        log_statuses=evaluated.statuses,
        overflow=overflow,
        **({"video": video} if video is not None else {}),
        **({"left_out": {task: list(items) for task, items in left_out.items()}} if left_out is not None else {}),
    )
    return RunResult(summary, info)


def judge_intended(settings: RunSettings) -> GenerateRequest:
    """What the judge is meant to be sent (:data:`~rescue_bench.engine.settings.JUDGE_TEMPERATURE`, the seed)."""
    return GenerateRequest(temperature=JUDGE_TEMPERATURE, seed=settings.seed, max_tokens=settings.judge_max_tokens, system_role="system")


def write_failed_results(folder: Path, records: list[ResultRow]) -> EvalSummary:
    """``results/`` of a failed run, and no ``summary.json`` (a stale one is removed): its numbers
    would mix the model's answers with calls that never reached it. Returns an empty summary."""
    (folder / "results").mkdir(parents=True, exist_ok=True)
    records.sort(key=lambda r: (r["task"], r["sample_id"], r["row"]))
    by_task: dict[str, list[ResultRow]] = {}
    for record in records:
        by_task.setdefault(record["task"], []).append(record)
    for name, rows in by_task.items():
        write_jsonl(folder / "results" / f"{name}.jsonl", rows)
    (folder / "summary.json").unlink(missing_ok=True)
    return EvalSummary({})
