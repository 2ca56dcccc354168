"""A scripted agent for the loopback server: it decides what each step *means*, says it in one of
several shapes, and remembers the meaning, so tests check the engine's parsed steps against intent.

``broken`` names steps answered with garbage; ``garbage=True`` breaks every chain step. Task prompts
(the single-task ablation) get valid answers; judge requests a score derived from the prompt, the
first reply to some of them invalid so the engine must ask again.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from typing import Any

from rescue_bench.testing import ValidAnswers
from rescue_bench.testing.agent import step_of

SHAPES = ("plain", "fenced", "prose")
GARBAGE = "Honestly, it depends on so many things."


def h(text: str, salt: str) -> int:
    return int(hashlib.sha256(f"{salt}|{text}".encode()).hexdigest()[:8], 16)


def options(text: str, prefix: str) -> list[str]:
    for line in text.splitlines():
        if line.startswith(prefix):
            return [x.strip() for x in line[len(prefix):].split(",") if x.strip()]
    return []


class ScriptedAgent:
    def __init__(self, broken: set[str] | None = None, garbage: bool = False, fail: set[str] | None = None) -> None:
        self.broken = broken or set()
        self.garbage = garbage
        self.fail = fail or set()
        self.intent: dict[str, Any] = {}
        self.steps: Counter[str] = Counter()
        self.prompts: list[list[dict[str, Any]]] = []
        self.judge_first: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.tasks = ValidAnswers()

    def _say(self, obj: Any, key: str) -> str:
        text = json.dumps(obj)
        shape = SHAPES[h(key, "shape") % len(SHAPES)]
        if shape == "fenced":
            return f"```json\n{text}\n```"
        if shape == "prose":
            return f"Thinking it over, my answer is {text} for now."
        return text

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        with self.lock:
            self.prompts.append(messages)
        system = str(messages[0].get("content", ""))
        if "careful rater" in system:
            return 200, self._judge(messages)
        step = step_of(messages)
        if step is None:
            with self.lock:
                self.steps["task"] += 1
            return self.tasks(messages)
        with self.lock:
            self.steps[step] += 1
        if step in self.fail:
            return 500, "scripted failure"
        first = str(messages[1]["content"])
        last = str(messages[-1]["content"])
        if self.garbage or step in self.broken:
            self._remember(GARBAGE, step, None)
            return 200, GARBAGE
        key = first + step
        if step == "state":
            clients = [c.strip() for c in re.search(r"For each client \(([^)]*)\)", last).group(1).split(",")]
            patterns = [x.strip().rstrip(".") for x in re.search(r"one of: (.*)$", last, re.MULTILINE).group(1).split(",")]
            pattern = patterns[h(first, "pattern") % len(patterns)]
            emotions = {c: {"emotion": "uneasy and guarded", "intensity": h(first + c, "int") % 11} for c in clients}
            meaning = {"emotions": emotions, "stances": {}, "pattern": pattern}
            said = {"emotions": [{"client": c, **e} for c, e in emotions.items()], "stances": [], "pattern": pattern}
            return 200, self._remember(self._say(said, key), step, meaning)
        if step == "when":
            meaning = "yes" if h(first, "when") % 3 else "no"
            return 200, self._remember(self._say({"answer": meaning}, key), step, meaning)
        if step == "whom_how":
            targets, strategies = options(last, "Targets: "), options(last, "Strategies: ")
            meaning = {"whom": targets[h(first, "whom") % len(targets)], "how": strategies[h(first, "how") % len(strategies)]}
            return 200, self._remember(self._say({"target": meaning["whom"], "strategy": meaning["how"]}, key), step, meaning)
        if step == "turn":
            meaning = f"I hear how hard this is ({h(first, 'turn') % 100})."
            return 200, self._remember(self._say({"turn": meaning}, key), step, meaning)
        strategies = options(last, "Strategies: ")
        meaning = strategies[h(last + first, "how_gold") % len(strategies)]
        return 200, self._remember(self._say({"strategy": meaning}, key), step, meaning)

    def _judge(self, messages: list[dict[str, Any]]) -> str:
        first = str(messages[1].get("content", ""))
        reask = len(messages) > 2
        with self.lock:
            self.judge_first[first] += 0 if reask else 1
        if not reask and h(first, "judgebad") % 4 == 0:
            return "Score: quite good"  # invalid; the engine must ask once more
        score = 1 + h(first, "judge") % 5
        self._remember("judge:" + first, "judge", score)
        return json.dumps({"score": score})

    def _remember(self, content: str, step: str, meaning: Any) -> str:
        with self.lock:
            self.intent.setdefault(step, {})[content] = meaning
        return content
