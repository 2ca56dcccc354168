"""``rescue eval`` over several processes: ``--workers N``, and ``--workers auto`` (the default).

Why: against a fast endpoint (a local vLLM server, a fast API) a run is CPU-bound in inspect_ai's
per-sample work (the HTTP client, the transcript, the logs) in one Python process: about 15-20 ms of
client CPU per call on the benchmark machine, so one process cannot keep 64 calls in flight when
each takes 0.2 s (docs/benchmarks.md). Workers put the other cores to use. Against slow endpoints
one process keeps every connection busy and more would only repeat its start-up.

How:

- the parent writes the settings to ``OUT/.workers/settings.json`` and a board
  (:class:`~rescue_bench.engine.board.Board`) to ``OUT/.workers/board``, starts the workers
  (``python -m rescue_bench.engine.workers``, each in its own session), and checks the data while
  they import and build (bad data: one error line, the workers are stopped);
- every worker builds every instance (deterministic) and, once the board lets it, claims instances
  from the board's per-task counters as its tasks go (inspect_ai ``SampleSource``,
  :mod:`rescue_bench.engine.feed`), with its share of ``--max-connections``, through the shared
  response cache; its inspect logs go to ``OUT/logs`` beside the others';
- ``--workers N``: all N call from the start, ``--max-connections`` split among them. ``auto``: up to
  :func:`~rescue_bench.engine.settings.plan_workers` processes start, but only the first calls, with
  all of ``--max-connections``; the others wait, built and ready. Once the first has started as many
  calls as it has slots, the parent reads from the board how many it keeps in flight over
  :data:`WINDOW` seconds and :func:`~rescue_bench.engine.settings.scale_workers` decides: the waiting
  workers are let go with their shares (after the first has come down to its own), or stopped;
- each worker prints ``@rescue total <n>`` and then ``@rescue done`` per record on stdout (the
  parent's progress bar) and finally writes its records to ``OUT/.workers/worker-<k>.json``;
- the parent merges the records and writes the output exactly as a one-process run would
  (``run.write_outputs``): the results do not depend on the number of workers, nor on who
  evaluated what.

Stopping: Ctrl-C in the parent is passed to every worker once (they are in their own sessions, so
the terminal does not signal them twice); each stops as a one-process run does, and the parent exits
with the one-line "run interrupted" error. If the parent dies (``kill -9``), the workers die with it
(``PR_SET_PDEATHSIG`` on Linux, and a watchdog on the parent's pid everywhere). Either way every
finished call is in the response cache, so the same command resumes. When a worker fails, the
others are stopped and its one-line error is raised as :class:`~rescue_bench.engine.settings.WorkerFailed`;
its full stderr stays in ``OUT/.workers/worker-<k>.err``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rescue_bench.engine.board import GO, PARKED, STOP, Board
from rescue_bench.engine.outputs import preload
from rescue_bench.engine.settings import (
    EvalSettings,
    Evaluated,
    RunInterrupted,
    WorkerFailed,
    WorkerPlan,
    merge_usage,
    scale_workers,
    share_connections,
)
from rescue_bench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, RescueError, print_traceback_if_debug
from rescue_bench.fileio import atomic_write, atomic_write_json, loads
from rescue_bench.labels import TASKS

TOTAL, DONE = "@rescue total ", "@rescue done"
"""The progress lines a worker prints on stdout."""
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
    """The processes a multi-worker run used and why (``run.json``'s ``workers_choice``)."""

    plan: WorkerPlan
    workers: int
    """Processes that called (the others were stopped before their first call)."""
    busy: float | None = None
    """``auto``: the share of the measured window the first worker was busy (on a CPU or waiting for one)."""
    in_flight: float | None = None
    """``auto``: calls the first worker kept in flight on average over the window, of ``slots``."""
    slots: int | None = None


# --------------------------------------------------------------------------------------------------
# parent side
# --------------------------------------------------------------------------------------------------


class _Worker:
    """One worker process and what it has reported."""

    def __init__(self, index: int, folder: Path, settings_path: Path, board_path: Path) -> None:
        self.index = index
        self.result = folder / f"worker-{index}.json"
        self.err_path = folder / f"worker-{index}.err"
        self.total: int | None = None
        self.done = 0
        cmd = [
            sys.executable, "-m", "rescue_bench.engine.workers",
            "--settings", str(settings_path), "--board", str(board_path), "--index", str(index),
            "--result", str(self.result), "--parent", str(os.getpid()),
        ]
        with self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, start_new_session=True
            )
        self.reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[bytes] | None) -> None:
        for raw in stream or []:
            line = raw.decode(errors="replace").rstrip("\n")
            if line == DONE:
                self.done += 1
            elif line.startswith(TOTAL):
                self.total = int(line[len(TOTAL):])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def interrupt(self) -> None:
        if self.alive():
            try:
                self.proc.send_signal(signal.SIGINT)
            except ProcessLookupError:  # pragma: no cover - ended in between
                pass

    def stderr_text(self) -> str:
        """The worker's whole stderr (its traceback under RESCUE_DEBUG=1), for the error's notes."""
        try:
            return f"worker {self.index} stderr ({self.err_path}):\n" + self.err_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def error_line(self) -> str:
        """The worker's last non-empty stderr line (its one-line error)."""
        try:
            lines = [ln.strip() for ln in self.err_path.read_text(encoding="utf-8", errors="replace").splitlines()]
        except OSError:
            lines = []
        lines = [ln for ln in lines if ln]
        return lines[-1] if lines else "no error message"


