"""RESCUE-Bench engine benchmarks: one command, tables, and docs/benchmarks.md.

    python bench/run.py            # everything, repeated (about 30 minutes), writes docs/benchmarks.md
    python bench/run.py --quick    # each measure once, no prompt-length sweep; prints the tables only
    python bench/run.py --help     # --repeat, --latency, --max-connections, --factor, --json FILE ...
    python bench/run.py --compare before=OLD/src,after=src --repeat 4   # the default command, two trees in turn

No network: the model is a :class:`rescue_bench.testing.FakeOpenAI` on 127.0.0.1 that answers every
prompt validly after a fixed latency (0.2 s), in this process. The data are the real clips in
../shared (the bundled demo when they are absent) copied ``--factor`` (6) times under new sample ids
into a temporary directory. Measured:

1. **the default command** as a user types it, in a terminal (a pseudo-terminal: the default
   display draws as it would), on the four classification tasks: ``rescue eval --data D --model M
   --tasks itp,rpp,stp,ssp --max-connections 64``. Wall time against the limit ``requests x latency /
   connections`` (goal <= 1.3 x limit + 15 s), the workers ``auto`` chose; the same with
   ``--workers 1`` for comparison, and its results compared byte for byte; then the same command
   again (goal: 0 requests);
2. **start-up**: from the command to the server's first request, ``rescue eval --tasks itp --limit 1``
   (goal <= 2 s), beside its floors: a bare inspect_ai task's time to its first request, and
   ``python -c "import inspect_ai"``;
3. **client CPU per call, per task** (judge calls included): ``rescue eval --tasks T --workers 1
   --display none`` with its sample logs, as the extra CPU time of the whole run over the same command
   with ``--limit 1``, per extra request; beside the floors sending the very prompts the server
   received (``bench/floors.py``): a bare inspect_ai task (``generate()``, no scorer, its default
   logging, sample logs on) and a bare ``openai.AsyncOpenAI`` client, measured the same way.
   Goal: the median over the six tasks below the bare inspect_ai task's;
4. **against prompt length**: the same three for ITP with more rows of context (``--context``);
5. prompt-prefix reuse, peak memory, and load + validate + build of 10x the release (as before).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
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
    wait_quiet,
    write_scaled,
)

DOC = REPO / "docs" / "benchmarks.md"
FLOORS = Path(__file__).resolve().parent / "floors.py"
WORKLOAD_TASKS = ("itp", "rpp", "stp", "ssp")
"""The tasks of the default-command workload (the four classification tasks)."""
TASKS = ("itp", "rpp", "stp", "ssp", "er", "vp")
SWEEP_CONTEXTS = (1, 3, 12, -1)
"""ITP rows of context for the prompt-length sweep (3 is the default; -1: all previous rows)."""


def check(child: ChildRun, what: str) -> None:
    if child.returncode != 0:
        tail = "\n".join((child.stderr or child.stdout).strip().splitlines()[-5:])
        raise SystemExit(f"{what} failed with exit code {child.returncode}:\n{tail}")


def median(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float], fmt: str = "{:.1f}", unit: str = " s") -> str:
    """``median unit`` and, for several values, their range."""
    text = fmt.format(median(values)) + unit
    if len(values) > 1:
        text += f" ({fmt.format(min(values))}-{fmt.format(max(values))}, {len(values)} runs)"
    return text


# --------------------------------------------------------------------------------------------------
# child modes
# --------------------------------------------------------------------------------------------------


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


def _last_json_line(child: ChildRun) -> str:
    return [line for line in child.stdout.splitlines() if line.startswith("{")][-1]


# --------------------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------------------


class Bench:
    """The runs of one benchmark against one loopback server."""

    def __init__(self, args: argparse.Namespace, tmp: Path, server: Any, data: Path) -> None:
        self.args = args
        self.tmp = tmp
        self.server = server
        self.data = data
        self.env = dict(os.environ, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench-not-a-key")
        self.env.pop("INSPECT_CACHE_DIR", None)
        self.env.pop("INSPECT_EVAL_CTL_SERVER", None)
        self.n = 0

    def fresh(self, name: str) -> tuple[Path, dict[str, str]]:
        """A new output folder and an environment with a new, empty response cache."""
        self.n += 1
        return self.tmp / f"out-{name}-{self.n}", dict(self.env, RESCUE_CACHE_DIR=str(self.tmp / f"cache-{self.n}"))

    def child(self, cmd: list[str], env: dict[str, str], what: str, *, terminal: bool = False, keep: bool = False) -> ChildRun:
        """Run ``cmd`` against the server; ``extra``: requests, the first request's delay, load before."""
        busy = wait_quiet(self.args.quiet, self.args.patience)
        responder.reset(keep=keep)
        before = self.server.stats.requests
        self.server.stats.peak_in_flight = 0
        load = os.getloadavg()[0]
        run = run_child(cmd, env, terminal=terminal)
        check(run, what)
        run.extra = {
            "requests": self.server.stats.requests - before,
            "first_request": None if responder.first is None else responder.first - run.start,
            "peak_in_flight": self.server.stats.peak_in_flight,
            "load_before": load,
            "busy_before": busy,
        }
        return run

    def eval_cmd(self, out: Path, *extra: str, data: Path | None = None) -> list[str]:
        return [
            python(), "-m", "rescue_bench.cli", "eval", "--data", str(data or self.data), "--model", "openai/bench-model",
            "--max-connections", str(self.args.max_connections), "--out", str(out), *extra,
        ]

    # -- 1. the default command --------------------------------------------------------------------
    def default_command(self) -> dict[str, Any]:
        tasks = ",".join(WORKLOAD_TASKS)
        runs = []
        for i in range(self.args.repeat):
            print(f"1. the default command ({i + 1}/{self.args.repeat}) ...", flush=True)
            out, env = self.fresh("default")
            run = self.child(self.eval_cmd(out, "--tasks", tasks), env, "the default command", terminal=True, keep=(i == 0))
            if i == 0:
                self.prompts = [m for m in responder.messages]
            meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
            requests = run.extra["requests"]
            limit = requests * self.args.latency / self.args.max_connections
            runs.append({
                "wall": run.wall, "cpu": run.cpu, "maxrss_mb": run.maxrss_mb, "requests": requests, "limit": limit,
                "goal": 1.3 * limit + 15, "workers": meta["workers"], "choice": meta["workers_choice"],
                "peak_in_flight": run.extra["peak_in_flight"], "load_before": run.extra["load_before"],
                "busy_before": run.extra["busy_before"],
                "server_cpu": run.server_cpu, "out": str(out), "cache": env["RESCUE_CACHE_DIR"],
            })
        print("1b. the same with --workers 1 ...", flush=True)
        out, env = self.fresh("one")
        one = self.child(self.eval_cmd(out, "--tasks", tasks, "--workers", "1"), env, "--workers 1", terminal=True)
        same = all(
            (Path(runs[0]["out"]) / name).read_bytes() == (out / name).read_bytes()
            for name in ["summary.json", *(f"results/{t}.jsonl" for t in WORKLOAD_TASKS)]
        )
        print("1c. the same command again ...", flush=True)
        first = runs[0]
        again = self.child(
            self.eval_cmd(Path(first["out"]), "--tasks", tasks), dict(self.env, RESCUE_CACHE_DIR=first["cache"]),
            "the repeated command", terminal=True,
        )
        return {
            "runs": runs,
            "one": {"wall": one.wall, "cpu": one.cpu, "requests": one.extra["requests"], "maxrss_mb": one.maxrss_mb},
            "same_output": same,
            "again": {"wall": again.wall, "cpu": again.cpu, "requests": again.extra["requests"]},
        }

    # -- 2. start-up -------------------------------------------------------------------------------
    def startup(self) -> dict[str, Any]:
        prompts = self.tmp / "startup-prompts.jsonl"
        prompts.write_text(json.dumps(self.prompts[0]) + "\n", encoding="utf-8")
        out: dict[str, list[float]] = {"rescue": [], "inspect": [], "import": [], "help": []}
        for i in range(self.args.startup_repeat):
            print(f"2. start-up ({i + 1}/{self.args.startup_repeat}) ...", flush=True)
            folder, env = self.fresh("startup")
            run = self.child(self.eval_cmd(folder, "--tasks", "itp", "--limit", "1"), env, "the start-up run", terminal=True)
            out["rescue"].append(run.extra["first_request"])
            run = self.child([python(), str(FLOORS), "inspect", str(prompts), "--display", "full"], env, "the bare inspect_ai task", terminal=True)
            out["inspect"].append(run.extra["first_request"])
            out["import"].append(run_child([python(), "-c", "import inspect_ai"], self.env).wall)
            out["help"].append(run_child([python(), "-m", "rescue_bench.cli", "--help"], self.env).wall)
        return out

    # -- 3./4. client CPU per call -------------------------------------------------------------------
    def per_call(self, full: list[str], one: list[str], what: str, keep: bool = False) -> tuple[float, int, ChildRun]:
        """Milliseconds of client CPU per extra request of ``full`` over ``one``, and ``full``'s requests
        (each with a response cache of its own)."""
        a = self.child(one, self.fresh("one")[1], f"{what} (--limit 1)")
        b = self.child(full, self.fresh("full")[1], what, keep=keep)
        extra = b.extra["requests"] - a.extra["requests"]
        return 1000 * (b.cpu - a.cpu) / max(1, extra), b.extra["requests"], b

    def task_costs(self, task: str, *extra: str, data: Path | None = None) -> dict[str, Any]:
        """rescue, bare inspect_ai and bare client: ms of CPU per call for ``task`` (``extra``: eval options)."""
        judge = ("--judge", "openai/bench-judge") if task in ("er", "vp") else ()
        base = ("--tasks", task, *judge, "--workers", "1", "--display", "none", "--no-bertscore", *extra)
        out, _ = self.fresh(f"task-{task}")
        ours, calls, _ = self.per_call(
            self.eval_cmd(out, *base, "--overwrite", data=data), self.eval_cmd(out, *base, "--limit", "1", "--overwrite", data=data), f"rescue eval --tasks {task}", keep=True
        )
        prompts = self.tmp / f"prompts-{task}-{self.n}.jsonl"
        sent = responder.messages
        prompts.write_text("".join(json.dumps(m) + "\n" for m in sent), encoding="utf-8")
        chars = sum(len(str(msg["content"])) for m in sent for msg in m) / max(1, len(sent))
        floors = {}
        for kind in ("inspect", "client"):
            cmd = [python(), str(FLOORS), kind, str(prompts), "--max-connections", str(self.args.max_connections)]
            floors[kind], _, _ = self.per_call(cmd, [*cmd, "--limit", "1"], f"the bare {kind} floor for {task}")
        return {"calls": calls, "chars": chars, "rescue": ours, **floors}

    def per_task(self) -> dict[str, dict[str, Any]]:
        table: dict[str, dict[str, Any]] = {t: {"rescue": [], "inspect": [], "client": []} for t in TASKS}
        for i in range(self.args.repeat):
            for task in TASKS:
                print(f"3. client CPU per call, {task} ({i + 1}/{self.args.repeat}) ...", flush=True)
                cost = self.task_costs(task)
                row = table[task]
                row.update(calls=cost["calls"], chars=cost["chars"])
                for kind in ("rescue", "inspect", "client"):
                    row[kind].append(cost[kind])
        return table

    def sweep(self) -> dict[str, dict[str, Any]]:
        table: dict[str, dict[str, Any]] = {}
        for context in SWEEP_CONTEXTS:
            print(f"4. prompt length: ITP with --context {context} ...", flush=True)
            cost = self.task_costs("itp", "--context", str(context))
            table[str(context)] = cost
        return table


