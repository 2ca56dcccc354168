"""Shared parts of the practice page's tests: a catalogue with planted markers, imported directly."""

from __future__ import annotations

import json
from pathlib import Path

from tests.review.helpers import DEMO

MARK = "ZQXHIDDEN"
HORIZON = 3


def marked_demo(path: Path) -> Path:
    """The demo with a marker in every annotation field the cards and the initial state read."""
    lines = []
    for line in DEMO.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        clip = json.loads(line)
        for i, row in enumerate(clip["rows"]):
            for item in row.get("internal_emotion") or []:
                item["emotion_description"] = f"{MARK}emotion{i} angry hurt"
            for item in row.get("viewpoints_attitudes") or []:
                item["viewpoint"] = f"{MARK}view{i}"
                item["attitude"] = f"{MARK}attitude{i} hostile"
            if row.get("tone_of_voice"):
                row["tone_of_voice"] = f"{MARK}tone{i}"
            if row.get("relation_pattern_reason"):
                row["relation_pattern_reason"] = f"{MARK}reason{i}"
            for key in ("body_posture", "facial_expressions"):
                for item in row.get(key) or []:
                    item["description"] = f"{MARK}{key}{i}"
        lines.append(json.dumps(clip, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def import_catalogue(url: str, data: Path, horizon: int = HORIZON) -> None:
    from rescue_bench.data import load_clips
    from rescue_bench.review import practice
    from rescue_bench.review.db import Database

    db = Database(url)
    with db.write() as session:
        practice.import_starts(session, load_clips([data]), practice.practice_options(horizon=horizon))
    db.dispose()