def _stop(workers: list[_Worker], grace: float = STOP_GRACE) -> None:
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


def run_workers(settings: EvalSettings, plan: WorkerPlan, *, display: str = "full", check_data: Any = None) -> tuple[Evaluated, WorkersChoice, Any]:
    """Evaluate ``settings`` in up to ``plan.cap`` worker processes and merge what they return.

    ``check_data`` (a function) runs in this process while the workers start; its result is returned
    third. If it raises, the workers are stopped and the error is raised. Returns what was evaluated,
    the workers used and why, and ``check_data``'s result.
    """
    folder = Path(settings.out) / ".workers"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    settings_path = folder / "settings.json"
    atomic_write(settings_path, settings.model_dump_json())
    if plan.auto:
        assert settings.max_connections is not None  # plan_workers: auto has more than one process only then
        states = [GO] + [PARKED] * (plan.cap - 1)
        slots = [settings.max_connections] + [1] * (plan.cap - 1)
    else:
        states = [GO] * plan.cap
        slots = [s or 0 for s in share_connections(settings.max_connections, plan.cap)]
    board = Board.create(folder / "board", tasks=len(TASKS), workers=plan.cap, states=states, slots=slots)
    chooser: _Chooser | None = None
    workers: list[_Worker] = []
    progress = _progress(display)
    checked: Any = None
    try:
        for k in range(plan.cap):
            workers.append(_Worker(k, folder, settings_path, board.path))
        if plan.auto and settings.max_connections:
            chooser = _Chooser(board, plan, settings.max_connections, workers[0].proc.pid)
        threading.Thread(target=preload, name="rescue-preload", daemon=True).start()
        try:
            checked = check_data() if check_data is not None else None
        except BaseException:
            _stop(workers, grace=0.0)
            board.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        bar = None
        if progress is not None:
            progress.start()
            bar = progress.add_task(f"{settings.model} ({plan.cap} workers)", total=None)
        while any(w.alive() for w in workers):
            if any(w.proc.returncode not in (None, 0) for w in workers):
                break  # one failed or was stopped: stop the others below
            if chooser is not None and not chooser.released:
                chooser.poll(workers[0].total, workers[0].alive())
                if chooser.released and progress is not None and bar is not None:
                    progress.update(bar, description=f"{settings.model} ({chooser.decided} of {plan.cap} workers)")
            if progress is not None and bar is not None:
                totals = [w.total for w in workers if w.total is not None]
                progress.update(bar, completed=sum(w.done for w in workers), total=max(totals) if totals else None)
            time.sleep(0.05)
        if chooser is not None and not chooser.released:  # the first worker finished before the choice
            for k in range(1, plan.cap):
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
            raise WorkerFailed(f"{w.error_line().removeprefix('error: ')} (worker {w.index} of {plan.cap})", details=w.stderr_text())
        if w.proc.returncode != 0 or not w.result.exists():
            raise WorkerFailed(
                f"worker {w.index} of {plan.cap} failed (exit {w.proc.returncode}): {w.error_line()} (its stderr: {w.err_path})",
                details=w.stderr_text(),
            )
    parts = [loads(w.result.read_text(encoding="utf-8")) for w in workers]
    shutil.rmtree(folder, ignore_errors=True)
    used = sum(1 for p in parts if p["called"])
    if chooser is not None:
        choice = WorkersChoice(plan, used, chooser.busy, chooser.in_flight, chooser.slots)
    else:
        choice = WorkersChoice(plan, used)
    evaluated = Evaluated(
        records=[r for p in parts for r in p["records"]],
        usage=merge_usage([p["usage"] for p in parts]),
        statuses=[s for p in parts for s in p["statuses"]],
        unanswered={k: v for p in parts for k, v in p["unanswered"].items()},
        logs=[x for p in parts for x in p["logs"]],
        requests=_first_requests(parts),
    )
    return evaluated, choice, checked