def compare(args: argparse.Namespace) -> None:
    """``--compare A=SRC,B=SRC``: the default command only, run by each source tree in turn (``PYTHONPATH``
    put before the installed package), ``--repeat`` rounds on one server and one copy of the data, so
    the trees meet the same machine load; prints each run and the medians as a Markdown table."""
    from rescue_bench.testing import FakeOpenAI

    trees = dict(item.split("=", 1) for item in args.compare.split(","))
    label, clips = source_lines()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="rescue-compare-") as tmp_name, FakeOpenAI(responder, latency=args.latency) as server:
        tmp = Path(tmp_name)
        data = write_scaled(clips, tmp / "scaled.jsonl", copies=args.factor)
        bench = Bench(args, tmp, server, data)
        for i in range(args.repeat):
            for name, src in trees.items():
                out, env = bench.fresh(f"compare-{name}")
                env = dict(env, PYTHONPATH=str(Path(src).resolve()))
                run_ = bench.child(bench.eval_cmd(out, "--tasks", ",".join(WORKLOAD_TASKS)), env, f"{name} ({src})", terminal=True)
                row = {"wall": run_.wall, "cpu": run_.cpu, "requests": run_.extra["requests"], "busy_before": run_.extra["busy_before"] or 0.0}
                runs[name].append(row)
                print(f"{name} {i + 1}/{args.repeat}: {row['wall']:.1f} s wall, {row['cpu']:.1f} s CPU, {row['requests']} requests", flush=True)
    print(f"\n{label}, x{args.factor}; `{' '.join(sys.argv)}`\n")
    print("| tree | wall (median, range) | CPU (median, range) | requests |")
    print("|---|---|---|---|")
    for name, rows in runs.items():
        walls, cpus = [r["wall"] for r in rows], [r["cpu"] for r in rows]
        print(f"| {name} | {spread(walls)} | {spread(cpus)} | {rows[0]['requests']} |")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from rescue_bench.testing import FakeOpenAI

    label, clips = source_lines()
    results: dict[str, Any] = {"source": label, "source_clips": len(clips), "factor": args.factor}
    with tempfile.TemporaryDirectory(prefix="rescue-bench-") as tmp_name:
        tmp = Path(tmp_name)
        data = write_scaled(clips, tmp / "scaled.jsonl", copies=args.factor)
        print(f"{label}: {len(clips)} clips x {args.factor} = {len(clips) * args.factor} clips", flush=True)
        with FakeOpenAI(responder, latency=args.latency) as server:
            bench = Bench(args, tmp, server, data)
            results["default"] = bench.default_command()
            results["startup"] = bench.startup()
            results["per_task"] = bench.per_task()
            if not args.quick:
                results["sweep"] = bench.sweep()
            prompts = ["\n".join(str(m["content"]) for m in p) for p in bench.prompts]

        print("5. prefix reuse ...", flush=True)
        unique = distinct(prompts)
        results["prefix"] = {
            "distinct": prefix_reuse(unique), "all": prefix_reuse(prompts),
            "n_distinct": len(unique), "n_all": len(prompts), "chars_distinct": sum(map(len, unique)),
        }
        print(f"6. load, validate and build {10 * RELEASE_CLIPS} clips ...", flush=True)
        big = write_scaled(clips, tmp / "release_x10.jsonl", n_clips=10 * RELEASE_CLIPS)
        for key, flag in (("build", []), ("build_engine_gc", ["--engine-gc"])):
            child = run_child([python(), str(Path(__file__).resolve()), "--measure-build", str(big), *flag], dict(os.environ))
            check(child, "the build measurement")
            results[key] = dict(json.loads(_last_json_line(child)), maxrss_mb=child.maxrss_mb)
    results["env"] = {
        "cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
        "inspect_ai": _version("inspect_ai"), "rescue_bench": _version("rescue_bench"),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "latency": args.latency, "max_connections": args.max_connections, "quiet": args.quiet, "patience": args.patience,
    }
    return results


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001
        return "?"


