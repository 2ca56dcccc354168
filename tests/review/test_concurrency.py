"""50 simultaneous saves against a real server, on SQLite and on PostgreSQL: every accepted save is in
the audit log, every refused one is a 409, and nothing is lost."""

from __future__ import annotations

import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from rescue_bench.review.access import get_row
from rescue_bench.review.db import Database
from rescue_bench.review.edits import audit_entries
from rescue_bench.review.models import Segment
from tests.review.helpers import COUPLE, Client, Deployment

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]
N = 50


def _clients(deployment: Deployment, n: int, users: tuple[str, ...] = ("admin", "alice", "bob")) -> list[Client]:
    """``n`` clients over a few real sessions (by default admin and the two annotators of COUPLE[0])."""
    sessions = [deployment.client(name) for name in users]
    out = []
    for i in range(n):
        source = sessions[i % len(sessions)]
        c = Client(deployment.server.base_url)
        c.http.cookies = source.http.cookies
        c.csrf = source.csrf
        out.append(c)
    return out


def _row_audit(deployment: Deployment, sample_id: str, position: int) -> list[dict[str, Any]]:
    db = Database(deployment.db_url)
    try:
        with db.read() as session:
            from sqlalchemy import select

            seg = session.scalars(select(Segment).where(Segment.sample_id == sample_id)).one()
            return [e.model_dump() for e in reversed(audit_entries(session, segment=seg, row=get_row(session, seg, position), limit=100_000))]
    finally:
        db.dispose()


def test_50_simultaneous_saves_of_one_row_one_wins_the_rest_are_409(deployment: Deployment):
    clients = _clients(deployment, N)
    seg = clients[0].segments()[COUPLE[0]]
    url = f"/api/segments/{seg['id']}/rows/7"
    start = clients[0].get(url).json()
    barrier = threading.Barrier(N)

    def save(i: int) -> tuple[int, int, dict]:
        barrier.wait()
        resp = clients[i].put(url, {"version": start["version"], "fields": {"tone_of_voice": f"same-row save {i}"}})
        return i, resp.status_code, resp.json()

    with ThreadPoolExecutor(N) as pool:
        results = list(pool.map(save, range(N)))
    codes = sorted(code for _, code, _ in results)
    assert codes == [200] + [409] * (N - 1), codes
    winner = next(i for i, code, _ in results if code == 200)
    for _, code, body in results:
        if code == 409:  # the refusal names the current row: the winner's value
            assert body["row"]["tone_of_voice"] == f"same-row save {winner}" and body["version"] == start["version"] + 1
    final = clients[0].get(url).json()
    assert final["version"] == start["version"] + 1 and final["row"]["tone_of_voice"] == f"same-row save {winner}"
    edits = [e for e in _row_audit(deployment, COUPLE[0], 7) if e["action"] == "edit" and e["version"] == final["version"]]
    assert [e["new"] for e in edits] == [f"same-row save {winner}"]


def test_50_simultaneous_saves_of_different_rows_are_all_applied_and_audited(deployment: Deployment):
    clients = _clients(deployment, N)
    segs = clients[0].segments()
    # 50 distinct rows over the segments alice and bob share or admin reaches
    targets = []
    for sample_id in [COUPLE[0]] + [s for s in segs if s != COUPLE[0]]:
        for n in range(1, segs[sample_id]["rows"] + 1):
            targets.append((sample_id, n))
    targets = targets[:N]
    starts = {t: clients[0].get(f"/api/segments/{segs[t[0]]['id']}/rows/{t[1]}").json()["version"] for t in targets}
    admins = _clients(deployment, N, ("admin",))
    barrier = threading.Barrier(N)

    def save(i: int) -> int:
        sample_id, n = targets[i]
        client = clients[i] if sample_id == COUPLE[0] else admins[i]  # alice and bob share COUPLE[0] only
        barrier.wait()
        resp = client.put(
            f"/api/segments/{segs[sample_id]['id']}/rows/{n}",
            {"version": starts[targets[i]], "fields": {"relation_pattern_reason": f"different-row save {i}"}},
        )
        return resp.status_code

    with ThreadPoolExecutor(N) as pool:
        codes = list(pool.map(save, range(N)))
    assert codes == [200] * N, codes
    for i, (sample_id, n) in enumerate(targets):
        got = clients[0].get(f"/api/segments/{segs[sample_id]['id']}/rows/{n}").json()
        assert got["row"]["relation_pattern_reason"] == f"different-row save {i}" and got["version"] == starts[(sample_id, n)] + 1
        audit = [e for e in _row_audit(deployment, sample_id, n) if e["action"] == "edit" and e["field"] == "relation_pattern_reason"]
        assert audit[-1]["new"] == f"different-row save {i}" and audit[-1]["version"] == got["version"]


