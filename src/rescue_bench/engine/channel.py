"""The scoped channel between one ``rescue eval`` run and the inspect_ai tasks it runs.

The run driver makes one :class:`RunChannel` per run and hands it to every task's solver and scorer
as an argument (inspect_ai logs it by class name only). Through it the scorer hands each record
back to the driver as it is made (so results are not read back from the logs), and every model and
judge call holds a slot of one semaphore: the bound on calls in flight over all tasks and both
models, which lets the six tasks run at the same time (inspect_ai's connection pools are per model,
so the judge's pool would add its own ``max_connections``). Tasks made by ``inspect eval`` get no
channel and behave as plain inspect_ai tasks. In a worker of a multi-worker run the bound is the
worker's share of ``--max-connections``.

Two identical requests (the same model, the same messages) in flight at the same time are sent
once: the second waits for the first (:meth:`RunChannel.call_slot` with the request's
:func:`request_key`), then finds its reply in the response cache, which keys a request by what it
sends. Under ``--on-overflow trim`` a clip's RPP prompts with every earlier row left out are one
request, asked by each of its instances at the same moment.

The channel is also the run's circuit: a call that fails after inspect_ai's retries holds its slot
for the whole retry budget, so against a server that fails every call the calls would fail wave
after wave of ``--max-connections``. Once as many calls in a row as the run has slots have failed
(:attr:`RunChannel.stop_after`), the channel sends no more: each later call fails at once with
:class:`CallsStopped`, naming the last error, and the run is failed (and resumable) as it would be.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from rescue_bench.errors import RescueError
from rescue_bench.runinfo import GenerateRequest

RecordT = TypeVar("RecordT", bound=Mapping[str, object])

DEFAULT_SLOTS = 10
"""inspect_ai's per-model connection limit for most providers: the calls in flight of a run without
``--max-connections``, and so its circuit's :attr:`RunChannel.stop_after`."""


def _server_message(exc: BaseException) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else None
        return message if isinstance(message, str) and message.strip() else None
    return body if isinstance(body, str) and body.strip() else None


def call_error(exc: BaseException) -> str:
    """One line for a failed model call: ``HTTP <status>: <the server's message>`` when the error
    came from the server, else the error's type and text.

    Wrappers are looked through: tenacity's ``RetryError`` (whose text is only ``<Future ... raised
    X>``) to its last attempt's error, and inspect_ai's ``ModelGenerateError`` (whose text is the
    whole request) to the provider's error it was raised from.
    """
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 10 and current not in chain:
        chain.append(current)
        last = getattr(current, "last_attempt", None)
        inner = last.exception() if last is not None and hasattr(last, "exception") else None
        current = inner if isinstance(inner, BaseException) else current.__cause__
    status = next((s for e in chain if isinstance(s := getattr(e, "status_code", None), int)), None)
    message = next((m for e in chain if (m := _server_message(e))), None)
    if message is None:
        message = next((m for e in chain if isinstance(m := getattr(e, "provider_message", None), str) and m.strip()), None)
    if message is None:
        deepest = chain[-1]
        message = f"{type(deepest).__name__}: {deepest}" if str(deepest).strip() else type(deepest).__name__
    message = " ".join(message.split())[:300]
    return f"HTTP {status}: {message}" if status is not None else message


def request_key(model: str, messages: Sequence[Any]) -> str:
    """What makes two calls the same request: the model and the messages (inspect_ai chat messages:
    role, content and media), as the response cache sees them."""
    dumped = [m.model_dump(mode="json", exclude={"id"}) if hasattr(m, "model_dump") else m for m in messages]
    return hashlib.sha256(json.dumps([model, dumped], sort_keys=True, default=str).encode()).hexdigest()


class CallsStopped(RescueError):
    """A call the run did not send: the calls before it failed in a row (see the module doc)."""


