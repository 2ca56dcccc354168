"""Which inspect_ai providers take video, images and audio, and media files as inspect content.

Read from inspect_ai's provider sources (0.3.x), not from the services' marketing: what matters is
what inspect_ai *sends*. Whether a given model behind a provider understands the media is the
service's business; the table says where the request can carry them at all.

| provider (``--model`` prefix) | video | images | audio |
|---|---|---|---|
| ``google/`` (Gemini) | yes (uploaded through the Files API) | yes | yes |
| ``openai-video/<service>/`` (this project: vLLM, SGLang, DashScope and other OpenAI-compatible servers) | yes (``video_url`` parts) | yes | yes (``input_audio``) |
| ``openai/``, ``openai-api/``, ``vllm/``, ``sglang/``, ``together/``, ``openrouter/``, ``ollama/``... (Chat Completions) | no: inspect_ai raises "Video content is not currently supported" | yes | ``input_audio``: only audio models accept it |
| ``anthropic/``, ``mistral/``, ``groq/``, ``azureai/``, ``bedrock/``, ``grok/`` | no | yes | no |
| ``hf/``, ``transformer_lens/`` | no | no | no |

``--media frames`` sends sound only where the table says ``yes`` (audio-only OpenAI models are the
exception not worth guessing at).
"""

from __future__ import annotations

from typing import Any

VIDEO_PROVIDERS = ("google", "openai-video")
NO_IMAGE_PROVIDERS = ("hf", "transformer_lens", "nnterp", "baseline")
"""Providers whose requests cannot carry images; every other provider's can (table above)."""
AUDIO_PROVIDERS = ("google", "openai-video")

MIME = {"mp4": "video/mp4", "jpeg": "image/jpeg", "mp3": "audio/mpeg"}


def provider(model: str) -> str:
    """The provider prefix of an inspect model name (``google/gemini-2.5-pro`` -> ``google``)."""
    return model.split("/", 1)[0]


def accepts(model: str, kind: str) -> bool:
    """Whether ``model``'s provider can carry ``kind`` (``video``, ``image`` or ``audio``) content."""
    if kind == "image":
        return provider(model) not in NO_IMAGE_PROVIDERS
    return provider(model) in {"video": VIDEO_PROVIDERS, "audio": AUDIO_PROVIDERS}[kind]


def media_problem(model: str, kind: str) -> str | None:
    """One line saying why ``model`` cannot take ``kind`` content, or ``None`` when it can."""
    if accepts(model, kind):
        return None
    if kind == "video":
        return (
            f"model {model!r} cannot take video: inspect_ai sends video only to google/ (Gemini) and to "
            "openai-video/<service>/<model> (OpenAI-compatible servers that read video_url parts, e.g. vLLM, "
            "SGLang, DashScope; reads <SERVICE>_BASE_URL and <SERVICE>_API_KEY)"
        )
    return f"model {model!r} cannot take {kind} content through inspect_ai"


async def media_content(kind: str, path: str, fmt: str) -> Any:
    """inspect content for a media file, read into a data URI (trusted: our own assets folder).

    The bytes, not the path, are then part of the request and of its cache key, so a re-cut clip
    is never answered from a stale cache entry.
    """
    from inspect_ai.model import ContentAudio, ContentImage, ContentVideo
    from inspect_ai.util import materialize_media

    uri = await materialize_media(path, MIME[fmt])
    if kind == "video":
        return ContentVideo(video=uri, format=fmt)  # type: ignore[arg-type]
    if kind == "image":
        return ContentImage(image=uri)
    return ContentAudio(audio=uri, format=fmt)  # type: ignore[arg-type]
