"""A save and a logout of the same person, raced against a real server on SQLite and PostgreSQL: a
save that reaches the database after the logout has ended the session is refused (401), whatever
the timing. The order the database committed them in is read from the audit log (a save's entries
and the logout's are written in their own transactions), so "accepted" always means "before".

Two ways of racing them:

- the window held open: the test holds a lock (SQLite's writer lock, a PostgreSQL row lock) so that
  the save's session check passes, then the logout commits, then the save writes;
- twenty-five plain races, each with a random head start of a few milliseconds for one side.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from sqlalchemy import select

from rescue_bench.review.db import Database
from rescue_bench.review.models import AuditEntry, User
from tests.review.helpers import COUPLE, Client, Deployment

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

ROW = 9


def _order(deployment: Deployment, user: str, text: str) -> tuple[int | None, int]:
    """The audit ids of the save that wrote ``text`` (None: not written) and of the user's last logout."""
    db = Database(deployment.db_url)
    try:
        with db.read() as session:
            uid = session.scalars(select(User.id).where(User.username == user)).one()
            saved = session.scalars(select(AuditEntry.id).where(AuditEntry.new_json == f'"{text}"')).first()
            logout = session.scalars(select(AuditEntry.id).where(AuditEntry.user_id == uid, AuditEntry.action == "logout").order_by(AuditEntry.id.desc())).first()
            assert logout is not None
            return saved, logout
    finally:
        db.dispose()


def _pair(deployment: Deployment, user: str) -> tuple[Client, Client]:
    """Two browsers of ``user`` in one session (one login): the one that saves and the one that logs out."""
    saver = deployment.client(user)
    leaver = Client(deployment.server.base_url)
    leaver.http.cookies = saver.http.cookies
    leaver.csrf = saver.csrf
    return saver, leaver


def _save(client: Client, key: str, text: str) -> int:
    version = client.get(f"/api/segments/{key}/rows/{ROW}").json()["version"]
    return client.put(f"/api/segments/{key}/rows/{ROW}", {"version": version, "fields": {"tone_of_voice": text}}).status_code


def _check(deployment: Deployment, user: str, text: str, saved: int, logged_out: int) -> None:
    assert logged_out == 204
    assert saved in (200, 401), saved
    written, logout = _order(deployment, user, text)
    assert (saved == 200) == (written is not None), (saved, written)
    if saved == 200:
        assert written is not None and written < logout, f"the save ({written}) was accepted after the logout ({logout}) ended its session"


@contextmanager
def _window(deployment: Deployment, key: str) -> Iterator[None]:
    """Hold the database so that the request sent first waits where the race is decided."""
    if deployment.backend == "sqlite":
        # the writer lock: the logout (sent first) waits for it after its session check, the save
        # passes its own check meanwhile (readers never wait in WAL mode) and queues behind
        conn = sqlite3.connect(deployment.db_url.removeprefix("sqlite:///"), isolation_level=None, timeout=30)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    # PostgreSQL: the row the save writes, locked: the save (sent first) passes its session check and
    # waits at its UPDATE, the logout meanwhile
    import psycopg
    from sqlalchemy.engine import make_url

    conninfo = make_url(deployment.db_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as conn:
        conn.execute(
            "SELECT v.id FROM row_values v JOIN segment_rows r ON r.id = v.row_id JOIN segments s ON s.id = r.segment_id "
            "WHERE s.sample_id = %s AND r.position = %s FOR UPDATE OF v",
            (COUPLE[0], ROW),
        ).fetchall()
        yield
        conn.rollback()


def test_a_save_whose_session_check_passed_before_a_logout_committed_is_refused(deployment: Deployment):
    key = deployment.segment_key(COUPLE[0])
    saver, leaver = _pair(deployment, "alice")
    text = f"held-window save on {deployment.backend}"
    with ThreadPoolExecutor(2) as pool:
        with _window(deployment, key):
            if deployment.backend == "sqlite":
                logout = pool.submit(lambda: leaver.post("/api/logout").status_code)
                time.sleep(1.0)  # the logout has passed its check and waits for the writer lock
                save = pool.submit(_save, saver, key, text)
            else:
                save = pool.submit(_save, saver, key, text)
                time.sleep(1.0)  # the save has passed its check and waits for the row
                logout = pool.submit(lambda: leaver.post("/api/logout").status_code)
            time.sleep(1.0)
        saved, logged_out = save.result(timeout=60), logout.result(timeout=60)
    _check(deployment, "alice", text, saved, logged_out)
    if deployment.backend == "sqlite":
        assert saved == 401  # the logout committed first: the save came after it


def _race(saver: Client, leaver: Client, key: str, text: str, head_start: float) -> tuple[int, int]:
    """A save and a logout sent together, one ``head_start`` seconds before the other: their statuses."""
    version = saver.get(f"/api/segments/{key}/rows/{ROW}").json()["version"]
    barrier = threading.Barrier(2)

    def save() -> int:
        barrier.wait()
        time.sleep(max(0.0, -head_start))
        return saver.put(f"/api/segments/{key}/rows/{ROW}", {"version": version, "fields": {"tone_of_voice": text}}).status_code

    def logout() -> int:
        barrier.wait()
        time.sleep(max(0.0, head_start))
        return leaver.post("/api/logout").status_code

    with ThreadPoolExecutor(2) as pool:
        saved, logged_out = pool.submit(save), pool.submit(logout)
        return saved.result(timeout=60), logged_out.result(timeout=60)


def test_twenty_five_raced_saves_and_logouts_never_accept_a_save_after_the_logout(deployment: Deployment):
    key = deployment.segment_key(COUPLE[0])
    rng = random.Random(38)
    outcomes: dict[int, int] = {}
    for round_ in range(25):
        saver, leaver = _pair(deployment, "bob")
        text = f"raced save {round_} on {deployment.backend}"
        head_start = rng.uniform(-0.02, 0.02)  # seconds the save is sent before (+) or after (-) the logout
        result = _race(saver, leaver, key, text, head_start)
        _check(deployment, "bob", text, *result)
        outcomes[result[0]] = outcomes.get(result[0], 0) + 1
        for c in (saver, leaver):
            c.close()
    assert set(outcomes) <= {200, 401}, outcomes
    print(f"{deployment.backend}: {outcomes}")  # both outcomes happen: the race is a race
