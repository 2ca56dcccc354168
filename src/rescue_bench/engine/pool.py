"""The process pool of ``rescue eval``: a run's plan evaluated in this process or in static shards.

:func:`evaluate_plan` takes a :class:`~rescue_bench.engine.plan.RunPlan` and evaluates it in this
process when the plan has one worker, else in worker processes (:mod:`rescue_bench.engine.workers`).
Both run the same evaluation (:func:`rescue_bench.engine.evaluate.evaluate`) on the same instances:
a worker is handed the plan as it is (``OUT/.workers/plan.pickle``), builds nothing, and evaluates
its static shard of every task (:func:`~rescue_bench.engine.settings.shard`) with its share of
``--max-connections``, through the shared response cache; its inspect logs go to ``OUT/logs``.

Why workers: against a fast endpoint (a local vLLM server, a fast API) a run is CPU-bound in
inspect_ai's per-sample work (the HTTP client, the transcript, the logs) in one Python process:
about 15-20 ms of client CPU per call on the benchmark machine, so one process cannot keep 64 calls
in flight when each takes 0.2 s (docs/benchmarks.md). Static shards put the other cores to use:
every shard takes every ``n``-th instance of every task, so the shards cost about the same and
finish together.

Each worker prints one line per record on stdout (the parent's progress bar) and finally pickles
what it evaluated to ``OUT/.workers/worker-<k>.pickle``; the parent merges the parts, and the output
is written exactly as a one-process run's (``run.write_outputs``), so it does not depend on the
number of workers.

Stopping: Ctrl-C in the parent is passed to every worker once (they are in their own sessions, so
the terminal does not signal them twice); each stops as a one-process run does, and the parent exits
with the one-line "run interrupted" error. A worker reads its stdin, a pipe from the parent, and
exits when it closes: if the parent dies (``kill -9``), the workers die with it. Either way every
finished call is in the response cache, so the same command resumes. When a worker fails, the others
are stopped and its one-line error is raised as :class:`~rescue_bench.engine.settings.WorkerFailed`;
its full stderr stays in ``OUT/.workers/worker-<k>.err``.
"""

from __future__ import annotations

import pickle
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from rescue_bench.engine.outputs import preload
from rescue_bench.engine.plan import RunPlan
from rescue_bench.engine.settings import Evaluated, RunInterrupted, WorkerFailed
from rescue_bench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from rescue_bench.fileio import atomic_write
from rescue_bench.records import ResultRow
from rescue_bench.runinfo import GenerateRequest, merge_usage

STOP_GRACE = 30.0
"""Seconds a worker has to stop after SIGINT before it is killed."""
DONE = b"@rescue done"
"""The line a worker prints on stdout for each record it made."""


def evaluate_plan(plan: RunPlan, *, display: str = "full") -> Evaluated[ResultRow]:
    """Evaluate ``plan``: in this process when its worker plan has one process, else in that many
    worker processes, one static shard each. Raises :class:`~rescue_bench.errors.RunInterrupted`
    when stopped and :class:`~rescue_bench.engine.settings.WorkerFailed` when a worker failed."""
    if plan.workers.workers > 1:
        return _in_workers(plan, display)
    from rescue_bench.engine.evaluate import evaluate

    return evaluate(plan, display=display)


class Worker:
    """One worker process, started, and the records it has reported (the parent's side)."""

    def __init__(self, index: int, count: int, folder: Path, plan_path: Path) -> None:
        self.index = index
        self.count = count
        self.result = folder / f"worker-{index}.pickle"
        self.err_path = folder / f"worker-{index}.err"
        self.done = 0
        cmd = [
            sys.executable, "-m", "rescue_bench.engine.workers",
            "--plan", str(plan_path), "--shard", str(index), "--of", str(count), "--result", str(self.result),
        ]
        with self.err_path.open("wb") as err:
            # stdin: a pipe the parent never writes; it closes when the parent dies, however it dies
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, start_new_session=True
            )
        self.reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[bytes] | None) -> None:
        for line in stream or []:
            if line.rstrip(b"\n") == DONE:
                self.done += 1

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

    def failure(self) -> WorkerFailed:
        """The worker's failure as one line (with its stderr for a bug report)."""
        if self.proc.returncode == EXIT_BAD_INPUT:  # a one-line error, as a one-process run would print it
            line = f"{self.error_line().removeprefix('error: ')} (worker {self.index} of {self.count})"
        else:
            line = f"worker {self.index} of {self.count} failed (exit {self.proc.returncode}): {self.error_line()} (its stderr: {self.err_path})"
        return WorkerFailed(line, details=self.stderr_text())


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


def _progress(display: str) -> Any:
    """A rich progress bar on stderr (or nothing with ``--display none``)."""
    if display == "none":
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=False,
    )


def _in_workers(plan: RunPlan, display: str) -> Evaluated[ResultRow]:
    """Evaluate ``plan`` in ``plan.workers.workers`` processes, one static shard each, and merge what they return."""
    settings, count = plan.settings, plan.workers.workers
    folder = Path(settings.out) / ".workers"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    plan_path = folder / "plan.pickle"
    atomic_write(plan_path, pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL))  # what every worker evaluates
    workers: list[Worker] = []
    progress = _progress(display)
    try:
        workers = [Worker(k, count, folder, plan_path) for k in range(count)]
        threading.Thread(target=preload, name="rescue-preload", daemon=True).start()
        bar = None
        if progress is not None:
            progress.start()
            bar = progress.add_task(f"{settings.model} ({count} workers)", total=plan.total)
        while any(w.alive() for w in workers):
            if any(w.proc.returncode not in (None, 0) for w in workers):
                break  # one failed or was stopped: stop the others below
            if progress is not None:
                progress.update(bar, completed=sum(w.done for w in workers))
            time.sleep(0.05)
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
        if w.proc.returncode != 0 or not w.result.exists():
            raise w.failure()
    # the parts this run's own workers pickled, from the plan this process wrote
    parts: list[Evaluated[ResultRow]] = [pickle.loads(w.result.read_bytes()) for w in workers]
    shutil.rmtree(folder, ignore_errors=True)
    requests: dict[str, GenerateRequest] = {}
    for part in parts:  # the first request of each kind: worker 0's, then the others'
        for kind, sent in part.requests.items():
            requests.setdefault(kind, sent)
    return Evaluated(
        records=[r for p in parts for r in p.records],
        usage=merge_usage([p.usage for p in parts]),
        statuses=[s for p in parts for s in p.statuses],
        unanswered={k: v for p in parts for k, v in p.unanswered.items()},
        logs=[x for p in parts for x in p.logs],
        requests=requests,
        role_usage=merge_usage([p.role_usage for p in parts]),
    )
