"""A model for the loopback server that answers every step of the support agent's chain validly.

It reads only what the agent is sent: the step from the first line of the last user message
(:data:`rescue_bench.agent.prompts.STEP_TITLES`), the clients, pairs, patterns, targets and
strategies from the question's own lines. Task prompts (the single-task ablation) and judge requests
are answered by :class:`rescue_bench.testing.ValidAnswers`. Used by the agent tests and by the
call-cost measurement ``bench/agent_calls.py``.
"""

from __future__ import annotations

import hashlib
import json
import re

from rescue_bench.agent.prompts import STEP_TITLES
from rescue_bench.testing.answers import ValidAnswers, is_judge, listed
from rescue_bench.testing.server import RequestMessage

_CLIENTS = re.compile(r"For each client \(([^)]*)\)")
_PAIRS = re.compile(r"For each ordered pair of clients \(([^)]*)\)")
_PATTERNS = re.compile(r"relation pattern active right now, one of: (.*)\.$", re.MULTILINE)


def step_of(messages: list[RequestMessage]) -> str | None:
    """The chain step a request asks for (``None`` for anything else)."""
    if not messages or is_judge(messages):
        return None
    last = str(messages[-1].get("content", ""))
    for step, title in STEP_TITLES.items():
        if title in last:
            return step
    return None


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


class AgentAnswers:
    """A responder for :class:`~rescue_bench.testing.FakeOpenAI`: a valid answer to every chain step.

    ``when`` is ``"yes"``, ``"no"`` or ``"mixed"`` (yes or no by a hash of the transcript, stable).
    """

    def __init__(self, *, when: str = "mixed", intensity: int = 6, turn: str = "It sounds like this hurts; can you tell him?") -> None:
        self.when = when
        self.intensity = intensity
        self.turn = turn
        self.tasks = ValidAnswers()

    def __call__(self, messages: list[RequestMessage]) -> tuple[int, str]:
        step = step_of(messages)
        if step is None:
            return self.tasks(messages)
        first_user = str(messages[1].get("content", "")) if len(messages) > 1 else ""
        last = str(messages[-1].get("content", ""))
        if step == "state":
            clients = _split(m.group(1)) if (m := _CLIENTS.search(last)) else []
            pairs = [p.split("->", 1) for p in _split(m.group(1)) if "->" in p] if (m := _PAIRS.search(last)) else []
            patterns = _split(m.group(1)) if (m := _PATTERNS.search(last)) else []
            return 200, json.dumps(
                {
                    "emotions": [{"client": c, "emotion": "hurt and on guard", "intensity": self.intensity} for c in clients],
                    "stances": [{"source": a.strip(), "target": b.strip(), "viewpoint": "feels unheard by them"} for a, b in pairs],
                    "pattern": patterns[0] if patterns else "",
                }
            )
        if step == "when":
            if self.when == "mixed":
                digest = int(hashlib.sha256(first_user.encode()).hexdigest()[:8], 16)
                return 200, json.dumps({"answer": "yes" if digest % 2 else "no"})
            return 200, json.dumps({"answer": self.when})
        if step == "whom_how":
            return 200, json.dumps({"target": listed(last, "Targets: ")[0], "strategy": listed(last, "Strategies: ")[0]})
        if step == "turn":
            return 200, json.dumps({"turn": self.turn})
        return 200, json.dumps({"strategy": listed(last, "Strategies: ")[0]})
