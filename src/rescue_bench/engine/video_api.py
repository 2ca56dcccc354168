"""``openai-video/<service>/<model>``: OpenAI-compatible Chat Completions that send video.

inspect_ai's Chat Completions conversion refuses video content ("Video content is not currently
supported by Open AI chat models"), yet the open multimodal servers that speak that protocol (vLLM,
SGLang, DashScope's compatible mode for Qwen-VL / Qwen-Omni) read video as a ``video_url`` part::

    {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,..."}}

This provider is a :class:`~inspect_ai.model.ModelAPI` built on inspect_ai's public API and the
``openai`` client. It reads ``<SERVICE>_BASE_URL`` and ``<SERVICE>_API_KEY`` as inspect_ai's
``openai-api/<service>/`` provider does; inspect_ai's model layer adds retries (:meth:`should_retry`),
the response cache and the connection limit. Messages are converted by inspect_ai's public
:func:`~inspect_ai.model.messages_to_openai` (text, images and audio as inspect_ai sends them):
each video is swapped for a placeholder image before conversion and the placeholder's part
replaced by a ``video_url`` part afterwards, so no conversion rule is copied here. The reply is read
by :func:`~inspect_ai.model.model_output_from_openai`.

A refused request (HTTP 400, 413, 422 ...) is raised with the server's message and is not retried;
a context-length refusal among them is read by :mod:`rescue_bench.engine.overflow` from its words.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ContentImage,
    ContentVideo,
    GenerateConfig,
    ModelAPI,
    ModelCall,
    ModelOutput,
    messages_to_openai,
    model_output_from_openai,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from openai import APIConnectionError, APIStatusError, APITimeoutError, AsyncOpenAI

from rescue_bench.engine.providers import ProviderSetupError

PROVIDER = "openai-video"
RETRY_STATUS = (408, 429)
"""HTTP statuses retried besides 5xx: a timeout and a rate limit (the rest of 4xx is a refusal)."""
MEDIA_REMOVED = "<base64-data-removed>"
"""What the logged request holds in place of a media data URI (inspect_ai's own placeholder text)."""


def _placeholder(index: int) -> str:
    return "data:image/png;base64," + base64.b64encode(f"rescue-video-slot-{index}".encode()).decode()


def _media_filter(key: Any, value: Any) -> Any:
    """The request as logged: media data URIs (image, video, audio) left out, everything else as sent."""
    if key in ("image_url", "video_url") and isinstance(value, dict) and str(value.get("url", "")).startswith("data:"):
        return {**value, "url": MEDIA_REMOVED}
    if key == "input_audio" and isinstance(value, dict) and "data" in value:
        return {**value, "data": MEDIA_REMOVED}
    return value


def completion_params(config: GenerateConfig) -> dict[str, Any]:
    """The generation settings of ``config`` that a Chat Completions request carries."""
    params: dict[str, Any] = {}
    for field, key in (
        ("max_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "top_p"), ("seed", "seed"),
        ("stop_seqs", "stop"), ("frequency_penalty", "frequency_penalty"), ("presence_penalty", "presence_penalty"),
        ("logit_bias", "logit_bias"), ("num_choices", "n"), ("logprobs", "logprobs"), ("top_logprobs", "top_logprobs"),
        ("reasoning_effort", "reasoning_effort"),
    ):
        value = getattr(config, field)
        if value is not None:
            params[key] = value
    if config.extra_body:
        params["extra_body"] = dict(config.extra_body)
    return params


async def video_messages_to_openai(input: list[ChatMessage]) -> list[Any]:
    """``input`` as Chat Completions messages, each video as a ``video_url`` part where it stood."""
    videos: dict[str, str] = {}
    swapped = []
    for message in input:
        if isinstance(message.content, list) and any(isinstance(c, ContentVideo) for c in message.content):
            parts: list[Any] = []
            for content in message.content:
                if isinstance(content, ContentVideo):
                    if not content.video.startswith("data:"):
                        raise ValueError("video content must be materialized (a data URI) before it is sent")
                    key = _placeholder(len(videos))
                    videos[key] = content.video
                    parts.append(ContentImage(image=key))
                else:
                    parts.append(content)
            message = message.model_copy(update={"content": parts})
        swapped.append(message)
    converted: list[Any] = list(await messages_to_openai(swapped))
    if videos:
        for message in converted:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for i, part in enumerate(content):
                url = part.get("image_url", {}).get("url") if part.get("type") == "image_url" else None
                if url in videos:
                    content[i] = {"type": "video_url", "video_url": {"url": videos[url]}}
    return converted


class OpenAIVideoAPI(ModelAPI):
    """OpenAI-compatible Chat Completions with ``video_url`` parts for video content."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        service, _, served = model_name.partition("/")
        if not service or not served:
            raise ProviderSetupError(f"{PROVIDER}/{model_name}: name the service and the model, {PROVIDER}/<service>/<model>")
        var = service.upper().replace("-", "_")
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, api_key_vars=[f"{var}_API_KEY"], config=config or GenerateConfig())
        self.served = served
        self.api_key = self.api_key or os.environ.get(f"{var}_API_KEY")
        self.base_url = self.base_url or os.environ.get(f"{var}_BASE_URL")
        missing = [name for name, value in ((f"{var}_API_KEY", self.api_key), (f"{var}_BASE_URL", self.base_url)) if not value]
        if missing:
            raise ProviderSetupError(f"{PROVIDER}/{model_name}: {' and '.join(missing)} not set in the environment")
        self.model_args = model_args
        self._client: AsyncOpenAI | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def client(self) -> AsyncOpenAI:
        """The client of the running event loop: inspect_ai keeps a model across ``eval()`` calls, each
        with a loop of its own, and a connection opened on one loop cannot be used from another."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = AsyncOpenAI(api_key=self.api_key, base_url=self.base_url, **self.model_args)
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = self._loop = None

    def service_model_name(self) -> str:
        return self.served

    def canonical_name(self) -> str:
        return self.served

    def connection_key(self) -> str:
        # one connection limit per key and model, as inspect_ai's OpenAI-compatible providers scope it
        return f"{self.initial_api_key}:{self.model_name}"

    def should_retry(self, ex: Exception) -> bool:
        if isinstance(ex, APIStatusError):
            return ex.status_code in RETRY_STATUS or ex.status_code >= 500
        return isinstance(ex, APIConnectionError | APITimeoutError)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> tuple[ModelOutput | Exception, ModelCall]:
        if tools:
            raise ValueError(f"the {PROVIDER} provider sends no tools")
        request: dict[str, Any] = {"model": self.served, "messages": await video_messages_to_openai(input), **completion_params(config)}
        call = ModelCall.create(request, None, filter=_media_filter)
        start = time.monotonic()
        try:
            completion = await self.client().chat.completions.create(**request)
        except APIStatusError as ex:
            if self.should_retry(ex):
                raise
            call.set_error(ex.body if isinstance(ex.body, dict) else {"message": ex.message}, time.monotonic() - start)
            return ex, call
        call.set_response(completion.model_dump(), time.monotonic() - start)
        return await model_output_from_openai(completion), call


@modelapi(name=PROVIDER)
def openai_video() -> type[ModelAPI]:
    return OpenAIVideoAPI
