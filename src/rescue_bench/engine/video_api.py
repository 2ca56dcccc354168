"""``openai-video/<service>/<model>``: inspect_ai's OpenAI-compatible provider, plus video.

inspect_ai's Chat Completions path refuses video content ("Video content is not currently supported
by Open AI chat models"), yet the open multimodal servers that speak that protocol (vLLM, SGLang,
DashScope's compatible mode for Qwen-VL / Qwen-Omni) read video as a ``video_url`` part::

    {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,..."}}

This provider is inspect_ai's ``openai-api`` provider (same ``<SERVICE>_BASE_URL`` /
``<SERVICE>_API_KEY`` variables, retries, cache) whose message conversion emits that part for each
video. Everything else (text, images, audio) is converted by inspect_ai unchanged: each video is
swapped for a placeholder image before conversion and the placeholder's part replaced afterwards,
so no other conversion rule is copied here.
"""

from __future__ import annotations

import base64
from typing import Any

from inspect_ai.model import modelapi

PROVIDER = "openai-video"


def _placeholder(index: int) -> str:
    return "data:image/png;base64," + base64.b64encode(f"rescue-video-slot-{index}".encode()).decode()


@modelapi(name=PROVIDER)
def openai_video() -> type[Any]:
    # inspect_ai exports no public base class for OpenAI-compatible providers; this one is stable
    # across its 0.3 releases (the openai-api provider itself)
    from inspect_ai.model import ContentImage, ContentVideo
    from inspect_ai.model._providers.openai_compatible import OpenAICompatibleAPI

    class OpenAIVideoAPI(OpenAICompatibleAPI):
        """OpenAI-compatible Chat Completions with ``video_url`` parts for video content."""

        async def messages_to_openai(self, input: list[Any]) -> list[Any]:  # noqa: A002 - inspect's name
            videos: dict[str, str] = {}
            swapped = []
            for message in input:
                if isinstance(message.content, list) and any(isinstance(c, ContentVideo) for c in message.content):
                    parts = []
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
            converted = await super().messages_to_openai(swapped)
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

    return OpenAIVideoAPI