# --------------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------------


def ok(met: bool) -> str:
    return "yes" if met else "**no**"


def goal_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(measure, value, goal, met) rows: the engine's goals, then the other measures."""
    d, s, env = r["default"], r["startup"], r["env"]
    runs = d["runs"]
    walls = [x["wall"] for x in runs]
    wall, goal = median(walls), median([x["goal"] for x in runs])
    first = runs[0]
    workers = sorted({x["workers"] for x in runs})
    busy = [x["choice"].get("first_process_busy") for x in runs if x["choice"].get("first_process_busy") is not None]
    per_task = r["per_task"]
    ours = median([median(per_task[t]["rescue"]) for t in TASKS])
    floor = median([median(per_task[t]["inspect"]) for t in TASKS])
    client = median([median(per_task[t]["client"]) for t in TASKS])
    rescue_start, inspect_start = median(s["rescue"]), median(s["inspect"])
    prefix, build, egc = r["prefix"], r["build"], r["build_engine_gc"]
    return [
        (
            f"**the default command** (`rescue eval --data D --model M --tasks itp,rpp,stp,ssp --max-connections "
            f"{env['max_connections']}`, in a terminal): {first['requests']} requests at {env['latency']} s latency",
            f"{spread(walls)} wall (limit {first['limit']:.1f} s; CPU {median([x['cpu'] for x in runs]):.1f} s; "
            f"`auto` chose {'/'.join(map(str, workers))} workers"
            + (f", first process busy {100 * median(busy):.0f}%" if busy else "")
            + f"; peak {max(x['peak_in_flight'] for x in runs)} calls in flight; server CPU {median([x['server_cpu'] for x in runs]):.1f} s)",
            f"<= {goal:.1f} s (1.3 x limit + 15 s)",
            ok(wall <= goal),
        ),
        (
            "the same with `--workers 1` (one process)",
            f"{d['one']['wall']:.1f} s wall (CPU {d['one']['cpu']:.1f} s); results/ and summary.json "
            + ("byte for byte those of the default run" if d["same_output"] else "**differ from the default run's**"),
            "same results",
            ok(d["same_output"]),
        ),
        (
            "**client CPU per call**, median over the six tasks (judge calls included; one process, sample logs on)",
            f"{ours:.1f} ms; bare inspect_ai task {floor:.1f} ms; bare OpenAI client {client:.1f} ms (per task below)",
            "< the bare inspect_ai task's",
            ok(ours < floor),
        ),
        (
            "**start-up** to the first request (`rescue eval --tasks itp --limit 1`, in a terminal)",
            f"{spread(s['rescue'], '{:.2f}')}; floors: a bare inspect_ai task {spread(s['inspect'], '{:.2f}')}, "
            f"`python -c \"import inspect_ai\"` {spread(s['import'], '{:.2f}')} (`rescue --help` {median(s['help']):.2f} s)",
            "<= 2 s",
            ok(rescue_start <= 2.0) + ("" if rescue_start <= 2.0 else f" (floor {inspect_start:.2f} s)"),
        ),
        (
            "the default command again (response cache)",
            f"{d['again']['requests']} requests ({d['again']['wall']:.1f} s wall)",
            "0 requests",
            ok(d["again"]["requests"] == 0),
        ),
        (
            f"prompt-prefix reuse ({prefix['n_distinct']} distinct prompts of the default command)",
            f"{100 * prefix['distinct']:.1f}% of prompt characters (all {prefix['n_all']} prompts as sent: {100 * prefix['all']:.1f}%)",
            ">= 70%",
            ok(prefix["distinct"] >= 0.70),
        ),
        (
            "peak memory of the default command (maxrss of the largest process)",
            f"{median([x['maxrss_mb'] for x in runs]):.0f} MB; one process: {d['one']['maxrss_mb']:.0f} MB",
            "-",
            "-",
        ),
        (
            f"load + validate + build, {egc['clips']} clips (10x the release) -> {egc['instances']} instances, "
            "as `rescue` runs it (collector thresholds of `rescue_bench.gcpolicy`)",
            f"{egc['total']:.2f} s (load+validate {egc['load_validate']:.2f} s, build {egc['build']:.2f} s; {egc['maxrss_mb']:.0f} MB)",
            "< 10 s",
            ok(egc["total"] < 10),
        ),
        (
            "the same with Python's default collector thresholds (a library caller's default)",
            f"{build['total']:.2f} s (load+validate {build['load_validate']:.2f} s, build {build['build']:.2f} s; {build['maxrss_mb']:.0f} MB)",
            "-",
            "-",
        ),
    ]


