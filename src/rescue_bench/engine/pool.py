"""The process pool of ``rescue eval``: the one way a run's plan is evaluated, in this process or in workers.

:func:`evaluate_plan` takes a :class:`~rescue_bench.engine.plan.RunPlan` and evaluates it in this
process when the plan has one worker, else in worker processes (:mod:`rescue_bench.engine.workers`),
and returns what was evaluated and the workers used. Both run the same evaluation
(:func:`rescue_bench.engine.evaluate.evaluate`) on the same instances: a worker is handed the plan as
it is (``OUT/.workers/plan.pickle``) and builds nothing.

Why workers: against a fast endpoint (a local vLLM server, a fast API) a run is CPU-bound in
inspect_ai's per-sample work (the HTTP client, the transcript, the logs) in one Python process:
about 15-20 ms of client CPU per call on the benchmark machine, so one process cannot keep 64 calls
in flight when each takes 0.2 s (docs/benchmarks.md). Workers put the other cores to use. Against
slow endpoints one process keeps every connection busy and more would only repeat its start-up.

How:

- the parent writes the plan to ``OUT/.workers/plan.pickle`` and a board
  (:class:`~rescue_bench.engine.board.Board`) to ``OUT/.workers/board``, and starts the workers
  (``python -m rescue_bench.engine.workers``, each in its own session);
- every worker reads the plan and, once the board lets it, claims instances from the board's per-task
  counters as its tasks go (:class:`~rescue_bench.engine.feed.BoardShare`), with its share of
  ``--max-connections``, through the shared response cache; its inspect logs go to ``OUT/logs``
  beside the others';
- ``--workers N``: all N call from the start, ``--max-connections`` split among them. ``auto``: up to
  :func:`~rescue_bench.engine.settings.plan_workers` processes start, but only the first calls, with
  all of ``--max-connections``; the others wait, ready. Once the first has started as many calls as
  it has slots, the parent reads from the board how many it keeps in flight over :data:`WINDOW`
  seconds and :func:`~rescue_bench.engine.settings.scale_workers` decides: the waiting workers are let
  go with their shares (after the first has come down to its own), or stopped;
- each worker reports its progress on stdout (the parent's progress bar) and finally writes its
  records to ``OUT/.workers/worker-<k>.json``;
- the parent merges the records; the output is written exactly as a one-process run's
  (``run.write_outputs``): the results do not depend on the number of workers, nor on who
  evaluated what.

Stopping: Ctrl-C in the parent is passed to every worker once (they are in their own sessions, so
the terminal does not signal them twice); each stops as a one-process run does, and the parent exits
with the one-line "run interrupted" error. If the parent dies (``kill -9``), the workers die with it
(:mod:`rescue_bench.engine.workers`). Either way every finished call is in the response cache, so the
same command resumes. When a worker fails, the others are stopped and its one-line error is raised as
:class:`~rescue_bench.engine.settings.WorkerFailed`; its full stderr stays in ``OUT/.workers/worker-<k>.err``.
"""

from __future__ import annotations

import pickle
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue_bench.engine.board import GO, PARKED, STOP, Board
from rescue_bench.engine.outputs import preload
from rescue_bench.engine.plan import RunPlan
from rescue_bench.engine.settings import (
    Evaluated,
    RunInterrupted,
    WorkerFailed,
    WorkerPlan,
    merge_usage,
    scale_workers,
    share_connections,
)
from rescue_bench.engine.workers import Worker
from rescue_bench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from rescue_bench.fileio import atomic_write, loads
from rescue_bench.labels import TASKS

STOP_GRACE = 30.0
"""Seconds a worker has to stop after SIGINT before it is killed."""
WINDOW = 0.5
"""Seconds over which ``auto`` measures how busy the first worker is."""
SETTLED = 1
"""``auto`` measures the first worker once this many times its slots of calls have come back: at
first a process only sends (cheap, and then it waits whatever the endpoint); once the answers flow,
a process that cannot keep up is busy all the time, one that can waits for the next answers."""
RAMP_LIMIT = 5.0
"""Seconds after its first call after which ``auto`` measures the first worker even if it has not
started :data:`SETTLED` times its slots yet (a slow endpoint, or a very large ``--max-connections``)."""


@dataclass
class WorkersChoice:
    """The processes a run used and why (``run.json``'s ``workers_choice``; one process: just ``plan`` and 1)."""

    plan: WorkerPlan
    workers: int
    """Processes that called (the others were stopped before their first call)."""
    busy: float | None = None
    """``auto``: the share of the measured window the first worker was busy (on a CPU or waiting for one)."""
    in_flight: float | None = None
    """``auto``: calls the first worker kept in flight on average over the window, of ``slots``."""
    slots: int | None = None



