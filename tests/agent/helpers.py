"""Small helpers for the agent tests: hand-made clips (all text invented) and a chain driver."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rescue_bench.agent import Chain, DecisionPoint
from rescue_bench.data.models import Clip

T = "Therapist"


def row(speaker: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"primary_speaker": speaker, "dialogue_cleaned": text, **fields}


def emo(person: str, description: str, intensity: Any) -> dict[str, Any]:
    return {"person": person, "emotion_description": description, "intensity": intensity}


def view(source: str, target: str, viewpoint: str) -> dict[str, Any]:
    return {"source": source, "target": target, "viewpoint": viewpoint, "attitude": "x"}


def strat(kind: str, target: list[str]) -> dict[str, Any]:
    return {"provider": T, "target": target, "strategy_type": kind, "strategy_content": "x"}


def raw_clip(rows: list[dict[str, Any]], sample_id: str = "hand/a", scenario: str = "couple", participants: list[str] | None = None) -> dict[str, Any]:
    rows = [dict(r, row_index=i) for i, r in enumerate(rows, 1)]
    return {"sample_id": sample_id, "scenario": scenario, "participants": participants or ["Ann", "Bob"], "source_file": "x.mp4", "rows": rows}


def clip(rows: list[dict[str, Any]], **kwargs: Any) -> Clip:
    return Clip.model_validate(raw_clip(rows, **kwargs))


def write_jsonl(path: Path, clips: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in clips), encoding="utf-8")
    return path


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
                viewpoints_attitudes=[view("Ann", "Bob", "he ignores me")]),
            row("Bob", "i do listen but you shout", target=["Ann"], internal_emotion=[emo("Bob", "defensive", 4)],
                viewpoints_attitudes=[view("Bob", "Ann", "she attacks me")]),
            row(T, "Ann, what is under the anger?", target=["Ann"], support_strategy=[strat("evoke", ["Ann"])],
                relation_cycle_state="attack_attack"),
            row("Ann", "i feel alone in this", target=[T], internal_emotion=[emo("Ann", "lonely", 9)]),
            row("Bob", "you are not alone", target=["Ann"], internal_emotion=[emo("Bob", "sad", 5)]),
            row("Ann", "then show me", target=["Bob"], internal_emotion=[emo("Ann", "hopeful", 6)],
                viewpoints_attitudes=[view("Ann", "Bob", "he might try")]),
            row(T, "Notice what just happened between you.", target=["Couple"], support_strategy=[strat("track", ["Couple"])],
                relation_cycle_state="repair_softening"),
            row("Bob", "ok", target=[T]),
        ]
    )
