"""Shared pieces of the reliability tests: the data, a responder with garbage, subprocess runs."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REAL_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "rescue_real"
"""Real lines of the release, beside the repository (read, never copied into it)."""

GARBAGE = "Honestly it is hard to say; there are many factors at play here."
"""What the faulty model says instead of an answer: no JSON, no label."""


def data_path() -> Path:
    """The real clips when present, else the bundled demo."""
    from rescue_bench.data.load import demo_path

    if REAL_DIR.is_dir() and sorted(REAL_DIR.glob("*.jsonl")):
        return REAL_DIR
    return demo_path()


def expected_counts(path: Path, limit: int | None = None) -> tuple[int, int]:
    """(instances ``rescue eval --limit`` evaluates, judge calls when every ER/VP answer is valid)."""
    from rescue_bench.data.load import load_clips
    from rescue_bench.tasks import build_all

    built = build_all(load_clips([path]))
    n = {task: min(limit, len(v)) if limit else len(v) for task, v in built.items()}
    return sum(n.values()), n["er"] + n["vp"]


def _listed(user: str, prefix: str) -> list[str]:
    for line in user.splitlines():
        if line.startswith(prefix):
            return [x.strip() for x in line[len(prefix):].split(",") if x.strip()]
    return []


def _share(text: str, salt: str) -> float:
    return int(hashlib.sha256(f"{salt}|{text}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


class Responder:
    """Valid answers to every task and judge prompt, except ``garbage`` share of task prompts.

    Which prompts get garbage depends only on the prompt text, so a retried or repeated call gets the
    same answer; ``garbage_prompts`` counts the distinct prompts answered with garbage.
    """

    def __init__(self, garbage: float = 0.0) -> None:
        self.garbage = garbage
        self.garbage_prompts: set[str] = set()

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        if not messages:
            return 400, "no messages"
        system = str(messages[0].get("content", ""))
        user = str(messages[-1].get("content", ""))
        if "careful rater" in system:
            return 200, '{"score": 3}'
        if self.garbage and _share(user, "garbage") < self.garbage:
            self.garbage_prompts.add(user)
            return 200, GARBAGE
        task = re.search(r"Task: ([a-z ]+)\.", system)
        name = task.group(1) if task else ""
        if name.startswith("intervention"):
            return 200, '{"answer": "no"}'
        for prefix in ("Labels: ", "Candidates: ", "Strategies: "):
            listed = _listed(user, prefix)
            if listed:
                return 200, json.dumps({"ranking": listed[:3]})
        if name.startswith("emotion"):
            return 200, '{"emotion": "tense and guarded", "intensity": 4}'
        if name.startswith("viewpoint"):
            others = [o for o in _listed(user, "Other participants: ") if o != "Therapist"] or ["Therapist"]
            return 200, json.dumps({"viewpoints": [{"target": o, "viewpoint": "doubts them"} for o in others]})
        return 200, "unrecognised prompt"


def read_records(out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted((out / "results").glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return rows


def child_env(base_url: str, cache: Path) -> dict[str, str]:
    """Environment of a ``rescue eval`` subprocess: the loopback server, a private cache, no real key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "OPENAI_", "RESCUE_"))}
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-test-not-a-real-key", RESCUE_CACHE_DIR=str(cache))
    return env


def eval_args(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "eval", "--data", str(data), "--model", "openai/fake-model", "--judge", "openai/fake-judge",
        "--out", str(out), "--display", "none", "--no-bertscore", *extra,
    ]


def start_eval(env: dict[str, str], args: list[str]) -> subprocess.Popen[bytes]:
    """``python -m rescue_bench.cli <args>`` as a subprocess (stdout and stderr captured)."""
    return subprocess.Popen(
        [sys.executable, "-m", "rescue_bench.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
