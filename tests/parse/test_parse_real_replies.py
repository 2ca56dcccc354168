"""Real replies of a small model, each classed by its true cause.

``fixtures/smollm2.jsonl`` holds every distinct reply SmolLM2-135M-Instruct (llama-cpp-python's
server, temperature 0) gave to the bundled demo's prompts: the six tasks' first 16 instances, its
judge replies, and the agent's chain at the first 8 decision points (recorded by
``python -m tests.llm.record_replies``; nothing of the release's text). Each line's ``cause`` was
labelled by reading the reply: prose is no JSON; a reply that sends the answer template back, or
the question with it, is an echo; a reply that copies the transcript holds no JSON, its row numbers
(``[6]``) included; a JSON object cut off or without the contract's key is the key missing. The
agent's steps other than the timing one carry no cause, only whether the reply is usable.

Among them are the replies that misled the parsers: VP's template sent back was a valid answer,
STP's ``"<target>"`` was split at ``>``, an ER reply copying the transcript was the JSON ``[14]``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rescue_bench.agent import parse_step
from rescue_bench.parse import ParsedAnswer, parse_judge
from rescue_bench.records import InvalidCause
from rescue_bench.task_table import rule

FIXTURE = Path(__file__).parent / "fixtures" / "smollm2.jsonl"
LINES = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parse(line: dict[str, Any]) -> ParsedAnswer:
    task = line["task"]
    if task == "judge":
        return parse_judge(line["raw"])
    if task.startswith("agent:"):
        point = SimpleNamespace(**{k: line[k] for k in ("participants", "targets", "strategies", "patterns")})
        return parse_step(task.removeprefix("agent:"), line["raw"], point)
    return rule(task).parse(line["raw"], line["candidates"], line["participants"])


@pytest.mark.parametrize("line", LINES, ids=[f"{i}-{line['task']}" for i, line in enumerate(LINES)])
def test_a_real_reply_is_classed_by_its_true_cause(line: dict[str, Any]) -> None:
    parsed = _parse(line)
    if line["task"].startswith("agent:") and line["task"] != "agent:when":  # the chain's own parsers name no cause
        assert parsed.valid is line["valid"], (line["raw"], parsed)
        return
    assert parsed.cause == line["cause"], (line["raw"], parsed)
    assert parsed.valid is (line["cause"] is None)


def test_the_recorded_replies_hold_every_kind_that_misled_the_parsers() -> None:
    """The fixture is no easy set: it holds echoes of each template, transcript copies and valid answers."""
    causes = Counter((line["task"], line.get("cause")) for line in LINES)
    for task in ("stp", "ssp", "er", "vp"):
        assert causes[(task, InvalidCause.ECHO)] >= 1, task
    assert causes[("rpp", None)] >= 1 and causes[("er", None)] >= 1  # usable answers too
    copies = [line for line in LINES if line["task"] in ("er", "rpp", "ssp") and ("] CURRENT" in line["raw"] or "\n[1" in line["raw"])]
    assert copies and all(line["cause"] != InvalidCause.MISSING_KEY for line in copies)
