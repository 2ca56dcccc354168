"""Helpers of the closed-loop tests: the hand clip, and loopback responders for a model agent and a
model simulator (all text invented)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any

from rescue_bench.data.models import Clip
from rescue_bench.sim import SIMULATOR_TITLE
from rescue_bench.testing.agent import AgentAnswers
from tests.factories import T, clip, emo, row, strat, view

MARK = "zqxmark"
"""A string planted in every annotation of the leak clip: it must never reach the agent."""


def hand_clip() -> Clip:
    """Six rows; the one episode start (per clip 1) is after row 4 (see test_sim_objective)."""
    return clip(
        [
            row("Ann", "I am so angry and hurt that you never listen", target=["Bob"], internal_emotion=[emo("Ann", "angry and hurt", 8)],
                viewpoints_attitudes=[view("Ann", "Bob", "he ignores me", "resentful")]),
            row("Bob", "That is fine, whatever", target=["Ann"], internal_emotion=[emo("Bob", "defensive", 4)],
                viewpoints_attitudes=[view("Bob", "Ann", "she attacks me", "guarded")]),
            row(T, "What happens between you two?", target=["Couple"], support_strategy=[strat("track", ["Couple"], strategy_content="x")],
                relation_cycle_state="attack_attack"),
            row("Ann", "I feel so alone and hurt", target=["Bob"]),
            row("Bob", "I do not think so", target=["Ann"]),
            row(T, "Let us pause.", target=["Couple"]),
        ],
        sample_id="hand/sim",
        source_file="x.mp4",
    )


def leak_clip() -> Clip:
    """A couple clip whose every annotation carries :data:`MARK` (dialogue text does not)."""
    rows = []
    for i in range(4):
        rows.append(row("Ann", f"we talked about the trip {i}", target=["Bob"], internal_emotion=[emo("Ann", f"{MARK} hurt {i}", 7)],
                        viewpoints_attitudes=[view("Ann", "Bob", f"{MARK} view {i}", f"{MARK} attitude")],
                        tone_of_voice=f"{MARK} tone", utterance_type="disclosure", relation_pattern="pursue_withdraw",
                        relation_pattern_reason=f"{MARK} reason"))
        rows.append(row("Bob", f"i was there for that one {i}", target=["Ann"], internal_emotion=[emo("Bob", f"{MARK} calm {i}", 3)],
                        viewpoints_attitudes=[view("Bob", "Ann", f"{MARK} sees her {i}", "cool")]))
        rows.append(row(T, f"say more about that {i}", target=["Couple"], support_strategy=[strat("track", ["Couple"], strategy_content=f"{MARK} content")],
                        relation_cycle_state="pursue_withdraw"))
    return clip(rows, sample_id="leak/one", source_file="x.mp4")


def _digest(text: str, salt: str) -> int:
    return int(hashlib.sha256(f"{salt}|{text}".encode()).hexdigest()[:8], 16)


class LoopAnswers:
    """Agent steps through :class:`AgentAnswers`; simulator requests with a valid next state (every
    intensity one lower, the first client speaks), the first reply to about half of them unusable
    so the episode must ask again. Keeps every request for the tests to read."""

    def __init__(self, when: str = "yes", broken_simulator: bool = False) -> None:
        self.agent = AgentAnswers(when=when)
        self.broken = broken_simulator
        self.requests: list[list[dict[str, Any]]] = []
        self.lock = threading.Lock()

    @staticmethod
    def is_simulator(messages: list[dict[str, Any]]) -> bool:
        return SIMULATOR_TITLE in str(messages[-1].get("content", ""))

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        with self.lock:
            self.requests.append(messages)
        if not self.is_simulator(messages):
            return self.agent(messages)
        if self.broken:
            return 200, "The clients look at each other."
        first = len(messages) == 2
        if first and _digest(str(messages[1]["content"]), "bad") % 2 == 0:
            return 200, "Ann sighs and says nothing."
        state = json.loads(re.search(r"Hidden state before this turn: (\{.*\})$", str(next(m["content"] for m in messages if m["role"] == "user")), re.MULTILINE).group(1))
        clients = list(state["emotions"])
        emotions = [
            {"client": c, "emotion": "settling", "valence": e["valence"], "intensity": max(0, e["intensity"] - 1)}
            for c, e in state["emotions"].items()
        ]
        stances = [{"source": k.split("->")[0], "target": k.split("->")[1], "stance": v} for k, v in state["stances"].items()]
        answer = {"speaker": clients[0], "turn": "I hear you, and I am still here.", "state": {"emotions": emotions, "stances": stances, "pattern": state["pattern"]}}
        return 200, "```json\n" + json.dumps(answer) + "\n```"
