"""A model for the loopback server that gives a valid answer to every RESCUE-Bench prompt.

It reads only what a model sees (the system and user text ``rescue eval`` sends) and answers in
each task's contract: the task from the system message's ``Task: ...`` line, the options from the
user message's ``Labels:`` / ``Candidates:`` / ``Strategies:`` line (the first three, as a
ranking), the other participants from ``Other participants:``. Judge requests get a fixed score.
The benchmarks and the engine tests use it to drive full runs without any thinking involved.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TASK = re.compile(r"Task: ([a-z ]+)\.")
_OPTION_LINES = ("Labels: ", "Candidates: ", "Strategies: ")
JUDGE_MARKER = "careful rater"
"""Words of the judge's system message (``rescue_bench.prompts.render.JUDGE_SYSTEM``)."""


def listed(user: str, prefix: str) -> list[str]:
    """The comma-separated items of the first line of ``user`` that starts with ``prefix``."""
    for line in user.splitlines():
        if line.startswith(prefix):
            return [x.strip() for x in line[len(prefix):].split(",") if x.strip()]
    return []


def is_judge(messages: list[dict[str, Any]]) -> bool:
    """Whether ``messages`` are a judge request (not a task prompt)."""
    return bool(messages) and JUDGE_MARKER in str(messages[0].get("content", ""))


class ValidAnswers:
    """A responder for :class:`~rescue_bench.testing.FakeOpenAI`: a valid answer to every prompt.

    The fixed parts (judge score, ITP answer, emotion, intensity, viewpoint) are parameters, so two
    users can tell their answers apart.
    """

    def __init__(
        self,
        *,
        judge_score: int = 4,
        itp: str = "yes",
        emotion: str = "hurt and unheard",
        intensity: int = 6,
        viewpoint: str = "feels let down",
    ) -> None:
        self.judge_score = judge_score
        self.itp = itp
        self.emotion = emotion
        self.intensity = intensity
        self.viewpoint = viewpoint

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        if not messages:
            return 400, "no messages"
        if is_judge(messages):
            return 200, json.dumps({"score": self.judge_score})
        system = str(messages[0].get("content", ""))
        user = str(messages[-1].get("content", ""))
        match = _TASK.search(system)
        name = match.group(1) if match else ""
        if name.startswith("intervention"):
            return 200, json.dumps({"answer": self.itp})
        for prefix in _OPTION_LINES:
            options = listed(user, prefix)
            if options:
                return 200, json.dumps({"ranking": options[:3]})
        if name.startswith("emotion"):
            return 200, json.dumps({"emotion": self.emotion, "intensity": self.intensity})
        if name.startswith("viewpoint"):
            others = [o for o in listed(user, "Other participants: ") if o != "Therapist"] or ["Therapist"]
            return 200, json.dumps({"viewpoints": [{"target": o, "viewpoint": self.viewpoint} for o in others]})
        return 200, "unrecognised prompt"
