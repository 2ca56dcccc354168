"""A scriptable OpenAI-compatible chat server on loopback, for tests and benchmarks.

It speaks the real wire protocol (``POST /v1/chat/completions``), so the whole client stack
(inspect_ai, the openai library, retries, connection pooling) runs for real. What it answers is
decided by a *responder*: a function from the request's messages to ``(status, content)``. It can
also fail a share of requests with HTTP errors, send garbage, stall, and add a fixed latency.

Never bind it to anything but a loopback address.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[list[dict[str, Any]]], tuple[int, str]]


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
            return status, json.dumps({"error": {"message": content, "type": "server_error"}}).encode()
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