def cost_rows(table: dict[str, dict[str, Any]], label: str) -> list[tuple[str, ...]]:
    rows = []
    for key, row in table.items():
        def cell(kind: str, row: dict[str, Any] = row) -> str:
            values = row[kind] if isinstance(row[kind], list) else [row[kind]]
            return spread(values, "{:.1f}", " ms")

        rows.append((f"{label}{key}", f"{row['calls']}", f"{row['chars']:,.0f}", cell("rescue"), cell("inspect"), cell("client")))
    return rows


COST_HEADER = ("", "calls", "prompt chars (mean)", "rescue eval", "bare inspect_ai task", "bare OpenAI client")


def print_tables(r: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"RESCUE-Bench engine benchmarks ({r['source']}, x{r['factor']})", title_justify="left")
    for col in ("measure", "value", "goal", "met"):
        table.add_column(col)
    for row in goal_rows(r):
        table.add_row(*(c.replace("**", "") for c in row))
    console.print(table)
    for title, data, label in (("client CPU per call, by task", r["per_task"], ""), ("ITP against prompt length", r.get("sweep"), "--context ")):
        if not data:
            continue
        t = Table(title=title, title_justify="left")
        for col in COST_HEADER:
            t.add_column(col)
        for row in cost_rows(data, label):
            t.add_row(*row)
        console.print(t)