def evaluate_plan(plan: RunPlan, *, display: str = "full") -> tuple[Evaluated, WorkersChoice]:
    """Evaluate ``plan``: in this process when its worker plan has one process, else in up to
    ``plan.workers.cap`` worker processes. Returns what was evaluated and the processes that called
    and why. Raises :class:`~rescue_bench.errors.RunInterrupted` when stopped and
    :class:`~rescue_bench.engine.settings.WorkerFailed` when a worker process failed."""
    if plan.workers.cap > 1:
        return _in_workers(plan, display)
    from rescue_bench.engine.evaluate import evaluate

    return evaluate(plan, display=display), WorkersChoice(plan.workers, 1)


def _stop(workers: list[Worker], grace: float = STOP_GRACE) -> None:
    """SIGINT to every running worker, then SIGKILL to any still running after ``grace`` seconds."""
    for w in workers:
        w.interrupt()
    deadline = time.monotonic() + grace
    for w in workers:
        try:
            w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            w.proc.kill()
            w.proc.wait()


def _progress(display: str):
    """A rich progress bar on stderr (or nothing with ``--display none``)."""
    if display == "none":
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=False,
    )


def busy_seconds(pid: int) -> float | None:
    """Seconds process ``pid`` has spent on a CPU or waiting in a run queue (its main thread, which runs
    the event loop; Linux's ``/proc/<pid>/schedstat``), or ``None`` where that is not available.

    Waiting counts: a client that cannot get enough CPU on a shared machine cannot keep up either."""
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as fh:
            on_cpu, waiting, _ = fh.read().split()
        return (int(on_cpu) + int(waiting)) / 1e9
    except (OSError, ValueError):
        return None


class _Chooser:
    """``auto``: watch the first worker, then let the waiting workers go or stop them.

    The measure starts once the first worker has had :data:`SETTLED` times its slots of calls come
    back (or :data:`RAMP_LIMIT` seconds after its first call) and lasts :data:`WINDOW` seconds.
    """

    def __init__(self, board: Board, plan: WorkerPlan, max_connections: int, pid: int) -> None:
        self.board = board
        self.plan = plan
        self.slots = max_connections
        self.pid = pid
        self.mark: tuple[float, float, float] | None = None
        self.decided: int | None = None
        self.busy: float | None = None
        self.in_flight: float | None = None
        self.shares: list[int] = []
        self.released = False

    def poll(self, total: int | None, first_alive: bool) -> None:
        """One look at the board: measure, decide, then (once the first worker is down to its share)
        let the others go."""
        if self.decided is None:
            self._measure(total, first_alive)
        if self.decided is not None and not self.released and self.board.gauges(0).in_flight <= self.shares[0]:
            for k in range(1, self.plan.cap):
                if k < self.decided:
                    self.board.set_slots(k, self.shares[k])
                    self.board.set_state(k, GO)
                else:
                    self.board.set_state(k, STOP)
            self.released = True

    def _decide(self, n: int) -> None:
        self.decided = n
        self.shares = [int(s or 1) for s in share_connections(self.slots, n)]
        self.board.set_slots(0, self.shares[0])

    def _busy_clock(self, gauges: Any) -> float:
        busy = busy_seconds(self.pid)
        return gauges.cpu if busy is None else busy

    def _measure(self, total: int | None, first_alive: bool) -> None:
        now = time.monotonic()
        gauges = self.board.gauges(0)
        remaining = None if total is None else total - sum(self.board.claimed(t) for t in range(self.board.tasks))
        if not first_alive or (remaining == 0 and gauges.first_call):
            self._decide(1)  # the first worker is done (or gone): nothing left to share
            return
        if self.mark is None:
            if gauges.completed >= SETTLED * self.slots or (gauges.first_call and now - gauges.first_call >= RAMP_LIMIT):
                self.mark = (now, gauges.integral_at(now), self._busy_clock(gauges))
            return
        start, integral, busy = self.mark
        if now - start < WINDOW or remaining is None:
            return
        self.busy = min(1.0, (self._busy_clock(gauges) - busy) / (now - start))
        self.in_flight = (gauges.integral_at(now) - integral) / (now - start)
        self._decide(scale_workers(cap=self.plan.cap, busy=self.busy, remaining=remaining))


