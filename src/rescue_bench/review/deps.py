"""What every request handler of the review app needs, as FastAPI dependencies: the app's state, a
read session, a write session (one transaction), the logged-in user and an admin.

A handler declares what it needs in its signature (``session: WriteSession, user: Writer``) instead of
opening a session and checking the cookie itself. Sessions end with the handler (``scope="function"``):
a write is committed, or rolled back on an error, *before* the response is sent, so a failed commit
is never answered with a success.

The rule that keeps the server from stalling: **nothing waits for a pool thread while it holds a
pooled connection or SQLite's writer lock.** FastAPI runs each sync dependency, the handler and
(for a model) the answer in separate pool threads; a request holding a connection or the lock
while it queues for a thread, behind threads that wait for that connection or lock, never gets one
(measured twice: "QueuePool limit reached" after 30 s at 50 annotators, and a server hung for good
by 50 simultaneous comments). Hence:

- a session is created on the event loop (no I/O) and closed in a worker thread outside the pool's
  limit (as FastAPI closes its own generator dependencies);
- a write session takes its transaction (and the lock) in the handler's own thread, at first use;
- :data:`Reader` loads the user in the handler's read session; where taking a connection can wait
  (PostgreSQL's capped pool) it ends that read before the handler runs, so the connection goes back
  to the pool across the hop;
- :data:`Writer` checks the user in a short read session of its own, never in the write session;
- the answer is built in the handler's thread (:mod:`rescue_bench.review.routing`).

Each trip to the pool costs 122 us of CPU on the 2-CPU benchmark machine: a row read makes two
(the user, the handler), as few as dependencies allow (``tests/review/test_threads.py`` counts them).

Kept apart from :mod:`rescue_bench.review.app` so the route modules (``api``, ``pages``) and the app
that mounts them import one way: app -> api, pages -> deps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Annotated

import anyio
import anyio.to_thread
from fastapi import Depends, Request, Response
from sqlalchemy.orm import Session

from rescue_bench.errors import RescueError
from rescue_bench.review.assets import Assets
from rescue_bench.review.config import ReviewConfig
from rescue_bench.review.db import Database
from rescue_bench.review.errors import Forbidden
from rescue_bench.review.models import User
from rescue_bench.review.security import SESSION_COOKIE, SessionData, SessionSigner, read_secret


class AuthError(RescueError):
    """No valid session: 401 for the API, a redirect to the login page for pages."""


class State:
    """What every request handler needs: settings, the database, the cookie signer, the assets."""

    def __init__(self, config: ReviewConfig, db: Database):
        self.config = config
        self.db = db
        secret = config.secret
        if not secret:
            with db.read() as session:
                secret = read_secret(session)
        if not secret:
            raise RuntimeError("the review database has no session secret: run `rescue review init`")
        self.signer = SessionSigner(secret, max_age=int(config.session_hours * 3600))
        self.assets = Assets(config.assets)

    def session_data(self, request: Request) -> SessionData | None:
        return self.signer.read(request.cookies.get(SESSION_COOKIE))

    def auth(self, session: Session, request: Request) -> User:
        """The logged-in user, loaded in ``session``, or :class:`AuthError`."""
        data = self.session_data(request)
        if data is None:
            raise AuthError()
        user = session.get(User, data.user_id)
        if user is None or not user.active or user.auth_epoch != data.epoch:
            raise AuthError()
        return user

    def user(self, request: Request) -> User:
        """The logged-in user (detached from any session), or :class:`AuthError`."""
        with self.db.read() as session:
            return self.auth(session, request)

    def set_cookie(self, response: Response, token: str) -> None:
        response.set_cookie(
            SESSION_COOKIE,
            token,
            max_age=self.signer.max_age,
            httponly=True,
            samesite="lax",
            secure=self.config.secure_cookies,
            path="/",
        )

    def clear_cookie(self, response: Response) -> None:
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax", secure=self.config.secure_cookies)


def state(request: Request) -> State:
    """The app's :class:`State` (for code that is not a handler: exception handlers, page rendering)."""
    review: State = request.app.state.review
    return review


def require_admin(user: User) -> None:
    if not user.is_admin:
        raise Forbidden("admins only")


# ------------------------------------------------------------------------------------------------
# the dependencies
# ------------------------------------------------------------------------------------------------


async def _state(request: Request) -> State:
    # async: it only reads an attribute, so it runs on the event loop (no trip to the thread pool)
    return state(request)


AppState = Annotated[State, Depends(_state)]
"""Settings, database, cookie signer, assets (for the handlers that open their own transactions)."""


@asynccontextmanager
async def _opened_on_the_loop(open_session: Callable[[], AbstractContextManager[Session]]) -> AsyncIterator[Session]:
    """Enter the session's context on the event loop (a new session does no I/O) and exit it (commit
    or roll back, close) in a worker thread outside the pool's limit, under a limiter of its own."""
    context = open_session()
    session = context.__enter__()
    try:
        yield session
    except BaseException as exc:
        if not await anyio.to_thread.run_sync(context.__exit__, type(exc), exc, exc.__traceback__, limiter=anyio.CapacityLimiter(1)):
            raise
    else:
        await anyio.to_thread.run_sync(context.__exit__, None, None, None, limiter=anyio.CapacityLimiter(1))


async def _read_session(st: AppState) -> AsyncIterator[Session]:
    async with _opened_on_the_loop(st.db.read) as session:
        yield session


async def _write_session(st: AppState) -> AsyncIterator[Session]:
    async with _opened_on_the_loop(st.db.write_on_first_use) as session:  # the lock at first use: see that method
        yield session


ReadSession = Annotated[Session, Depends(_read_session, scope="function")]
"""A session for reading, closed when the handler returns."""
WriteSession = Annotated[Session, Depends(_write_session, scope="function")]
"""One write transaction: committed when the handler returns, rolled back when it raises (then the
error's answer is sent); both before the response leaves."""


def _reader(request: Request, st: AppState, session: ReadSession) -> User:
    user = st.auth(session, request)
    if not st.db.connections_never_wait:
        # End the read here (the user stays loaded: the sessions do not expire on commit), so its
        # connection goes back to the pool before the request queues for the handler's thread.
        # SQLite's pool never makes anyone wait, so there the handler goes on in the same read
        # (one BEGIN and one checkout fewer: 0.1-0.15 ms of the ~1.3 ms of a row read).
        session.commit()
    return user


def _writer(request: Request, st: AppState) -> User:
    # A short read session of its own, never the write session: that would take the transaction (on
    # SQLite, the writer lock) in this thread and hold it across the hop to the handler's.
    return st.user(request)


Reader = Annotated[User, Depends(_reader)]
"""The logged-in user (401, or the login page for pages), loaded in the handler's :data:`ReadSession`."""
Writer = Annotated[User, Depends(_writer)]
"""The same check for handlers that write: the user is checked, in a read session of its own, before
the write begins (a user detached from any session)."""


async def _admin_reader(user: Reader) -> User:
    require_admin(user)
    return user


async def _admin_writer(user: Writer) -> User:
    require_admin(user)
    return user


AdminReader = Annotated[User, Depends(_admin_reader)]
"""An admin, loaded in the handler's :data:`ReadSession` (403 for anyone else)."""
AdminWriter = Annotated[User, Depends(_admin_writer)]
"""An admin, for a handler that writes."""
