"""How a request uses the worker threads, counted in process (``anyio.to_thread.run_sync`` is the one
door to them).

Two rules, both measured:

- nothing waits for a pool thread while a session holds a connection or SQLite's writer lock: the
  session, the user, the answer and the commit all happen in the handler's own thread (when the
  answer waited for a second pool thread, 50 simultaneous comments hung the server for good:
  ``test_concurrency.py``);
- a request takes one trip to the pool, its handler's: each trip cost 122 us of CPU on the 2-CPU
  benchmark machine, and moving the handlers onto dependencies had raised a row read from 1 trip
  to 5.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import anyio.to_thread
import httpx
import pytest
from fastapi import Response

from rescue_bench.review.deps import AdminReader, Writer, WriteSession
from tests.review.helpers import COUPLE, DEMO, PASSWORD, setup_database


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from rescue_bench.review.app import create_app
    from rescue_bench.review.config import ReviewConfig

    url = f"sqlite:///{tmp_path_factory.mktemp('threads') / 'review.db'}"
    setup_database(url, users={"alice": "annotator"}, clips_file=DEMO, assign={"alice": [COUPLE[0]]})
    return create_app(ReviewConfig(db_url=url))


def _trips(app: Any, monkeypatch: pytest.MonkeyPatch, method: str, path: str, **kw: Any) -> tuple[int, Counter[str]]:
    """Log in, then send one request and count its trips: ``pool`` (the shared thread limit that
    handlers and sync dependencies queue for) and ``outside`` (a limiter of its own)."""
    trips: Counter[str] = Counter()
    real = anyio.to_thread.run_sync

    async def counted(func: Any, *args: Any, limiter: Any = None, **kwargs: Any) -> Any:
        trips["pool" if limiter is None else "outside"] += 1
        return await real(func, *args, limiter=limiter, **kwargs)

    async def run() -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            login = await client.post("/api/login", json={"username": "alice", "password": PASSWORD})
            assert login.status_code == 200, login.text
            headers = {"X-CSRF-Token": login.json()["csrf_token"]}
            seg = next(s for s in (await client.get("/api/segments")).json() if s["segment_id"] == COUPLE[0])
            url = path.format(seg=seg["id"])
            if method == "PUT":
                kw["json"]["version"] = (await client.get(f"/api/segments/{seg['id']}/rows/1")).json()["version"]
            monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
            try:
                resp = await client.request(method, url, headers=headers, **kw)
            finally:
                monkeypatch.setattr(anyio.to_thread, "run_sync", real)
            return resp.status_code

    return asyncio.run(run()), trips


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "pool", "outside"),
    [
        # the handler's: the session opened, the user loaded, the answer built, the session closed, all there
        ("GET", "/api/segments/{seg}/rows/1", None, 200, 1, 0),
        ("GET", "/segments/{seg}/rows/1", None, 200, 1, 0),
        ("GET", "/api/segments/{seg}", None, 200, 1, 0),
        # the save opens its own transactions: the handler only
        ("PUT", "/api/segments/{seg}/rows/1", {"fields": {"tone_of_voice": "calm"}}, 200, 1, 0),
        # the handler's: the user checked in a short read of its own, then the write and its commit
        ("POST", "/api/segments/{seg}/comments", {"text": "a comment"}, 201, 1, 0),
    ],
)
def test_a_request_takes_one_trip_to_the_pool(app, monkeypatch, method, path, body, status, pool, outside):
    kw = {"json": dict(body)} if body is not None else {}
    code, trips = _trips(app, monkeypatch, method, path, **kw)
    assert code == status
    assert (trips["pool"], trips["outside"]) == (pool, outside), dict(trips)


def test_the_counting_sees_trips(app, monkeypatch):
    """The counter itself: the login page (a sync handler, no dependency that needs a thread) is one trip."""
    assert _trips(app, monkeypatch, "GET", "/login")[1] == Counter(pool=1)



def test_a_capped_pool_serves_more_readers_than_threads_and_connections(app, monkeypatch):
    """One connection, two pool threads, twenty simultaneous reads. A request that took its connection
    in a dependency's thread and queued for the handler's would leave both threads waiting for that
    connection (each read then fails after the pool's 3 s timeout); taken and given back in the
    handler's thread, every read is answered."""
    from rescue_bench.review.db import Database

    st = app.state.review
    capped = Database(st.db.url, pool_size=1, max_overflow=0, pool_timeout=3)
    monkeypatch.setattr(st, "db", capped)

    async def run() -> list[int]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            login = await client.post("/api/login", json={"username": "alice", "password": PASSWORD})
            assert login.status_code == 200, login.text
            seg = next(s for s in (await client.get("/api/segments")).json() if s["segment_id"] == COUPLE[0])
            answers = await asyncio.gather(*(client.get(f"/api/segments/{seg['id']}/rows/{1 + i % 5}") for i in range(20)))
            return [a.status_code for a in answers]

    try:
        assert asyncio.run(run()) == [200] * 20
    finally:
        capped.dispose()


def test_a_user_dependency_on_a_route_that_cannot_make_it_fails_closed(tmp_path):
    """On a route outside ``make_router`` nothing makes the user: the handler would get no checked
    user and no admin check (the OpenAPI routes, declared on the app, answered annotators so)."""
    from rescue_bench.review.app import create_app
    from rescue_bench.review.config import ReviewConfig

    url = f"sqlite:///{tmp_path / 'review.db'}"
    setup_database(url, users={"alice": "annotator"})
    app = create_app(ReviewConfig(db_url=url))

    def plain(user: AdminReader) -> dict:
        return {"got": type(user).__name__}

    app.add_api_route("/api/plain", plain)

    async def run() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            assert (await client.post("/api/login", json={"username": "alice", "password": PASSWORD})).status_code == 200
            assert (await client.get("/api/docs")).status_code == 403  # on make_router: the admin check runs
            with pytest.raises(RuntimeError, match="make_router"):
                await client.get("/api/plain")

    asyncio.run(run())


def test_a_write_commits_before_its_answer_leaves_and_rolls_back_when_the_handler_raises(tmp_path):
    from rescue_bench.review.app import create_app
    from rescue_bench.review.config import ReviewConfig
    from rescue_bench.review.db import Database
    from rescue_bench.review.errors import Forbidden
    from rescue_bench.review.models import Setting
    from rescue_bench.review.routing import make_router

    url = f"sqlite:///{tmp_path / 'review.db'}"
    setup_database(url, users={"alice": "annotator"})
    app = create_app(ReviewConfig(db_url=url))
    routes = make_router()
    seen: dict[str, str | None] = {}

    @routes.post("/api/test-write/{key}")
    def write(key: str, session: WriteSession, user: Writer) -> Response:
        session.add(Setting(key=key, value=user.username))
        session.flush()
        if key == "raise":
            raise Forbidden("after the write")
        return Response(status_code=204)

    app.include_router(routes)
    check = Database(url)

    def stored(key: str) -> str | None:
        with check.read() as session:
            row = session.get(Setting, key)
            return row.value if row else None

    async def run() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            login = await client.post("/api/login", json={"username": "alice", "password": PASSWORD})
            headers = {"X-CSRF-Token": login.json()["csrf_token"]}
            assert (await client.post("/api/test-write/kept", headers=headers)).status_code == 204
            seen["kept"] = stored("kept")  # read as soon as the answer arrived, from another connection
            assert (await client.post("/api/test-write/raise", headers=headers)).status_code == 403

    try:
        asyncio.run(run())
        assert seen["kept"] == "alice"
        assert stored("raise") is None
    finally:
        check.dispose()
