"""A model for the loopback server that gives a valid answer to every RESCUE-Bench prompt.

It reads only what a model sees (the system and user text ``rescue eval`` sends) and answers in
each task's contract: the task from the system message's ``Task: ...`` line, the options from the
user message's ``Labels:`` / ``Candidates:`` / ``Strategies:`` line (the first three, as a
ranking), the other participants from ``Other participants:``. Judge requests get a fixed score, in
the format the request shows (the 1-5 score, or the authors' VP rubric). Every answer is built with
:func:`rescue_bench.contract.answer_object`.
The benchmarks and the engine tests use it to drive full runs without any thinking involved.
"""

from __future__ import annotations

import json
import re

from rescue_bench.contract import RANK_SIZE, answer_object, judge_format
from rescue_bench.testing.server import RequestMessage

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


def is_judge(messages: list[RequestMessage]) -> bool:
    """Whether ``messages`` are a judge request (not a task prompt)."""
    return bool(messages) and JUDGE_MARKER in str(messages[0].get("content", ""))


def judge_rubric(messages: list[RequestMessage]) -> str:
    """The rubric a judge request asks for: ``"authors"`` when it shows that rubric's format."""
    authors = judge_format("authors").example
    return "authors" if any(authors in str(m.get("content", "")) for m in messages) else "default"


class ValidAnswers:
    """A responder for :class:`~rescue_bench.testing.FakeOpenAI`: a valid answer to every prompt.

    The fixed parts (judge score, authors' rubric scores, ITP answer, emotion, intensity, viewpoint)
    are parameters, so two users can tell their answers apart.
    """

    def __init__(
        self,
        *,
        judge_score: int = 4,
        itp: str = "yes",
        emotion: str = "hurt and unheard",
        intensity: int = 6,
        viewpoint: str = "feels let down",
        judge_authors: tuple[int, int] = (2, 3),
    ) -> None:
        self.judge_score = judge_score
        self.judge_authors = judge_authors  # the authors' VP rubric: (target 0-2, viewpoint 0-4)
        self.itp = itp
        self.emotion = emotion
        self.intensity = intensity
        self.viewpoint = viewpoint

    def __call__(self, messages: list[RequestMessage]) -> tuple[int, str]:
        if not messages:
            return 400, "no messages"
        if is_judge(messages):
            if judge_rubric(messages) == "authors":
                target, viewpoint = self.judge_authors
                return 200, json.dumps(answer_object("judge_authors", {"target_score": target, "viewpoint_score": viewpoint}))
            return 200, json.dumps(answer_object("judge", self.judge_score))
        system = str(messages[0].get("content", ""))
        user = str(messages[-1].get("content", ""))
        match = _TASK.search(system)
        name = match.group(1) if match else ""
        if name.startswith("intervention"):
            return 200, json.dumps(answer_object("itp", self.itp))
        for prefix in _OPTION_LINES:
            options = listed(user, prefix)
            if options:
                return 200, json.dumps(answer_object("rpp", options[:RANK_SIZE]))  # RPP, STP and SSP share one format
        if name.startswith("emotion"):
            return 200, json.dumps(answer_object("er", {"emotion": self.emotion, "intensity": self.intensity}))
        if name.startswith("viewpoint"):
            others = [o for o in listed(user, "Other participants: ") if o != "Therapist"] or ["Therapist"]
            return 200, json.dumps(answer_object("vp", [{"target": o, "viewpoint": self.viewpoint} for o in others]))
        return 200, "unrecognised prompt"
