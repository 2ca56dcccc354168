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
the garbage collector runs less often (``rescue_bench.gcpolicy``). A run against a fast endpoint
is CPU-bound in inspect_ai's per-sample work; ``workers`` spreads it over processes
(``rescue_bench.engine.workers``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.gcpolicy import fewer_gc_passes
from rescue_bench.labels import TASKS, cue_mode
from rescue_bench.tasks.instance import DEFAULT_CONTEXT

JUDGED = ("er", "vp")
T = TypeVar("T")


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
    workers: int = Field(default=1, ge=1)
    """Processes the instances are split over (``--workers``); ``max_connections`` is shared among them."""
    out: str = "rescue_runs/latest"
    assets: str | None = None
    """``--mode video``: the assets folder holding each row's clip (``rescue annotate clips``)."""


class RunInterrupted(RuntimeError):
    """The run was stopped before it finished (Ctrl-C); finished calls are cached."""


class WorkerFailed(RuntimeError):
    """A worker process of a ``--workers N`` run failed; the message is its one-line error."""


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
    if model.startswith(("openai-api/", "openai-video/")) and model.count("/") >= 2:
        # inspect_ai reads <SERVICE>_BASE_URL for these; passed explicitly for the same reason
        service = model.split("/")[1].upper().replace("-", "_")
        return os.environ.get(f"{service}_BASE_URL")
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
    parts = []
    for log in logs:
        for model, u in (log.stats.model_usage if log.stats and log.stats.model_usage else {}).items():
            part = {"input_tokens": u.input_tokens or 0, "output_tokens": u.output_tokens or 0, "total_tokens": u.total_tokens or 0}
            if getattr(u, "total_cost", None) is not None:
                part["total_cost"] = u.total_cost
            parts.append({model: part})
    return merge_usage(parts)


def _unscored(metadata: dict[str, Any], error: str | None, vp_rubric: str) -> dict[str, Any]:
    """The record of a sample that got no answer (the call failed after its retries): invalid."""
    from rescue_bench.scoring import base_record, with_authors_judge

    record = base_record(metadata, None)
    record["error"] = f"no answer: {error}" if error else "no answer"
    if record["task"] == "vp" and vp_rubric == "authors":
        record = with_authors_judge(record, None)
    return record


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


@dataclass
class Evaluated:
    """What evaluating a settings' instances (or one shard of them) gives back, before any output."""

    records: list[dict[str, Any]]
    """One record per evaluated instance (the scorer's, or an invalid "no answer" record)."""
    usage: dict[str, Any]
    """Token usage per model (see ``merge_usage``)."""
    statuses: list[str | None]
    """Status of every inspect_ai log written."""


def merge_usage(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Token usage per model summed over several :class:`Evaluated` (workers)."""
    usage: dict[str, Any] = {}
    for part in parts:
        for model, u in part.items():
            acc = usage.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
            for key, value in u.items():
                acc[key] = acc.get(key, 0) + value
    return usage


def shard_connections(max_connections: int | None, workers: int) -> int | None:
    """Each worker's part of ``--max-connections``: the total over all workers never exceeds it."""
    return None if max_connections is None else max(1, max_connections // workers)


def shard_of(items: Sequence[T], index: int, count: int) -> list[T]:
    """Worker ``index`` of ``count``'s part of ``items``: every count-th item from the index-th on.

    Interleaved rather than in blocks, so every worker gets the same mix of clips, rows and context
    lengths and the workers finish together; the parts are disjoint and together are ``items``.
    """
    if not 0 <= index < count:
        raise ValueError(f"shard {index} of {count} does not exist")
    return list(items[index::count])


def effective_workers(settings: EvalSettings) -> int:
    """Worker processes a run uses: 1 for the offline baselines (no calls to spread), and never more
    than ``--max-connections`` (every worker keeps at least one connection)."""
    if settings.model.startswith("baseline/"):
        return 1
    workers = max(1, settings.workers)
    if settings.max_connections is not None:
        workers = min(workers, max(1, settings.max_connections))
    return workers


def run_eval(settings: EvalSettings, *, display: str = "full") -> dict[str, Any]:
    """Run ``settings`` end to end and write the output folder; returns the summary.

    With ``settings.workers > 1`` the instances are split over that many worker processes
    (``rescue_bench.engine.workers``); the output is the same as with one process.
    Raises :class:`rescue_bench.data.DataError` for bad data, :class:`RunInterrupted` when stopped
    and :class:`WorkerFailed` when a worker process failed.
    """
    from rescue_bench.data.load import load_clips
    from rescue_bench.engine.video_mode import plan_video, write_missing

    with fewer_gc_passes():
        use_cache_dir()
        video = plan_video(settings)  # --mode video: model and clips checked before any call
        workers = effective_workers(settings)
        if workers > 1:
            from rescue_bench.engine.workers import run_workers

            clips = len(load_clips(settings.data, repair_mojibake=settings.repair_mojibake))  # bad data: one error, here
            evaluated = run_workers(settings, workers, display=display)
        else:
            clips, evaluated = evaluate(settings, display=display)
        write_missing(settings.out, video)
        return write_outputs(settings, evaluated, clips=clips, workers=workers, extra={"video": video.report()} if video else None)


def evaluate(
    settings: EvalSettings,
    *,
    display: str = "full",
    shard: tuple[int, int] = (0, 1),
    on_total: Callable[[int], None] | None = None,
    on_record: Callable[[], None] | None = None,
) -> tuple[int, Evaluated]:
    """Load, build and run the instances of ``settings`` through inspect_ai; write nothing but logs.

    ``shard=(k, n)``: only every n-th instance of each task from the k-th on (after ``--limit``),
    with ``1/n`` of ``--max-connections``; the n shards together are the whole run. ``on_total`` gets
    the number of instances to evaluate once they are built, ``on_record`` is called as each record
    is made. Returns (clips loaded, what was evaluated).
    """
    from inspect_ai import eval as inspect_eval

    from rescue_bench.data.load import load_clips
    from rescue_bench.engine.baseline_api import register_instances
    from rescue_bench.engine.inspect_tasks import CALL_SLOTS, COLLECTED, rescue_task
    from rescue_bench.tasks import BuildOptions, build_instances

    index, count = shard
    clips = load_clips(settings.data, repair_mojibake=settings.repair_mojibake)
    options = BuildOptions(mode=cue_mode(settings.mode)).with_context(settings.context)  # type: ignore[arg-type]
    from rescue_bench.engine.video_mode import plan_video

    video = plan_video(settings)  # the video mode: each shown row's clip goes with it
    is_baseline = settings.model.startswith("baseline/")
    collect = uuid.uuid4().hex
    tasks = []
    evaluated: list[Any] = []
    for name in settings.tasks:
        instances = build_instances(clips, name, options)
        register_instances(instances)  # baselines cross-validate over the whole set, even under --limit
        chosen = instances[: settings.limit] if settings.limit else instances
        if video is not None:  # instances with a missing clip are listed by run_eval, not run
            chosen = video.complete(chosen)
        chosen = shard_of(chosen, index, count)
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
                sample=video.sample if video is not None else None,
            )
        )
    if on_total is not None:
        on_total(len(evaluated))
    model_args = {"seed": settings.seed} if is_baseline else provider_args(settings.model)
    gen_args: dict[str, Any] = {}
    connections = shard_connections(settings.max_connections, count)
    if connections is not None:
        gen_args["max_connections"] = connections
        # the six tasks run at the same time under one bound on calls in flight (model and judge
        # together): sequential tasks left the CPU idle at each task's tail and start
        import anyio

        CALL_SLOTS[collect] = anyio.Semaphore(connections)
        gen_args["max_tasks"] = max(1, len(tasks))
    if settings.max_retries is not None:
        gen_args["max_retries"] = settings.max_retries
    if settings.timeout is not None:
        # per attempt, then retried: inspect_ai's ``timeout`` would instead bound a call with all its
        # retries, and a stalled connection would hold its slot until the client's own 10-minute limit
        gen_args["attempt_timeout"] = settings.timeout
    COLLECTED[collect] = _Collector(on_record)
    try:
        logs = inspect_eval(
            tasks,
            model=settings.model,
            model_base_url=endpoint(settings.model),
            model_args=model_args,
            log_dir=str(Path(settings.out) / "logs"),
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
        CALL_SLOTS.pop(collect, None)
    # after Ctrl-C inspect_ai returns normally, with the logs of the tasks that finished only
    if len(logs) < len(tasks) or any(getattr(log, "status", "success") == "cancelled" for log in logs):
        raise RunInterrupted("cancelled")
    records = _gather_records(evaluated, collected, logs, settings.vp_rubric)
    return len(clips), Evaluated(records, _usage(logs), [getattr(log, "status", None) for log in logs])


class _Collector(dict):  # type: ignore[type-arg]
    """``COLLECTED`` entry of a run: records by instance id, telling ``on_record`` about each new one."""

    def __init__(self, on_record: Callable[[], None] | None) -> None:
        super().__init__()
        self._on_record = on_record

    def __setitem__(self, key: str, value: dict[str, Any]) -> None:
        new = key not in self
        super().__setitem__(key, value)
        if new and self._on_record is not None:
            self._on_record()


def write_outputs(
    settings: EvalSettings, evaluated: Evaluated, *, clips: int, workers: int = 1, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """BERTScore, then ``results/``, ``summary.json`` and ``run.json`` (plus ``extra``); returns the summary."""
    from importlib.metadata import version

    from rescue_bench.scoring import summarize
    from rescue_bench.tasks import BuildOptions

    out = Path(settings.out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    records = evaluated.records
    backbone = add_bertscore(records, settings.bertscore_model) if settings.bertscore else None
    # one canonical order (task, clip, row): the summary is computed from the records exactly as
    # they are written, so anyone recomputing it from results/ gets the same floats (with any
    # number of workers)
    records.sort(key=lambda r: (r["task"], r["sample_id"], r["row"]))
    by_task: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_task.setdefault(record["task"], []).append(record)
    for name, rows in by_task.items():
        _write_jsonl(out / "results" / f"{name}.jsonl", rows)
    summary = summarize(records)
    _write_json(out / "summary.json", summary)
    options = BuildOptions(mode=cue_mode(settings.mode)).with_context(settings.context)  # type: ignore[arg-type]
    context = {t: options.window(t) for t in DEFAULT_CONTEXT}
    _write_json(
        out / "run.json",
        {
            "settings": settings.model_dump(),
            "model": settings.model,
            "judge": settings.judge,
            "judge_prompt_sha": judge_fingerprint() if settings.judge else None,
            "context_windows": context,
            "clips": clips,
            "workers": workers,
            "bertscore_backbone": backbone,
            "usage": evaluated.usage,
            "versions": {
                "rescue_bench": _version(),
                "inspect_ai": version("inspect_ai"),
                "python": platform.python_version(),
            },
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "status": evaluated.statuses,
            **(extra or {}),
        },
    )
    return summary


def _version() -> str:
    from rescue_bench import __version__

    return __version__
