"""A scriptable OpenAI-compatible chat server on loopback, for tests and benchmarks.

It speaks the real wire protocol (``POST /v1/chat/completions``), so the whole client stack
(inspect_ai, the openai library, retries, connection pooling) runs for real. What it answers is
decided by a *responder*: a function from the request's messages to ``(status, content)``; an error's
content is its message, or the whole error body as a server sends it (:class:`ContextWindow` answers
an overlong prompt as OpenAI, llama.cpp's server, llama-cpp-python's and vLLM do). It can also fail a
share of requests with HTTP errors, send garbage, stall, and add a fixed latency.

Never bind it to anything but a loopback address.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypedDict


class ContentPart(TypedDict, total=False):
    """A part of a message's content given as a list (``{"type": "text", "text": ...}``, an image ...)."""

    type: str
    text: str


class RequestMessage(TypedDict, total=False):
    """One message of a chat request body as received: its content a string or a list of parts."""

    role: str
    content: str | list[ContentPart]


Responder = Callable[[list[RequestMessage]], tuple[int, str | Mapping[str, Any]]]
"""Messages -> ``(status, content)``: a reply's text with 200; with an error status, the error's
message, or (a mapping) the whole body the server sends."""


@dataclass
class ServerStats:
    """Counters the tests and benchmarks read."""

    requests: int = 0
    answered: int = 0
    errors: int = 0
    stalled: int = 0
    garbled: int = 0
    in_flight: int = 0
    """Requests being handled right now (received, answer not yet sent)."""
    peak_in_flight: int = 0
    """The most requests ever handled at the same time: the client's real concurrency."""
    prompt_chars: list[str] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    """Every request body as received (with ``record_bodies``): what the client really sent."""
    paths: list[str] = field(default_factory=list)
    """The path of every request received (with ``record_bodies``), e.g. ``/v1/chat/completions``."""
    lock: threading.Lock = field(default_factory=threading.Lock)


GARBAGE_BODIES = (
    b'{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"index": 0, "mess',
    b"<html><body>502 Bad Gateway</body></html>",
    b"\x00\xff\xfe not json at all",
)
"""Bodies of a broken proxy or a cut connection, sent with status 200."""


def _stable_fraction(text: str, salt: str) -> float:
    digest = hashlib.sha256(f"{salt}\x1f{text}".encode()).hexdigest()
    return int(digest[:8], 16) / 0xFFFFFFFF


