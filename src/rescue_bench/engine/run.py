"""Driving a whole evaluation: build instances, run inspect_ai, write the output folder.

Output folder (read by ``rescue report`` and other tools)::

    DIR/results/<task>.jsonl   one record per instance (rescue_bench.scoring.base_record + judge + BERTScore)
    DIR/summary.json           {task: {scenario: {metric: value, "n", "invalid_rate"}}}
    DIR/run.json               the recorded configuration (model, judge and its prompt, options, versions, usage)
    DIR/logs/                  inspect_ai logs (``inspect view --log-dir DIR/logs``)

Resuming: every model and judge call goes through inspect_ai's response cache (in ``RESCUE_CACHE_DIR``
when set), so running the same command again after Ctrl-C or ``kill -9`` repeats no finished call.
A stopped run writes no results (``RunInterrupted``), so a partial run is never taken for a finished one.

API keys are read from the environment by the providers and never written anywhere.

Speed (see docs/benchmarks.md): the result records are collected in memory as the scorer makes them,
not read back from the logs; inspect_ai's realtime event buffer is off (it only feeds the live sample
view of ``inspect view`` during a run), finished samples are written to the log 100 at a time, and
the garbage collector runs less often (``GC_THRESHOLD``).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import platform
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.labels import TASKS
from rescue_bench.tasks.instance import DEFAULT_CONTEXT

JUDGED = ("er", "vp")


class EvalSettings(BaseModel):
    """Everything that defines a run; written to ``run.json`` (no secrets in here)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "baseline/majority"
    judge: str | None = None
    vp_rubric: str = "default"
    data: list[str] | None = None
    tasks: list[str] = Field(default_factory=lambda: list(TASKS))
    mode: str = "dialogue"
    context: int | None = None
    limit: int | None = None
    max_connections: int | None = None
    max_retries: int | None = None
    timeout: int | None = None
    """Seconds one attempt of a model or judge call may take before it is abandoned and retried."""
    temperature: float | None = 0.0
    repair_mojibake: bool = False
    bertscore: bool = True
    bertscore_model: str | None = None
    cache: bool = True
    seed: int = 0
    log_samples: bool = True
    """Write every sample (messages, events) to the inspect logs; off saves about a third of the run time."""
    out: str = "rescue_runs/latest"


class RunInterrupted(RuntimeError):
    """The run was stopped before it finished (Ctrl-C); finished calls are cached."""


def provider_args(model: str) -> dict[str, Any]:
    """Model args that make ``openai/<name>`` talk to any OpenAI-compatible server.

    With ``OPENAI_BASE_URL`` set the endpoint is a compatible server (vLLM, Ollama, DashScope,
    DeepSeek ...), which speaks Chat Completions; inspect_ai would otherwise pick the Responses API
    for some model names. ``RESCUE_RESPONSES_API=1`` keeps the Responses API.
    """
    if model.startswith("openai/") and os.environ.get("OPENAI_BASE_URL") and not os.environ.get("RESCUE_RESPONSES_API"):
        return {"responses_api": False}
    return {}


def endpoint(model: str) -> str | None:
    """The base URL ``openai/<name>`` talks to, read when the run starts.

    Passed to inspect_ai explicitly because it memoizes model clients by base URL: a process that
    runs twice against different endpoints (tests, notebooks) must not reuse the first client.
    """
    return os.environ.get("OPENAI_BASE_URL") if model.startswith("openai/") else None


def use_cache_dir() -> str | None:
    """Point inspect_ai's response cache at ``RESCUE_CACHE_DIR`` when that is set."""
    cache_dir = os.environ.get("RESCUE_CACHE_DIR")
    if cache_dir:
        os.environ["INSPECT_CACHE_DIR"] = cache_dir
    return cache_dir


