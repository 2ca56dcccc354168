"""Evaluating a run's plan (:mod:`rescue_bench.engine.plan`) in this process through inspect_ai;
nothing is written but logs. One process and each worker of a multi-worker run come here alike: what
differs is the static shard of the instances a process takes.

Speed (see docs/benchmarks.md): the result records are collected in memory as the scorer makes them
(the run's :class:`~rescue_bench.engine.channel.RunChannel`), not read back from the logs;
inspect_ai's realtime event buffer is off (it only feeds the live sample view of ``inspect view``
during a run), finished samples are written to the log 100 at a time, and inspect_ai's control
server is off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rescue_bench.engine.settings import (
    Evaluated,
    RunInterrupted,
    RunSettings,
    eval_args,
    judge_config,
    share_connections,
    task_args,
)
from rescue_bench.engine.settings import shard as shard_of
from rescue_bench.labels import Rubric
from rescue_bench.records import ResultRow
from rescue_bench.runinfo import Usage, merge_usage
from rescue_bench.tasks.instance import Instance

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.engine.plan import RunPlan


def log_usage(logs: Sequence[Any]) -> dict[str, Usage]:
    """Token usage per model, summed over the logs (headers only: no sample is loaded)."""
    parts = []
    for log in logs:
        for model, u in (log.stats.model_usage if log.stats and log.stats.model_usage else {}).items():
            parts.append({model: _usage(u)})
    return merge_usage(parts)


ROLE_OF = {"grader": "judge", "simulator": "simulator"}
"""Our name of each inspect_ai model role a run binds (the judge is inspect_ai's ``grader``)."""


def role_usage(logs: Sequence[Any], main: str = "model") -> dict[str, Usage]:
    """Token usage per role, summed over the logs (headers only): the judge and the simulator from
    inspect_ai's usage per role, and ``main`` (the model under evaluation, or the drafter), the rest:
    so each role has its own count even when two roles are the same model."""
    roles: list[dict[str, Usage]] = []
    for log in logs:
        for role, u in (log.stats.role_usage if log.stats and log.stats.role_usage else {}).items():
            roles.append({ROLE_OF.get(role, role): _usage(u)})
    by_role = merge_usage(roles)
    total = merge_usage([{main: part} for part in log_usage(logs).values()]).get(main)
    if total is not None:
        rest = total - merge_usage([{main: r} for r in by_role.values()]).get(main, Usage())
        if rest.input_tokens or rest.output_tokens or rest.total_tokens:
            by_role = {main: rest, **by_role}
    return by_role


def _usage(u: Any) -> Usage:
    """inspect_ai's ``ModelUsage``: the counts a run records, and the cost when there is one."""
    part = Usage(input_tokens=u.input_tokens or 0, output_tokens=u.output_tokens or 0, total_tokens=u.total_tokens or 0)
    if getattr(u, "total_cost", None) is not None:
        part.total_cost = u.total_cost
    return part


def _unscored(instance: Instance, error: str | None, authors_rubric: bool) -> ResultRow:
    """The record of a sample that got no answer (the call failed after its retries): invalid."""
    from rescue_bench.engine.inspect_tasks import INSTANCE_FIELDS
    from rescue_bench.scoring import base_record, with_authors_judge
    from rescue_bench.task_table import rule

    record = base_record(instance.model_dump(mode="json", include=set(INSTANCE_FIELDS)), None, error=f"no answer: {error}" if error else "no answer")
    if authors_rubric and rule(record["task"]).authors_rubric:
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
    chosen: Sequence[Instance],
    collected: dict[str, ResultRow],
    logs: Sequence[Any],
    judged_rubric: Rubric | None,
    known: dict[str, str] | None = None,
) -> list[ResultRow]:
    """One record per instance of ``chosen``: the scorer's, else an invalid "no answer" record.

    ``judged_rubric`` is the VP rubric of a judged run (``None``: no judge). ``known``: the error of
    a failed call by sample id, as the run caught it (the server's message); only for instances with
    neither a record nor a known error are the logs read, for the error that stopped them.
    """
    known = known or {}
    wanted = {inst.id for inst in chosen if inst.id not in collected and inst.id not in known}
    errors = {**sample_errors(logs, wanted), **known}
    authors = judged_rubric == "authors"
    return [collected.get(inst.id) or _unscored(inst, errors.get(inst.id), authors) for inst in chosen]


def evaluate(plan: RunPlan, *, display: str = "full", shard: tuple[int, int] | None = None, on_record: Callable[[], None] | None = None) -> Evaluated[ResultRow]:
    """Run the instances of ``plan`` through inspect_ai; write nothing but logs. The same path in one
    process and in each worker of a multi-worker run.

    ``shard``: ``(index, count)``, the static shard of every task's instances this process takes
    (:func:`~rescue_bench.engine.settings.shard`), with its share of ``--max-connections``; default:
    every instance, with all of them. ``on_record`` hears each record made here.
    """
    from rescue_bench.engine.channel import RunChannel
    from rescue_bench.engine.inspect_tasks import rescue_task

    settings = plan.settings
    index, count = shard or (0, 1)
    sample = plan.sampler()
    # inspect_ai's own per-model bound is the run's total (run_inspect); the channel's is the one that
    # binds: one bound on calls in flight over all tasks, model and judge together, with which the six
    # tasks run at the same time (sequential tasks left the CPU idle at each task's tail and start)
    channel = RunChannel[ResultRow](on_record, max_calls=share_connections(settings.max_connections, count)[index])
    parts = [(t, shard_of(t.chosen, index, count)) for t in plan.tasks]
    tasks = [
        rescue_task(
            t.name,
            t.instances,  # the baselines' pool: the whole set, whatever part is evaluated
            evaluate=chosen,
            mode=settings.mode,
            context=settings.context,
            vp_rubric=settings.vp_rubric,
            on_overflow=settings.on_overflow,
            channel=channel,
            sample=sample,
            bertscore=settings.bertscore,
            bertscore_model=settings.bertscore_model,
            **task_args(settings),
        )
        for t, chosen in parts
        if chosen
    ]
    logs = run_inspect(tasks, settings, display=display)
    evaluated = [inst for _, chosen in parts for inst in chosen]
    records = gather_records(evaluated, channel.records, logs, settings.vp_rubric if settings.judge else None, channel.errors)
    unanswered = {r["id"]: r["error"] or "no answer" for inst, r in zip(evaluated, records) if inst.id not in channel.records}
    return Evaluated(
        records,
        log_usage(logs),
        [getattr(log, "status", None) for log in logs],
        unanswered=unanswered,
        logs=[str(log.location) for log in logs],
        requests=dict(channel.requests),
        role_usage=role_usage(logs),
    )


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
        endpoint,
        get_provider_model,
        provider_args,
        provider_setup,
        route,
    )
    from rescue_bench.labels import is_baseline

    model = route(settings.model)
    gen_args = eval_args(settings, tasks=len(tasks))
    with provider_setup():  # a missing API key, a missing package: one line
        try:
            if settings.judge:
                gen_args["model_roles"] = {GRADER: get_provider_model(settings.judge, judge_config(settings))}
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
    # after Ctrl-C inspect_ai returns normally, with the logs of the tasks that finished only
    if len(logs) < len(tasks) or any(getattr(log, "status", "success") == "cancelled" for log in logs):
        raise RunInterrupted()
    return list(logs)
