"""Helpers of the benchmarks: scaled data in a temp dir, a responder, prefix reuse, child runs.

Nothing here touches the network: the model is a :class:`rescue_bench.testing.FakeOpenAI` on
127.0.0.1. Scaled copies of the real clips are only ever written to temporary directories.
"""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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
    """
    total = n_clips if n_clips is not None else len(clips) * (copies or 1)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", encoding="utf-8") as fh:
        for i in range(total):
            clip = dict(clips[i % len(clips)])
            clip["sample_id"] = f"{clip['sample_id']}~{i // len(clips):03d}"
            fh.write(json.dumps(clip, ensure_ascii=False) + "\n")
    return dest


# --------------------------------------------------------------------------------------------------
# the model behind the fake server: always a valid answer, in the contract of each task
# --------------------------------------------------------------------------------------------------

responder = ValidAnswers()
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
    """User + system CPU seconds of the child."""
    maxrss_mb: float
    """Peak resident memory of the child (``getrusage`` maxrss)."""
    stdout: str
    stderr: str


def run_child(cmd: list[str], env: dict[str, str]) -> ChildRun:
    """Run ``cmd`` and measure it with ``wait4``: wall time, CPU time and peak RSS of that child only."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ChildRun(
            returncode=proc.returncode,
            wall=wall,
            cpu=usage.ru_utime + usage.ru_stime,
            maxrss_mb=usage.ru_maxrss / 1024,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
        )


def python() -> str:
    return sys.executable
