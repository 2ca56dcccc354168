"""What every request handler of the review app needs, as FastAPI dependencies: the app's state, a
read session, a write session (one transaction), the logged-in user and an admin.

A handler declares what it needs in its signature (``session: WriteSession, user: Writer``) instead of
opening a session and checking the cookie itself. The user dependencies check the cookie and load the user in a short session of their own (see
:func:`_user` for why not in the handler's), so the handler's session, and for a write SQLite's
writer lock, is taken only when the handler first uses it, in the handler's own thread.
Sessions end with the handler (``scope="function"``): a write is committed, or rolled back on an
error, *before* the response is sent, so a failed commit is never answered with a success.

Kept apart from :mod:`rescue_bench.review.app` so the route modules (``api``, ``pages``) and the app
that mounts them import one way: app -> api, pages -> deps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

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


def _read_session(st: AppState) -> Iterator[Session]:
    with st.db.read() as session:
        yield session


def _write_session(st: AppState) -> Iterator[Session]:
    with st.db.write_on_first_use() as session:  # the lock in the handler's thread: see that method
        yield session


ReadSession = Annotated[Session, Depends(_read_session, scope="function")]
"""A session for reading, closed when the handler returns."""
WriteSession = Annotated[Session, Depends(_write_session, scope="function")]
"""One write transaction: committed when the handler returns, rolled back when it raises (then the
error's answer is sent); both before the response leaves."""


def _user(request: Request, st: AppState) -> User:
    # Checked in a short session of its own, never in the handler's: FastAPI runs this dependency,
    # the handler and the session's exit in different pool threads, so a connection (or SQLite's
    # writer lock) taken here would be held while the request waits for a thread; with every pool
    # thread waiting for a connection (or the lock) in turn, the server stalls until the pool's
    # timeout (measured: 50 annotators, "QueuePool limit ... reached" after 30 s). The handler's
    # session takes its connection in the handler's own thread, and the exit needs no pool thread.
    return st.user(request)


Reader = Annotated[User, Depends(_user)]
"""The logged-in user (401, or the login page for pages); its id, name and role are loaded."""
Writer = Reader
"""The same check, named for handlers that write (the user is checked before the write begins)."""


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
