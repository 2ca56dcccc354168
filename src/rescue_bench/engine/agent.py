"""The support agent on inspect_ai: a multi-step solver, its scorer, and the run driver of
``rescue agent eval``.

One inspect sample per decision point (:mod:`rescue_bench.agent.points`). The solver drives the
chain of :class:`rescue_bench.agent.chain.Chain`: one conversation with several turns (the module
doc there says why), each step one ``generate`` call of the model under evaluation through
inspect_ai's response cache, holding a call slot of the run like every task call. The scorer turns
the step results into the chain record (:mod:`rescue_bench.agent.record`) and asks the judge, with
one re-ask, for the state (ER/VP rubrics) and the turn; :mod:`rescue_bench.agent.metrics` makes the
summary. ``baseline/<method>`` runs the baseline chain (:mod:`rescue_bench.agent.baseline`) through
the same solver and scorer, answering each step from precomputed answers without any call.

Output folder::

    DIR/results/agent.jsonl          one chain record per decision point
    DIR/summary.json                 {"agent": {scenario: {metric: value, "n", "invalid_rate", "support"}}}
    DIR/run.json                     the configuration ("kind": "agent"), calls and usage
    DIR/single/                      the single-task ablation, a `rescue eval` folder of its own
                                     (results/<task>.jsonl, summary.json, run.json) on the same rows
    DIR/logs/                        inspect_ai logs of both
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast, overload

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import collect as gather

from rescue_bench.agent import (
    AGENT_TASK,
    AgentOptions,
    Chain,
    DecisionPoint,
    baseline_chain_answers,
    bertscore_requests,
    build_all_points,
    chain_record,
    judge_requests,
    judge_texts,
    single_task_instances,
    summarize_chain,
    with_bertscores,
    with_judges,
)
from rescue_bench.agent.options import AGENT_DEFAULTS
from rescue_bench.agent.record import AgentRecord

# the tasks' engine pieces, reused so the agent's calls share the run's cache, call slots, judge
# re-ask and record collection with the single-task calls of the same run
from rescue_bench.engine.channel import RunChannel, call_error, call_slot, request_key
from rescue_bench.engine.dryrun import DryRun, agent_estimate
from rescue_bench.engine.evaluate import gather_records, log_usage, role_usage, run_inspect, sample_errors
from rescue_bench.engine.inspect_tasks import rescue_task
from rescue_bench.engine.judge import CACHE, ask_judge, grader, to_messages
from rescue_bench.engine.outputs import (
    add_bertscore,
    intended_request,
    judge_fingerprint,
    judge_intended,
    request_record,
    run_status,
    write_failed_results,
    write_json,
    write_jsonl,
    write_results,
)
from rescue_bench.engine.providers import use_cache_dir
from rescue_bench.engine.runfolder import RunStart, RunStatus, finish_run, now, start_run
from rescue_bench.engine.settings import AgentSettings, Evaluated, task_args
from rescue_bench.errors import RunInterrupted
from rescue_bench.gcpolicy import fewer_gc_passes
from rescue_bench.labels import is_baseline
from rescue_bench.parse import parse_judge
from rescue_bench.records import ResultRow
from rescue_bench.runinfo import AblationRunInfo, AgentCalls, AgentRunInfo, BertscoreUse, RecordedSettings, RunResult
from rescue_bench.summary import AgentSummary, summary_json
from rescue_bench.task_table import rule

POINT_KEY = "rescue_point"
"""Sample metadata key holding the decision point (never sent to the model)."""
CHAIN_KEY = "rescue_chain"
"""Sample store key holding the chain's step results, from the solver to the scorer."""
SINGLE_DIR = "single"


def point_sample(point: DecisionPoint, state: str, how_given_gold: bool = True) -> Sample:
    """The inspect sample of ``point``: the chain's first call as input, the point in metadata."""
    first = Chain(point, state, how_given_gold).next_request()
    assert first is not None  # every chain asks at least one step
    return Sample(
        id=point.id,
        input=to_messages(first.messages),
        target=point.gold.when,
        metadata={POINT_KEY: point.model_dump(mode="json")},
    )


