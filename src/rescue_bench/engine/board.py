"""The board the processes of one multi-worker run share: the work queue and each worker's gauges.

A small file in ``OUT/.workers/``, memory-mapped by the parent and every worker (POSIX). It holds:

- one counter per task: the next instance to hand out (in the task's canonical order, after
  ``--limit``). A worker claims instances by advancing a counter under an exclusive ``flock``, so the
  workers together evaluate every instance exactly once, whichever takes what, and a worker that
  starts late still finds work;
- one record per worker, written by the parent: whether it may start calling (``GO``), must wait
  (``PARKED``) or must stop without calling (``STOP``), and how many calls it may have in flight
  (its share of ``--max-connections``, lowered when more workers start);
- and written by the worker: the calls it has in flight now, the calls it has started, and the
  integral of calls in flight over time, from which the parent reads how many calls one process keeps
  in flight (the automatic choice of workers, :func:`rescue_bench.engine.settings.scale_workers`).

No inspect_ai here (the parent never imports it). Each field is a naturally aligned 8-byte value with
one writer, so a reader never sees half of one; only the task counters, which every worker writes,
take the lock.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rescue_bench.fileio import atomic_write

PARKED, GO, STOP = 0, 1, 2
"""A worker's state, set by the parent."""

_MAGIC = 0x52455343  # "RESC"
_HEADER = struct.Struct("<qqq")  # magic, tasks, workers
_COUNTER = struct.Struct("<q")
# state, slots, in flight now, started calls, in-flight integral (call-seconds), its clock, first call
# at, CPU seconds of the worker at the clock
_WORKER = struct.Struct("<qqqqdddd")


@dataclass(frozen=True)
class Gauges:
    """What a worker reports about its calls (a snapshot read by the parent)."""

    in_flight: int
    """Calls in flight now."""
    started: int
    """Calls started so far (model and judge, cached or not)."""
    integral: float
    """Calls in flight integrated over time (call-seconds), up to ``clock``."""
    clock: float
    """``time.monotonic()`` of the last update."""
    first_call: float
    """``time.monotonic()`` of the first call (0 before it)."""
    cpu: float
    """CPU seconds the worker had used at ``clock`` (``time.process_time()``)."""

    @property
    def completed(self) -> int:
        """Calls that have given their slot back."""
        return self.started - self.in_flight

    def integral_at(self, now: float) -> float:
        """The integral extended to ``now`` (the calls in flight have stayed in flight since ``clock``)."""
        return self.integral + self.in_flight * max(0.0, now - self.clock) if self.clock else 0.0


