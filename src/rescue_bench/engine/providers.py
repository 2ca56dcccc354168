"""How ``rescue`` talks to model providers: endpoint, API flavour, response cache, model roles.

Imports nothing of inspect_ai at module level, so the run driver can set the environment up before
inspect_ai is loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rescue_bench.errors import RescueError

if TYPE_CHECKING:  # pragma: no cover
    from inspect_ai.model import GenerateConfig, Model

    from rescue_bench.engine.settings import RunSettings

GRADER = "grader"
"""The inspect_ai model role of the ER/VP judge (``--model-role grader=...`` on ``inspect eval``)."""
SIMULATOR_ROLE = "simulator"
"""The inspect_ai model role a closed loop's model simulator is made with (its usage is counted apart)."""


CLIENT_RETRIES_OFF = ("openai/", "openai-api/", "openai-video/", "anthropic/")
"""Providers whose SDK client retries a failed request on its own (the OpenAI and Anthropic
clients: twice), inside each of inspect_ai's attempts. inspect_ai hands a model's args to its
client, so ``max_retries=0`` there leaves the retries to inspect_ai: ``--max-retries N`` is then N
retries on the wire, N + 1 requests for a call that keeps failing (3 x (N + 1) with the clients'
own). Other providers keep their client's defaults."""


def provider_args(model: str) -> dict[str, Any]:
    """Model args of ``model`` (a name as :func:`route` gives it): its client's own retries off
    (:data:`CLIENT_RETRIES_OFF`), and Chat Completions for ``openai/<name>`` on any compatible server.

    With ``OPENAI_BASE_URL`` set the endpoint is a compatible server (vLLM, Ollama, DashScope,
    DeepSeek ...), which speaks Chat Completions; inspect_ai would otherwise pick the Responses API
    for some model names. ``RESCUE_RESPONSES_API=1`` keeps the Responses API.
    """
    args: dict[str, Any] = {}
    if model.startswith("openai/") and os.environ.get("OPENAI_BASE_URL") and not os.environ.get("RESCUE_RESPONSES_API"):
        args["responses_api"] = False
    if model.startswith(CLIENT_RETRIES_OFF):
        args["max_retries"] = 0
    return args


def route(model: str) -> str:
    """The inspect_ai model name ``--model`` is sent through.

    inspect_ai takes any name on its ``openai/`` provider that it does not know for a frontier
    OpenAI model: it sends no ``temperature`` (nor seed) and the system text as a ``developer``
    message. With ``OPENAI_BASE_URL`` set the endpoint is an OpenAI-compatible server (vLLM,
    Ollama, DeepSeek ...), so ``openai/<name>`` goes through inspect_ai's generic compatible
    provider instead, ``openai-api/openai/<name>``, which reads the same ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` and sends the run's settings and a ``system`` message.
    ``RESCUE_RESPONSES_API=1`` keeps inspect_ai's own OpenAI provider (and its Responses API).
    """
    if model.startswith("openai/") and os.environ.get("OPENAI_BASE_URL") and not os.environ.get("RESCUE_RESPONSES_API"):
        return "openai-api/openai/" + model.removeprefix("openai/")
    return model


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


class ProviderSetupError(RescueError):
    """A provider or the response cache cannot be set up (no API key, a cache folder that is a file)."""


def use_cache_dir() -> str | None:
    """Point inspect_ai's response cache at ``RESCUE_CACHE_DIR`` when that is set.

    The folder is made (and checked to be a writable folder) here, before any call: a cache that
    cannot be written would otherwise fail every call of the run, one by one.
    """
    cache_dir = os.environ.get("RESCUE_CACHE_DIR")
    if cache_dir:
        path = Path(cache_dir)
        try:
            path.mkdir(parents=True, exist_ok=True)
            if not os.access(path, os.W_OK | os.X_OK):
                raise PermissionError("not writable")
        except (OSError, PermissionError) as exc:
            reason = "is not a folder" if path.exists() and not path.is_dir() else f"cannot be used ({exc.strerror or exc})"
            raise ProviderSetupError(f"RESCUE_CACHE_DIR={cache_dir} {reason}; point it at a folder") from None
        os.environ["INSPECT_CACHE_DIR"] = cache_dir
    return cache_dir


def setup_error_line(exc: BaseException) -> str:
    """inspect_ai's provider set-up error (e.g. a missing API key) as one plain line (no rich markup)."""
    from rich.text import Text

    text = str(exc)
    try:
        text = Text.from_markup(text).plain
    except Exception:  # noqa: BLE001 - not markup after all: keep the text as it is
        pass
    return " ".join(text.replace("ERROR:", "").split())


def is_prerequisite_error(exc: BaseException) -> bool:
    """inspect_ai's error for a provider that cannot be set up (a missing API key, a missing package),
    known by its class name: inspect_ai exports no public name for it."""
    return any(cls.__name__ == "PrerequisiteError" for cls in type(exc).__mro__)


def prerequisite_error(message: str) -> Exception:
    """inspect_ai's own prerequisite error carrying ``message``: what ``inspect eval`` prints as that
    one line, with no traceback, when a task cannot be made (bad data, a missing file).

    inspect_ai exports no public name for the class; it is taken from the module of the public
    :class:`inspect_ai.log.EvalError`, its neighbour. Should that ever fail, a plain ``RuntimeError``
    carries the message (with a traceback, but the same words)."""
    from inspect_ai.log import EvalError

    cls = getattr(sys.modules.get(EvalError.__module__), "PrerequisiteError", None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls(message)
    return RuntimeError(message)


@contextmanager
def provider_setup() -> Iterator[None]:
    """Around whatever makes inspect_ai models (a check, an eval): its provider set-up error (a
    missing API key, a missing package) becomes a :class:`ProviderSetupError` with one plain line."""
    try:
        yield
    except Exception as exc:
        if is_prerequisite_error(exc):
            raise ProviderSetupError(setup_error_line(exc)) from None
        raise


def check_providers(settings: RunSettings) -> None:
    """Make every provider model a run will call (its ``model``, ``judge`` and ``simulator``; never a
    baseline, a person or an offline simulator) before the run claims its folder, so a missing API key or
    provider package is a :class:`ProviderSetupError` that leaves the folder as it was."""
    from rescue_bench.engine.settings import OFFLINE_SIMULATORS
    from rescue_bench.labels import is_baseline, is_human

    names = [getattr(settings, role, None) for role in ("model", "judge", "simulator")]
    for name in names:
        if not name or is_baseline(name) or is_human(name) or name in OFFLINE_SIMULATORS:
            continue
        with provider_setup():
            get_provider_model(name, memoize=False)  # a model made earlier in the process was made with a key that may be gone


def get_provider_model(name: str, config: GenerateConfig | None = None, role: str | None = None, *, memoize: bool = True) -> Model:
    """The inspect_ai model ``name`` with the endpoint and API flavour above (the judge role, the
    simulator), made with ``config`` (what it is sent with every call unless a call says otherwise);
    ``role``: the inspect_ai role its usage is recorded under; ``memoize``: inspect_ai's reuse of a
    model made before with the same arguments (off to check that it can be made now)."""
    from inspect_ai.model import GenerateConfig, get_model

    name = route(name)
    return get_model(name, config=config or GenerateConfig(), role=role, base_url=endpoint(name), memoize=memoize, **provider_args(name))
