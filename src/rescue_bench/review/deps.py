"""What every request handler of the review app needs, as FastAPI dependencies: the app's state and
the logged-in caller.

The dependencies do no I/O: :data:`AppState` reads an attribute and :data:`Auth` checks the session
cookie's signature, both on the event loop, so a request without a valid cookie is refused before it
takes a thread. A handler is a plain ``def`` (FastAPI runs it in one pool thread) that opens its
session itself, with the user loaded in it::

    def list_segments(auth: Auth) -> list[SegmentOut]:
        with auth.read() as (session, user):
            return [...]

A session opens and closes in the handler's own thread, so nothing that holds a pooled connection or
SQLite's writer lock ever waits for another thread, and a write commits (or rolls back) before the
answer leaves: a failed commit is never answered with a success. FastAPI validates the answer
against the handler's response model afterwards, from the plain models the handler built.

Kept apart from :mod:`rescue_bench.review.app` so the route modules (``api``, ``pages``) and the app
that mounts them import one way: app -> api, pages -> deps.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Request, Response
from sqlalchemy.orm import Session

from rescue_bench.errors import RescueError
from rescue_bench.review.assets import Assets
from rescue_bench.review.config import ReviewConfig
from rescue_bench.review.db import Database
from rescue_bench.review.errors import Forbidden
from rescue_bench.review.models import User
from rescue_bench.review.security import SESSION_COOKIE, SessionData, SessionSigner, read_secret

Hold = Literal["share", "update"] | None
"""How a write transaction holds its caller's user row (:meth:`State.user_of`)."""


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

    def user_of(self, session: Session, data: SessionData, *, hold: Hold = None) -> User:
        """The user of a checked cookie's ``data``, loaded in ``session``, or :class:`AuthError` (gone,
        deactivated, or logged out everywhere since the cookie was issued).

        ``hold`` (in a write transaction) locks the user's row until the transaction ends
        (PostgreSQL ``FOR SHARE``, or ``FOR UPDATE`` for a transaction that changes the row itself;
        SQLite's write transaction holds the whole database already): a logout, a password change or
        a deactivation then commits either before the check, which fails, or after the write."""
        lock = None if hold is None else {"read": hold == "share"}
        user = session.get(User, data.user_id, with_for_update=lock, populate_existing=hold is not None)
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
"""Settings, database, cookie signer, assets."""


@dataclass(frozen=True)
class Caller:
    """A request with a validly signed session cookie. Its user is loaded (and checked: active, not
    logged out since) where the handler opens its session, in the handler's thread."""

    state: State
    data: SessionData

    def user(self, session: Session, *, hold: Hold = None) -> User:
        """The caller's user, loaded in ``session``, or :class:`AuthError` (``hold``: see
        :meth:`State.user_of`)."""
        return self.state.user_of(session, self.data, hold=hold)

    @contextmanager
    def read(self, *, admin: bool = False) -> Iterator[tuple[Session, User]]:
        """A read session and the user loaded in it (``admin``: 403 for anyone else)."""
        with self.state.db.read() as session:
            user = self.user(session)
            if admin:
                require_admin(user)
            yield session, user

    def admin(self) -> User:
        """The caller's user if an admin (else 403), loaded in a short read session of its own."""
        user = self.state.read_user(self.data)
        require_admin(user)
        return user

    @contextmanager
    def write(self, *, admin: bool = False, hold: Hold = "share") -> Iterator[tuple[Session, User]]:
        """A write transaction and the user. The user is checked in a short read session before the
        transaction begins (a refused caller never takes SQLite's writer lock), then again inside it
        with the user's row held (``hold``, see :meth:`State.user_of`): nothing commits for a session
        that a logout ended meanwhile."""
        if admin:
            self.admin()
        else:
            self.state.read_user(self.data)
        with self.state.db.write() as session:
            user = self.user(session, hold=hold)
            if admin:
                require_admin(user)
            yield session, user


async def _caller(request: Request, st: AppState) -> Caller:
    # on the event loop (a signature check, no database): a request without a valid cookie is
    # refused before it takes a thread, a session or a connection
    data = st.session_data(request)
    if data is None:
        raise AuthError()
    return Caller(st, data)


Auth = Annotated[Caller, Depends(_caller)]
"""The caller (401, or the login page for pages, without a valid session cookie)."""