def _in_workers(plan: RunPlan, display: str) -> tuple[Evaluated, WorkersChoice]:
    """Evaluate ``plan`` in up to ``plan.workers.cap`` worker processes and merge what they return."""
    settings, workers_plan = plan.settings, plan.workers
    folder = Path(settings.out) / ".workers"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    plan_path = folder / "plan.pickle"
    atomic_write(plan_path, pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL))  # what every worker evaluates
    if workers_plan.auto:
        assert settings.max_connections is not None  # plan_workers: auto has more than one process only then
        states = [GO] + [PARKED] * (workers_plan.cap - 1)
        slots = [settings.max_connections] + [1] * (workers_plan.cap - 1)
    else:
        states = [GO] * workers_plan.cap
        slots = [s or 0 for s in share_connections(settings.max_connections, workers_plan.cap)]
    board = Board.create(folder / "board", tasks=len(TASKS), workers=workers_plan.cap, states=states, slots=slots)
    chooser: _Chooser | None = None
    workers: list[Worker] = []
    progress = _progress(display)
    try:
        for k in range(workers_plan.cap):
            workers.append(Worker(k, folder, plan_path, board.path))
        if workers_plan.auto and settings.max_connections:
            chooser = _Chooser(board, workers_plan, settings.max_connections, workers[0].proc.pid)
        threading.Thread(target=preload, name="rescue-preload", daemon=True).start()
        bar = None
        if progress is not None:
            progress.start()
            bar = progress.add_task(f"{settings.model} ({workers_plan.cap} workers)", total=None)
        while any(w.alive() for w in workers):
            if any(w.proc.returncode not in (None, 0) for w in workers):
                break  # one failed or was stopped: stop the others below
            if chooser is not None and not chooser.released:
                chooser.poll(workers[0].total, workers[0].alive())
                if chooser.released and progress is not None and bar is not None:
                    progress.update(bar, description=f"{settings.model} ({chooser.decided} of {workers_plan.cap} workers)")
            if progress is not None and bar is not None:
                totals = [w.total for w in workers if w.total is not None]
                progress.update(bar, completed=sum(w.done for w in workers), total=max(totals) if totals else None)
            time.sleep(0.05)
        if chooser is not None and not chooser.released:  # the first worker finished before the choice
            for k in range(1, workers_plan.cap):
                board.set_state(k, STOP)
    except KeyboardInterrupt as exc:
        _stop(workers)
        raise RunInterrupted() from exc
    finally:
        if progress is not None:
            progress.stop()
    _stop([w for w in workers if w.alive()])
    board.close()
    for w in workers:
        w.reader.join(timeout=5)
    stopped = (EXIT_INTERRUPTED, -signal.SIGINT)
    failed = [w for w in workers if w.proc.returncode not in (0, *stopped, -signal.SIGKILL)]
    if not failed and any(w.proc.returncode in stopped for w in workers):
        raise RunInterrupted()
    for w in failed + workers:
        if w.proc.returncode == EXIT_BAD_INPUT:  # a one-line error, as a one-process run would print it
            raise WorkerFailed(f"{w.error_line().removeprefix('error: ')} (worker {w.index} of {workers_plan.cap})", details=w.stderr_text())
        if w.proc.returncode != 0 or not w.result.exists():
            raise WorkerFailed(
                f"worker {w.index} of {workers_plan.cap} failed (exit {w.proc.returncode}): {w.error_line()} (its stderr: {w.err_path})",
                details=w.stderr_text(),
            )
    parts = [loads(w.result.read_text(encoding="utf-8")) for w in workers]
    shutil.rmtree(folder, ignore_errors=True)
    used = sum(1 for p in parts if p["called"])
    if chooser is not None:
        choice = WorkersChoice(workers_plan, used, chooser.busy, chooser.in_flight, chooser.slots)
    else:
        choice = WorkersChoice(workers_plan, used)
    evaluated = Evaluated(
        records=[r for p in parts for r in p["records"]],
        usage=merge_usage([p["usage"] for p in parts]),
        statuses=[s for p in parts for s in p["statuses"]],
        unanswered={k: v for p in parts for k, v in p["unanswered"].items()},
        logs=[x for p in parts for x in p["logs"]],
        requests=_first_requests(parts),
    )
    return evaluated, choice


def _first_requests(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The first request of each kind any worker noted (worker 0's first, then the others')."""
    found: dict[str, Any] = {}
    for part in parts:
        for kind, sent in part["requests"].items():
            found.setdefault(kind, sent)
    return found

