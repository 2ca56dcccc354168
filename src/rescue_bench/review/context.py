"""What every request handler of the review app needs: the app's state, the logged-in user, the cookie.

Kept apart from :mod:`rescue_bench.review.app` so the route modules (``api``, ``pages``) and the app
that mounts them import one way: app -> api, pages -> context.
"""

from __future__ import annotations

from fastapi import Request, Response
from sqlalchemy.orm import Session

from rescue_bench.errors import RescueError
from rescue_bench.review.assets import Assets
from rescue_bench.review.config import ReviewConfig
from rescue_bench.review.db import Database
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
    return request.app.state.review