def _first_requests(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The first request of each kind any worker noted (worker 0's first, then the others')."""
    found: dict[str, Any] = {}
    for part in parts:
        for kind, sent in part["requests"].items():
            found.setdefault(kind, sent)
    return found


# --------------------------------------------------------------------------------------------------
# worker side
# --------------------------------------------------------------------------------------------------


def _die_with_parent(parent: int) -> None:
    """Exit when the parent process dies, however it dies."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the kernel kills us with the parent
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the watchdog below does it
            pass
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="rescue-parent-watchdog", daemon=True).start()


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def worker_main(argv: list[str] | None = None) -> int:
    """Entry point of one worker; returns its exit code (0, 2 with one error line, or 130)."""
    parser = argparse.ArgumentParser(prog="python -m rescue_bench.engine.workers")
    parser.add_argument("--settings", required=True, type=Path)
    parser.add_argument("--board", required=True, type=Path)
    parser.add_argument("--index", required=True, type=int)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--parent", required=True, type=int)
    args = parser.parse_args(argv)
    _die_with_parent(args.parent)

    from rescue_bench.data.load import DataError
    from rescue_bench.engine.evaluate import evaluate
    from rescue_bench.gcpolicy import fewer_gc_passes

    board = Board.open(args.board)
    try:
        settings = EvalSettings.model_validate_json(args.settings.read_text(encoding="utf-8"))
        with fewer_gc_passes():
            _, evaluated = evaluate(
                settings,
                display="none",
                worker=(board, args.index),
                on_total=lambda n: _say(f"{TOTAL}{n}"),
                on_record=lambda: _say(DONE),
            )
    except (RunInterrupted, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    except DataError as exc:
        print_traceback_if_debug()
        print(f"error: {exc.problems[0] if exc.problems else exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RescueError as exc:  # a provider that cannot be set up (no API key): its one line
        print_traceback_if_debug()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ValueError, OSError) as exc:  # an unknown model API, a bad path
        print_traceback_if_debug()
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"error: {type(exc).__name__}: {first}", file=sys.stderr)
        return EXIT_BAD_INPUT
    payload: dict[str, Any] = {
        "records": evaluated.records, "usage": evaluated.usage, "statuses": evaluated.statuses,
        "unanswered": evaluated.unanswered, "logs": evaluated.logs, "requests": evaluated.requests,
        "called": board.state(args.index) == GO,
    }
    atomic_write_json(args.result, payload, indent=None)
    return 0


def _exit_now(code: int) -> None:
    """Exit without tearing the heap down object by object.

    A worker holds millions of objects at the end (inspect_ai's samples, events and logs); freeing
    them one by one took ~1.7 s of a ~35 s benchmark run, with everything already written. The
    atexit handlers (inspect_ai's trace log) still run and the streams are flushed.
    """
    import atexit

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit_now(worker_main())
