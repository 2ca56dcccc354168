"""The ER/VP judge: the model bound to inspect_ai's ``grader`` role scores valid answers.

``rescue eval --judge M`` binds M to the role; on the ``inspect eval`` route it is
``--model-role grader=M``. Without the role nothing is judged (the judged means are then reported
as missing rather than computed by the model under evaluation grading itself). Judge calls go
through the response cache like every other call, and hold a slot of the run's channel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspect_ai.model import (
    CachePolicy,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
    model_roles,
)

from rescue_bench.contract import judge_format
from rescue_bench.engine.channel import RunChannel, call_slot, request_key
from rescue_bench.engine.providers import GRADER
from rescue_bench.engine.settings import JUDGE_TEMPERATURE
from rescue_bench.labels import Rubric
from rescue_bench.parse import ParsedAnswer, parse_judge, parse_vp_rubric
from rescue_bench.prompts import judge_prompt
from rescue_bench.records import ResultRow

CACHE = CachePolicy(expiry=None)
"""Responses never expire: re-running a command repeats no finished call."""


def to_messages(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """Role/content dicts (the agent's chain, a closed-loop episode's requests) as inspect chat messages."""
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return [kinds[m["role"]](content=m["content"]) for m in messages]



def grader() -> Model | None:
    """The model bound to the ``grader`` role in the running eval, or ``None`` (no judging)."""
    return get_model(role=GRADER) if GRADER in model_roles() else None


async def ask_judge(
    judge: Model,
    prompt: Any,
    parse: Callable[[str], ParsedAnswer],
    attempt_timeout: int | None = None,
    channel: RunChannel | None = None,
    rubric: Rubric = "default",
    seed: int | None = None,
) -> tuple[Any, bool]:
    """Ask ``judge``; re-ask once, in ``rubric``'s answer format, when the reply does not parse.
    ``(prediction or None, flagged)``.

    ``attempt_timeout`` is passed explicitly: inspect_ai hands the judge (not the model under
    evaluation) the eval's retry settings but not its per-attempt timeout. The judge is sent
    :data:`JUDGE_TEMPERATURE` and ``seed``.
    """
    config = GenerateConfig(attempt_timeout=attempt_timeout, temperature=JUDGE_TEMPERATURE, seed=seed)
    messages: list[Any] = [ChatMessageSystem(content=prompt.system), ChatMessageUser(content=prompt.user)]
    async with call_slot(channel, request_key(str(judge), messages)):
        output = await judge.generate(messages, cache=CACHE, config=config)
    if channel is not None:
        channel.note_request("judge")
    parsed = parse(output.completion)
    if parsed.valid:
        return parsed.prediction, False
    reask = judge_format(rubric).reask
    if reask is None:  # every judge format of the contract declares its re-ask; this one does not
        raise ValueError(f"the answer contract declares no re-ask for the {rubric!r} judge rubric")
    messages += [ChatMessageAssistant(content=output.completion), ChatMessageUser(content=reask)]
    async with call_slot(channel, request_key(str(judge), messages)):
        output = await judge.generate(messages, cache=CACHE, config=config)
    parsed = parse(output.completion)
    return (parsed.prediction, False) if parsed.valid else (None, True)


async def judge_score(
    judge: Model,
    record: ResultRow,
    client: str | None,
    attempt_timeout: int | None = None,
    channel: RunChannel | None = None,
    seed: int | None = None,
) -> tuple[int, bool]:
    """Ask ``judge`` for a 1-5 score of a valid ER/VP record: ``(score, flagged)``.

    An answer that is not an integer 1-5 is asked again once; if it still is not, the score is 1 and
    the record is flagged.
    """
    prompt = judge_prompt(record["task"], record["gold"], record["prediction"], client)
    value, flagged = await ask_judge(judge, prompt, parse_judge, attempt_timeout, channel, seed=seed)
    return (1, True) if value is None else (int(value), flagged)


async def judge_authors(
    judge: Model,
    record: ResultRow,
    client: str | None,
    attempt_timeout: int | None = None,
    channel: RunChannel | None = None,
    seed: int | None = None,
) -> tuple[dict[str, int] | None, bool]:
    """The authors' VP rubric (0-2 target + 0-4 viewpoint) for a valid VP record."""
    prompt = judge_prompt("vp", record["gold"], record["prediction"], client, rubric="authors")
    return await ask_judge(judge, prompt, parse_vp_rubric, attempt_timeout, channel, rubric="authors", seed=seed)