class Board:
    """The shared board of one run (see the module docstring); create it with :meth:`create`, then
    :meth:`open` it in each worker."""

    def __init__(self, path: Path, fd: int, mem: mmap.mmap, tasks: int, workers: int) -> None:
        self.path = path
        self._fd = fd
        self._mem = mem
        self.tasks = tasks
        self.workers = workers
        self._workers_at = _HEADER.size + tasks * _COUNTER.size

    # -- lifecycle ---------------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, *, tasks: int, workers: int, states: Sequence[int], slots: Sequence[int]) -> Board:
        """A fresh board at ``path``: every counter at 0, worker ``k`` in ``states[k]`` with ``slots[k]``."""
        size = _HEADER.size + tasks * _COUNTER.size + workers * _WORKER.size
        buf = bytearray(size)
        _HEADER.pack_into(buf, 0, _MAGIC, tasks, workers)
        at = _HEADER.size + tasks * _COUNTER.size
        for k in range(workers):
            _WORKER.pack_into(buf, at + k * _WORKER.size, states[k], slots[k], 0, 0, 0.0, 0.0, 0.0, 0.0)
        atomic_write(path, bytes(buf))
        return cls.open(path)

    @classmethod
    def open(cls, path: Path) -> Board:
        fd = os.open(path, os.O_RDWR)
        mem = mmap.mmap(fd, os.fstat(fd).st_size)
        magic, tasks, workers = _HEADER.unpack_from(mem, 0)
        if magic != _MAGIC:
            raise ValueError(f"{path} is not a worker board")
        return cls(path, fd, mem, tasks, workers)

    def close(self) -> None:
        self._mem.close()
        os.close(self._fd)

    # -- the work queue ----------------------------------------------------------------------------
    def claim(self, task: int, count: int, total: int) -> range:
        """Up to ``count`` instances of task ``task`` (of ``total``) nobody has claimed: their indices."""
        at = _HEADER.size + task * _COUNTER.size
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            (start,) = _COUNTER.unpack_from(self._mem, at)
            stop = min(total, start + max(0, count))
            if stop > start:
                _COUNTER.pack_into(self._mem, at, stop)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        return range(start, max(start, stop))

    def claimed(self, task: int) -> int:
        """Instances of task ``task`` handed out so far."""
        return int(_COUNTER.unpack_from(self._mem, _HEADER.size + task * _COUNTER.size)[0])

    # -- the parent's side of a worker's record ----------------------------------------------------
    def _field(self, worker: int, index: int) -> int:
        return self._workers_at + worker * _WORKER.size + index * 8

    def state(self, worker: int) -> int:
        return int(struct.unpack_from("<q", self._mem, self._field(worker, 0))[0])

    def set_state(self, worker: int, state: int) -> None:
        struct.pack_into("<q", self._mem, self._field(worker, 0), state)

    def slots(self, worker: int) -> int:
        """Calls worker ``worker`` may have in flight."""
        return int(struct.unpack_from("<q", self._mem, self._field(worker, 1))[0])

    def set_slots(self, worker: int, slots: int) -> None:
        struct.pack_into("<q", self._mem, self._field(worker, 1), max(1, slots))

    def gauges(self, worker: int) -> Gauges:
        _, _, in_flight, started, integral, clock, first, cpu = _WORKER.unpack_from(self._mem, self._field(worker, 0))
        return Gauges(in_flight, started, integral, clock, first, cpu)

    # -- the worker's side -------------------------------------------------------------------------
    def gauge(self, worker: int, clock: Callable[[], float] = time.monotonic) -> Gauge:
        """The meter worker ``worker``'s calls report to (``clock``: seconds, for the integral)."""
        return Gauge(self, worker, clock)


class Gauge:
    """One worker's call meter on the board: :meth:`started` and :meth:`finished` around each call.

    Keeps the in-flight integral in this process and publishes it with every change, a few
    microseconds per call.
    """

    def __init__(self, board: Board, worker: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock_fn = clock
        self._mem = board._mem
        self._at = board._field(worker, 2)
        self._slots_at = board._field(worker, 1)
        self._started = 0
        self._integral = 0.0
        self._clock = 0.0
        self._first = 0.0

    def limit(self) -> int:
        """Calls this worker may have in flight (the parent lowers it when more workers start)."""
        return int(struct.unpack_from("<q", self._mem, self._slots_at)[0])

    def _publish(self, in_flight_before: int, in_flight: int) -> None:
        now = self._clock_fn()
        if self._clock:
            self._integral += in_flight_before * (now - self._clock)
        self._clock = now
        # in flight, started, integral, clock, first call, CPU: one write of the worker-owned fields
        struct.pack_into(
            "<qqdddd", self._mem, self._at, in_flight, self._started, self._integral, now, self._first, time.process_time()
        )

    def started(self, in_flight: int) -> None:
        """A call took a slot; ``in_flight`` calls (this one included) are in flight now."""
        self._started += 1
        if not self._first:
            self._first = self._clock_fn()
        self._publish(in_flight - 1, in_flight)

    def finished(self, in_flight: int) -> None:
        """A call gave its slot back; ``in_flight`` calls are still in flight."""
        self._publish(in_flight + 1, in_flight)
