"""The scoped channel between one ``rescue eval`` run and the inspect_ai tasks it runs.

The run driver makes one :class:`RunChannel` per run and hands it to every task's solver and scorer
as an argument (inspect_ai logs it by class name only). Through it the scorer hands each record
back to the driver as it is made (so results are not read back from the logs), and every model and
judge call holds a slot of one semaphore: the bound on calls in flight over all tasks and both
models, which lets the six tasks run at the same time (inspect_ai's connection pools are per model,
so the judge's pool would add its own ``max_connections``). Tasks made by ``inspect eval`` get no
channel and behave as plain inspect_ai tasks.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any


class RunChannel:
    """What the tasks of one run share with its driver (records out, call slots in)."""

    def __init__(self, on_record: Callable[[], None] | None = None, max_calls: int | None = None) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        """Records by instance id, as the scorer makes them."""
        self._on_record = on_record
        self._max_calls = max_calls
        self._slots: Any = None

    def keep(self, record: dict[str, Any]) -> None:
        """Keep the scorer's record of an instance (the first time: tell the progress callback)."""
        new = record["id"] not in self.records
        self.records[record["id"]] = record
        if new and self._on_record is not None:
            self._on_record()

    @contextlib.asynccontextmanager
    async def call_slot(self) -> AsyncIterator[None]:
        """Hold one of the run's ``max_calls`` slots while a model or judge call runs."""
        if self._max_calls is None:
            yield
            return
        if self._slots is None:  # made inside the event loop that uses it
            import anyio

            self._slots = anyio.Semaphore(self._max_calls)
        async with self._slots:
            yield


@contextlib.asynccontextmanager
async def call_slot(channel: RunChannel | None) -> AsyncIterator[None]:
    """:meth:`RunChannel.call_slot`, or nothing when there is no channel (``inspect eval``)."""
    if channel is None:
        yield
        return
    async with channel.call_slot():
        yield
