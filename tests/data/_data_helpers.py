"""Helpers of the data-layer tests (a uniquely named module, so ``import`` never picks another conftest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


REAL_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "rescue_real"
"""Real lines of the release, kept beside the repository (never copied into it)."""


def base_row(**overrides: Any) -> dict[str, Any]:
    """A complete, valid client row in the release format."""
    row: dict[str, Any] = {
        "start_time": 0.0,
        "end_time": 2.5,
        "primary_speaker": "Ana",
        "target": ["Therapist"],
        "dialogue_cleaned": "I keep waiting for him to notice me.",
        "utterance_type": "disclosure",
        "background_dialogue": [],
        "tone_of_voice": "quiet",
        "body_posture": [],
        "facial_expressions": [],
        "self_directed_behavior": [],
        "interaction_behavior": [],
        "internal_emotion": [{"person": "Ana", "emotion_description": "lonely", "intensity": 6}],
        "viewpoints_attitudes": [],
        "support_strategy": [],
        "row_index": 1,
        "relation_pattern": "pursue_withdraw",
        "relation_pattern_reason": "Ana reaches, Bo retreats.",
        "relation_pattern_evidence_rows": [1],
    }
    row.update(overrides)
    return row


def base_clip(sample_id: str = "tiny/c1", scenario: str = "couple", n_rows: int = 2) -> dict[str, Any]:
    """A small valid clip: alternating client and therapist rows."""
    rows = []
    for i in range(n_rows):
        if i % 2:
            row = base_row(
                primary_speaker="Therapist", target=["Ana"], utterance_type="", internal_emotion=[],
                relation_cycle_state="pursue_withdraw" if scenario == "couple" else "escalation_conflict",
                relation_pattern=None, relation_pattern_reason=None, relation_pattern_evidence_rows=[],
                support_strategy=[{"provider": "Therapist", "target": ["Ana"], "strategy_type": "track",
                                   "strategy_content": "names the loop"}],
            )
        else:
            row = base_row()
        row["row_index"] = i + 1
        row["start_time"] = float(3 * i)
        row["end_time"] = float(3 * i + 2)
        rows.append(row)
    return {"sample_id": sample_id, "scenario": scenario, "participants": ["Ana", "Bo"],
            "source_file": "x.json", "rows": rows}


def write_lines(path: Path, items: list[Any]) -> Path:
    """Write JSON Lines: dicts are serialised, strings written as they are (for broken lines)."""
    text = "".join((json.dumps(i, ensure_ascii=False) if not isinstance(i, str) else i) + "\n" for i in items)
    path.write_text(text, encoding="utf-8")
    return path
