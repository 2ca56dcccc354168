"""Errors the review services raise; the web layer maps each to one HTTP status, the CLI to one line."""

from __future__ import annotations

from pydantic import BaseModel

from rescue_bench.errors import RescueError


class ReviewError(RescueError):
    """Base of every service error; ``status`` is the HTTP status the API answers with."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NotFound(ReviewError):
    """No such segment, row or user, or one the user may not see (never say which: no probing)."""

    status = 404


class Forbidden(ReviewError):
    status = 403


class Invalid(ReviewError):
    """A value that the release format does not accept; ``field`` names it."""

    status = 422

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class Locked(ReviewError):
    """The segment is discarded: restore it before editing."""

    status = 423


class Throttled(ReviewError):
    """Too many failed logins: wait ``retry_after`` seconds."""

    status = 429

    def __init__(self, retry_after: float):
        super().__init__(f"too many failed logins; try again in {max(1, round(retry_after))} s")
        self.retry_after = retry_after


class Conflict(ReviewError):
    """A save that started from an older version: refused, never applied.

    Carries the row as it is now, so the client can show the other person's value and merge.
    """

    status = 409

    def __init__(self, current: BaseModel):
        super().__init__("this row was saved by someone else since you opened it")
        self.current = current


class WrongCredentials(ReviewError):
    """A login with a wrong user name or password (the same answer for both: no probing)."""

    status = 401
