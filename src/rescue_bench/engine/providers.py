"""How ``rescue`` talks to model providers: endpoint, API flavour, response cache, model roles.

Imports nothing of inspect_ai at module level, so the run driver can set the environment up before
inspect_ai is loaded.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from inspect_ai.model import Model

GRADER = "grader"
"""The inspect_ai model role of the ER/VP judge (``--model-role grader=...`` on ``inspect eval``)."""


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


def get_provider_model(name: str) -> Model:
    """The inspect_ai model ``name`` with the endpoint and API flavour above (for the judge role)."""
    from inspect_ai.model import get_model

    return get_model(name, base_url=endpoint(name), **provider_args(name))