@solver
def chain_solver(
    state: str = "explicit",
    how_given_gold: bool = True,
    cache: bool = True,
    channel: RunChannel | None = None,
    answers: dict[str, dict[str, str]] | None = None,
):
    """Run the chain of the sample's decision point, one model call per step.

    With ``answers`` (the baseline chain) each step is answered from ``answers[point id][step]``
    and no model is called. A call that fails after its retries gives its step no answer (the
    record says why) instead of failing the sample.
    """

    async def solve(task_state: TaskState, generate_fn: Generate) -> TaskState:
        point = DecisionPoint.model_validate(task_state.metadata[POINT_KEY])
        chain = Chain(point, state, how_given_gold)
        model = get_model() if answers is None else None
        while (request := chain.next_request()) is not None:
            if model is None:
                raw = (answers or {}).get(point.id, {}).get(request.step)
                chain.answer(raw, None if raw is not None else "the baseline has no answer for this step")
                continue
            try:
                messages = to_messages(request.messages)
                async with call_slot(channel, request_key(str(model), messages)):
                    output = await model.generate(messages, cache=CACHE if cache else False)
            except Exception as exc:  # noqa: BLE001 - retries are spent; the step has no answer
                chain.answer(None, call_error(exc))
                if channel is not None:  # not the model's answer: the run is failed (and resumable)
                    channel.call_failed("model", call_error(exc))
                continue
            if channel is not None:
                channel.note_request("model")
            ok = output.choices and not output.error
            chain.answer(output.completion if ok else None, None if ok else output.error)
        task_state.messages = to_messages(chain.main)
        task_state.store.set(CHAIN_KEY, chain.transcript())
        return task_state

    return solve


@scorer(metrics=[mean()])
def chain_scorer(
    state: str = "explicit",
    how_given_gold: bool = True,
    attempt_timeout: int | None = None,
    channel: RunChannel | None = None,
    seed: int | None = None,
):
    """The chain record of the sample, judged by the ``grader`` role when bound (one re-ask per judge call).

    The live value is whether the timing decision was right; the summary is computed separately.
    """

    async def score(task_state: TaskState, target: Target) -> Score:
        point = DecisionPoint.model_validate(task_state.metadata[POINT_KEY])
        record = chain_record(point, task_state.store.get(CHAIN_KEY) or {}, state, how_given_gold)
        judge = grader()
        if judge is not None:
            requests = judge_requests(point, record)
            judged = await gather(*(_judge_one(judge, r.prompt, attempt_timeout, channel, seed) for r in requests))
            record = with_judges(record, {r.key: value for r, value in zip(requests, judged)})
        if channel is not None:
            channel.keep(record)
        right = record["prediction"]["when"] == record["gold"]["when"]
        return Score(value=float(right), answer=record["prediction"]["when"], explanation=record["error"], metadata={"record": record})

    return score


async def _judge_one(
    judge: Model, prompt: Any, attempt_timeout: int | None, channel: RunChannel | None, seed: int | None = None
) -> tuple[int | None, bool]:
    """One judge score (one re-ask when the reply is not a score). A call that fails after its
    retries counts like a judge that never gave a valid score: 1, flagged. The tasks lose the whole
    record then; a chain has several judged parts, so only the part is lost, not the point."""
    try:
        return await ask_judge(judge, prompt, parse_judge, attempt_timeout, channel, seed=seed)
    except Exception as exc:  # noqa: BLE001 - the judge's retries are spent
        if channel is not None:  # a judge failure: the run is failed (and resumable)
            channel.call_failed("judge", call_error(exc))
        return None, True


def agent_task(
    points: Sequence[DecisionPoint],
    *,
    state: str = "explicit",
    how_given_gold: bool = True,
    cache: bool = True,
    temperature: float | None = 0.0,
    seed: int | None = None,
    max_tokens: int | None = None,
    attempt_timeout: int | None = None,
    channel: RunChannel | None = None,
    answers: dict[str, dict[str, str]] | None = None,
) -> Task:
    """The inspect task of the chain over ``points`` (judged by the ``grader`` role when bound)."""
    return Task(
        dataset=MemoryDataset([point_sample(p, state, how_given_gold) for p in points], name="rescue_agent"),
        solver=chain_solver(state, how_given_gold, cache=cache, channel=channel, answers=answers),
        scorer=chain_scorer(state, how_given_gold, attempt_timeout=attempt_timeout, channel=channel, seed=seed),
        config=GenerateConfig(temperature=temperature, seed=seed, max_tokens=max_tokens),
        name="rescue_agent",
        metadata={"rescue_task": AGENT_TASK, "state": state},
    )


@task
def agent(
    data: str | None = None, state: str = AGENT_DEFAULTS.state, mode: str = AGENT_DEFAULTS.mode, context: int = AGENT_DEFAULTS.context
) -> Task:
    """The relation-aware support agent as a chain (``inspect eval rescue_bench/agent``); its
    defaults are the agent's options' (``rescue_bench.agent.options``)."""
    from rescue_bench.data.load import load_clips

    options = AgentOptions(state=state, mode=mode, context=context)  # type: ignore[arg-type]
    points = build_all_points(load_clips([data] if data else None), options)
    return agent_task(points, state=state)


