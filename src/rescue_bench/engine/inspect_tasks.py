"""The six RESCUE-Bench tasks as inspect_ai tasks: samples, the answering solver and the scorer.

``rescue eval`` and ``inspect eval rescue_bench/<task>`` both come here. A sample is one
:class:`~rescue_bench.tasks.Instance`: a system message (the task's stable prefix) and a user message
(rows, then the question) whose metadata carries the neutral instance id. The scorer turns the raw
answer into the result record of :mod:`rescue_bench.scoring`, asking the judge (the ``grader`` role,
:mod:`rescue_bench.engine.judge`) to score valid ER/VP answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.scorer import Metric, SampleScore, Score, Target, Value, mean, metric, scorer
from inspect_ai.solver import Generate, TaskState, generate, solver

import rescue_bench.engine.video_api  # noqa: F401  (registers the openai-video/ provider)
from rescue_bench.data.fetch import resolve_data
from rescue_bench.data.validate import load_checked
from rescue_bench.engine.baseline_api import BaselinePool, open_pool
from rescue_bench.engine.channel import RunChannel, call_error, call_slot, request_key
from rescue_bench.engine.judge import CACHE, grader, judge_authors, judge_score
from rescue_bench.engine.overflow import OnOverflow, error_overflow, fit, output_overflow
from rescue_bench.engine.providers import prerequisite_error
from rescue_bench.errors import RescueError
from rescue_bench.labels import CUE_MODES, TASKS, CueMode, EvalMode, Rubric, TaskName, is_baseline
from rescue_bench.prompts import render
from rescue_bench.records import InvalidCause, ResultRow
from rescue_bench.scoring import base_record, with_authors_judge, with_judge
from rescue_bench.task_table import rule
from rescue_bench.tasks import BuildOptions, Instance, build_instances

INSTANCE_FIELDS = ("id", "task", "sample_id", "scenario", "row", "n_rows", "gold", "candidates", "participants", "client")
"""What scoring reads of an instance (:func:`scoring_view`; never sent to the model)."""
SAMPLE_METADATA = ("task", "sample_id", "scenario", "row")
"""What a sample's metadata carries: where the instance comes from, for ``inspect view``. The gold is
the sample's target, and the scorer's record (the score's metadata) holds every other field."""


def scoring_view(instance: Instance) -> dict[str, Any]:
    """The fields of ``instance`` that :func:`rescue_bench.scoring.base_record` reads, as JSON values."""
    return instance.model_dump(mode="json", include=set(INSTANCE_FIELDS))


def instance_sample(instance: Instance) -> Sample:
    """The inspect sample of ``instance``: the prompt, the gold as target, where it comes from.

    Kept small on purpose: inspect_ai copies, condenses and logs every sample several times, so what
    scoring needs stays with the task (:func:`rescue_task`) instead of riding along in the metadata.
    """
    prompt = render(instance)
    # the prompt alone: the response cache keys a request by what it sends, so two instances whose
    # prompts are the same (a clip's RPP prompts with every row left out, copies of a clip) are one call
    user = ChatMessageUser(content=prompt.user)
    return Sample(
        id=instance.id,
        input=[ChatMessageSystem(content=prompt.system), user],
        target=json.dumps(instance.gold, ensure_ascii=False),
        metadata={key: getattr(instance, key) for key in SAMPLE_METADATA},
    )


def primary_value(record: ResultRow) -> float:
    """One number per sample for inspect's live display (the summary is computed separately)."""
    return rule(record["task"]).sample_value(record)


def judge_failure(record: ResultRow, exc: BaseException, authors: bool = False) -> ResultRow:
    """``record`` (a valid answer) whose judge call failed: no judge score, ``judge_failed`` and the error.

    Distinct from an answer the judge could not score (``judge_flagged``) and from an invalid answer
    (the floor score): the model answered, nobody judged it; the run is failed and resumable.
    """
    message = call_error(exc)
    out: ResultRow = {
        **record, "judge_score": None, "judge_flagged": None, "judge_failed": True, "judge_error": message,
        "cause": InvalidCause.JUDGE_FAILED,
    }
    follows = rule(out["task"]).after_judge  # the fields that follow the judge score (ER's score)
    if follows is not None:
        out.update(follows(out, None))
    if authors:  # the authors' VP rubric: no 0-6 score either
        out.update({"judge_authors": None, "judge_authors_parts": None})
    return out


PANEL_METRIC: dict[str, str] = {task: rule(task).headline_metric for task in TASKS}
"""The paper's headline of each task, as ``summary.json`` names it: the first metric inspect_ai's
panels and ``inspect view`` show for the task (the same value as the table of ``rescue eval``)."""


COUNTS = frozenset({"n", "n_invalid", "answered"})
"""Counts of the summary, not metrics: inspect_ai shows the sample count itself, and a count among
the metrics (``94.000``) reads like a score."""


@metric(name="summary")
def summary_metrics(task: str = "itp", bertscore: bool = False, backbone: str | None = None) -> Metric:
    """Every metric ``summary.json`` gives ``task`` over all its instances (couple and family pooled),
    computed from the records the scorer made exactly as the summary is: the headline metrics in the
    table's order, then the task's other metrics (Recall@1 of RPP, counts), then the share of invalid
    answers (counts are not metrics: :data:`COUNTS`). ``bertscore``: also BERTScore F1 of ER/VP (batch, written into the records; needs the
    extra). A value nobody computed (a judge mean without a judge) is left out, never shown as 0."""
    from rescue_bench.scoring import HEADLINE, task_metrics

    def compute(scores: list[SampleScore]) -> Value:
        records = [s.score.metadata["record"] for s in scores if s.score.metadata and "record" in s.score.metadata]
        if not records:
            return {}
        if bertscore and rule(task).judged:  # written into the records: rescue eval does not compute them again
            from rescue_bench.engine.outputs import add_bertscore

            add_bertscore(records, backbone)
        values = task_metrics(task, records)
        shown = {m: values.get(m) for m in (*HEADLINE[task], *(k for k in values if k not in HEADLINE[task] and k not in COUNTS))}
        shown["invalid_rate"] = sum(not r["valid"] for r in records) / len(records)
        # inspect_ai shows each entry as a metric; an empty one is left out, not 0
        return {name: float(value) for name, value in shown.items() if value is not None}

    return compute


def panel_metrics(task: str, *, bertscore: bool = False, backbone: str | None = None) -> list[Metric | dict[str, list[Metric]]]:
    """The metrics inspect_ai shows and logs for ``task``'s samples: :func:`summary_metrics`."""
    return [summary_metrics(task=task, bertscore=bertscore, backbone=backbone)]


@scorer(metrics=[mean()])
def rescue_scorer(
    pool: BaselinePool,
    vp_rubric: Rubric = "default",
    attempt_timeout: int | None = None,
    channel: RunChannel | None = None,
    seed: int | None = None,
):
    """Parse the answer per SPEC section 5; have the ``grader`` (when bound) judge valid ER/VP answers.

    ``pool`` is the task's instance set, where the scorer finds each sample's instance (by the sample
    id). ``vp_rubric="authors"`` scores VP with the authors' 0-2 + 0-4 rubric (``judge_authors``, 0-6)
    instead of the 1-5 judge score. With a ``channel``, each record is handed to the run driver as it
    is made, and judge calls hold a slot of the run's bound on calls in flight.
    """

    async def score(state: TaskState, target: Target) -> Score:
        inst = scoring_view(pool.instance(str(state.sample_id)))
        output = state.output
        overflow = state.store.get(OVERFLOW)
        if overflow is not None:  # the provider's refusal is no answer of the model's: no raw
            record = base_record(inst, None, cause=InvalidCause.CONTEXT_OVERFLOW, error=f"context overflow: {overflow}")
        else:
            raw = output.completion if output is not None and not output.error and output.choices else None
            record = base_record(inst, raw)
        if state.store.get(TRIMMED):
            record["trimmed_rows"] = state.store.get(TRIMMED)
        judge = grader() if rule(record["task"]).judged else None
        authors = rule(record["task"]).authors_rubric and vp_rubric == "authors"
        try:
            if judge is not None and authors:
                parts, flagged = (None, False)
                if record["valid"]:
                    parts, flagged = await judge_authors(judge, record, inst.get("client"), attempt_timeout, channel, seed)
                record = with_authors_judge(record, parts, flagged)
            elif judge is not None and record["valid"]:
                value, flagged = await judge_score(judge, record, inst.get("client"), attempt_timeout, channel, seed)
                record = with_judge(record, value, flagged)
            elif judge is not None:  # an invalid answer takes the judge's floor, without a call
                record = with_judge(record, None)
        except Exception as exc:  # noqa: BLE001 - the judge's call failed after its retries: not the model's fault
            record = judge_failure(record, exc, authors=authors)
        if channel is not None:
            channel.keep(record)
        return Score(value=primary_value(record), answer=record["raw"], explanation=record["error"], metadata={"record": record})

    return score


OVERFLOW = "rescue:context_overflow"
"""The sample store's key for the provider's message when the prompt did not fit the model's window."""
TRIMMED = "rescue:trimmed_rows"
"""The sample store's key for the context rows left out so that the prompt fit (``--on-overflow trim``)."""


@solver
def answer(
    cache: bool = True,
    pool: BaselinePool | None = None,
    channel: RunChannel | None = None,
    on_overflow: OnOverflow = "wrong",
    sample: Callable[[Instance], Sample] | None = None,
):
    """One model call per instance, cached (no tools, no retries beyond the provider's).

    ``pool`` is the task's whole instance set, which a baseline model answers from; with a
    ``channel``, the call holds a slot of the run's bound on calls in flight. A prompt the model
    refuses as longer than its context window (:mod:`rescue_bench.engine.overflow`) is kept in the
    sample's store (:data:`OVERFLOW`), never as an answer; with ``on_overflow="trim"`` the instance
    is asked again with its oldest context rows left out until it fits, each prompt made by
    ``sample`` (the task's sample maker) and cached, and the rows left out are kept (:data:`TRIMMED`).
    """
    gen = generate(cache=CACHE if cache else False)
    make = sample or instance_sample

    async def call(state: TaskState, generate_fn: Generate) -> tuple[TaskState, str | None]:
        async with call_slot(channel, request_key(str(state.model), state.messages)):
            try:
                state = await gen(state, generate_fn)
            except Exception as exc:
                refused = error_overflow(exc)
                if refused is None:  # retries spent: the sample has no answer; its error, readable, for the run
                    if channel is not None:
                        channel.errors[str(state.sample_id)] = call_error(exc)
                    raise
                return state, refused
        if channel is not None:
            channel.note_request("model")
        return state, output_overflow(state.output)

    async def solve(state: TaskState, generate_fn: Generate) -> TaskState:
        if is_baseline(str(state.model)):
            with open_pool(pool, str(state.sample_id)):
                return await gen(state, generate_fn)
        state, refused = await call(state, generate_fn)
        if refused is not None and on_overflow == "trim" and pool is not None:
            instance = pool.instance(str(state.sample_id))
            fitted: dict[int, tuple[list[Any], Any]] = {}

            async def attempt(rows: int) -> str | None:
                prompt = make(instance.without_oldest_rows(rows)).input
                assert not isinstance(prompt, str)  # the sample makers make chat messages
                state.messages = list(prompt)
                _, why = await call(state, generate_fn)
                if why is None:
                    fitted[rows] = (state.messages, state.output)
                return why

            rows = await fit(attempt, instance.droppable_rows())
            if rows is not None:
                state.messages, state.output = fitted[rows]
                state.store.set(TRIMMED, rows)
                refused = None
        if refused is not None:
            state.store.set(OVERFLOW, refused)
        return state

    return solve


def rescue_task(
    task_name: TaskName,
    instances: Sequence[Instance],
    *,
    evaluate: Sequence[Instance] | None = None,
    mode: EvalMode = "dialogue",
    context: int | None = None,
    cache: bool = True,
    temperature: float | None = 0.0,
    seed: int | None = None,
    max_tokens: int | None = None,
    vp_rubric: Rubric = "default",
    attempt_timeout: int | None = None,
    channel: RunChannel | None = None,
    sample: Callable[[Instance], Sample] | None = None,
    on_overflow: OnOverflow = "wrong",
    bertscore: bool = True,
    bertscore_model: str | None = None,
) -> Task:
    """An inspect task for ``task_name``: samples of ``evaluate`` (default: all of ``instances``).

    ``temperature``, ``seed`` and ``max_tokens`` are sent with every call of the model under
    evaluation (``None``: not sent). ``sample`` replaces :func:`instance_sample` (the video mode
    adds each shown row's clip).

    ``instances`` is the task's whole instance set, the pool the offline baselines cross-validate
    over: a run that evaluates only some instances (``--limit``, one worker's shard) gets the same
    baseline answers for them as a run over all. ``on_overflow``: what a prompt longer than the
    model's context window becomes (:func:`answer`). ``bertscore``: the log's metrics include ER/VP's
    BERTScore (``bertscore_model``: its backbone; default the bundled one).
    """
    chosen = list(instances if evaluate is None else evaluate)
    pool = BaselinePool(instances)
    return Task(
        dataset=MemoryDataset([(sample or instance_sample)(i) for i in chosen], name=f"rescue_{task_name}"),
        solver=answer(cache=cache, pool=pool, channel=channel, on_overflow=on_overflow, sample=sample),
        scorer=rescue_scorer(pool, vp_rubric=vp_rubric, attempt_timeout=attempt_timeout, channel=channel, seed=seed),
        config=GenerateConfig(temperature=temperature, seed=seed, max_tokens=max_tokens),
        metrics=panel_metrics(task_name, bertscore=bertscore, backbone=bertscore_model),  # summary.json's metrics, not a plain mean
        name=f"rescue_{task_name}",
        metadata={"rescue_task": task_name, "mode": mode, "context": context, "vp_rubric": vp_rubric},
    )


def _task_from_data(task_name: TaskName, data: str | None, mode: CueMode, context: int | None, vp_rubric: Rubric = "default") -> Task:
    """The ``inspect eval`` route: load ``data`` (the bundled demo when ``None``), held to the data
    layer's rules as ``rescue eval`` holds it, and build the task. Bad data or options are inspect_ai's
    prerequisite error: ``inspect eval`` prints its one line (the first problem, naming file, line,
    clip, row and field, and how many more), never a traceback."""
    try:
        if mode not in CUE_MODES:
            raise ValueError(f"unknown mode {mode!r} (-T mode=...); expected one of {', '.join(CUE_MODES)}")
        if context is not None and (isinstance(context, bool) or not isinstance(context, int) or context < -1):
            raise ValueError(f"-T context must be -1 (all previous rows) or a number >= 0, got {context!r}")
        clips = load_checked(resolve_data(data) if data else None).clips
        instances = build_instances(clips, task_name, BuildOptions.for_run(mode, context))
    except (RescueError, ValueError) as exc:
        raise prerequisite_error(f"error: rescue_bench/{task_name}: {' '.join(str(exc).removeprefix('error: ').split())}") from None
    return rescue_task(task_name, instances, mode=mode, context=context, vp_rubric=vp_rubric)


@task
def itp(data: str | None = None, mode: CueMode = "dialogue", context: int | None = None) -> Task:
    """Intervention time prediction: should the therapist take the next turn (yes or no)?

    Parameters
    ----------
    data
        A release JSON Lines file or a folder of the per-clip layout (``-T data=benchmark_191.jsonl``);
        ``None``: the bundled synthetic demo.
    mode
        The cues the rows show the model: ``dialogue`` (speaker, addressees, text, background talk),
        ``audio`` (adds the tone of voice), ``visual`` (adds posture, face, self-directed and
        interaction behaviour) or ``audiovisual`` (both).
    context
        Rows of context before the decision point, for this task (``-1``: all previous rows);
        ``None``: the task's default (3 rows).
    """
    return _task_from_data("itp", data, mode, context)


@task
def rpp(data: str | None = None, mode: CueMode = "dialogue", context: int | None = None) -> Task:
    """Relation pattern prediction: which relation pattern organises the interaction (three ranked labels)?

    Parameters
    ----------
    data
        A release JSON Lines file or a folder of the per-clip layout (``-T data=benchmark_191.jsonl``);
        ``None``: the bundled synthetic demo.
    mode
        The cues the rows show the model: ``dialogue`` (speaker, addressees, text, background talk),
        ``audio`` (adds the tone of voice), ``visual`` (adds posture, face, self-directed and
        interaction behaviour) or ``audiovisual`` (both).
    context
        Rows of context before the decision point, for this task (``-1``: all previous rows);
        ``None``: the task's default (all previous rows).
    """
    return _task_from_data("rpp", data, mode, context)


@task
def stp(data: str | None = None, mode: CueMode = "dialogue", context: int | None = None) -> Task:
    """Support target prediction: whom should the therapist's next turn address (three ranked targets)?

    Parameters
    ----------
    data
        A release JSON Lines file or a folder of the per-clip layout (``-T data=benchmark_191.jsonl``);
        ``None``: the bundled synthetic demo.
    mode
        The cues the rows show the model: ``dialogue`` (speaker, addressees, text, background talk),
        ``audio`` (adds the tone of voice), ``visual`` (adds posture, face, self-directed and
        interaction behaviour) or ``audiovisual`` (both).
    context
        Rows of context before the decision point, for this task (``-1``: all previous rows);
        ``None``: the task's default (3 rows).
    """
    return _task_from_data("stp", data, mode, context)


@task
def ssp(data: str | None = None, mode: CueMode = "dialogue", context: int | None = None) -> Task:
    """Support strategy prediction: with which strategy, given the target (three ranked strategies)?

    Parameters
    ----------
    data
        A release JSON Lines file or a folder of the per-clip layout (``-T data=benchmark_191.jsonl``);
        ``None``: the bundled synthetic demo.
    mode
        The cues the rows show the model: ``dialogue`` (speaker, addressees, text, background talk),
        ``audio`` (adds the tone of voice), ``visual`` (adds posture, face, self-directed and
        interaction behaviour) or ``audiovisual`` (both).
    context
        Rows of context before the decision point, for this task (``-1``: all previous rows);
        ``None``: the task's default (3 rows).
    """
    return _task_from_data("ssp", data, mode, context)


@task
def er(data: str | None = None, mode: CueMode = "dialogue", context: int | None = None) -> Task:
    """Emotion recognition: what does this client feel, and how strongly (0-10)?

    Valid answers are judged (1-5) by the model bound to inspect_ai's ``grader`` role
    (``--model-role grader=openai/J``); without the role nothing is judged and the judge means are
    missing, never the model under evaluation grading itself.

    Parameters
    ----------
    data
        A release JSON Lines file or a folder of the per-clip layout (``-T data=benchmark_191.jsonl``);
        ``None``: the bundled synthetic demo.
    mode
        The cues the rows show the model: ``dialogue`` (speaker, addressees, text, background talk),
        ``audio`` (adds the tone of voice), ``visual`` (adds posture, face, self-directed and
        interaction behaviour) or ``audiovisual`` (both).
    context
        Rows of context before the decision point, for this task (``-1``: all previous rows);
        ``None``: the task's default (3 rows).
    """
    return _task_from_data("er", data, mode, context)


@task
def vp(data: str | None = None, mode: CueMode = "dialogue", context: int | None = None, vp_rubric: Rubric = "default") -> Task:
    """Viewpoint prediction: what does this client think of each other participant?

    Valid answers are judged (1-5) by the model bound to inspect_ai's ``grader`` role
    (``--model-role grader=openai/J``); without the role nothing is judged and the judge means are
    missing, never the model under evaluation grading itself.

    Parameters
    ----------
    data
        A release JSON Lines file or a folder of the per-clip layout (``-T data=benchmark_191.jsonl``);
        ``None``: the bundled synthetic demo.
    mode
        The cues the rows show the model: ``dialogue`` (speaker, addressees, text, background talk),
        ``audio`` (adds the tone of voice), ``visual`` (adds posture, face, self-directed and
        interaction behaviour) or ``audiovisual`` (both).
    context
        Rows of context before the decision point, for this task (``-1``: all previous rows);
        ``None``: the task's default (3 rows).
    vp_rubric
        The judge's rubric: ``default`` (one 1-5 score, ``judge``) or ``authors`` (the authors'
        target 0-2 plus viewpoint 0-4, ``judge_authors``, 0-6).
    """
    return _task_from_data("vp", data, mode, context, vp_rubric)