def markdown(r: dict[str, Any], command: str) -> str:
    env = r["env"]
    out = ["| measure | value | goal | met |", "|---|---|---|---|", *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in goal_rows(r))]
    out += ["", "Client CPU per call, by task (ms of CPU per request, the median and range over the runs):", ""]
    out += ["| task | " + " | ".join(COST_HEADER[1:]) + " |", "|---" * len(COST_HEADER) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in cost_rows(r["per_task"], "")]
    if r.get("sweep"):
        out += ["", "ITP against prompt length (one run each):", ""]
        out += ["| rows of context | " + " | ".join(COST_HEADER[1:]) + " |", "|---" * len(COST_HEADER) + "|"]
        out += ["| " + " | ".join(row) + " |" for row in cost_rows(r["sweep"], "")]
    busy = [x.get("busy_before") for x in r["default"]["runs"]]
    out += [
        "",
        f"Measured {env['date']} with `{command}` on {env['cpus']} CPUs, Python {env['python']}, inspect_ai "
        f"{env['inspect_ai']}, rescue_bench {env['rescue_bench']} ({env['platform']}); data: {r['source']}, "
        f"{r['source_clips']} clips x {r['factor']}. The machine is shared: each timed run waited (up to "
        f"{env.get('patience', 120):.0f} s) for a second in which other work kept it less than "
        f"{100 * env.get('quiet', 0.15):.0f}% busy; before the default-command runs it was "
        + ", ".join("?" if b is None else f"{100 * b:.0f}%" for b in busy) + " busy.",
    ]
    return "\n".join(out) + "\n"


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
    parser.add_argument("--quick", action="store_true", help="each measure once, no prompt-length sweep; print only (unless --write)")
    parser.add_argument("--factor", type=int, default=6, help="copies of the source clips (default 6)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake server takes per answer")
    parser.add_argument("--max-connections", type=int, default=64)
    parser.add_argument("--repeat", type=int, help="runs of the default command and of each per-task measure (default 3, 1 with --quick)")
    parser.add_argument("--startup-repeat", type=int, help="runs of each start-up measure (default 5, 1 with --quick)")
    parser.add_argument("--quiet", type=float, default=0.15, help="before each timed run, wait until the machine is less busy than this (share of all CPUs over a second)")
    parser.add_argument("--patience", type=float, default=120.0, help="seconds to wait for that at most, then run anyway (the busy share is recorded)")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md (default for the full run)")
    parser.add_argument("--no-write", action="store_true", help="never write docs/benchmarks.md")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument("--from-json", type=Path, help="no measuring: print (and write) the tables of an earlier --json")
    parser.add_argument("--compare", help="LABEL=SRC,LABEL=SRC: only the default command, by each source tree (src/ folders) in turn")
    parser.add_argument("--measure-build", help=argparse.SUPPRESS)
    parser.add_argument("--engine-gc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_build:
        measure_build(args.measure_build, args.engine_gc)
        return
    args.repeat = args.repeat or (1 if args.quick else 3)
    args.startup_repeat = args.startup_repeat or (1 if args.quick else 5)
    if args.compare:
        compare(args)
        return
    if args.from_json:
        results = json.loads(args.from_json.read_text(encoding="utf-8"))
        command = results.get("command", "python bench/run.py")
    else:
        results = run(args)
        command = "python bench/run.py" + " ".join([""] + sys.argv[1:])
        results["command"] = command.strip()
    print_tables(results)
    if args.json and not args.from_json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if (args.write or not args.quick) and not args.no_write:
        write_doc(markdown(results, results["command"]))
        print(f"wrote {DOC.relative_to(REPO)}")


if __name__ == "__main__":
    main()