# --------------------------------------------------------------------------------------------------
# the run driver
# --------------------------------------------------------------------------------------------------


def agent_fingerprint() -> str:
    """A hash of every judge prompt an agent run may use (the tasks' and the turn rubrics)."""
    return hashlib.sha256((judge_fingerprint() + judge_texts()).encode()).hexdigest()[:16]


def _unscored_point(point: DecisionPoint, settings: AgentSettings, error: str | None) -> AgentRecord:
    record = chain_record(point, {}, settings.options.state, settings.options.how_given_gold)
    record["error"] = f"no answer: {error}" if error else "no answer"
    return record


@overload
def run_agent(settings: AgentSettings, *, display: str = ..., overwrite: bool = ..., dry_run: Literal[False] = ...) -> RunResult[AgentRunInfo, AgentSummary]: ...
@overload
def run_agent(settings: AgentSettings, *, display: str = ..., overwrite: bool = ..., dry_run: Literal[True]) -> DryRun: ...
def run_agent(
    settings: AgentSettings, *, display: str = "full", overwrite: bool = False, dry_run: bool = False
) -> RunResult[AgentRunInfo, AgentSummary] | DryRun:
    """Run the chain (and the single-task ablation) and write the output folder; returns the summary
    and the ``run.json`` written (``dry_run``: the estimate of what the run would send, nothing sent
    or written).

    Raises :class:`rescue_bench.data.DataError` for bad data and
    :class:`~rescue_bench.errors.RunInterrupted` when stopped.
    """
    from rescue_bench.data.load import load_clips
    from rescue_bench.engine.plan import limited
    from rescue_bench.engine.run import drop_stale_logs

    with fewer_gc_passes():
        use_cache_dir()
        # the data and the decision points are checked before the folder is claimed
        options = settings.options
        clips = load_clips(settings.data, repair_mojibake=settings.repair_mojibake)
        points = build_all_points(clips, options)
        chosen = limited(points, settings.limit)
        baseline = is_baseline(settings.model)
        answers = (
            baseline_chain_answers(clips, points, settings.model.split("/", 1)[1], options, chosen=chosen, seed=settings.seed)
            if baseline
            else None
        )
        singles = single_task_instances(clips, chosen, options) if settings.single_task and chosen else {}
        estimate = agent_estimate(settings, chosen, singles)
        if dry_run:
            return estimate
        with start_run(settings.out, AGENT_TASK, settings, overwrite=overwrite, estimate=estimate.record()) as start:
            # one bound on calls in flight over the chain, the single tasks and the judge
            channel = RunChannel[Any](max_calls=settings.max_connections)  # the chain's records and the single tasks' result records
            common = task_args(settings)
            tasks = []
            if chosen:
                tasks.append(
                    agent_task(chosen, state=options.state, how_given_gold=options.how_given_gold, channel=channel, answers=answers, **common)
                )
            for name, (pool, instances) in singles.items():
                tasks.append(
                    rescue_task(name, pool, evaluate=instances, mode=options.mode, context=options.context, channel=channel, **common)  # type: ignore[arg-type]
                )
            try:
                logs = run_inspect(tasks, settings, display=display)
            except KeyboardInterrupt as exc:  # outside inspect_ai's part: resumable all the same
                raise RunInterrupted() from exc
            collected = channel.records
            errors = sample_errors(logs, {p.id for p in chosen if p.id not in collected})
            records: list[AgentRecord] = [collected.get(p.id) or _unscored_point(p, settings, errors.get(p.id)) for p in chosen]
            single_instances = [i for _, items in singles.values() for i in items]
            single_records = gather_records(single_instances, collected, logs, "default" if settings.judge else None, channel.errors)
            unanswered = {r["id"]: r["error"] or "no answer" for r in [*records, *single_records] if r["id"] not in collected}
            evaluated = Evaluated[Any](
                [*records, *single_records], {}, [], unanswered=unanswered, logs=[str(log.location) for log in logs],
                requests=dict(channel.requests), role_usage=role_usage(logs),
            )
            drop_stale_logs(Path(settings.out), evaluated.logs)
            outcome = run_status(evaluated.records, evaluated, absorbed=[e for _, e in channel.failures])
            return write_agent_outputs(
                start, records, single_records, logs, clips=len(clips), points=chosen, outcome=outcome, evaluated=evaluated,
            )


