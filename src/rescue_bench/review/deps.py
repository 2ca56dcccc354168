"""What every request handler of the review app needs, as FastAPI dependencies: the app's state, a
read session, a write session (one transaction), the logged-in user and an admin.

A handler declares what it needs in its signature (``session: WriteSession, user: Writer``) instead of
opening a session and checking the cookie itself. Sessions end with the handler (``scope="function"``):
a write is committed, or rolled back on an error, *before* the response is sent, so a failed commit
is never answered with a success.

Everything a request does with the database happens in the handler's own worker thread: nothing that
holds a pooled connection or SQLite's writer lock ever waits for a thread (when it did, requests
stalled: "QueuePool limit reached" after 30 s at 50 annotators, and a server hung for good by 50
simultaneous comments; :mod:`rescue_bench.review.routing` tells the whole story). Hence:

- the dependencies here do no I/O on the event loop: a session is created there (a new session
  does no I/O) and closed in a worker thread under a limiter of its own, outside the pool's limit;
  the cookie's signature is checked there, so a request without a valid one takes no thread;
- the user dependencies return a :class:`~rescue_bench.review.routing.MadeInThread`: the user is
  loaded and checked in the handler's thread just before the handler runs, in the handler's read
  session (:data:`Reader`) or, for a write, in a short read session of its own (:data:`Writer`);
- a write session takes its transaction (and the lock) in the handler's thread, at first use.

A read is one trip to the pool (the handler) and one outside its limit (the close); each trip cost
122 us of CPU on the 2-CPU benchmark machine (``tests/review/test_threads.py`` counts them).

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
from rescue_bench.review.routing import InThread, MadeInThread
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


class _User(MadeInThread):
    """The logged-in user, loaded and checked in the handler's thread (``review/routing.py``): in the
    handler's read session, or (``session`` None, for a write) in a short read session of its own,
    never in the write session, before the write begins."""

    def __init__(self, st: State, request: Request, session: Session | None, *, admin: bool):
        route = request.scope.get("route")
        if not isinstance(route, InThread):
            # fail closed: on any other route nothing would make this, and the check would not run
            raise RuntimeError(f"{getattr(route, 'path', request.url.path)}: the user dependencies need a route of review.routing.make_router")
        self.st, self.request, self.session, self.admin = st, request, session, admin

    def make(self) -> User:
        user = self.st.user(self.request) if self.session is None else self.st.auth(self.session, self.request)
        if self.admin:
            require_admin(user)
        return user


def _checked_cookie(st: State, request: Request) -> None:
    # on the event loop (a signature check, no database): a request without a valid cookie is
    # refused before it takes a thread, a session or a connection
    if st.session_data(request) is None:
        raise AuthError()


async def _reader(request: Request, st: AppState, session: ReadSession) -> User:
    _checked_cookie(st, request)
    return _User(st, request, session, admin=False)  # type: ignore[return-value]  # made in the handler's thread


async def _writer(request: Request, st: AppState) -> User:
    _checked_cookie(st, request)
    return _User(st, request, None, admin=False)  # type: ignore[return-value]


async def _admin_reader(request: Request, st: AppState, session: ReadSession) -> User:
    _checked_cookie(st, request)
    return _User(st, request, session, admin=True)  # type: ignore[return-value]


async def _admin_writer(request: Request, st: AppState) -> User:
    _checked_cookie(st, request)
    return _User(st, request, None, admin=True)  # type: ignore[return-value]


Reader = Annotated[User, Depends(_reader)]
"""The logged-in user (401, or the login page for pages), loaded in the handler's :data:`ReadSession`."""
Writer = Annotated[User, Depends(_writer)]
"""The same check for handlers that write: the user is loaded in a read session of its own before
the write begins (a user detached from any session)."""
AdminReader = Annotated[User, Depends(_admin_reader)]
"""An admin, loaded in the handler's :data:`ReadSession` (403 for anyone else)."""
AdminWriter = Annotated[User, Depends(_admin_writer)]
"""An admin, for a handler that writes."""
