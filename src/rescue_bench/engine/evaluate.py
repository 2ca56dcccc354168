"""Evaluating a run's instances in this process through inspect_ai; nothing is written but logs.

Speed (see docs/benchmarks.md): the result records are collected in memory as the scorer makes them
(the run's :class:`~rescue_bench.engine.channel.RunChannel`), not read back from the logs;
inspect_ai's realtime event buffer is off (it only feeds the live sample view of ``inspect view``
during a run), finished samples are written to the log 100 at a time, each compressed on one thread
(:func:`single_threaded_log_compression`), and inspect_ai's control server is off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rescue_bench.engine.settings import EvalSettings, Evaluated, RunInterrupted, RunSettings, eval_args, merge_usage, task_args
from rescue_bench.labels import Rubric
from rescue_bench.tasks.instance import Instance

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.engine.board import Board


def log_usage(logs: Sequence[Any]) -> dict[str, Any]:
    """Token usage per model, summed over the logs (headers only: no sample is loaded)."""
    parts = []
    for log in logs:
        for model, u in (log.stats.model_usage if log.stats and log.stats.model_usage else {}).items():
            part = {"input_tokens": u.input_tokens or 0, "output_tokens": u.output_tokens or 0, "total_tokens": u.total_tokens or 0}
            if getattr(u, "total_cost", None) is not None:
                part["total_cost"] = u.total_cost
            parts.append({model: part})
    return merge_usage(parts)


def _unscored(instance: Instance, error: str | None, authors_rubric: bool) -> dict[str, Any]:
    """The record of a sample that got no answer (the call failed after its retries): invalid."""
    from rescue_bench.engine.inspect_tasks import INSTANCE_FIELDS
    from rescue_bench.scoring import base_record, with_authors_judge

    record = base_record(instance.model_dump(mode="json", include=set(INSTANCE_FIELDS)), None)
    record["error"] = f"no answer: {error}" if error else "no answer"
    if record["task"] == "vp" and authors_rubric:
        record = with_authors_judge(record, None)
    return record


def sample_errors(logs: Sequence[Any], wanted: set[str]) -> dict[str, str]:
    """The error that stopped each sample of ``wanted`` that has one (the logs are read only if any is wanted)."""
    errors: dict[str, str] = {}
    for log in logs if wanted else []:
        for sample in log.samples or []:
            if sample.id in wanted and sample.error:
                errors[str(sample.id)] = sample.error.message
    return errors


def gather_records(
    chosen: Sequence[Instance], collected: dict[str, dict[str, Any]], logs: Sequence[Any], judged_rubric: Rubric | None
) -> list[dict[str, Any]]:
    """One record per instance of ``chosen``: the scorer's, else an invalid "no answer" record.

    ``judged_rubric`` is the VP rubric of a judged run (``None``: no judge). Only when some instance
    has no record are the logs read, for the error that stopped it.
    """
    wanted = {inst.id for inst in chosen if inst.id not in collected}
    errors = sample_errors(logs, wanted)
    authors = judged_rubric == "authors"
    return [collected.get(inst.id) or _unscored(inst, errors.get(inst.id), authors) for inst in chosen]


def evaluate(
    settings: EvalSettings,
    *,
    display: str = "full",
    worker: tuple[Board, int] | None = None,
    on_total: Callable[[int], None] | None = None,
    on_record: Callable[[], None] | None = None,
) -> tuple[int, Evaluated]:
    """Load, build and run the instances of ``settings`` through inspect_ai; write nothing but logs.

    ``worker=(board, k)``: this is worker ``k`` of a multi-worker run. It builds every instance and
    starts its tasks, which wait until the parent lets them call (or stops them: nothing evaluated,
    and the empty logs are removed), then claim instances from the board's work queue as they go,
    with the share of ``--max-connections`` the board gives this worker.
    ``on_total`` gets the number of instances of the whole run once they are built, ``on_record`` is
    called as each record is made. Returns (clips loaded, what was evaluated here).
    """
    from rescue_bench.data.load import load_clips
    from rescue_bench.engine.board import GO
    from rescue_bench.engine.channel import RunChannel
    from rescue_bench.engine.feed import UNBOUNDED_SLOTS, TaskFeed, WorkerFeed
    from rescue_bench.engine.inspect_tasks import instance_sample, rescue_task
    from rescue_bench.engine.video_mode import plan_video
    from rescue_bench.labels import TASKS, cue_mode
    from rescue_bench.tasks import BuildOptions, build_instances

    clips = load_clips(settings.data, repair_mojibake=settings.repair_mojibake)
    options = BuildOptions(mode=cue_mode(settings.mode)).with_context(settings.context)
    video = plan_video(settings)  # the video mode: each shown row's clip goes with it
    make_sample = video.sample if video is not None else instance_sample
    built = []
    for name in settings.tasks:
        instances = build_instances(clips, name, options)
        chosen = instances[: settings.limit] if settings.limit else instances
        if video is not None:  # instances with a missing clip are listed by run_eval, not run
            chosen = video.complete(chosen)
        if chosen:
            built.append((name, instances, chosen))
    if on_total is not None:
        on_total(sum(len(chosen) for _, _, chosen in built))
    feeds: dict[str, TaskFeed] = {}
    # inspect_ai's own per-model bound is the run's total (run_inspect); the channel's is the one that
    # binds: one bound on calls in flight over all tasks, model and judge together, with which the six
    # tasks run at the same time (sequential tasks left the CPU idle at each task's tail and start)
    if worker is None:
        channel = RunChannel(on_record, max_calls=settings.max_connections)
    else:
        board, index = worker
        gauge = board.gauge(index)
        # a worker's share, read from the board at every call (the parent sets it when the worker goes)
        channel = RunChannel(on_record, gauge=gauge)
        shared = WorkerFeed(board, index, lambda: gauge.limit() or UNBOUNDED_SLOTS)
        feeds = {name: TaskFeed(shared, TASKS.index(name), chosen, make_sample) for name, _, chosen in built}
    tasks = [
        rescue_task(
            name,
            instances,  # the baselines' pool: the whole set, whatever part is evaluated
            evaluate=chosen,
            mode=settings.mode,
            context=settings.context,
            vp_rubric=settings.vp_rubric,
            channel=channel,
            feed=feeds.get(name),
            sample=make_sample,
            **task_args(settings),
        )
        for name, instances, chosen in built
    ]
    logs = run_inspect(tasks, settings, display=display)
    if worker is not None and worker[0].state(worker[1]) != GO:  # stopped before its first call
        for log in logs:
            Path(log.location).unlink(missing_ok=True)  # empty: not worth a file beside the real ones
        return len(clips), Evaluated([], {}, [])
    if feeds:  # what this worker claimed
        evaluated = [inst for feed in feeds.values() for inst in feed.taken]
    else:
        evaluated = [inst for _, _, chosen in built for inst in chosen]
    records = gather_records(evaluated, channel.records, logs, settings.vp_rubric if settings.judge else None)
    unanswered = {r["id"]: r["error"] for inst, r in zip(evaluated, records) if inst.id not in channel.records}
    return len(clips), Evaluated(
        records,
        log_usage(logs),
        [getattr(log, "status", None) for log in logs],
        unanswered=unanswered,
        logs=[str(log.location) for log in logs],
        requests=dict(channel.requests),
    )


def single_threaded_log_compression() -> None:
    """Compress each sample of the ``.eval`` logs on the calling thread, not on a fresh pool of 12.

    inspect_ai makes a zstd compressor with 12 threads for every sample it writes. A sample is about
    25 KB of JSON, which one thread compresses in 0.08 ms; starting and joining the 12 threads costs
    0.8 ms of CPU and holds the event loop 2 ms per sample. Measured on the benchmark's ITP run: 25.7
    -> 20.6 ms of client CPU per call (docs/benchmarks.md). The bytes written are the same (zstd
    level 3 either way), so every reader of the logs, ``inspect view`` included, reads them as before.
    The knob is a module constant of inspect_ai's, set only where it exists as such.
    """
    try:
        from inspect_ai._util import zipfile as inspect_zipfile
    except ImportError:  # pragma: no cover - an inspect_ai without it: nothing to tune
        return
    if isinstance(getattr(inspect_zipfile, "_ZSTD_THREADS", None), int):
        inspect_zipfile._ZSTD_THREADS = 0


def run_inspect(tasks: Sequence[Any], settings: RunSettings, *, display: str) -> list[Any]:
    """Run inspect_ai ``tasks`` as ``rescue`` runs them, with the model, judge, limits and logging of
    ``settings`` (logs in ``OUT/logs``); their logs, or :class:`RunInterrupted`.

    With ``max_connections`` the tasks run at the same time (inspect_ai's ``max_tasks``; their calls
    are bounded by the run's channel, which holds a worker to its share); ``judge`` is bound to the
    ``grader`` role.
    """
    if not tasks:
        return []
    from inspect_ai import eval as inspect_eval

    from rescue_bench.engine.providers import (
        GRADER,
        ProviderSetupError,
        endpoint,
        get_provider_model,
        provider_args,
        route,
        setup_error_line,
    )
    from rescue_bench.labels import is_baseline

    model = route(settings.model)
    gen_args = eval_args(settings, tasks=len(tasks))
    single_threaded_log_compression()
    try:
        if settings.judge:
            gen_args["model_roles"] = {GRADER: get_provider_model(settings.judge)}
        logs = inspect_eval(
            list(tasks),
            model=model,
            model_base_url=endpoint(model),
            model_args={"seed": settings.seed} if is_baseline(model) else provider_args(model),
            log_dir=str(Path(settings.out) / "logs"),
            display=display,  # type: ignore[arg-type]
            fail_on_error=False,
            score_display=False,
            log_level="error",
            log_realtime=False,
            log_buffer=100,
            # inspect_ai's control channel (``inspect ctl``: live requeue/cancel of samples) is a web
            # app built before the first call; off unless asked for with inspect_ai's own variable
            ctl_server=None if os.environ.get("INSPECT_EVAL_CTL_SERVER") else False,
            **gen_args,
        )
    except KeyboardInterrupt as exc:
        raise RunInterrupted() from exc
    except Exception as exc:
        from inspect_ai._util.error import PrerequisiteError

        if isinstance(exc, PrerequisiteError):  # inspect_ai's provider set-up: a missing API key, a missing package
            raise ProviderSetupError(setup_error_line(exc)) from None
        raise
    # after Ctrl-C inspect_ai returns normally, with the logs of the tasks that finished only
    if len(logs) < len(tasks) or any(getattr(log, "status", "success") == "cancelled" for log in logs):
        raise RunInterrupted()
    return list(logs)
