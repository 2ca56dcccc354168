"""RESCUE-Bench engine benchmarks: one command, a table, and docs/benchmarks.md.

    python bench/run.py            # the full benchmark (10x data), writes docs/benchmarks.md
    python bench/run.py --quick    # 2x data, prints the table only (add --write to write the doc)

What is measured (no network: the model is a local OpenAI-compatible server with a fixed latency):

1. a full ``rescue eval`` over scaled data (the real clips in ../shared, or the bundled demo when they
   are absent, copied many times under new sample ids into a temp dir) at ``--max-connections 64``
   with ``--workers`` = the CPUs, and again in one process: wall time against the limit
   ``requests x latency / connections``; goal wall <= 1.3 x limit + 15 s;
2. the same command again: requests sent (goal 0, all answers come from the response cache);
3. prompt-prefix reuse over the run's prompts (goal >= 70%);
4. peak memory of a run (maxrss of the largest process);
5. time to load, validate and build every instance of 1,910 clips (10x the release; goal < 10 s).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    RELEASE_CLIPS,
    REPO,
    ChildRun,
    distinct,
    prefix_reuse,
    python,
    responder,
    run_child,
    source_lines,
    write_scaled,
)

DOC = REPO / "docs" / "benchmarks.md"


def count_instances(path: Path) -> tuple[int, int]:
    """(instances built by rescue_bench.tasks.build_all, valid ER/VP judge calls expected)."""
    from rescue_bench.data.load import load_clips
    from rescue_bench.tasks import build_all

    built = build_all(load_clips([path]))
    return sum(len(v) for v in built.values()), len(built["er"]) + len(built["vp"])


def measure_build(path: str, engine_gc: bool) -> None:
    """Child mode: time load + validate + build_all of ``path`` and print it as JSON.

    ``engine_gc``: with the garbage-collector thresholds ``rescue eval`` sets while it loads and builds.
    """
    t0 = time.perf_counter()
    import gc

    from rescue_bench.data.validate import validate_paths
    from rescue_bench.tasks import build_all

    if engine_gc:
        from rescue_bench.gcpolicy import GC_THRESHOLD

        gc.set_threshold(*GC_THRESHOLD)

    t1 = time.perf_counter()
    result = validate_paths([path])
    t2 = time.perf_counter()
    built = build_all(result.clips)
    t3 = time.perf_counter()
    print(json.dumps({
        "import": t1 - t0, "load_validate": t2 - t1, "build": t3 - t2, "total": t3 - t1,
        "clips": len(result.clips), "errors": len(result.errors), "instances": sum(len(v) for v in built.values()),
    }))


def eval_cmd(data: Path, out: Path, connections: int) -> list[str]:
    return [
        python(), "-m", "rescue_bench.cli", "eval", "--data", str(data),
        "--model", "openai/bench-model", "--judge", "openai/bench-judge",
        "--no-bertscore", "--display", "none", "--max-connections", str(connections), "--out", str(out),
    ]


def check(child: ChildRun, what: str) -> None:
    if child.returncode != 0:
        tail = "\n".join(child.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"{what} failed with exit code {child.returncode}:\n{tail}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from rescue_bench.testing import FakeOpenAI

    label, clips = source_lines()
    factor = args.factor or (2 if args.quick else 10)
    results: dict[str, Any] = {"source": label, "source_clips": len(clips), "factor": factor}
    with tempfile.TemporaryDirectory(prefix="rescue-bench-") as tmp_name:
        tmp = Path(tmp_name)
        data = write_scaled(clips, tmp / "scaled.jsonl", copies=factor)
        instances, judged = count_instances(data)
        results.update(clips=len(clips) * factor, instances=instances, judge_calls=judged)
        print(f"{label}: {len(clips)} clips x {factor} = {len(clips) * factor} clips, {instances} instances", flush=True)

        with FakeOpenAI(responder, latency=args.latency, record_prompts=True) as server:
            env = dict(os.environ)
            env.update(
                OPENAI_BASE_URL=server.base_url,
                OPENAI_API_KEY="bench-not-a-key",
                RESCUE_CACHE_DIR=str(tmp / "cache"),
            )
            env.pop("INSPECT_CACHE_DIR", None)

            def full_run(key: str, what: str, cache: str, *extra: str, repeat: int = 1) -> str:
                """Run the full command ``repeat`` times, each in a fresh cache; keep the median run.

                Returns the cache directory of the median run (for the repeated command)."""
                runs = []
                for i in range(repeat):
                    print(f"{what}{f' ({i + 1}/{repeat})' if repeat > 1 else ''} ...", flush=True)
                    before = server.stats.requests
                    server.stats.peak_in_flight = 0
                    out = tmp / f"out-{key}-{i}"
                    cache_dir = tmp / f"{cache}-{i}"
                    load_before = os.getloadavg()[0]
                    child = run_child(eval_cmd(data, out, args.max_connections) + list(extra), dict(env, RESCUE_CACHE_DIR=str(cache_dir)))
                    check(child, what)
                    requests = server.stats.requests - before
                    records = sum(1 for f in (out / "results").glob("*.jsonl") for _ in f.open(encoding="utf-8"))
                    if records != instances:
                        raise SystemExit(f"{what} wrote {records} records for {instances} instances")
                    limit = requests * args.latency / args.max_connections
                    runs.append({
                        "wall": child.wall, "cpu": child.cpu, "maxrss_mb": child.maxrss_mb, "requests": requests,
                        "limit": limit, "goal": 1.3 * limit + 15, "records": records,
                        "peak_in_flight": server.stats.peak_in_flight, "load_before": load_before, "args": list(extra),
                        "out": str(out), "cache": str(cache_dir),
                    })
                median = sorted(runs, key=lambda run: run["wall"])[(len(runs) - 1) // 2]
                results[key] = dict(median, walls=[run["wall"] for run in runs])
                return median["cache"]

            workers = ["--workers", str(args.workers)]
            full_run("full", "1. full run, one process", "cache-one")
            prompts = list(server.stats.prompt_chars)
            cache = full_run("workers", f"1b. full run, {args.workers} workers", "cache-workers", *workers, repeat=args.repeat)

            print("2. the same command again ...", flush=True)
            before = server.stats.requests
            second = run_child(
                eval_cmd(data, Path(results["workers"]["out"]), args.max_connections) + workers,
                dict(env, RESCUE_CACHE_DIR=cache),
            )
            check(second, "the repeated run")
            results["again"] = {"wall": second.wall, "cpu": second.cpu, "requests": server.stats.requests - before}

            if not args.quick:
                full_run("lean", f"1c. full run, {args.workers} workers, --no-log-samples", "cache-lean", *workers, "--no-log-samples", repeat=args.repeat)

        print("3. prefix reuse ...", flush=True)
        unique = distinct(prompts)
        results["prefix"] = {
            "distinct": prefix_reuse(unique), "all": prefix_reuse(prompts),
            "n_distinct": len(unique), "n_all": len(prompts),
            "chars_distinct": sum(map(len, unique)),
        }

        print(f"4. load, validate and build {10 * RELEASE_CLIPS} clips ...", flush=True)
        big = write_scaled(clips, tmp / "release_x10.jsonl", n_clips=10 * RELEASE_CLIPS)
        for key, flag in (("build", []), ("build_engine_gc", ["--engine-gc"])):
            child = run_child([python(), str(Path(__file__).resolve()), "--measure-build", str(big), *flag], dict(os.environ))
            check(child, "the build measurement")
            results[key] = dict(json.loads(_last_json_line(child)), maxrss_mb=child.maxrss_mb)
    results["env"] = {
        "cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
        "inspect_ai": _version("inspect_ai"), "rescue_bench": _version("rescue_bench"),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "latency": args.latency, "max_connections": args.max_connections, "workers": args.workers,
    }
    return results


def _last_json_line(child: ChildRun) -> str:
    return [line for line in child.stdout.splitlines() if line.startswith("{")][-1]


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001
        return "?"


def _run_row(r: dict[str, Any], key: str, what: str) -> tuple[str, str, str, str]:
    run = r[key]
    walls = run.get("walls", [run["wall"]])
    wall = (
        f"{run['wall']:.1f} s wall, the median of {len(walls)} runs ({min(walls):.1f}-{max(walls):.1f} s)"
        if len(walls) > 1 else f"{run['wall']:.1f} s wall"
    )
    return (
        what,
        f"{wall} (limit {run['limit']:.1f} s; CPU {run['cpu']:.1f} s; "
        f"peak concurrent requests {run['peak_in_flight']}; {run['records']} records)",
        f"<= {run['goal']:.1f} s (1.3 x limit + 15 s)",
        "yes" if run["wall"] <= run["goal"] else "**no**",
    )


def rows(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(measure, value, goal, met) rows of the results table."""
    full, again, prefix, build, egc = r["full"], r["again"], r["prefix"], r["build"], r["build_engine_gc"]
    workers = r["env"]["workers"]
    ok = lambda b: "yes" if b else "**no**"  # noqa: E731
    return [
        _run_row(
            r, "workers",
            f"full run, {r['clips']} clips / {r['instances']} instances, {r['workers']['requests']} requests at "
            f"{r['env']['latency']} s latency, --max-connections {r['env']['max_connections']}, `--workers {workers}`",
        ),
        *([_run_row(r, "lean", "the same with `--no-log-samples` (no per-sample inspect logs)")] if "lean" in r else []),
        _run_row(r, "full", f"the same in one process (no `--workers`; {full['requests']} requests)"),
        (
            f"the same command again (`--workers {workers}`)",
            f"{again['requests']} requests ({again['wall']:.1f} s wall)",
            "0 requests",
            ok(again["requests"] == 0),
        ),
        (
            f"prompt-prefix reuse ({prefix['n_distinct']} distinct prompts)",
            f"{100 * prefix['distinct']:.1f}% of prompt characters (all {prefix['n_all']} prompts as sent: "
            f"{100 * prefix['all']:.1f}%)",
            ">= 70%",
            ok(prefix["distinct"] >= 0.70),
        ),
        (
            "peak memory of a full run (maxrss of the largest process)",
            f"{r['workers']['maxrss_mb']:.0f} MB with `--workers {workers}`, {full['maxrss_mb']:.0f} MB in one process",
            "-",
            "-",
        ),
        (
            f"load + validate + build, {egc['clips']} clips (10x the release) -> {egc['instances']} instances, "
            "as `rescue` runs it (collector thresholds of `rescue_bench.gcpolicy`)",
            f"{egc['total']:.2f} s (load+validate {egc['load_validate']:.2f} s, build {egc['build']:.2f} s; "
            f"{egc['maxrss_mb']:.0f} MB)",
            "< 10 s",
            ok(egc["total"] < 10),
        ),
        (
            "the same with Python's default collector thresholds (a library caller's default)",
            f"{build['total']:.2f} s (load+validate {build['load_validate']:.2f} s, build {build['build']:.2f} s; "
            f"{build['maxrss_mb']:.0f} MB)",
            "-",
            "-",
        ),
    ]


