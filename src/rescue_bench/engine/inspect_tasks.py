"""The six RESCUE-Bench tasks as inspect_ai tasks, with the scorer and the ER/VP judge.

``rescue eval`` and ``inspect eval rescue_bench/<task>`` both come here. A sample is one
:class:`~rescue_bench.tasks.Instance`: a system message (the task's stable prefix) and a user message
(rows, then the question) whose metadata carries the neutral instance id. The scorer turns the raw
answer into the result record of :mod:`rescue_bench.scoring`, calling the judge for valid ER/VP
answers; judge answers are cached by inspect_ai like any other model call.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import CachePolicy, ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, generate, solver

from rescue_bench.contract import judge_format
from rescue_bench.data.load import load_clips
from rescue_bench.engine.baseline_api import INSTANCE_KEY, register_instances
from rescue_bench.parse import parse_judge, parse_vp_rubric
from rescue_bench.prompts import judge_prompt, render
from rescue_bench.scoring import base_record, with_authors_judge, with_judge
from rescue_bench.tasks import BuildOptions, Instance, build_instances

CACHE = CachePolicy(expiry=None)
"""Responses never expire: re-running a command repeats no finished call."""

INSTANCE_FIELDS = ("id", "task", "sample_id", "scenario", "row", "n_rows", "gold", "candidates", "participants", "client")


def instance_sample(instance: Instance) -> Sample:
    """The inspect sample of ``instance``; metadata keeps what scoring needs (never sent to the model)."""
    prompt = render(instance)
    meta = instance.model_dump(mode="json", include=set(INSTANCE_FIELDS))
    return Sample(
        id=instance.id,
        input=[
            ChatMessageSystem(content=prompt.system),
            ChatMessageUser(content=prompt.user, metadata={INSTANCE_KEY: instance.id}),
        ],
        target=json.dumps(instance.gold, ensure_ascii=False),
        metadata=meta,
    )


async def _ask(
    judge: str, prompt: Any, parse: Any, attempt_timeout: int | None = None, slots: str | None = None, rubric: str = "default"
) -> tuple[Any, bool]:
    """Ask ``judge``; re-ask once, for ``rubric``'s format, when the reply does not parse.
    ``(prediction or None, flagged)``.

    ``attempt_timeout`` is passed explicitly: inspect_ai hands the judge (not the model under
    evaluation) the eval's retry settings but not its per-attempt timeout.
    """
    from rescue_bench.engine.run import endpoint, provider_args

    model = get_model(judge, base_url=endpoint(judge), **provider_args(judge))
    config = GenerateConfig(attempt_timeout=attempt_timeout)
    messages: list[Any] = [ChatMessageSystem(content=prompt.system), ChatMessageUser(content=prompt.user)]
    async with _call_slot(slots):
        output = await model.generate(messages, cache=CACHE, config=config)
    parsed = parse(output.completion)
    if parsed.valid:
        return parsed.prediction, False
    messages += [ChatMessageAssistant(content=output.completion), ChatMessageUser(content=judge_format(rubric).reask)]
    async with _call_slot(slots):
        output = await model.generate(messages, cache=CACHE, config=config)
    parsed = parse(output.completion)
    return (parsed.prediction, False) if parsed.valid else (None, True)


async def judge_score(
    judge: str, record: dict[str, Any], client: str | None, attempt_timeout: int | None = None, slots: str | None = None
) -> tuple[int, bool]:
    """Ask ``judge`` for a 1-5 score of a valid ER/VP record: ``(score, flagged)``.

    An answer that is not an integer 1-5 is asked again once; if it still is not, the score is 1 and
    the record is flagged.
    """
    prompt = judge_prompt(record["task"], record["gold"], record["prediction"], client)
    value, flagged = await _ask(judge, prompt, parse_judge, attempt_timeout, slots)
    return (1, True) if value is None else (int(value), flagged)


async def judge_authors(
    judge: str, record: dict[str, Any], client: str | None, attempt_timeout: int | None = None, slots: str | None = None
) -> tuple[dict[str, int] | None, bool]:
    """The authors' VP rubric (0-2 target + 0-4 viewpoint) for a valid VP record."""
    prompt = judge_prompt("vp", record["gold"], record["prediction"], client, rubric="authors")
    return await _ask(judge, prompt, parse_vp_rubric, attempt_timeout, slots, rubric="authors")


def primary_value(record: dict[str, Any]) -> float:
    """One number per sample for inspect's live display (the summary is computed separately)."""
    task, pred, gold = record["task"], record["prediction"], record["gold"]
    if task == "itp":
        return float(pred == gold)
    if task in ("rpp", "stp", "ssp"):
        return float(bool(pred) and pred[0] == gold)
    if task == "er":
        return float(record["score"] if record["score"] is not None else record["intensity_score"])
    return float(record["judge_score"] or 0.0)


COLLECTED: dict[str, dict[str, dict[str, Any]]] = {}
"""Records of the running ``rescue eval``, by collector key then instance id (see ``rescue_scorer``)."""

CALL_SLOTS: dict[str, Any] = {}
"""One semaphore per running ``rescue eval`` (by collector key) that every model and judge call of
the run holds while it runs: the bound on calls in flight over all tasks and both models, which
lets the tasks run at the same time (inspect_ai's pools are per model, so the judge's would add
its own ``max_connections``)."""