def test_50_annotators_hammering_a_few_rows_lose_nothing(deployment: Deployment):
    """Each client saves, on a 409 re-reads and retries, many times over 4 shared rows. Afterwards the
    audit log of each row is one unbroken chain (each save's old value is the previous save's new
    value, versions consecutive), it holds exactly the accepted saves, and the row holds the last."""
    clients = _clients(deployment, N)
    seg = clients[0].segments()[COUPLE[0]]
    rows = [10, 11, 12, 13]
    rounds = 4
    accepted: dict[int, list[tuple[int, str]]] = defaultdict(list)
    refused = defaultdict(int)
    lock = threading.Lock()
    barrier = threading.Barrier(N)

    def work(i: int) -> None:
        barrier.wait()
        for r in range(rounds):
            n = rows[(i + r) % len(rows)]
            url = f"/api/segments/{seg['id']}/rows/{n}"
            value = f"client {i} round {r}"
            version = clients[i].get(url).json()["version"]
            while True:
                resp = clients[i].put(url, {"version": version, "fields": {"tone_of_voice": value}})
                if resp.status_code == 200:
                    with lock:
                        accepted[n].append((resp.json()["version"], value))
                    break
                assert resp.status_code == 409, resp.text
                with lock:
                    refused[n] += 1
                version = resp.json()["version"]  # merge: take the current version and resend mine

    with ThreadPoolExecutor(N) as pool:
        list(pool.map(work, range(N)))
    assert sum(len(v) for v in accepted.values()) == N * rounds
    assert sum(refused.values()) > 0  # the rows really were contended
    for n in rows:
        saves = sorted(accepted[n])
        chain = [e for e in _row_audit(deployment, COUPLE[0], n) if e["action"] == "edit" and e["field"] == "tone_of_voice"]
        chain = [e for e in chain if e["version"] >= saves[0][0]]
        assert [(e["version"], e["new"]) for e in chain] == saves  # every accepted save, in order, once
        versions = [v for v, _ in saves]
        assert versions == list(range(versions[0], versions[0] + len(versions)))
        for prev, cur in zip(chain, chain[1:]):
            assert cur["old"] == prev["new"]  # nobody overwrote a value they had not seen
        final = clients[0].get(f"/api/segments/{seg['id']}/rows/{n}").json()
        assert final["version"] == versions[-1] and final["row"]["tone_of_voice"] == saves[-1][1]


def test_50_simultaneous_comments_are_all_answered_and_stored(deployment: Deployment):
    """A write handler's transaction (on SQLite, this process's writer lock) stays open until its answer
    is built. When the answer was built in another pool thread, every pool thread ran a handler that
    waited for the lock while the lock's holder waited for a thread: the server stopped answering for
    good (measured: 1 of 50 comments answered, 49 timed out). Last in this module: on that bug the
    server it shares with the tests above never answers again."""
    clients = _clients(deployment, N)
    seg = clients[0].segments()[COUPLE[0]]
    barrier = threading.Barrier(N)

    def comment(i: int) -> int | str:
        barrier.wait()
        try:
            return clients[i].post(f"/api/segments/{seg['id']}/comments", {"text": f"simultaneous comment {i}"}, timeout=30).status_code
        except httpx.TimeoutException:
            return "timed out"

    with ThreadPoolExecutor(N) as pool:
        codes = list(pool.map(comment, range(N)))
    assert codes == [201] * N, sorted(map(str, codes))
    texts = {c["text"] for c in clients[0].get(f"/api/segments/{seg['id']}").json()["comments"]}
    assert {f"simultaneous comment {i}" for i in range(N)} <= texts
