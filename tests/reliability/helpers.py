"""Shared pieces of the reliability tests: a responder with garbage, instance counts, subprocess runs."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rescue_bench.testing.answers import ValidAnswers, is_judge

GARBAGE = "Honestly it is hard to say; there are many factors at play here."
"""What the faulty model says instead of an answer: no JSON, no label."""


def expected_counts(path: Path, limit: int | None = None) -> tuple[int, int]:
    """(instances ``rescue eval --limit`` evaluates, judge calls when every ER/VP answer is valid)."""
    from rescue_bench.data.load import load_clips
    from rescue_bench.tasks import build_all

    built = build_all(load_clips([path]))
    n = {task: min(limit, len(v)) if limit else len(v) for task, v in built.items()}
    return sum(n.values()), n["er"] + n["vp"]


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
        self._valid = ValidAnswers(judge_score=3, itp="no", emotion="tense and guarded", intensity=4, viewpoint="doubts them")

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        if messages and not is_judge(messages) and self.garbage:
            user = str(messages[-1].get("content", ""))
            if _share(user, "garbage") < self.garbage:
                self.garbage_prompts.add(user)
                return 200, GARBAGE
        return self._valid(messages)


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