def print_table(r: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"RESCUE-Bench engine benchmarks ({r['source']}, x{r['factor']})", title_justify="left")
    for col in ("measure", "value", "goal", "met"):
        table.add_column(col)
    for row in rows(r):
        table.add_row(*(c.replace("**", "") for c in row))
    Console().print(table)


def markdown(r: dict[str, Any], command: str) -> str:
    env = r["env"]
    lines = [
        "| measure | value | goal | met |",
        "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows(r)),
    ]
    return "\n".join(lines) + (
        f"\n\nMeasured {env['date']} with `{command}` on {env['cpus']} CPUs, Python {env['python']}, "
        f"inspect_ai {env['inspect_ai']}, rescue_bench {env['rescue_bench']} ({env['platform']}); "
        f"data: {r['source']}, {r['source_clips']} clips x {r['factor']}; 1-minute load average before the "
        f"`--workers` run {r['workers']['load_before']:.2f}.\n"
    )


BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def write_doc(table_md: str) -> None:
    """Replace the measured block of docs/benchmarks.md (the prose around it is kept)."""
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} block to fill")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{table_md}{END}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2x data instead of 10x; print only (unless --write)")
    parser.add_argument("--factor", type=int, help="copies of the source clips (default 10, or 2 with --quick)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake server takes per answer")
    parser.add_argument("--max-connections", type=int, default=64)
    parser.add_argument("--repeat", type=int, help="runs of the --workers measurements, the median is kept (default 3, or 1 with --quick)")
    parser.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1), help="--workers of the eval runs (default: the CPUs)")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md (default for the full run)")
    parser.add_argument("--no-write", action="store_true", help="never write docs/benchmarks.md")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument("--measure-build", help=argparse.SUPPRESS)
    parser.add_argument("--engine-gc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_build:
        measure_build(args.measure_build, args.engine_gc)
        return
    args.repeat = args.repeat or (1 if args.quick else 3)
    results = run(args)
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if (args.write or not args.quick) and not args.no_write:
        command = "python bench/run.py" + " ".join([""] + sys.argv[1:])
        write_doc(markdown(results, command.strip()))
        print(f"wrote {DOC.relative_to(REPO)}")


if __name__ == "__main__":
    main()
