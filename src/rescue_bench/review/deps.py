"""What every request handler of the review app needs, as FastAPI dependencies: the app's state, a
read session, a write session (one transaction), the logged-in user and an admin.

A handler declares what it needs in its signature (``session: WriteSession, user: Writer``) instead of
opening a session and checking the cookie itself. Sessions end with the handler's answer: a write
is committed, or rolled back on an error, *before* the response is sent, so a failed commit is
never answered with a success.

Everything a request does with the database happens in the handler's own worker thread, in one
trip to the pool: nothing that holds a pooled connection or SQLite's writer lock ever waits for a
thread (when something did, requests stalled: "QueuePool limit reached" after 30 s at 50
annotators, and a server hung for good by 50 simultaneous comments; :mod:`rescue_bench.review.routing`
tells the whole story). So the dependencies here do no I/O on the event loop. The sessions and the
user are :class:`~rescue_bench.review.routing.MadeInThread` values: in the handler's thread, just
before it runs, the session is opened and the user loaded and checked (:data:`Reader`: in the
handler's read session; :data:`Writer`: in a short read session of its own, never in the write
session); once the answer is built, in the same thread, the session commits (or rolls back) and
closes. A write session takes its transaction, and SQLite's lock, at first use. The cookie's
signature is checked on the loop, so a request without a valid one takes no thread at all.

Each trip to the pool cost 122 us of CPU on the 2-CPU benchmark machine, and moving the handlers
onto dependencies had made a row read take 5; ``tests/review/test_threads.py`` counts them.

Kept apart from :mod:`rescue_bench.review.app` so the route modules (``api``, ``pages``) and the app
that mounts them import one way: app -> api, pages -> deps.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import Annotated

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
        return self.user_of(session, data)

    def user_of(self, session: Session, data: SessionData) -> User:
        """The user of a checked cookie's ``data``, loaded in ``session``, or :class:`AuthError` (gone,
        deactivated, or logged out everywhere since the cookie was issued)."""
        user = session.get(User, data.user_id)
        if user is None or not user.active or user.auth_epoch != data.epoch:
            raise AuthError()
        return user

    def user(self, request: Request) -> User:
        """The logged-in user (detached from any session), or :class:`AuthError`."""
        data = self.session_data(request)
        if data is None:
            raise AuthError()
        return self.read_user(data)

    def read_user(self, data: SessionData) -> User:
        """:meth:`user_of` in a short read session of its own (the user detached from it)."""
        with self.db.read() as session:
            return self.user_of(session, data)

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


def _check_route(request: Request) -> None:
    # Fail closed: on a route outside make_router nothing would make these values, and the user
    # check would not run (the OpenAPI routes, declared on the app, once answered annotators so).
    route = request.scope.get("route")
    if not isinstance(route, InThread):
        raise RuntimeError(f"{getattr(route, 'path', request.url.path)}: the session and user dependencies need a route of review.routing.make_router")


class _Session(MadeInThread):
    """A session, opened in the handler's thread and closed there once the answer is built."""

    def __init__(self, open_session: Callable[[], AbstractContextManager[Session]]):
        super().__init__()
        self.open_session = open_session

    def make(self, stack: ExitStack) -> Session:
        return stack.enter_context(self.open_session())


async def _read_session(request: Request, st: AppState) -> Session:
    _check_route(request)
    return _Session(st.db.read)  # type: ignore[return-value]  # made in the handler's thread


async def _write_session(request: Request, st: AppState) -> Session:
    _check_route(request)
    return _Session(st.db.write_on_first_use)  # type: ignore[return-value]  # the lock at first use: see that method


ReadSession = Annotated[Session, Depends(_read_session)]
"""A session for reading, closed when the handler's answer is built."""
WriteSession = Annotated[Session, Depends(_write_session)]
"""One write transaction: committed once the handler's answer is built, rolled back when anything
raises (then the error's answer is sent); both before the response leaves."""


class _User(MadeInThread):
    """The logged-in user, loaded and checked in the handler's thread (``review/routing.py``): in the
    handler's read session, or (``session`` None, for a write) in a short read session of its own,
    never in the write session, before the write begins."""

    def __init__(self, st: State, request: Request, session: _Session | None, *, admin: bool):
        super().__init__()
        _check_route(request)
        self.data = _checked_cookie(st, request)
        self.st, self.session, self.admin = st, session, admin

    def make(self, stack: ExitStack) -> User:
        user = self.st.read_user(self.data) if self.session is None else self.st.user_of(self.session.value(stack), self.data)
        if self.admin:
            require_admin(user)
        return user


def _checked_cookie(st: State, request: Request) -> SessionData:
    # on the event loop (a signature check, no database), once per request: a request without a
    # valid cookie is refused before it takes a thread, a session or a connection
    data = st.session_data(request)
    if data is None:
        raise AuthError()
    return data


async def _reader(request: Request, st: AppState, session: ReadSession) -> User:
    return _User(st, request, session, admin=False)  # type: ignore[arg-type,return-value]  # made in the handler's thread


async def _writer(request: Request, st: AppState) -> User:
    return _User(st, request, None, admin=False)  # type: ignore[return-value]


async def _admin_reader(request: Request, st: AppState, session: ReadSession) -> User:
    return _User(st, request, session, admin=True)  # type: ignore[arg-type,return-value]


async def _admin_writer(request: Request, st: AppState) -> User:
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
