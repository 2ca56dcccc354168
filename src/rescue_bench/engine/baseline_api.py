"""Offline baselines exposed to inspect_ai as a model provider: ``--model baseline/<method>``.

Baselines need the whole instance set of a task (cross-validation over clips), which a chat model API
never sees. Each task's solver therefore holds its :class:`BaselinePool` (the task's *whole* instance
set, even when only part of it is evaluated under ``--limit`` or by one worker) and opens it, with
the id of the instance being answered, for the duration of each call with :func:`open_pool`; the
provider reads both from that scope. The messages carry nothing of it: what a real provider is sent,
and what keys the response cache, is the prompt alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from rescue_bench.tasks.instance import Instance


class BaselinePool:
    """A task's whole instance set: the scorer finds each sample's instance in it, and the baseline
    answers are computed over it (once, on first use)."""

    def __init__(self, instances: Sequence[Instance]) -> None:
        self.instances = list(instances)
        self._by_id: dict[str, Instance] | None = None
        self._answers: dict[tuple[str, int], dict[str, str]] = {}

    def instance(self, instance_id: str) -> Instance:
        """The instance with ``instance_id`` (``KeyError`` when it is not in the set)."""
        if self._by_id is None:
            self._by_id = {inst.id: inst for inst in self.instances}
        try:
            return self._by_id[instance_id]
        except KeyError:
            raise KeyError(f"instance {instance_id} is not in its task's instance set") from None

    def answer(self, method: str, instance_id: str, seed: int = 0) -> str:
        """The baseline's raw answer for one instance of the pool (all answers computed on first use)."""
        from rescue_bench.baselines import predict_answers

        key = (method, seed)
        if key not in self._answers:
            self._answers[key] = predict_answers(self.instances, method, seed=seed)
        try:
            return self._answers[key][instance_id]
        except KeyError:
            raise KeyError(f"instance {instance_id} is not in its task's baseline pool") from None


_POOL: ContextVar[tuple[BaselinePool, str] | None] = ContextVar("rescue_baseline_pool", default=None)


@contextlib.contextmanager
def open_pool(pool: BaselinePool | None, instance_id: str) -> Iterator[None]:
    """Make ``pool`` the one the baseline provider answers from, and ``instance_id`` the instance it
    answers, for the calls made inside."""
    token = _POOL.set(None if pool is None else (pool, instance_id))
    try:
        yield
    finally:
        _POOL.reset(token)


class BaselineAPI(ModelAPI):
    """A ModelAPI that answers from a baseline method (``majority``, ``random``, ``prior``, ``supervised``)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        seed: int = 0,
        **model_args: Any,
    ) -> None:
        # a fresh GenerateConfig per instance (a default argument would be one object shared by all)
        config = GenerateConfig() if config is None else config
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        from rescue_bench.baselines import BASELINES

        if model_name not in BASELINES:
            raise ValueError(f"unknown baseline {model_name!r}; expected one of {', '.join(BASELINES)}")
        self.seed = seed

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        scope = _POOL.get()
        if scope is None:
            raise ValueError("baseline models answer RESCUE-Bench instances only (no instance or task pool in scope)")
        pool, instance_id = scope
        content = pool.answer(self.model_name, instance_id, self.seed)
        return ModelOutput.from_content(model=f"baseline/{self.model_name}", content=content)

    def max_connections(self) -> int:
        return 256


@modelapi(name="baseline")
def baseline() -> type[ModelAPI]:
    return BaselineAPI
