"""The ``openai-video/`` provider on its own, against a loopback server: what goes on the wire, what
the log keeps, which errors are retried, and a missing endpoint or key.

The end-to-end runs through it (``rescue eval --mode video``, ``rescue annotate draft``) are in
tests/engine/test_video_mode.py and tests/annotate.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ContentText, ContentVideo, GenerateConfig
from openai import APIStatusError

from rescue_bench.engine.overflow import error_overflow
from rescue_bench.engine.providers import ProviderSetupError
from rescue_bench.engine.video_api import MEDIA_REMOVED, OpenAIVideoAPI
from rescue_bench.testing import FakeOpenAI

VIDEO = "data:video/mp4;base64," + base64.b64encode(b"\x00\x00\x00\x18ftypmp42 not really a video").decode()


def _generate(api: OpenAIVideoAPI, content: list[Any], config: GenerateConfig | None = None) -> Any:
    messages = [ChatMessageSystem(content="You watch."), ChatMessageUser(content=content)]
    return asyncio.run(api.generate(messages, [], "none", config or GenerateConfig()))


def _api(server: FakeOpenAI, **model_args: Any) -> OpenAIVideoAPI:
    return OpenAIVideoAPI("local/watcher", base_url=server.base_url, api_key="k", **model_args)


def test_a_video_goes_as_a_video_url_part_in_its_place_and_the_log_keeps_no_media():
    with FakeOpenAI(lambda messages: (200, "I saw it."), record_bodies=True) as server:
        api = _api(server)
        content = [ContentText(text="Row 1."), ContentVideo(video=VIDEO, format="mp4"), ContentText(text="Answer.")]
        output, call = _generate(api, content, GenerateConfig(temperature=0.25, seed=7, max_tokens=33))
    (body,) = server.stats.bodies
    assert body["model"] == "watcher" and (body["temperature"], body["seed"], body["max_tokens"]) == (0.25, 7, 33)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    parts = body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "video_url", "text"]
    assert parts[1] == {"type": "video_url", "video_url": {"url": VIDEO}}
    assert output.completion == "I saw it." and output.usage is not None
    # the log: the request as sent but for the media's bytes, and the server's reply
    logged = call.request["messages"][1]["content"]
    assert logged[1] == {"type": "video_url", "video_url": {"url": MEDIA_REMOVED}} and logged[0] == parts[0]
    assert call.response["choices"][0]["message"]["content"] == "I saw it." and not call.error


def test_a_video_that_is_not_a_data_uri_is_refused_before_anything_is_sent():
    with FakeOpenAI(lambda messages: (200, "no"), record_bodies=True) as server:
        with pytest.raises(ValueError, match="materialized"):
            _generate(_api(server), [ContentVideo(video="https://example.org/clip.mp4", format="mp4")])
        assert server.stats.requests == 0


def test_a_refusal_is_returned_with_its_message_and_logged_not_retried():
    with FakeOpenAI(lambda messages: (400, "This model's maximum context length is 1024 tokens"), record_bodies=True) as server:
        api = _api(server, max_retries=0)
        output, call = _generate(api, [ContentText(text="too long")])
        assert server.stats.requests == 1
    assert isinstance(output, APIStatusError) and output.status_code == 400
    assert not api.should_retry(output)
    assert call.error and "maximum context length" in str(call.response)
    assert "maximum context length is 1024 tokens" in (error_overflow(output) or "")  # read as an overflow


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_rate_limit_or_server_error_is_raised_for_inspect_ai_to_retry(status):
    with FakeOpenAI(lambda messages: (status, "busy")) as server:
        api = _api(server, max_retries=0)  # the client's own retries off: one request, then the error
        with pytest.raises(APIStatusError) as raised:
            _generate(api, [ContentText(text="hello")])
        assert server.stats.requests == 1
    assert raised.value.status_code == status and api.should_retry(raised.value)


def test_a_connection_refused_is_retried():
    with FakeOpenAI(lambda messages: (200, "x")) as server:
        api = _api(server, max_retries=0)
    with pytest.raises(Exception) as raised:  # the server is stopped: nothing listens
        _generate(api, [ContentText(text="hello")])
    assert api.should_retry(raised.value)


def test_one_client_per_event_loop():
    """inspect_ai keeps a model across eval() calls, each on a loop of its own: a second loop gets a
    client of its own (a connection of the first loop cannot be used from the second)."""
    with FakeOpenAI(lambda messages: (200, "again")) as server:
        api = _api(server)
        first, _ = _generate(api, [ContentText(text="one")])
        second, _ = _generate(api, [ContentText(text="two")])
        assert server.stats.requests == 2
    assert first.completion == second.completion == "again"


def test_a_missing_endpoint_or_key_is_one_line_naming_the_variables(monkeypatch):
    monkeypatch.delenv("NOKEY_API_KEY", raising=False)
    monkeypatch.delenv("NOKEY_BASE_URL", raising=False)
    with pytest.raises(ProviderSetupError, match=r"^openai-video/nokey/m: NOKEY_API_KEY and NOKEY_BASE_URL not set"):
        OpenAIVideoAPI("nokey/m")
    monkeypatch.setenv("NOKEY_API_KEY", "k")
    with pytest.raises(ProviderSetupError, match="NOKEY_BASE_URL not set") as raised:
        OpenAIVideoAPI("nokey/m")
    assert "API_KEY" not in str(raised.value)
    with pytest.raises(ProviderSetupError, match="openai-video/<service>/<model>"):
        OpenAIVideoAPI("justamodel")