class FakeOpenAI:
    """An OpenAI-compatible server on ``127.0.0.1`` (``base_url`` ends in ``/v1``).

    ``error_rate``: share of requests answered with an HTTP error from ``error_codes`` (chosen per
    attempt, so a retry can succeed). ``garbage_rate``: share of requests answered ``200 OK`` with a body
    that is not a chat completion (truncated JSON, HTML, binary; per attempt too). ``stall_rate`` /
    ``stall_seconds``: share of prompts whose *first* attempt waits before answering (a retry is
    answered at once). ``latency``: seconds added to every answer. ``record_prompts`` keeps every
    prompt's text (for prefix-reuse measurements), ``record_bodies`` every request body and path as
    received (what a client really sends: temperature, roles). ``status``: answer every request with
    that HTTP error (401: a rejected API key). ``stats`` counts requests, answers, errors, stalls,
    garbled bodies and the peak number of requests in flight.
    """

    def __init__(
        self,
        responder: Responder,
        *,
        latency: float = 0.0,
        error_rate: float = 0.0,
        error_codes: tuple[int, ...] = (429, 500, 502, 503),
        garbage_rate: float = 0.0,
        stall_rate: float = 0.0,
        stall_seconds: float = 0.0,
        record_prompts: bool = False,
        record_bodies: bool = False,
        status: int | None = None,
        seed: str = "rescue",
        port: int = 0,
    ) -> None:
        self.responder = responder
        self.latency = latency
        self.error_rate = error_rate
        self.error_codes = error_codes
        self.garbage_rate = garbage_rate
        self.stall_rate = stall_rate
        self.stall_seconds = stall_seconds
        self.record_prompts = record_prompts
        self.record_bodies = record_bodies
        self.status = status
        """Answer every request with this HTTP status and an error body (e.g. 401: a wrong API key)."""
        self.seed = seed
        self.port = port
        """Port on 127.0.0.1 (0: any free port)."""
        self.stats = ServerStats()
        self._attempt = 0
        self._attempts_of: dict[int, int] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # silence
                pass

            def do_GET(self) -> None:  # /v1/models, for clients that probe
                body = json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode()
                self._send(200, body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    payload = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:  # a client that died mid-request: nothing to answer
                    self._send(400, b'{"error": {"message": "bad request body"}}')
                    return
                if owner.record_bodies:
                    with owner.stats.lock:
                        owner.stats.bodies.append(payload)
                        owner.stats.paths.append(self.path)
                status, body = owner._handle(payload)
                self._send(status, body)

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                # a client killed or interrupted mid-request (the tests do that on purpose) resets
                # its connections: not worth a traceback on stderr; anything else still gets one
                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                    super().handle_error(request, client_address)

        self._server = Server(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- requests --------------------------------------------------------------------------------
    def _handle(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        with self.stats.lock:
            self.stats.in_flight += 1
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)
        try:
            return self._answer(payload)
        except Exception as exc:  # a responder bug is an HTTP 500, never a dropped connection
            with self.stats.lock:
                self.stats.errors += 1
            return 500, json.dumps({"error": {"message": f"responder failed: {exc!r}"}}).encode()
        finally:
            with self.stats.lock:
                self.stats.in_flight -= 1

    def _answer(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        if self.status is not None:
            with self.stats.lock:
                self.stats.requests += 1
                self.stats.errors += 1
            kind = "invalid_request_error" if self.status < 500 else "server_error"
            return self.status, json.dumps({"error": {"message": f"status {self.status}", "type": kind}}).encode()
        messages = payload.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        with self.stats.lock:
            self.stats.requests += 1
            self._attempt += 1
            attempt = self._attempt
            key = hash(prompt)
            self._attempts_of[key] = tries = self._attempts_of.get(key, 0) + 1
            if self.record_prompts:
                self.stats.prompt_chars.append(prompt)
        if self.stall_rate and tries == 1 and _stable_fraction(prompt, self.seed + "stall") < self.stall_rate:
            with self.stats.lock:
                self.stats.stalled += 1
            time.sleep(self.stall_seconds)
        if self.latency:
            time.sleep(self.latency)
        if self.error_rate and _stable_fraction(f"{prompt}{attempt}", self.seed + "err") < self.error_rate:
            code = self.error_codes[attempt % len(self.error_codes)]
            with self.stats.lock:
                self.stats.errors += 1
            return code, json.dumps({"error": {"message": f"injected {code}", "type": "server_error"}}).encode()
        if self.garbage_rate and _stable_fraction(f"{prompt}{attempt}", self.seed + "garbage") < self.garbage_rate:
            with self.stats.lock:
                self.stats.garbled += 1
            return 200, GARBAGE_BODIES[attempt % len(GARBAGE_BODIES)]
        status, content = self.responder(messages)
        if status != 200:
            with self.stats.lock:
                self.stats.errors += 1
            body = content if isinstance(content, Mapping) else {"error": {"message": content, "type": "server_error"}}
            return status, json.dumps(body).encode()
        if not isinstance(content, str):
            raise TypeError(f"a 200 reply's content is text, not {type(content).__name__}")
        with self.stats.lock:
            self.stats.answered += 1
        body = {
            "id": f"chatcmpl-{attempt}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": payload.get("model", "fake"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": max(1, len(content) // 4),
                "total_tokens": len(prompt) // 4 + max(1, len(content) // 4),
            },
        }
        return 200, json.dumps(body).encode()


OverflowStyle = Literal["openai", "llama-cpp-python", "llama.cpp", "vllm"]
OVERFLOW_STYLES: tuple[OverflowStyle, ...] = ("openai", "llama-cpp-python", "llama.cpp", "vllm")


class ContextWindow:
    """A responder with a context window: a prompt of more than ``n_ctx`` tokens is refused with HTTP
    400, in the words and body of the server ``style`` names; shorter prompts go to ``responder``.

    Tokens are counted as one per ``chars_per_token`` characters of the messages' text. The bodies,
    as each server sends them:

    - ``openai``: ``{"error": {"message": "This model's maximum context length is N tokens. However, your
      messages resulted in M tokens. ...", "type": "invalid_request_error", "param": "messages",
      "code": "context_length_exceeded"}}``;
    - ``llama-cpp-python`` (its server, ``python -m llama_cpp.server``): the same code and type, its
      own message ("... However, you requested M tokens (M in the messages, None in the completion) ...");
    - ``llama.cpp`` (llama.cpp's ``llama-server``): ``{"error": {"code": 400, "message": "request (M
      tokens) exceeds the available context size (N tokens), try increasing it", "type":
      "exceed_context_size_error", "n_prompt_tokens": M, "n_ctx": N}}``;
    - ``vllm``: ``{"object": "error", "message": "This model's maximum context length is N tokens.
      However, you requested M tokens in the messages, Please reduce the length of the messages.",
      "type": "BadRequestError", "param": null, "code": 400}``.

    ``refused`` counts the prompts refused.
    """

    def __init__(self, responder: Responder, n_ctx: int, style: OverflowStyle = "openai", chars_per_token: int = 4) -> None:
        if style not in OVERFLOW_STYLES:
            raise ValueError(f"unknown overflow style {style!r}; expected one of {', '.join(OVERFLOW_STYLES)}")
        self.responder = responder
        self.n_ctx = n_ctx
        self.style = style
        self.chars_per_token = chars_per_token
        self.refused = 0
        self._lock = threading.Lock()

    def tokens(self, messages: list[RequestMessage]) -> int:
        """The prompt's tokens as this window counts them."""
        return sum(len(str(m.get("content", ""))) for m in messages) // self.chars_per_token

    def __call__(self, messages: list[RequestMessage]) -> tuple[int, str | Mapping[str, Any]]:
        used = self.tokens(messages)
        if used <= self.n_ctx:
            return self.responder(messages)
        with self._lock:
            self.refused += 1
        return 400, self.body(used)

    def body(self, used: int) -> dict[str, Any]:
        """The error body of a prompt of ``used`` tokens, in this window's style."""
        n = self.n_ctx
        if self.style == "openai":
            message = (f"This model's maximum context length is {n} tokens. However, your messages resulted in {used} tokens. "
                       "Please reduce the length of the messages.")
            return {"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
        if self.style == "llama-cpp-python":
            message = (f"This model's maximum context length is {n} tokens. However, you requested {used} tokens ({used} in the "
                       "messages, None in the completion). Please reduce the length of the messages or completion.")
            return {"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
        if self.style == "llama.cpp":
            message = f"request ({used} tokens) exceeds the available context size ({n} tokens), try increasing it"
            return {"error": {"code": 400, "message": message, "type": "exceed_context_size_error", "n_prompt_tokens": used, "n_ctx": n}}
        message = (f"This model's maximum context length is {n} tokens. However, you requested {used} tokens in the messages, "
                   "Please reduce the length of the messages.")
        return {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400}
