"""RESCUE-Bench engine benchmarks: one command, a table, and docs/benchmarks.md.

    python bench/run.py            # the full benchmark (10x data), writes docs/benchmarks.md
    python bench/run.py --quick    # 2x data, prints the table only (add --write to write the doc)

What is measured (no network: the model is a local OpenAI-compatible server with a fixed latency):

1. a full ``rescue eval`` over scaled data (the real clips in ../shared, or the bundled demo when they
   are absent, copied many times under new sample ids into a temp dir) at ``--max-connections 64``:
   wall time against the limit ``requests x latency / connections``; goal wall <= 1.3 x limit + 15 s;
2. the same command again: requests sent (goal 0, all answers come from the response cache);
3. prompt-prefix reuse over the run's prompts (goal >= 70%);
4. peak memory of the run (maxrss of the child process);
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
            cmd = eval_cmd(data, tmp / "out", args.max_connections)

            print("1. full run ...", flush=True)
            load_before = os.getloadavg()[0]
            first = run_child(cmd, env)
            check(first, "the full run")
            requests = server.stats.requests
            records = sum(1 for f in (tmp / "out" / "results").glob("*.jsonl") for _ in f.open(encoding="utf-8"))
            limit = requests * args.latency / args.max_connections
            results["full"] = {
                "wall": first.wall, "cpu": first.cpu, "maxrss_mb": first.maxrss_mb, "requests": requests,
                "limit": limit, "goal": 1.3 * limit + 15, "records": records,
                "peak_in_flight": server.stats.peak_in_flight, "load_before": load_before,
            }
            prompts = list(server.stats.prompt_chars)
            if records != instances:
                raise SystemExit(f"the full run wrote {records} records for {instances} instances")

            print("2. the same command again ...", flush=True)
            second = run_child(cmd, env)
            check(second, "the repeated run")
            results["again"] = {"wall": second.wall, "cpu": second.cpu, "requests": server.stats.requests - requests}

            if not args.quick:
                print("1b. full run with --no-log-samples (fresh cache) ...", flush=True)
                before = server.stats.requests
                lean = run_child(
                    eval_cmd(data, tmp / "out-lean", args.max_connections) + ["--no-log-samples"],
                    dict(env, RESCUE_CACHE_DIR=str(tmp / "cache-lean")),
                )
                check(lean, "the run with --no-log-samples")
                lean_requests = server.stats.requests - before
                limit = lean_requests * args.latency / args.max_connections
                results["lean"] = {
                    "wall": lean.wall, "cpu": lean.cpu, "maxrss_mb": lean.maxrss_mb, "requests": lean_requests,
                    "limit": limit, "goal": 1.3 * limit + 15,
                }

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
        "latency": args.latency, "max_connections": args.max_connections,
    }
    return results


def _last_json_line(child: ChildRun) -> str:
    return [line for line in child.stdout.splitlines() if line.startswith("{")][-1]


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001
        return "?"


def rows(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(measure, value, goal, met) rows of the results table."""
    full, again, prefix, build, egc = r["full"], r["again"], r["prefix"], r["build"], r["build_engine_gc"]
    ok = lambda b: "yes" if b else "**no**"  # noqa: E731
    return [
        (
            f"full run, {r['clips']} clips / {r['instances']} instances, {full['requests']} requests at "
            f"{r['env']['latency']} s latency, --max-connections {r['env']['max_connections']}",
            f"{full['wall']:.1f} s wall (limit {full['limit']:.1f} s; child CPU {full['cpu']:.1f} s; "
            f"peak concurrent requests {full['peak_in_flight']}; {full['records']} records)",
            f"<= {full['goal']:.1f} s (1.3 x limit + 15 s)",
            ok(full["wall"] <= full["goal"]),
        ),
        *(
            [(
                "the same full run with `--no-log-samples` (no per-sample inspect logs)",
                f"{r['lean']['wall']:.1f} s wall (limit {r['lean']['limit']:.1f} s; child CPU {r['lean']['cpu']:.1f} s; "
                f"{r['lean']['maxrss_mb']:.0f} MB)",
                f"<= {r['lean']['goal']:.1f} s",
                ok(r["lean"]["wall"] <= r["lean"]["goal"]),
            )] if "lean" in r else []
        ),
        (
            "the same command again",
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
            "peak memory of the full run",
            f"{full['maxrss_mb']:.0f} MB (maxrss of the child)",
            "-",
            "-",
        ),
        (
            f"load + validate + build, {build['clips']} clips (10x the release) -> {build['instances']} instances",
            f"{build['total']:.2f} s (load+validate {build['load_validate']:.2f} s, build {build['build']:.2f} s; "
            f"{build['maxrss_mb']:.0f} MB)",
            "< 10 s",
            ok(build["total"] < 10),
        ),
        (
            "the same, with the garbage-collector thresholds `rescue eval` uses",
            f"{egc['total']:.2f} s (load+validate {egc['load_validate']:.2f} s, build {egc['build']:.2f} s; "
            f"{egc['maxrss_mb']:.0f} MB)",
            "< 10 s",
            ok(egc["total"] < 10),
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
        f"full run {r['full']['load_before']:.2f}.\n"
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
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md (default for the full run)")
    parser.add_argument("--no-write", action="store_true", help="never write docs/benchmarks.md")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument("--measure-build", help=argparse.SUPPRESS)
    parser.add_argument("--engine-gc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_build:
        measure_build(args.measure_build, args.engine_gc)
        return
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
