"""Helpers of the agent tests: a chain driver and the clip of the hand-checked metrics (all text
invented; rows and clips come from :mod:`tests.factories`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rescue_bench.agent import Chain, DecisionPoint
from rescue_bench.data.models import Clip
from tests.factories import T, clip, emo, row, strat, view


def drive(point: DecisionPoint, answer: Callable[[str, tuple], str | None] | dict[str, str], state: str = "explicit") -> tuple[Chain, list[Any]]:
    """Run the chain of ``point`` with scripted answers (a dict step -> raw, or a function of step and
    messages); returns the chain and every request it made."""
    chain = Chain(point, state)
    requests = []
    while (request := chain.next_request()) is not None:
        requests.append(request)
        raw = answer.get(request.step) if isinstance(answer, dict) else answer(request.step, request.messages)
        chain.answer(raw)
    return chain, requests


def hand_clip() -> Clip:
    """The clip of the hand-checked metrics test (see test_agent_metrics_hand.py)."""
    return clip(
        [
            row("Ann", "you never listen to me at all", target=["Bob"], internal_emotion=[emo("Ann", "angry", 8)],
                viewpoints_attitudes=[view("Ann", "Bob", "he ignores me", "x")]),
            row("Bob", "i do listen but you shout", target=["Ann"], internal_emotion=[emo("Bob", "defensive", 4)],
                viewpoints_attitudes=[view("Bob", "Ann", "she attacks me", "x")]),
            row(T, "Ann, what is under the anger?", target=["Ann"], support_strategy=[strat("evoke", ["Ann"], strategy_content="x")],
                relation_cycle_state="attack_attack"),
            row("Ann", "i feel alone in this", target=[T], internal_emotion=[emo("Ann", "lonely", 9)]),
            row("Bob", "you are not alone", target=["Ann"], internal_emotion=[emo("Bob", "sad", 5)]),
            row("Ann", "then show me", target=["Bob"], internal_emotion=[emo("Ann", "hopeful", 6)],
                viewpoints_attitudes=[view("Ann", "Bob", "he might try", "x")]),
            row(T, "Notice what just happened between you.", target=["Couple"], support_strategy=[strat("track", ["Couple"], strategy_content="x")],
                relation_cycle_state="repair_softening"),
            row("Bob", "ok", target=[T]),
        ],
        sample_id="hand/a",
        source_file="x.mp4",
    )
