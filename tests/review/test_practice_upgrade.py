"""A practice database from before the catalogue named its simulator keeps working (SQLite and
PostgreSQL): its episodes were played against the scripted rules and replay exactly as they were
played; a new import switches the starts to the fitted model for new episodes only; an export never
mixes two simulators in one run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from rescue_bench.data import load_clips
from rescue_bench.review import practice
from rescue_bench.review.db import Database, _alembic_config, current_revision, head_revision, upgrade
from rescue_bench.review.errors import Invalid
from rescue_bench.review.models import User
from rescue_bench.review.users import get_user
from rescue_bench.sim import Episode, SimOptions, episode_starts
from tests.review.helpers import DEMO

OPTIONS = SimOptions(horizon=3, per_clip=1, state="none", mode="dialogue")
SPEAK = {"speak": True, "whom": None, "how": "track", "turn": "What happens between you when this starts?"}


def _scripted(start: Any, actions: list[dict[str, Any]]) -> Episode:
    """The episode as the page played it before: the scripted rules, straight through the sim core."""
    episode = Episode(start, agent="human/alice", simulator="scripted", options=OPTIONS, subgroups=True)
    for action in actions:
        n = len(episode.steps)
        while len(episode.steps) == n:
            request = episode.next_request()
            assert request is not None
            episode.answer(practice.chain_answers(practice.Choice(**action))[request.step])
    return episode


def test_an_old_practice_database_upgrades_and_replays_its_episodes_as_they_were_played(empty_db: str, tmp_path: Path) -> None:
    from alembic import command

    database = Database(empty_db)
    with database.engine.begin() as connection:
        command.upgrade(_alembic_config(connection), "0005")
    start = next(s for clip in load_clips([DEMO]) for s in episode_starts(clip, OPTIONS)[0] if s.scenario == "couple")
    speak = {**SPEAK, "whom": start.clients[0]}
    listen = {"speak": False, "whom": None, "how": None, "turn": None}
    finished = _scripted(start, [speak, listen, speak])
    with database.engine.begin() as connection:  # rows of revision 0005's schema, written with plain SQL
        def insert(sql: str, **values: Any) -> int:
            return int(connection.execute(text(sql + " RETURNING id"), {"now": "2026-12-01 10:00:00", **values}).scalar_one())

        user = insert("INSERT INTO users (username, password_hash, role, active, auth_epoch, created_at) VALUES ('alice', 'x', 'annotator', true, 0, :now)")
        start_id = insert("INSERT INTO practice_starts (key, sample_id, scenario, start, options, created_at) VALUES (:key, :sample, 'couple', :start, :options, :now)",
                          key=start.id, sample=start.sample_id, start=start.model_dump_json(), options=OPTIONS.model_dump_json())
        going_id, old_id = (
            insert("INSERT INTO practice_episodes (user_id, start_id, actions, steps, finished, record, created_at, updated_at) "
                   "VALUES (:user, :start, :actions, :steps, :finished, :record, :now, :now)",
                   user=user, start=start_id, actions=json.dumps(actions), steps=len(actions), finished=record is not None, record=record)
            for actions, record in [([speak], None), ([speak, listen, speak], json.dumps(finished.record()))]
        )
    assert upgrade(database) == ("0005", head_revision()) and current_revision(database) == head_revision()

    with database.write() as session:
        alice = get_user(session, "alice")
        assert isinstance(alice, User)
        # the episode in progress goes on against the rules it began with, and finishes like them
        going = practice.view(session, alice, going_id)
        assert going.simulator.name == "scripted" and going.simulator.smoke_test and going.simulator.reads_label
        assert [r.text for r in going.transcript] == [r.text for r in _scripted(start, [speak]).transcript]
        practice.act(session, alice, going_id, 2, speak=False)
        done = practice.act(session, alice, going_id, 3, speak=True, whom=start.clients[0], how="track", turn=SPEAK["turn"])
        assert done.done and done.score is not None and done.score.J == finished.record()["metrics"]["J"]
        # the finished one shows its stored record, debriefed
        old = practice.view(session, alice, old_id)
        assert old.score is not None and old.debrief is not None
        assert old.score.J == finished.record()["metrics"]["J"] and old.debrief.J == old.score.J
        assert [r.text for r in old.transcript] == [r.text for r in finished.transcript]
        assert practice.list_starts(session)[0].simulator.model_dump() == {"name": "scripted", "model": None, "sha256": None, "smoke_test": True}

        # importing again switches the start to the default (fitted) for new episodes only
        again = practice.import_starts(session, load_clips([DEMO]), practice.practice_options(horizon=3))
        assert again.switched == 1 and again.simulator == "fitted" and again.model_sha256
        fresh = practice.create(session, alice, start_id)
        assert practice.view(session, alice, fresh).simulator.name == "fitted"
        assert practice.view(session, alice, going_id).simulator.name == "scripted"
        for step in (1, 2, 3):
            practice.act(session, alice, fresh, step, speak=True, whom=start.clients[0], how="track", turn=SPEAK["turn"])

        # one run has one simulator: the first finished episode of the start is a scripted one
        mixed = practice.finished_records(session, "alice")["alice"]
        assert [r["simulator"] for r in mixed] == ["scripted"]
        fitted = practice.finished_records(session, "alice", "fitted")["alice"]
        assert [r["simulator"] for r in fitted] == ["fitted"] and fitted[0]["simulator_model"]["sha256"] == again.model_sha256
        with pytest.raises(Invalid, match="different simulators"):
            practice.practice_run("alice", [mixed[0], fitted[0]], tmp_path / "mixed")
        run = practice.practice_run("alice", fitted, tmp_path / "fitted")
        practice.write_results(run.folder, run)
        assert run.simulator == "fitted" and run.sim_model is None  # the bundled model, as `rescue sim eval` records it
        assert json.loads((tmp_path / "fitted" / "results" / "sim.jsonl").read_text())["simulator"] == "fitted"
    # and back: the columns go, every episode stays (no table copy that cascades)
    with database.engine.begin() as connection:
        command.downgrade(_alembic_config(connection), "0005")
        assert connection.execute(text("SELECT count(*) FROM practice_episodes")).scalar_one() == 3
    database.dispose()


def test_import_practice_repairs_every_refused_start_and_counts_what_it_repaired(empty_db: str) -> None:
    """A start stored with an option key this version does not know crashed the import ('SimOptions'
    object has no attribute ...) and so repaired none of the others; each is repaired now, the unknown
    key dropped, and the counts say how many starts and finished episodes."""
    from sqlalchemy import select

    from rescue_bench.review.models import PracticeStart
    from rescue_bench.review.users import add_user

    database = Database(empty_db)
    upgrade(database)
    with database.write() as session:
        add_user(session, "alice", "password-1", "annotator")
        practice.import_starts(session, load_clips([DEMO]), practice.practice_options(horizon=3))
        alice = get_user(session, "alice")
        first = session.scalars(select(PracticeStart).order_by(PracticeStart.id)).first()
        assert first is not None
        played = practice.create(session, alice, first.id)
        for step in (1, 2, 3):
            practice.act(session, alice, played, step, speak=False)
        rows = list(session.scalars(select(PracticeStart).order_by(PracticeStart.id)))[:3]
        for row, change in zip(rows, ({"bogus": 1}, {"lam": float("inf")}, {"horizon": 0, "future_knob": "x"})):
            row.options = json.dumps({**json.loads(row.options), **change})
    with database.write() as session:
        done = practice.import_starts(session, load_clips([DEMO]), practice.practice_options(horizon=3))
        assert (done.repaired, done.rescored) == (3, 1)
        assert done.repaired_fields == ("horizon", "lam") and done.dropped_keys == ("bogus", "future_knob")
        assert "repaired 3 start(s)" in done.repair_line() and "1 finished episode(s) rescored" in done.repair_line()
        assert all(practice._problem(r.options)[0] is not None for r in session.scalars(select(PracticeStart)))
        again = practice.import_starts(session, load_clips([DEMO]), practice.practice_options(horizon=3))
        assert again.repaired == 0 and again.repair_line() == ""
    database.dispose()
