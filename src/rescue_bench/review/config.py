"""Settings of a review server, from the command line or (for ``--workers``) the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from rescue_bench.review.security import ThrottlePolicy

ENV_DB = "RESCUE_REVIEW_DB"
ENV_ASSETS = "RESCUE_REVIEW_ASSETS"
ENV_SECURE = "RESCUE_REVIEW_SECURE_COOKIES"
ENV_SECRET = "RESCUE_REVIEW_SECRET"
ENV_SESSION_HOURS = "RESCUE_REVIEW_SESSION_HOURS"
ENV_PASSWORD = "RESCUE_REVIEW_PASSWORD"
ENV_THREADS = "RESCUE_REVIEW_THREADS"


@dataclass(frozen=True)
class ReviewConfig:
    db_url: str
    assets: Path | None = None
    secure_cookies: bool = False
    """Mark the session cookie ``Secure`` (set it when the users reach the app over HTTPS)."""
    session_hours: float = 12.0
    secret: str | None = None
    """Cookie-signing secret; ``None`` = the one ``init`` stored in the database (shared by workers)."""
    throttle: ThrottlePolicy = field(default_factory=ThrottlePolicy)
    threads: int = 8
    """Request handlers running at once per worker process (see app.create_app)."""

    @classmethod
    def from_env(cls) -> ReviewConfig:
        """The configuration ``rescue review serve`` hands to its worker processes."""
        assets = os.environ.get(ENV_ASSETS)
        return cls(
            db_url=os.environ.get(ENV_DB, ""),
            assets=Path(assets) if assets else None,
            secure_cookies=os.environ.get(ENV_SECURE, "") == "1",
            session_hours=float(os.environ.get(ENV_SESSION_HOURS, "12")),
            secret=os.environ.get(ENV_SECRET) or None,
            threads=int(os.environ.get(ENV_THREADS, "8")),
        )

    def to_env(self) -> dict[str, str]:
        env = {ENV_DB: self.db_url, ENV_SECURE: "1" if self.secure_cookies else "0", ENV_SESSION_HOURS: str(self.session_hours), ENV_THREADS: str(self.threads)}
        if self.assets is not None:
            env[ENV_ASSETS] = str(self.assets)
        return env

    def with_(self, **changes: object) -> ReviewConfig:
        return replace(self, **changes)  # type: ignore[arg-type]