@contextlib.asynccontextmanager
async def _call_slot(key: str | None) -> AsyncIterator[None]:
    slot = CALL_SLOTS.get(key) if key is not None else None
    if slot is None:
        yield
        return
    async with slot:
        yield


@scorer(metrics=[mean()])
def rescue_scorer(
    judge: str | None = None, vp_rubric: str = "default", attempt_timeout: int | None = None, collect: str | None = None
):
    """Parse the answer per SPEC section 5; judge valid ER/VP answers with ``judge`` when given.

    ``vp_rubric="authors"`` scores VP with the authors' 0-2 + 0-4 rubric (``judge_authors``, 0-6)
    instead of the 1-5 judge score. With ``collect``, each record is also kept in
    ``COLLECTED[collect]`` (when the caller opened that key), so ``rescue eval`` takes its results
    from memory instead of reading every sample back from the logs, and judge calls hold a slot of
    ``CALL_SLOTS[collect]`` (when opened) while they run.
    """

    async def score(state: TaskState, target: Target) -> Score:
        inst = state.metadata
        output = state.output
        raw = output.completion if output is not None and not output.error and output.choices else None
        record = base_record(inst, raw)
        if judge and record["task"] == "vp" and vp_rubric == "authors":
            parts, flagged = (None, False)
            if record["valid"]:
                parts, flagged = await judge_authors(judge, record, inst.get("client"), attempt_timeout, collect)
            record = with_authors_judge(record, parts, flagged)
        elif judge and record["valid"] and record["task"] in ("er", "vp"):
            value, flagged = await judge_score(judge, record, inst.get("client"), attempt_timeout, collect)
            record = with_judge(record, value, flagged)
        if collect is not None and collect in COLLECTED:
            COLLECTED[collect][record["id"]] = record
        return Score(value=primary_value(record), answer=raw, explanation=record["error"], metadata={"record": record})

    return score


@solver
def answer(cache: bool = True, slots: str | None = None):
    """One model call per instance, cached (no tools, no retries beyond the provider's).

    With ``slots``, the call holds a slot of ``CALL_SLOTS[slots]`` while it runs.
    """
    gen = generate(cache=CACHE if cache else False)

    async def solve(state: TaskState, generate_fn: Generate) -> TaskState:
        async with _call_slot(slots):
            return await gen(state, generate_fn)

    return solve


def rescue_task(
    task_name: str,
    data: str | Sequence[str] | None = None,
    mode: str = "dialogue",
    context: int | None = None,
    judge: str | None = None,
    instances: list[Instance] | None = None,
    repair_mojibake: bool = False,
    cache: bool = True,
    temperature: float | None = 0.0,
    vp_rubric: str = "default",
    attempt_timeout: int | None = None,
    collect: str | None = None,
) -> Task:
    """An inspect task for ``task_name`` over ``data`` (paths; the bundled demo when ``None``)."""
    if instances is None:
        paths = [data] if isinstance(data, str) else data
        clips = load_clips(paths, repair_mojibake=repair_mojibake)
        options = BuildOptions(mode=mode).with_context(context)  # type: ignore[arg-type]
        instances = build_instances(clips, task_name, options)
    register_instances(instances)
    return Task(
        dataset=MemoryDataset([instance_sample(i) for i in instances], name=f"rescue_{task_name}"),
        solver=answer(cache=cache, slots=collect),
        scorer=rescue_scorer(judge=judge, vp_rubric=vp_rubric, attempt_timeout=attempt_timeout, collect=collect),
        config=GenerateConfig(temperature=temperature),
        name=f"rescue_{task_name}",
        metadata={"rescue_task": task_name, "mode": mode, "context": context, "judge": judge, "vp_rubric": vp_rubric},
    )


@task
def itp(data: str | None = None, mode: str = "dialogue", context: int | None = None) -> Task:
    """Intervention time prediction: should the therapist take the next turn?"""
    return rescue_task("itp", data, mode, context)


@task
def rpp(data: str | None = None, mode: str = "dialogue", context: int | None = None) -> Task:
    """Relation pattern prediction: which relation pattern organises the interaction?"""
    return rescue_task("rpp", data, mode, context)


@task
def stp(data: str | None = None, mode: str = "dialogue", context: int | None = None) -> Task:
    """Support target prediction: whom should the therapist's next turn address?"""
    return rescue_task("stp", data, mode, context)


@task
def ssp(data: str | None = None, mode: str = "dialogue", context: int | None = None) -> Task:
    """Support strategy prediction: with which strategy, given the target?"""
    return rescue_task("ssp", data, mode, context)


@task
def er(data: str | None = None, mode: str = "dialogue", context: int | None = None, judge: str | None = None) -> Task:
    """Emotion recognition: what does this client feel, and how strongly?"""
    return rescue_task("er", data, mode, context, judge)


@task
def vp(data: str | None = None, mode: str = "dialogue", context: int | None = None, judge: str | None = None) -> Task:
    """Viewpoint prediction: what does this client think of each other participant?"""
    return rescue_task("vp", data, mode, context, judge)
