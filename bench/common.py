"""Helpers of the benchmarks: scaled data in a temp dir, a responder, prefix reuse, child runs.

Nothing here touches the network: the model is a :class:`rescue_bench.testing.FakeOpenAI` on
127.0.0.1. Scaled copies of the real clips are only ever written to temporary directories.
"""

from __future__ import annotations

import bisect
import json
import os
import pty
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rescue_bench.testing import ValidAnswers

REPO = Path(__file__).resolve().parent.parent
REAL_DIR = REPO.parent / "shared" / "data" / "rescue_real"
RELEASE_CLIPS = 191
"""Clips in the public release (SPEC section 1)."""


# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------


def source_lines() -> tuple[str, list[dict[str, Any]]]:
    """The clips to scale: the real release lines when present, else the bundled demo."""
    from rescue_bench.data.load import demo_path

    files = sorted(REAL_DIR.glob("*.jsonl")) if REAL_DIR.is_dir() else []
    label = "real clips (../shared/data/rescue_real)" if files else "bundled demo"
    files = files or [demo_path()]
    clips = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                clips.append(json.loads(line))
    return label, clips


def write_scaled(clips: list[dict[str, Any]], dest: Path, *, copies: int | None = None, n_clips: int | None = None) -> Path:
    """Write ``clips`` over and over under new sample ids (``<id>~<k>``) to ``dest``.

    ``copies``: every clip that many times; ``n_clips``: cycle through the clips until that many.
    Each copy after the first marks every row's words with its number (`` (k)``), so that its
    prompts are requests of their own: the response cache serves a request it has seen, whichever
    instance asks it.
    """
    total = n_clips if n_clips is not None else len(clips) * (copies or 1)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", encoding="utf-8") as fh:
        for i in range(total):
            clip = dict(clips[i % len(clips)])
            k = i // len(clips)
            clip["sample_id"] = f"{clip['sample_id']}~{k:03d}"
            if k:
                clip["rows"] = [{**row, "dialogue_cleaned": f"{row.get('dialogue_cleaned') or ''} ({k})"} for row in clip["rows"]]
            fh.write(json.dumps(clip, ensure_ascii=False) + "\n")
    return dest


# --------------------------------------------------------------------------------------------------
# the model behind the fake server: always a valid answer, in the contract of each task
# --------------------------------------------------------------------------------------------------

class Recorder:
    """:class:`ValidAnswers` that also keeps what the server was asked, for the floors and start-up.

    ``messages``: every request's messages (when ``keep``), in arrival order; ``first``: the
    ``time.perf_counter()`` of the first request since the last :meth:`reset`.
    """

    def __init__(self) -> None:
        self.inner = ValidAnswers()
        self.keep = False
        self.messages: list[list[dict[str, Any]]] = []
        self.first: float | None = None
        self._lock = threading.Lock()

    def reset(self, keep: bool = False) -> None:
        with self._lock:
            self.keep, self.messages, self.first = keep, [], None

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        with self._lock:
            if self.first is None:
                self.first = time.perf_counter()
            if self.keep:
                self.messages.append([{"role": m["role"], "content": m["content"]} for m in messages])
        return self.inner(messages)


responder = Recorder()
"""A valid answer to every RESCUE-Bench prompt and judge request (no thinking involved)."""


# --------------------------------------------------------------------------------------------------
# prompt-prefix reuse
# --------------------------------------------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def prefix_reuse(prompts: list[str]) -> float:
    """Share of prompt characters that repeat a prefix already sent earlier in the run.

    For each prompt, the longest common prefix with *any* earlier prompt; summed over prompts and
    divided by all prompt characters. The earlier prompts are kept sorted: the longest common prefix
    with a set of strings is reached at a sorted neighbour, so each prompt costs two comparisons.
    """
    seen: list[str] = []
    reused = total = 0
    for prompt in prompts:
        total += len(prompt)
        i = bisect.bisect_left(seen, prompt)
        best = 0
        if i > 0:
            best = _common_prefix(prompt, seen[i - 1])
        if i < len(seen):
            best = max(best, _common_prefix(prompt, seen[i]))
        reused += best
        seen.insert(i, prompt)
    return reused / total if total else 0.0


def distinct(prompts: list[str]) -> list[str]:
    """``prompts`` without repeats, first occurrence kept (the 1x set of a scaled run)."""
    seen: set[str] = set()
    out = []
    for p in prompts:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


# --------------------------------------------------------------------------------------------------
# child processes
# --------------------------------------------------------------------------------------------------


@dataclass
class ChildRun:
    returncode: int
    wall: float
    cpu: float
    """User + system CPU seconds of the child (and of the children it waited for: its workers)."""
    maxrss_mb: float
    """Peak resident memory of the child (``getrusage`` maxrss: the largest process)."""
    stdout: str
    stderr: str
    start: float = 0.0
    """``time.perf_counter()`` when the child was started."""
    server_cpu: float = 0.0
    """CPU seconds this (the server's) process used meanwhile."""
    extra: dict[str, Any] = field(default_factory=dict)


def run_child(cmd: list[str], env: dict[str, str], *, terminal: bool = False) -> ChildRun:
    """Run ``cmd`` and measure it with ``wait4``: wall time, CPU time and peak RSS of that child.

    ``terminal``: run it on a pseudo-terminal (80x24 would be cramped: 120x40), as a user runs it in
    a terminal: progress displays draw as they would there. Its output is then all in ``stdout``.
    """
    cpu0 = time.process_time()
    if terminal:
        import fcntl
        import struct
        import termios

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        chunks: list[bytes] = []

        def drain() -> None:
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    return
                if not data:
                    return
                chunks.append(data)

        reader = threading.Thread(target=drain, daemon=True)
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=dict(env, TERM=env.get("TERM", "xterm-256color")), stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
        reader.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        reader.join(timeout=5)
        os.close(master)
        out, err = b"".join(chunks), b""
    else:
        with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
            start = time.perf_counter()
            proc = subprocess.Popen(cmd, env=env, stdout=out_f, stderr=err_f)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            out_f.seek(0)
            err_f.seek(0)
            out, err = out_f.read(), err_f.read()
    return ChildRun(
        returncode=os.waitstatus_to_exitcode(status),
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        maxrss_mb=usage.ru_maxrss / 1024,
        stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"),
        start=start,
        server_cpu=time.process_time() - cpu0,
    )


def python() -> str:
    return sys.executable


def cpu_busy(seconds: float = 1.0) -> float | None:
    """Share of the machine's CPU time spent busy over the next ``seconds`` (Linux ``/proc/stat``)."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat", encoding="ascii") as fh:
            values = [int(x) for x in fh.readline().split()[1:]]
        idle = values[3] + values[4]  # idle + iowait
        return sum(values) - idle, sum(values)

    try:
        busy0, total0 = sample()
        time.sleep(seconds)
        busy1, total1 = sample()
    except (OSError, ValueError):
        return None
    return (busy1 - busy0) / max(1, total1 - total0)


def wait_quiet(threshold: float, patience: float) -> float | None:
    """Wait (at most ``patience`` seconds) until the machine is less than ``threshold`` busy; the
    share it was busy just before returning (``None`` where that cannot be read).

    On a machine shared with other work, a timed run started while something else is running
    measures the other work too; waiting for a quiet second makes the runs comparable."""
    deadline = time.monotonic() + patience
    while True:
        busy = cpu_busy()
        if busy is None or busy < threshold or time.monotonic() >= deadline:
            return busy
