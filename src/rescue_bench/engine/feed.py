"""A worker's tasks take their samples from the run's shared work queue (inspect_ai ``SampleSource``).

In a multi-worker run no worker is given a fixed part of the instances: each of its six tasks claims
instances from the board (:class:`~rescue_bench.engine.board.Board`) as it goes, so a worker that
starts later (``--workers auto`` adds workers once the first cannot keep up) takes its share of what
is left, and the workers finish together whatever their speed.

A worker keeps about one and a half times its call slots of samples claimed and not finished, over
all its tasks: enough that a free slot always finds a sample ready, few enough that at the end no
worker sits on a backlog another could have taken. A task claims more as its samples finish, and,
when it has nothing running, waits for room.

A worker started by ``--workers auto`` but not (yet) needed has its tasks running and waiting in
:meth:`TaskFeed.next_samples` until the parent lets it go (its tasks then claim) or stops it (they
end with no sample), so a worker that is let go calls at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio
from inspect_ai import SampleSource
from inspect_ai.dataset import Sample

from rescue_bench.engine.board import GO, PARKED, Board
from rescue_bench.engine.channel import RunChannel
from rescue_bench.tasks.instance import Instance

UNBOUNDED_SLOTS = 10
"""The slots a worker plans its claims for when the run has no ``--max-connections``: inspect_ai's
default per-model connection limit for most providers."""
GO_POLL = 0.02
"""Seconds between two looks at the board while a worker waits for the parent's go."""
ROOM_WAIT = 1.0
"""Seconds a task with nothing running waits for room before it claims one sample anyway (so a
miscount can slow a worker down, never stall it)."""


async def with_media(samples: list[Sample]) -> list[Sample]:
    """``samples`` with the media files they refer to (the video mode's clips) read into them.

    inspect_ai reads a sample's media files into its request only for the samples of a task's
    dataset, which it lists before the run; the samples a feed hands out later would reach the model
    with bare file references, which it refuses. The same reading inspect_ai does, done here, gives
    the same request (and so the same cache key) as the one-process run's."""
    from inspect_ai._eval.task.images import capture_task_input_media, materialize_sample_input

    media = capture_task_input_media(samples)
    if not media:
        return samples
    return [await materialize_sample_input(sample, media) for sample in samples]


class WorkerFeed:
    """What one worker's task feeds share: the board and the count of samples claimed, not finished."""

    def __init__(self, board: Board, index: int, slots: Callable[[], int]) -> None:
        self.board = board
        self.index = index
        self._slots = slots
        self.active = 0
        self._room: anyio.Event | None = None

    def room(self) -> int:
        """Samples this worker may claim now."""
        return max(0, self._slots() * 3 // 2 + 4 - self.active)

    def claimed(self, n: int) -> None:
        self.active += n

    def finished(self) -> None:
        self.active = max(0, self.active - 1)
        if self._room is not None:
            self._room.set()
            self._room = None

    async def may_call(self) -> bool:
        """Wait while the parent keeps this worker waiting; then whether it may call (else: stopped)."""
        while (state := self.board.state(self.index)) == PARKED:
            await anyio.sleep(GO_POLL)
        return state == GO

    async def wait_for_room(self) -> None:
        if self._room is None:
            self._room = anyio.Event()
        with anyio.move_on_after(ROOM_WAIT):
            await self._room.wait()


class TaskFeed(SampleSource):
    """The samples of one task in one worker: claimed from the board, task ``index`` of the run."""

    def __init__(self, feed: WorkerFeed, index: int, instances: Sequence[Instance], sample: Callable[[Instance], Sample]) -> None:
        self.feed = feed
        self.index = index
        self.instances = instances
        self.sample = sample
        self.taken: list[Instance] = []
        """The instances this worker claimed (and so evaluates), in the order it claimed them."""

    async def _claim(self, n: int) -> list[Sample]:
        got = [self.instances[i] for i in self.feed.board.claim(self.index, n, len(self.instances))]
        self.feed.claimed(len(got))
        self.taken += got
        return await with_media([self.sample(inst) for inst in got])

    def _exhausted(self) -> bool:
        return self.feed.board.claimed(self.index) >= len(self.instances)

    def initial_samples(self) -> list[Sample]:
        return []  # nothing is claimed before the task runs (a waiting worker may never run)

    async def next_samples(self) -> list[Sample] | None:
        if not await self.feed.may_call():
            return None  # stopped before its first call: the task ends empty
        while not self._exhausted():
            room = self.feed.room()
            if room == 0:
                await self.feed.wait_for_room()
                room = max(1, self.feed.room())
            samples = await self._claim(room)
            if samples:
                return samples
        return None  # every instance of the task is claimed: the task ends when its samples do

    async def sample_complete(self, sample: Any) -> list[Sample] | None:
        self.feed.finished()
        return await self._claim(self.feed.room()) or None

    async def sample_abandoned(self, sample: Any, epoch: int) -> list[Sample] | None:
        self.feed.finished()
        return None


class BoardShare:
    """A worker's share of a run (:class:`~rescue_bench.engine.evaluate.Share`): its tasks claim
    instances from the board as they go, with the share of ``--max-connections`` the board gives it
    (read at every call: the parent sets it when the worker goes, and lowers it as more go)."""

    def __init__(self, board: Board, index: int) -> None:
        self.board = board
        self.index = index
        self.gauge = board.gauge(index)
        self.shared = WorkerFeed(board, index, lambda: self.gauge.limit() or UNBOUNDED_SLOTS)
        self.feeds: dict[int, TaskFeed] = {}

    def channel(self, on_record: Callable[[], None] | None, max_calls: int | None) -> RunChannel:
        return RunChannel(on_record, gauge=self.gauge)

    def feed(self, task: int, chosen: Sequence[Instance], sample: Callable[[Instance], Any]) -> TaskFeed:
        self.feeds[task] = TaskFeed(self.shared, task, chosen, sample)
        return self.feeds[task]

    def taken(self, task: int, chosen: Sequence[Instance]) -> Sequence[Instance]:
        return self.feeds[task].taken

    def called(self) -> bool:
        return self.board.state(self.index) == GO