def judge_fingerprint() -> str:
    """A hash of the judge prompts, recorded so judged numbers say which rubric made them."""
    from rescue_bench.prompts.render import ER_RUBRIC, JUDGE_SYSTEM, VP_RUBRIC, VP_RUBRIC_AUTHORS

    text = "\n".join([JUDGE_SYSTEM, ER_RUBRIC, VP_RUBRIC, VP_RUBRIC_AUTHORS])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _usage(logs: Sequence[Any]) -> dict[str, Any]:
    """Token usage per model, summed over the logs (headers only: no sample is loaded)."""
    usage: dict[str, Any] = {}
    for log in logs:
        if log.stats and log.stats.model_usage:
            for model, u in log.stats.model_usage.items():
                acc = usage.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
                acc["input_tokens"] += u.input_tokens or 0
                acc["output_tokens"] += u.output_tokens or 0
                acc["total_tokens"] += u.total_tokens or 0
                if getattr(u, "total_cost", None) is not None:
                    acc["total_cost"] = acc.get("total_cost", 0.0) + u.total_cost
    return usage


def _unscored(metadata: dict[str, Any], error: str | None, vp_rubric: str) -> dict[str, Any]:
    """The record of a sample that got no answer (the call failed after its retries): invalid."""
    from rescue_bench.scoring import base_record, with_authors_judge

    record = base_record(metadata, None)
    record["error"] = f"no answer: {error}" if error else "no answer"
    if record["task"] == "vp" and vp_rubric == "authors":
        record = with_authors_judge(record, None)
    return record


