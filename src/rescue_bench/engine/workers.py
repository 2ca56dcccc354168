"""One worker process of a multi-worker ``rescue eval`` (:mod:`rescue_bench.engine.pool`): the
parent's handle on it (:class:`Worker`) and the process's own side (:func:`worker_main`).

A worker (``python -m rescue_bench.engine.workers``, in its own session) reads the run's plan from
the file the parent wrote, evaluates its share of it (:func:`rescue_bench.engine.evaluate.evaluate`
with a :class:`~rescue_bench.engine.feed.BoardShare`), prints ``@rescue total <n>`` and then
``@rescue done`` per record on stdout (the parent's progress bar), and finally writes its records to
the result file. Its stderr (its one-line error; its traceback under ``RESCUE_DEBUG=1``) goes to
``OUT/.workers/worker-<k>.err``. If the parent dies (``kill -9``), the worker dies with it
(``PR_SET_PDEATHSIG`` on Linux, and a watchdog on the parent's pid everywhere).
"""

from __future__ import annotations

import argparse
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from rescue_bench.engine.board import GO, Board
from rescue_bench.engine.settings import RunInterrupted
from rescue_bench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, RescueError, print_traceback_if_debug
from rescue_bench.fileio import atomic_write_json

TOTAL, DONE = "@rescue total ", "@rescue done"
"""The progress lines a worker prints on stdout."""


class Worker:
    """One worker process, started, and what it has reported (the parent's side)."""

    def __init__(self, index: int, folder: Path, plan_path: Path, board_path: Path) -> None:
        self.index = index
        self.result = folder / f"worker-{index}.json"
        self.err_path = folder / f"worker-{index}.err"
        self.total: int | None = None
        self.done = 0
        cmd = [
            sys.executable, "-m", "rescue_bench.engine.workers",
            "--plan", str(plan_path), "--board", str(board_path), "--index", str(index),
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


class _LineProgress:
    """A worker's progress (:class:`~rescue_bench.engine.evaluate.Progress`), as lines for its parent."""

    def total(self, instances: int) -> None:
        _say(f"{TOTAL}{instances}")

    def record(self) -> None:
        _say(DONE)


def worker_main(argv: list[str] | None = None) -> int:
    """Entry point of one worker; returns its exit code (0, 2 with one error line, or 130)."""
    parser = argparse.ArgumentParser(prog="python -m rescue_bench.engine.workers")
    parser.add_argument("--plan", required=True, type=Path)
    parser.add_argument("--board", required=True, type=Path)
    parser.add_argument("--index", required=True, type=int)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--parent", required=True, type=int)
    args = parser.parse_args(argv)
    _die_with_parent(args.parent)

    from rescue_bench.data.load import DataError
    from rescue_bench.engine.evaluate import evaluate
    from rescue_bench.engine.feed import BoardShare
    from rescue_bench.gcpolicy import fewer_gc_passes

    board = Board.open(args.board)
    try:
        with fewer_gc_passes():
            # the plan the parent made, as it made it (written by the parent for its own workers only)
            plan = pickle.loads(args.plan.read_bytes())
            evaluated = evaluate(plan, display="none", share=BoardShare(board, args.index), progress=_LineProgress())
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
