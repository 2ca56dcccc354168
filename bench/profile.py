"""Where a call's client CPU goes: ``rescue eval`` of each task under py-spy, stacks sorted into parts.

    pip install -e '.[bench]'               # py-spy
    python bench/profile.py                 # the six tasks, one process each, on the scaled real clips
    python bench/profile.py --tasks itp --keep DIR    # also keep py-spy's raw stacks in DIR

Each task runs as ``rescue eval --tasks T --workers 1 --display none`` (ER and VP with a judge)
against the loopback server of ``bench/run.py`` (0.2 s latency, ``--max-connections 64``), sampled by
py-spy 100 times a second. Every sample's stack is put in the first part it matches:

- start-up: imports, and inspect_ai's eval set-up and teardown (paid once per run, not per call);
- the sample log: condensing, JSON, zstd and writing of each sample (``log_sample``);
- the response cache (``cache_fetch`` / ``cache_store``), and inspect_ai's trace log;
- then by the innermost frame of a known package: the OpenAI SDK and httpx; inspect_ai's transcript,
  spans and events (including its per-sample ACP session); ``rescue_bench`` itself (prompts, parsing,
  scoring); the rest of inspect_ai's sample lifecycle; the asyncio event loop; anything else.

Idle threads (waiting on a condition or a queue) are left out. The table gives each part's share of
the samples; the shares of a run's per-call parts, times its CPU per call (``bench/run.py``), give
milliseconds per call.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import python, responder, source_lines, write_scaled  # noqa: E402

TASKS = ("itp", "rpp", "stp", "ssp", "er", "vp")

ANY_FRAME = [
    ("start-up: imports", ("_find_and_load",)),
    ("start-up: eval set-up, teardown", ("eval_init (", "finish_task_log", "eval_results (", "resolve_models (")),
    ("sample log", ("log_sample (", "condense_sample (", "write_buffered_samples", "_flush_pending_samples")),
    ("response cache", ("cache_fetch (", "cache_store (")),
    ("trace log", ("trace_action (", "trace_message (", "inspect_ai/_util/trace.py")),
]
"""Parts recognised by any frame of the stack, in order."""
INNERMOST = [
    ("OpenAI SDK + httpx", ("(openai/", "(httpx", "(httpcore", "(h11/", "(anyio/streams", "(openai.py", "(openai_completions.py")),
    ("transcript, spans, events", ("inspect_ai/log/_transcript", "inspect_ai/agent/_acp", "inspect_ai/util/_span", "inspect_ai/event/", "inspect_ai/solver/_transcript")),
    ("rescue_bench", ("(rescue_bench/",)),
    ("rest of inspect_ai", ("(inspect_ai/",)),
    ("event loop", ("(asyncio/", "(anyio/", "(selectors")),
]
"""Parts recognised by the innermost frame of a known package, in order."""
PARTS = [name for name, _ in ANY_FRAME + INNERMOST] + ["other"]
IDLE = ("Condition.wait (", "Queue.get (", "_worker (concurrent/futures/thread.py")


def part_of(frames: list[str]) -> str | None:
    """The part a stack belongs to (``None``: an idle thread)."""
    stack = ";".join(frames)
    if frames and any(frames[-1].startswith(idle) or idle in frames[-1] for idle in IDLE):
        return None
    for name, patterns in ANY_FRAME:
        if any(p in stack for p in patterns):
            return name
    for frame in reversed(frames):
        for name, patterns in INNERMOST:
            if any(p in frame for p in patterns):
                return name
    return "other"


def shares(raw: Path) -> Counter[str]:
    """Samples per part of a py-spy ``--format raw`` file (``stack count`` lines)."""
    counts: Counter[str] = Counter()
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = [re.sub(r":\d+\)", ")", f) for f in stack.split(";")]
        part = part_of(frames)
        if part is not None:
            counts[part] += int(n)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--factor", type=int, default=6)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--max-connections", type=int, default=64)
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--keep", type=Path, help="keep the raw py-spy stacks here")
    args = parser.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy is not installed: pip install -e '.[bench]'")
    from rich.console import Console
    from rich.table import Table

    from rescue_bench.testing import FakeOpenAI

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    label, clips = source_lines()
    table = Table(title=f"Where rescue eval's client CPU goes (py-spy samples; {label} x{args.factor})", title_justify="left")
    table.add_column("part")
    for task in tasks:
        table.add_column(task, justify="right")
    columns: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="rescue-profile-") as tmp_name, FakeOpenAI(responder, latency=args.latency) as server:
        tmp = Path(tmp_name)
        data = write_scaled(clips, tmp / "scaled.jsonl", copies=args.factor)
        for task in tasks:
            print(f"profiling {task} ...", flush=True)
            raw = (args.keep or tmp) / f"{task}.raw"
            raw.parent.mkdir(parents=True, exist_ok=True)
            judge = ["--judge", "openai/bench-judge"] if task in ("er", "vp") else []
            env = dict(os.environ, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench-not-a-key", RESCUE_CACHE_DIR=str(tmp / f"cache-{task}"))
            cmd = [
                spy, "record", "--rate", str(args.rate), "--format", "raw", "--output", str(raw), "--",
                python(), "-m", "rescue_bench.cli", "eval", "--data", str(data), "--model", "openai/bench-model", *judge,
                "--tasks", task, "--workers", "1", "--display", "none", "--no-bertscore",
                "--max-connections", str(args.max_connections), "--out", str(tmp / f"out-{task}"),
            ]
            start = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"profiling {task} failed:\n{done.stderr[-2000:]}")
            print(f"  {time.perf_counter() - start:.1f} s", flush=True)
            columns[task] = shares(raw)
    for part in PARTS:
        if any(columns[t][part] for t in tasks):
            table.add_row(part, *(f"{100 * columns[t][part] / max(1, sum(columns[t].values())):.1f}%" for t in tasks))
    Console().print(table)


if __name__ == "__main__":
    main()
