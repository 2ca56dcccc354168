"""Offline baselines exposed to inspect_ai as a model provider: ``--model baseline/<method>``.

Baselines need the whole instance set of a task (cross-validation over clips), which a chat model API
never sees. The task factories therefore register their instances here, and each user message carries
the neutral instance id in its metadata (never sent to a real provider). The answers come from
:func:`rescue_bench.baselines.predict_answers`, computed once per task and instance set.
"""

from __future__ import annotations

import hashlib
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from rescue_bench.tasks.instance import Instance

INSTANCE_KEY = "rescue_instance"
"""Metadata key of the user message that names the instance id."""

_sets: dict[str, list[Instance]] = {}
_set_of: dict[str, str] = {}
_answers: dict[tuple[str, str, int], dict[str, str]] = {}


def register_instances(instances: list[Instance]) -> None:
    """Make ``instances`` (one task) answerable by the baseline provider."""
    if not instances:
        return
    key = hashlib.sha256("|".join(sorted(i.id for i in instances)).encode()).hexdigest()
    _sets[key] = instances
    for inst in instances:
        _set_of[inst.id] = key


def baseline_answer(method: str, instance_id: str, seed: int = 0) -> str:
    """The baseline's raw answer for a registered instance."""
    from rescue_bench.baselines import predict_answers

    key = _set_of.get(instance_id)
    if key is None:
        raise KeyError(f"instance {instance_id} was not registered for baselines")
    cache_key = (key, method, seed)
    if cache_key not in _answers:
        _answers[cache_key] = predict_answers(_sets[key], method, seed=seed)
    return _answers[cache_key][instance_id]


def instance_id_of(messages: list[ChatMessage]) -> str | None:
    """The instance id carried by the last message that has one."""
    for message in reversed(messages):
        meta: dict[str, Any] = getattr(message, "metadata", None) or {}
        if INSTANCE_KEY in meta:
            return str(meta[INSTANCE_KEY])
    return None


class BaselineAPI(ModelAPI):
    """A ModelAPI that answers from a baseline method (``majority``, ``random``, ``prior``, ``supervised``)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        seed: int = 0,
        **model_args: Any,
    ) -> None:
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
        instance_id = instance_id_of(input)
        if instance_id is None:
            raise ValueError("baseline models answer RESCUE-Bench instances only (no instance id in the prompt)")
        content = baseline_answer(self.model_name, instance_id, self.seed)
        return ModelOutput.from_content(model=f"baseline/{self.model_name}", content=content)

    def max_connections(self) -> int:
        return 256


@modelapi(name="baseline")
def baseline() -> type[ModelAPI]:
    return BaselineAPI
