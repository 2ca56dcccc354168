"""Shared parts of the practice page's tests: a catalogue with planted markers, imported directly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def open_debriefs(client: Any, leave: int | None = None) -> None:
    """Finish every start of the catalogue once, listening throughout (``client``: a logged-in
    :class:`tests.review.helpers.Client`): scores and debriefs are open to this person from then on;
    ``leave``: a start left unplayed, whose first finished episode then opens them."""
    catalogue = client.get("/api/practice").json()
    finished = {e["start"] for e in catalogue["episodes"] if e["finished"]}
    for start in catalogue["starts"]:
        if start["id"] in finished or start["id"] == leave:
            continue
        view = client.post("/api/practice/episodes", {"start": start["id"]}).json()
        for step in range(1, start["horizon"] + 1):
            resp = client.post(f"/api/practice/episodes/{view['id']}/steps", {"step": step, "speak": False})
            assert resp.status_code == 200, resp.text
    done = [e for e in client.get("/api/practice").json()["episodes"] if e["finished"]]
    assert done and all((e["J"] is not None) == (leave is None) for e in done)
