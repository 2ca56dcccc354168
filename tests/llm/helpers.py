"""The real-model lane's server and how a test runs ``rescue`` against it (the fixtures that hand it
out are in this folder's conftest).

:class:`LlamaServers` starts llama-cpp-python's server with the SmolLM2-135M-Instruct model file
(:mod:`rescue_bench.testing.llama`) with the context window a test asks for, one server at a time
(the machine's CPUs are shared); :class:`LocalModel` is the running server: its endpoint, the
requests it has answered, and :meth:`LocalModel.rescue`, which runs any ``rescue`` command
in-process against it. :func:`wire_calls` reads what the server sent back, as the run's inspect
logs recorded it on the wire.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from rescue_bench.cli import app
from rescue_bench.testing.llama import ALIAS, LlamaServer, LlamaServerError

DEFAULT_CTX = 8192
"""The default window, and the largest the lane starts."""
COMPLETIONS = "POST /v1/chat/completions"
"""What the server's access log says for each chat completion it answers."""
REFUSED = f'{COMPLETIONS} HTTP/1.1" 400'
"""... and for each one it refuses (a prompt longer than its context window)."""


@dataclass
class LocalModel:
    """The running server: its endpoint, its window, and how to run ``rescue`` against it."""

    server: LlamaServer
    model: str = f"openai/{ALIAS}"

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def env(self, cache: Path) -> dict[str, str]:
        """The environment of a command against this server: the route, a key it ignores, a response cache."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": "local-no-key", "RESCUE_CACHE_DIR": str(cache)}

    def rescue(self, *args: str, cache: Path) -> Result:
        """``rescue <args>`` in-process against this server, with the response cache in ``cache``."""
        return CliRunner().invoke(app, list(args), env=self.env(cache))

    def requests(self) -> int:
        """Chat completions the server has answered since it started (its own access log)."""
        return self.server.log.read_text(errors="replace").count(COMPLETIONS)

    def refused(self) -> int:
        """Those of :meth:`requests` it refused with HTTP 400 (a prompt longer than its window)."""
        return self.server.log.read_text(errors="replace").count(REFUSED)


class LlamaServers:
    """The session's server of the model file: one at a time, with the window the test asks for."""

    def __init__(self, python: str, model: Path, logs: Path) -> None:
        self.python = python
        self.model = model
        self.logs = logs
        self._running: LocalModel | None = None

    def server(self, n_ctx: int = DEFAULT_CTX) -> LocalModel:
        """The server with a context window of ``n_ctx`` tokens: the running one when its window is
        that, else a new one (the other is stopped first)."""
        if n_ctx > DEFAULT_CTX:
            raise ValueError(f"the lane starts no window above {DEFAULT_CTX} tokens")
        if self._running is not None and self._running.server.n_ctx == n_ctx:
            return self._running
        self.stop()
        server = LlamaServer(self.python, self.model, n_ctx=n_ctx, log=self.logs / f"llama_server_{n_ctx}.log")
        try:
            server.start()
        except LlamaServerError as exc:
            pytest.fail(str(exc))
        self._running = LocalModel(server)
        return self._running

    def stop(self) -> None:
        """Stop the server, if one runs."""
        if self._running is not None:
            self._running.server.stop()
            self._running = None


@dataclass(frozen=True)
class WireCall:
    """One call that went on the wire: the reply's text as the server sent it, and its token counts."""

    reply: str
    input_tokens: int
    output_tokens: int


def _resolve(text: Any, attachments: dict[str, str]) -> Any:
    """A logged text, with the log's ``attachment://`` reference (a long text kept once) resolved."""
    if isinstance(text, str) and text.startswith("attachment://"):
        return attachments.get(text.removeprefix("attachment://"), text)
    return text


def wire_calls(out: Path) -> dict[str, list[WireCall]]:
    """Each sample's calls that went on the wire (not answered from the response cache), in order,
    as the run's inspect logs (anywhere under ``out``) recorded the server's response bodies."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import read_eval_log

    calls: dict[str, list[WireCall]] = {}
    logs = sorted(out.glob("**/*.eval"))
    assert logs, f"no inspect logs under {out}"
    for path in logs:
        for sample in read_eval_log(str(path)).samples or []:
            for event in sample.events:
                if not isinstance(event, ModelEvent) or event.call is None or event.cache == "read" or not event.call.response:
                    continue
                body = event.call.response
                usage = body.get("usage") or {}
                text = _resolve(body["choices"][0]["message"]["content"], sample.attachments or {})
                calls.setdefault(str(sample.id), []).append(WireCall(text, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)))
    return calls


def wire_replies(out: Path) -> dict[str, list[str]]:
    """Each sample's replies as the server sent them, in the order of its calls (:func:`wire_calls`)."""
    return {sample: [call.reply for call in calls] for sample, calls in wire_calls(out).items()}


def all_replies(out: Path) -> list[str]:
    """Every reply the server sent the run, sample after sample."""
    return [reply for replies in wire_replies(out).values() for reply in replies]


class FailingProxy:
    """A loopback proxy in front of the server: answers the first ``fail`` requests with HTTP 503 (a
    transient error every client retries) and forwards the others; ``received`` counts every request
    that reached it, the server's own log the ones forwarded."""

    def __init__(self, target: str, fail: int) -> None:
        self.target = target.removesuffix("/v1")
        self.fail = fail
        self.received = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "proxy not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FailingProxy:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner._lock:
                    owner.received += 1
                    failing = owner.received <= owner.fail
                if failing:
                    self._send(503, b'{"error": {"message": "busy: try again", "type": "server_error"}}')
                    return
                forwarded = urllib.request.Request(owner.target + self.path, data=body, headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(forwarded, timeout=1800) as response:
                        self._send(response.status, response.read())
                except urllib.error.HTTPError as exc:
                    self._send(exc.code, exc.read())

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