def _records_from_logs(logs: Sequence[Any], vp_rubric: str = "default") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Result records of every sample read back from the logs; a sample that failed is invalid."""
    records: list[dict[str, Any]] = []
    for log in logs:
        for sample in log.samples or []:
            score = (sample.scores or {}).get("rescue_scorer")
            if score is not None and score.metadata and "record" in score.metadata:
                records.append(score.metadata["record"])
            else:
                records.append(_unscored(sample.metadata, sample.error.message if sample.error else None, vp_rubric))
    return records, _usage(logs)


def _gather_records(
    chosen: Sequence[Any], collected: dict[str, dict[str, Any]], logs: Sequence[Any], vp_rubric: str
) -> list[dict[str, Any]]:
    """One record per instance of ``chosen``: the scorer's, else an invalid "no answer" record.

    Only when some instance has no record are the logs read, for the error that stopped it.
    """
    from rescue_bench.engine.inspect_tasks import INSTANCE_FIELDS

    wanted = {inst.id for inst in chosen if inst.id not in collected}
    errors: dict[str, str] = {}
    for log in logs if wanted else []:
        for sample in log.samples or []:
            if sample.id in wanted and sample.error:
                errors[str(sample.id)] = sample.error.message
    return [
        collected.get(inst.id)
        or _unscored(inst.model_dump(mode="json", include=set(INSTANCE_FIELDS)), errors.get(inst.id), vp_rubric)
        for inst in chosen
    ]


def add_bertscore(records: list[dict[str, Any]], backbone: str | None) -> str | None:
    """Fill ``bertscore`` of valid ER/VP records in one batch; return the backbone used (None if skipped)."""
    from rescue_bench.bertscore import BertScoreUnavailable, bertscore_f1, default_backbone
    from rescue_bench.scoring import bertscore_pairs

    todo = [(r, pair) for r in records if (pair := bertscore_pairs(r)) is not None]
    if not todo:
        return None
    try:
        backbone = backbone or default_backbone()
        scores = bertscore_f1([p for _, (p, _) in todo], [g for _, (_, g) in todo], backbone=backbone)
    except BertScoreUnavailable:
        return None
    for (record, _), value in zip(todo, scores):
        record["bertscore"] = value
    return backbone


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


GC_THRESHOLD = (50_000, 20, 100)
"""Garbage-collector thresholds during a run (Python's default is 700, 10, 10).

A run allocates millions of small, long-lived objects (clips, instances, inspect_ai samples, events
and logs) and almost no reference cycles; with the default thresholds the collector keeps re-scanning
them, which cost about a fifth of a run's CPU time and three quarters of building the instances of a
large release (docs/benchmarks.md). The previous thresholds are restored when the run ends.
"""


@contextlib.contextmanager
def _fewer_gc_passes() -> Iterator[None]:
    old = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(GC_THRESHOLD, old)))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def run_eval(settings: EvalSettings, *, display: str = "full") -> dict[str, Any]:
    """Run ``settings`` end to end and write the output folder; returns the summary.

    Raises :class:`rescue_bench.data.DataError` for bad data and :class:`RunInterrupted` when stopped.
    """
    with _fewer_gc_passes():
        return _run_eval(settings, display)


def _run_eval(settings: EvalSettings, display: str) -> dict[str, Any]:
    import inspect_ai
    from inspect_ai import eval as inspect_eval

    from rescue_bench.data.load import load_clips
    from rescue_bench.engine.inspect_tasks import COLLECTED, rescue_task
    from rescue_bench.engine.baseline_api import register_instances
    from rescue_bench.scoring import summarize
    from rescue_bench.tasks import BuildOptions, build_instances

    use_cache_dir()
    out = Path(settings.out)
    clips = load_clips(settings.data, repair_mojibake=settings.repair_mojibake)
    options = BuildOptions(mode=settings.mode).with_context(settings.context)  # type: ignore[arg-type]
    is_baseline = settings.model.startswith("baseline/")
    collect = uuid.uuid4().hex
    tasks = []
    evaluated: list[Any] = []
    for name in settings.tasks:
        instances = build_instances(clips, name, options)
        register_instances(instances)  # baselines cross-validate over the whole set, even under --limit
        chosen = instances[: settings.limit] if settings.limit else instances
        if not chosen:
            continue
        evaluated += chosen
        tasks.append(
            rescue_task(
                name,
                instances=chosen,
                judge=settings.judge if name in JUDGED else None,
                mode=settings.mode,
                context=settings.context,
                cache=settings.cache and not is_baseline,
                temperature=settings.temperature,
                vp_rubric=settings.vp_rubric,
                attempt_timeout=settings.timeout,
                collect=collect,
            )
        )
    (out / "results").mkdir(parents=True, exist_ok=True)
    model_args = {"seed": settings.seed} if is_baseline else provider_args(settings.model)
    gen_args: dict[str, Any] = {}
    for key in ("max_connections", "max_retries"):
        if getattr(settings, key) is not None:
            gen_args[key] = getattr(settings, key)
    if settings.timeout is not None:
        # per attempt, then retried: inspect_ai's ``timeout`` would instead bound a call with all its
        # retries, and a stalled connection would hold its slot until the client's own 10-minute limit
        gen_args["attempt_timeout"] = settings.timeout
    COLLECTED[collect] = {}
    try:
        logs = inspect_eval(
            tasks,
            model=settings.model,
            model_base_url=endpoint(settings.model),
            model_args=model_args,
            log_dir=str(out / "logs"),
            display=display,  # type: ignore[arg-type]
            fail_on_error=False,
            score_display=False,
            log_level="error",
            log_realtime=False,
            log_buffer=100,
            log_samples=settings.log_samples,
            **gen_args,
        ) if tasks else []
    except KeyboardInterrupt as exc:
        raise RunInterrupted("interrupted") from exc
    finally:
        collected = COLLECTED.pop(collect, {})
    # after Ctrl-C inspect_ai returns normally, with the logs of the tasks that finished only
    if len(logs) < len(tasks) or any(getattr(log, "status", "success") == "cancelled" for log in logs):
        raise RunInterrupted("cancelled")
    records = _gather_records(evaluated, collected, logs, settings.vp_rubric)
    usage = _usage(logs)
    backbone = add_bertscore(records, settings.bertscore_model) if settings.bertscore else None
    # one canonical order (task, clip, row): the summary is computed from the records exactly as
    # they are written, so anyone recomputing it from results/ gets the same floats
    records.sort(key=lambda r: (r["task"], r["sample_id"], r["row"]))
    by_task: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_task.setdefault(record["task"], []).append(record)
    for name, rows in by_task.items():
        _write_jsonl(out / "results" / f"{name}.jsonl", rows)
    summary = summarize(records)
    _write_json(out / "summary.json", summary)
    context = {t: options.window(t) for t in DEFAULT_CONTEXT}
    _write_json(
        out / "run.json",
        {
            "settings": settings.model_dump(),
            "model": settings.model,
            "judge": settings.judge,
            "judge_prompt_sha": judge_fingerprint() if settings.judge else None,
            "context_windows": context,
            "clips": len(clips),
            "bertscore_backbone": backbone,
            "usage": usage,
            "versions": {
                "rescue_bench": _version(),
                "inspect_ai": inspect_ai.__version__,
                "python": platform.python_version(),
            },
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "status": [getattr(log, "status", None) for log in logs],
        },
    )
    return summary


def _version() -> str:
    from rescue_bench import __version__

    return __version__