class RunChannel(Generic[RecordT]):
    """What the tasks of one run share with its driver (records out, call slots in, the circuit)."""

    def __init__(self, on_record: Callable[[], None] | None = None, max_calls: int | None = None) -> None:
        self.records: dict[str, RecordT] = {}
        """Records by instance id, as the scorer makes them."""
        self.failures: list[tuple[str, str]] = []
        """Calls that failed after their retries and were absorbed (an agent step, a judge call): (kind, error)."""
        self.requests: dict[str, GenerateRequest] = {}
        """The first request of each kind (``model``, ``judge``) as it went on the wire (:meth:`note_request`)."""
        self.errors: dict[str, str] = {}
        """Why the call of a sample failed after its retries, by sample id (:func:`call_error`)."""
        self._on_record = on_record
        self._max_calls = max_calls
        self._slots: Any = None
        self.stop_after = max_calls or DEFAULT_SLOTS
        """Failed calls in a row after which no call is sent: a whole wave of the run's slots."""
        self._failed_in_a_row = 0
        self._last_error = ""
        self._in_flight: dict[str, Any] = {}
        """The requests being sent (:func:`request_key`): the event each one sets when it is done."""

    def keep(self, record: RecordT) -> None:
        """Keep the scorer's record of an instance (the first time: tell the progress callback).

        A task's result record (:class:`~rescue_bench.records.ResultRow`), the agent's chain record
        or an episode: kept as the plain dict it is."""
        key = str(record["id"])
        new = key not in self.records
        self.records[key] = record
        if new and self._on_record is not None:
            self._on_record()

    def call_failed(self, kind: str, error: str) -> None:
        """A ``model`` or ``judge`` call failed after its retries and the caller went on without it."""
        self.failures.append((kind, " ".join(error.split())[:500]))

    def note_request(self, kind: str) -> None:
        """Keep the parameters of the request just sent (the sample's last model call), the first time.

        Read from inspect_ai's transcript of the sample: the body the provider built, so what a
        provider drops or renames (inspect_ai drops ``temperature`` for models it takes for
        reasoning models) shows here. A reply from the response cache sent nothing: not noted.
        """
        if kind in self.requests:
            return
        sent = last_request()
        if sent is not None:
            self.requests[kind] = sent

    @contextlib.asynccontextmanager
    async def call_slot(self, key: str | None = None) -> AsyncIterator[None]:
        """Hold one of the run's ``max_calls`` slots while a model or judge call runs; count whether it
        failed. Raises :class:`CallsStopped` instead of calling once the circuit is open. ``key``:
        the request's :func:`request_key`; while the same request is in flight, wait for it (and
        hold no slot) rather than send it again."""
        async with self._alone(key):
            async with self._slot():
                yield

    @contextlib.asynccontextmanager
    async def _alone(self, key: str | None) -> AsyncIterator[None]:
        if key is None:
            yield
            return
        import anyio

        while (twin := self._in_flight.get(key)) is not None:
            await twin.wait()
        done = self._in_flight[key] = anyio.Event()
        try:
            yield
        finally:
            del self._in_flight[key]
            done.set()

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        self._check_circuit()
        if self._max_calls is None:
            async with self._counted():
                yield
            return
        slots = self._slots
        if slots is None:  # made inside the event loop that uses it
            import anyio

            slots = self._slots = anyio.CapacityLimiter(self._max_calls)
        holder = object()  # a slot per call, not per asyncio task (the agent judges several at once)
        await slots.acquire_on_behalf_of(holder)
        try:
            self._check_circuit()  # the calls it waited behind may have opened it
            async with self._counted():
                yield
        finally:
            slots.release_on_behalf_of(holder)

    def _check_circuit(self) -> None:
        if self._failed_in_a_row >= self.stop_after:
            raise CallsStopped(f"not sent: the {self._failed_in_a_row} calls before it failed in a row ({self._last_error})")

    @contextlib.asynccontextmanager
    async def _counted(self) -> AsyncIterator[None]:
        try:
            yield
        except Exception as exc:  # the call failed after its retries: counted, then the caller's to handle
            self._failed_in_a_row += 1
            self._last_error = call_error(exc)
            raise
        self._failed_in_a_row = 0


SENT_KEYS = ("model", "temperature", "seed", "max_tokens", "max_completion_tokens", "top_p", "reasoning_effort", "stream")
"""The request parameters recorded in ``run.json`` (``roles`` is added: the messages' roles)."""


def last_request() -> GenerateRequest | None:
    """The parameters and message roles of the current sample's last model call that went on the wire."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import transcript

    for event in reversed(transcript().events):
        if isinstance(event, ModelEvent) and event.call is not None and event.cache != "read":
            request = event.call.request
            messages = request.get("messages")
            sent: dict[str, Any] = {key: request[key] for key in SENT_KEYS if key in request}
            if isinstance(messages, list):
                sent["roles"] = [m.get("role") for m in messages if isinstance(m, dict)]
            return GenerateRequest.model_validate(sent)
        if isinstance(event, ModelEvent):
            return None  # the last call was answered from the cache
    return None


@contextlib.asynccontextmanager
async def call_slot(channel: RunChannel | None, key: str | None = None) -> AsyncIterator[None]:
    """:meth:`RunChannel.call_slot` (``key``: the request's :func:`request_key`), or nothing when there
    is no channel (``inspect eval``)."""
    if channel is None:
        yield
        return
    async with channel.call_slot(key):
        yield
