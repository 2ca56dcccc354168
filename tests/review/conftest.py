"""Fixtures of the review app's tests: one deployment (database + assets + real server) per backend.

The API suite runs once on SQLite and once on PostgreSQL (``RESCUE_TEST_POSTGRES_URL``; skipped with
a reason when unset). Demo segments are assigned so that access rules can be tested:

- alice: the first three couple segments; bob: the first couple segment and the first family one;
- carol: nothing; admin: everything (admin role).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.review.helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    COUPLE,
    DEMO,
    FAMILY,
    Deployment,
    demo_rows,
    fresh_database,
    make_assets,
    setup_database,
    start_server,
)

USERS = {"admin": "admin", "alice": "annotator", "bob": "annotator", "carol": "annotator", "dave": "annotator"}
ASSIGN = {"alice": COUPLE[:3], "bob": [COUPLE[0], FAMILY[0]], "dave": COUPLE[3:5]}


@pytest.fixture(scope="session")
def demo_file() -> Path:
    return DEMO


def _deploy(backend: str, folder: Path) -> Iterator[Deployment]:
    with fresh_database(backend, folder) as url:
        setup_database(url, users=USERS, clips_file=DEMO, assign=ASSIGN)
        assets = folder / "assets"
        make_assets(assets, COUPLE[0], demo_rows(COUPLE[0]), clip_rows=(2,))
        # a symlink escaping the assets folder, and a manifest pointing outside it
        secret = folder / "outside-secret.txt"
        secret.write_text("top secret", encoding="utf-8")
        link = assets / COUPLE[0] / "rows" / "3.mp4"
        os.symlink(secret, link)
        escape = assets / COUPLE[1]
        escape.mkdir(parents=True)
        outside = {"segment_id": COUPLE[1], "scenario": "couple", "participants": [], "video": "../outside-secret.txt", "duration": 1.0, "cues": []}
        (escape / "manifest.json").write_text(json.dumps(outside), encoding="utf-8")
        # a first lock long enough that the throttling test's requests land inside it on a busy machine
        server = start_server(url, folder, assets=assets, extra_args=("--login-delay", "5"))
        try:
            yield Deployment(server, backend, url, assets, folder, secret)
        finally:
            server.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def deployment(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """A running review server over the demo, on SQLite and on PostgreSQL."""
    yield from _deploy(request.param, tmp_path_factory.mktemp(f"review-{request.param}"))


@pytest.fixture(scope="module")
def sqlite_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """The same on SQLite only (browser tests)."""
    yield from _deploy("sqlite", tmp_path_factory.mktemp("review-browser"))


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, uninitialised database URL on each backend (service tests)."""
    with fresh_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium driven by Playwright (skipped with a reason when either is missing)."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium not installed")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()
