"""``rescue eval --workers N``: one run spread over N processes.

Why: against a fast endpoint (a local vLLM server, a fast API) a run is CPU-bound in inspect_ai's
per-sample work (the HTTP client, the transcript, the logs) in one Python process; on the benchmark
machine one process used 57 s of CPU for a run the server could answer in 16 s (docs/benchmarks.md).
Workers put the other cores to use. Against slow endpoints they change nothing but the log layout.

How:

- the parent validates the data once (bad data: one error line, no worker started), writes the
  settings to ``OUT/.workers/settings.json`` and starts N workers, ``python -m
  rescue_bench.engine.workers``, each in its own session;
- worker ``k`` builds every instance (deterministic) and evaluates every N-th instance of each task
  from the k-th on, with ``1/N`` of ``--max-connections`` (the total never exceeds it), through the
  shared response cache; its inspect logs go to ``OUT/logs`` beside the others';
- each worker prints ``@rescue total <n>`` and then ``@rescue done`` per record on stdout (the
  parent's progress bar) and finally writes its records to ``OUT/.workers/worker-<k>.json``;
- the parent merges the records and writes the output exactly as a one-process run would
  (``run.write_outputs``): the results do not depend on the number of workers.

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
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from rescue_bench.engine.settings import EvalSettings, Evaluated, RunInterrupted, WorkerFailed, merge_usage
from rescue_bench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED

TOTAL, DONE = "@rescue total ", "@rescue done"
"""The progress lines a worker prints on stdout."""
STOP_GRACE = 30.0
"""Seconds a worker has to stop after SIGINT before it is killed."""


# --------------------------------------------------------------------------------------------------
# parent side
# --------------------------------------------------------------------------------------------------


class _Worker:
    """One worker process and what it has reported."""

    def __init__(self, index: int, count: int, folder: Path, settings_path: Path) -> None:
        self.index = index
        self.result = folder / f"worker-{index}.json"
        self.err_path = folder / f"worker-{index}.err"
        self.total: int | None = None
        self.done = 0
        cmd = [
            sys.executable, "-m", "rescue_bench.engine.workers",
            "--settings", str(settings_path), "--shard", f"{index}/{count}",
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

    def error_line(self) -> str:
        """The worker's last non-empty stderr line (its one-line error)."""
        try:
            lines = [ln.strip() for ln in self.err_path.read_text(encoding="utf-8", errors="replace").splitlines()]
        except OSError:
            lines = []
        lines = [ln for ln in lines if ln]
        return lines[-1] if lines else "no error message"


def _stop(workers: list[_Worker]) -> None:
    """SIGINT to every running worker, then SIGKILL to any still running after ``STOP_GRACE``."""
    for w in workers:
        w.interrupt()
    deadline = time.monotonic() + STOP_GRACE
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


def run_workers(settings: EvalSettings, count: int, *, display: str = "full") -> Evaluated:
    """Evaluate ``settings`` in ``count`` worker processes and merge what they return."""
    folder = Path(settings.out) / ".workers"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    settings_path = folder / "settings.json"
    settings_path.write_text(settings.model_dump_json(), encoding="utf-8")
    workers: list[_Worker] = []
    progress = _progress(display)
    try:
        for k in range(count):
            workers.append(_Worker(k, count, folder, settings_path))
        bar = None
        if progress is not None:
            progress.start()
            bar = progress.add_task(f"{settings.model} ({count} workers)", total=None)
        while any(w.alive() for w in workers):
            if any(w.proc.returncode not in (None, 0) for w in workers):
                break  # one failed or was stopped: stop the others below
            if progress is not None and bar is not None:
                totals = [w.total for w in workers]
                total = sum(t for t in totals if t is not None) if None not in totals else None
                progress.update(bar, completed=sum(w.done for w in workers), total=total)
            time.sleep(0.1)
    except KeyboardInterrupt as exc:
        _stop(workers)
        raise RunInterrupted() from exc
    finally:
        if progress is not None:
            progress.stop()
    _stop([w for w in workers if w.alive()])
    for w in workers:
        w.reader.join(timeout=5)
    stopped = (EXIT_INTERRUPTED, -signal.SIGINT)
    failed = [w for w in workers if w.proc.returncode not in (0, *stopped, -signal.SIGKILL)]
    if not failed and any(w.proc.returncode in stopped for w in workers):
        raise RunInterrupted()
    for w in failed + workers:
        if w.proc.returncode == EXIT_BAD_INPUT:  # a one-line error, as a one-process run would print it
            raise WorkerFailed(f"{w.error_line().removeprefix('error: ')} (worker {w.index} of {count})")
        if w.proc.returncode != 0 or not w.result.exists():
            raise WorkerFailed(
                f"worker {w.index} of {count} failed (exit {w.proc.returncode}): {w.error_line()} (its stderr: {w.err_path})"
            )
    parts = [json.loads(w.result.read_text(encoding="utf-8")) for w in workers]
    shutil.rmtree(folder, ignore_errors=True)
    return Evaluated(
        records=[r for p in parts for r in p["records"]],
        usage=merge_usage([p["usage"] for p in parts]),
        statuses=[s for p in parts for s in p["statuses"]],
    )


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
    parser.add_argument("--shard", required=True, help="k/n")
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--parent", required=True, type=int)
    args = parser.parse_args(argv)
    _die_with_parent(args.parent)

    from rescue_bench.data.load import DataError
    from rescue_bench.engine.evaluate import evaluate
    from rescue_bench.gcpolicy import fewer_gc_passes

    index, count = (int(x) for x in args.shard.split("/"))
    try:
        settings = EvalSettings.model_validate_json(args.settings.read_text(encoding="utf-8"))
        with fewer_gc_passes():
            _, evaluated = evaluate(
                settings,
                display="none",
                shard=(index, count),
                on_total=lambda n: _say(f"{TOTAL}{n}"),
                on_record=lambda: _say(DONE),
            )
    except (RunInterrupted, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    except DataError as exc:
        print(f"error: {exc.problems[0] if exc.problems else exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ValueError, KeyError, ImportError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"error: {type(exc).__name__}: {first}", file=sys.stderr)
        return EXIT_BAD_INPUT
    payload: dict[str, Any] = {"records": evaluated.records, "usage": evaluated.usage, "statuses": evaluated.statuses}
    tmp = args.result.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
    tmp.replace(args.result)
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