def add_chain_bertscore(records: list[AgentRecord], backbone: str | None) -> tuple[list[AgentRecord], str | None]:
    """Every chain record with its BERTScore values filled in, in one batch, and the floors of its
    unusable parts (backbone used, or None when BERTScore is not installed: nothing is filled in)."""
    from rescue_bench.bertscore import BertScoreUnavailable, bertscore_f1, usable_backbone

    todo = [(i, key, pred, ref) for i, r in enumerate(records) for key, pred, ref in bertscore_requests(r)]
    if not records:
        return records, None
    try:
        backbone = usable_backbone(backbone)
        values = bertscore_f1([t[2] for t in todo], [t[3] for t in todo], backbone=backbone) if todo else []
    except BertScoreUnavailable:
        return records, None
    per: dict[int, dict[str, float]] = {}
    for (i, key, _, _), value in zip(todo, values):
        per.setdefault(i, {})[key] = value
    return [with_bertscores(r, per.get(i, {})) for i, r in enumerate(records)], backbone


def call_counts(records: Sequence[AgentRecord], single: Sequence[ResultRow]) -> AgentCalls:
    """Calls the run asked for (before retries and judge re-asks): per chain step, judge, single tasks."""
    steps: Counter[str] = Counter(s for r in records for s, v in r["steps"].items() if v["raw"] is not None)
    judged = sum(len(r.get("judged") or []) for r in records)
    return AgentCalls(
        points=len(records),
        chain_steps=dict(steps),
        chain_total=sum(steps.values()),
        chain_judge=judged,
        single_task=sum(1 for r in single if r.get("raw") is not None),
        single_task_judge=sum(1 for r in single if rule(r["task"]).judged and r["valid"] and r.get("judge_score") is not None),
    )


def write_agent_outputs(
    start: RunStart,
    records: list[AgentRecord],
    single: list[ResultRow],
    logs: Sequence[Any],
    *,
    clips: int,
    points: Sequence[DecisionPoint],
    outcome: RunStatus | None = None,
    evaluated: Evaluated[Any] | None = None,
) -> RunResult[AgentRunInfo, AgentSummary]:
    """BERTScore, then ``results/agent.jsonl``, ``summary.json``, ``single/`` and ``run.json``;
    returns the summary and the ``run.json`` written.

    A failed run (``outcome``'s status: calls that got no answer) writes no ``summary.json`` and
    raises :class:`~rescue_bench.engine.runfolder.RunFailed` once ``run.json`` says so."""
    settings = cast(AgentSettings, start.settings)
    outcome = outcome or RunStatus("success", None, None)
    failed = outcome.status == "failed"
    requests = evaluated.requests if evaluated is not None else {}
    before = start.previous
    out = Path(settings.out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    backbone = None
    if settings.bertscore:
        records, backbone = add_chain_bertscore(records, settings.bertscore_model)
        single_backbone = add_bertscore(single, settings.bertscore_model)
        backbone = backbone or single_backbone
    records.sort(key=lambda r: (r["sample_id"], r["row"]))
    write_jsonl(out / "results" / f"{AGENT_TASK}.jsonl", records)
    summary = AgentSummary.model_validate({AGENT_TASK: summarize_chain(records)})
    if failed:
        (out / "summary.json").unlink(missing_ok=True)
    else:
        write_json(out / "summary.json", summary_json(summary))
    if single:
        folder = out / SINGLE_DIR
        if failed:
            write_failed_results(folder, single)
        else:
            write_results(folder, single)
        AblationRunInfo(
            kind="single_task_ablation",
            ablation_of=str(out),
            model=settings.model,
            judge=settings.judge,
            settings=RecordedSettings(model=settings.model, data=settings.data, mode=settings.options.mode, context=settings.options.context),
            bertscore_backbone=backbone,
            created=now(),
        ).write(folder)
    info = finish_run(
        start,
        outcome,
        AgentRunInfo,
        judge_prompt_sha=agent_fingerprint() if settings.judge else None,
        clips=clips,
        points=len(points),
        request=request_record(intended_request(settings), requests.get("model"), before.request if before else None),
        judge_request=request_record(judge_intended(settings), requests.get("judge"), before.judge_request if before else None)
        if settings.judge
        else None,
        bertscore=BertscoreUse(requested=settings.bertscore, used=backbone is not None, backbone=backbone),
        bertscore_backbone=backbone,
        calls=call_counts(records, single),
        usage=log_usage(logs),
        usage_by_role=evaluated.role_usage if evaluated is not None else None,
        log_statuses=[getattr(log, "status", None) for log in logs],
    )
    return RunResult(summary, info)
