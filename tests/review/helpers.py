"""Shared parts of the review app's tests: databases on both backends, a real server, clients, media."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "review"
DEMO = REPO / "src" / "rescue_bench" / "data" / "demo" / "demo.jsonl"
DEMO_IDS = [json.loads(line)["sample_id"] for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()]
COUPLE = [i for i in DEMO_IDS if i.startswith("demo_couple/")]
FAMILY = [i for i in DEMO_IDS if i.startswith("demo_family/")]
PG_ENV = "RESCUE_TEST_POSTGRES_URL"
PASSWORD = "correct horse battery"
CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1366, "height": 768}
"""A laptop screen: every page is judged at this size."""
SCREENS: dict[str, dict[str, Any]] = {
    "1024x768": {"viewport": {"width": 1024, "height": 768}},
    "1366x768": {"viewport": VIEWPORT},
    "200pct": {"viewport": {"width": 683, "height": 384}, "device_scale_factor": 2},
    "3840x2160": {"viewport": {"width": 3840, "height": 2160}},
}
"""The four screens a page is judged on (browser context options): a small laptop window, a laptop,
a laptop at 200% zoom (683x384 CSS pixels) and a 4K screen at 100%."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
]


# ------------------------------------------------------------------------------------------------
# databases
# ------------------------------------------------------------------------------------------------


def pg_admin_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"{PG_ENV} is not set: PostgreSQL tests skipped (.ci/run starts a server and sets it)")
    return url


@contextmanager
def fresh_database(backend: str, folder: Path) -> Iterator[str]:
    """A new, empty database URL on ``backend``; a PostgreSQL database is dropped afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'review.db'}"
        return
    import psycopg
    from sqlalchemy.engine import make_url

    admin = pg_admin_url()
    name = f"rescue_t_{uuid.uuid4().hex[:12]}"
    plain = make_url(admin).set(drivername="postgresql")
    conninfo = plain.render_as_string(hide_password=False)
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        pytest.skip(f"cannot create a test database with {PG_ENV} (needs CREATEDB): {type(exc).__name__}")
    try:
        yield plain.set(database=name).render_as_string(hide_password=False)
    finally:
        _drop_database(psycopg, conninfo, name)


def _drop_database(psycopg: Any, conninfo: str, name: str) -> None:
    """Drop a test database, waiting out an autovacuum worker that is still in it.

    ``WITH (FORCE)`` terminates the other sessions, but a test role without ``pg_signal_backend``
    may not terminate an autovacuum worker (PostgreSQL 15 refuses with InsufficientPrivilege; seen
    once in about 200 PostgreSQL test databases). The worker leaves within seconds, so try again.
    """
    for attempt in range(20):
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectInUse):
            if attempt == 19:
                raise
            time.sleep(0.5)


def setup_database(url: str, *, users: dict[str, str], clips_file: Path | None = None, assign: dict[str, list[str]] | None = None) -> None:
    """Initialise ``url`` and fill it through the services (users: name -> role)."""
    from sqlalchemy import select

    from rescue_bench.data import load_clips
    from rescue_bench.review import access
    from rescue_bench.review.db import Database, upgrade
    from rescue_bench.review.models import Segment
    from rescue_bench.review.security import ensure_secret
    from rescue_bench.review.store import import_clips
    from rescue_bench.review.users import add_user, get_user

    db = Database(url)
    upgrade(db)
    with db.write() as session:
        ensure_secret(session)
        for name, role in users.items():
            add_user(session, name, PASSWORD, role)
        if clips_file is not None:
            import_clips(session, load_clips([clips_file]), file_name=clips_file.name, sha256="0" * 64)
        for name, sample_ids in (assign or {}).items():
            person = get_user(session, name)
            for seg in session.scalars(select(Segment).where(Segment.sample_id.in_(sample_ids))):
                access.assign(session, seg, person, by=None)
    db.dispose()


# ------------------------------------------------------------------------------------------------
# a real server
# ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    base_url: str
    db_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_server(
    db_url: str, folder: Path, *, assets: Path | None = None, workers: int = 1, extra_env: dict[str, str] | None = None,
    extra_args: tuple[str, ...] = (),
) -> Server:
    """``rescue review serve`` in a subprocess on a free loopback port, ready when this returns."""
    last_error = ""
    for _attempt in range(3):
        port = free_port()
        log = folder / f"serve-{port}.log"
        cmd = [sys.executable, "-m", "rescue_bench.cli", "review", "serve", "--db", db_url, "--port", str(port), "--log-level", "warning"]
        if assets is not None:
            cmd += ["--assets", str(assets)]
        if workers > 1:
            cmd += ["--workers", str(workers)]
        cmd += list(extra_args)
        env = {**os.environ, **(extra_env or {})}
        env.pop("RESCUE_REVIEW_DB", None)
        handle = log.open("wb")
        proc = subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=folder)
        server = Server(f"http://127.0.0.1:{port}", db_url, proc, log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                if httpx.get(server.base_url + "/login", timeout=2).status_code == 200:
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        server.stop()
        last_error = log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"review server did not start:\n{last_error}")


class Client:
    """An httpx client that logs in and sends the CSRF token with every unsafe request."""

    def __init__(self, base_url: str, *, source: str | None = None):
        """``source``: the local address to connect from (another loopback address, e.g. ``127.0.0.2``,
        is another client address to the server)."""
        transport = httpx.HTTPTransport(local_address=source) if source else None
        self.http = httpx.Client(base_url=base_url, timeout=60, follow_redirects=False, transport=transport)
        self.csrf: str | None = None

    def login(self, username: str, password: str = PASSWORD) -> httpx.Response:
        resp = self.http.post("/api/login", json={"username": username, "password": password})
        if resp.status_code == 200:
            self.csrf = resp.json()["csrf_token"]
        return resp

    def _headers(self, headers: dict[str, str] | None) -> dict[str, str]:
        out = dict(headers or {})
        if self.csrf:
            out.setdefault("X-CSRF-Token", self.csrf)
        return out

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.http.get(path, **kw)

    def put(self, path: str, json_body: Any = None, headers: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
        return self.http.put(path, json=json_body, headers=self._headers(headers), **kw)

    def post(self, path: str, json_body: Any = None, headers: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
        return self.http.post(path, json=json_body, headers=self._headers(headers), **kw)

    def segments(self) -> dict[str, dict[str, Any]]:
        """``sample_id -> segment`` as ``GET /api/segments`` lists them."""
        resp = self.get("/api/segments")
        resp.raise_for_status()
        return {s["segment_id"]: s for s in resp.json()}

    def close(self) -> None:
        self.http.close()


# ------------------------------------------------------------------------------------------------
# media: a real H.264 clip made at test time (PyAV ships its own ffmpeg)
# ------------------------------------------------------------------------------------------------


def write_test_clip(path: Path, seconds: float = 3.0) -> None:
    """A short, browser-playable H.264 mp4 of the project's test pattern (small and quick to encode)."""
    from rescue_bench.testing.media import make_video

    make_video(path, seconds, size=(192, 108), fps=12)


def write_keyframe(path: Path) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (192, 108), (40, 90, 140)).save(path, "JPEG")


def make_assets(root: Path, sample_id: str, rows: list[dict[str, Any]], *, clip_rows: tuple[int, ...] = (2,), video: bool = True) -> None:
    """ASSETS/<sample_id>/manifest.json with one cue per row, a segment video, clips for ``clip_rows``."""
    folder = root / sample_id
    folder.mkdir(parents=True, exist_ok=True)
    cues = [
        {"cue": i, "start": r["start_time"], "end": r["end_time"], "speaker": r.get("primary_speaker"), "text": f"cue {i}: " + (r.get("dialogue_cleaned") or "")}
        for i, r in enumerate(rows, 1)
        if isinstance(r.get("start_time"), (int, float)) and isinstance(r.get("end_time"), (int, float))
    ]
    rel_video = f"videos/{sample_id.replace('/', '__')}.mp4" if video else None
    if rel_video:
        write_test_clip(root / rel_video, seconds=4.0)
    manifest = {"segment_id": sample_id, "scenario": "couple", "participants": [], "video": rel_video, "duration": 60.0, "cues": cues}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for n in clip_rows:
        write_test_clip(folder / "rows" / f"{n}.mp4")
        write_keyframe(folder / "rows" / f"{n}.jpg")


@dataclass
class Deployment:
    """A server with its database, assets and the names the tests use."""

    server: Server
    backend: str
    db_url: str
    assets: Path
    folder: Path
    outside_secret: Path
    info: dict[str, Any] = field(default_factory=dict)

    def segment_key(self, sample_id: str) -> str:
        """The opaque id of segment ``sample_id`` (as an admin's segment list gives it)."""
        return self.client("admin").segments()[sample_id]["id"]

    def client(self, username: str | None = None) -> Client:
        c = Client(self.server.base_url)
        if username:
            resp = c.login(username)
            assert resp.status_code == 200, resp.text
        return c


# ------------------------------------------------------------------------------------------------
# a real browser (Playwright driving Debian's chromium; the `browser` fixture is in conftest.py)
# ------------------------------------------------------------------------------------------------


def log_in(page: Any, username: str, password: str = PASSWORD) -> None:
    """Fill and send the login form ``page`` shows (the login page, or the page a redirect led to)."""
    page.fill("#username", username)
    page.fill("#password", password)
    page.click("#login-submit")


class Page:
    """A logged-in page that fails the test on any JavaScript error.

    The app's Content-Security-Policy stays on (no ``bypass_csp``): waits use selectors, since
    Playwright's string predicates would need ``unsafe-eval``; a CSP violation by the app itself
    shows up as a console error and fails the test.
    """

    def __init__(self, browser: Any, site: Deployment, username: str, **context: Any):
        """``context``: the browser context's options (default: a 1366x768 viewport; see :data:`SCREENS`)."""
        self.context = browser.new_context(**(context or {"viewport": VIEWPORT}))
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" and "Content Security Policy" in m.text else None)
        self.base = site.server.base_url
        self.page.goto(self.base + "/login")
        log_in(self.page, username)
        self.page.wait_for_url(self.base + "/")

    def reopen(self) -> Any:
        """A new tab in the same browser profile (its localStorage kept), after closing this one
        without its unload handler; returns the new Playwright page."""
        self.page.close(run_before_unload=False)
        self.page = self.context.new_page()
        return self.page

    def goto(self, path: str) -> None:
        self.page.goto(self.base + path)
        self.page.wait_for_load_state("domcontentloaded")

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / name))

    def close(self) -> None:
        assert not self.errors, self.errors
        self.context.close()


def rescue(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``rescue ARGS`` in a subprocess (this interpreter), without the caller's RESCUE_REVIEW_* variables."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RESCUE_REVIEW_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "rescue_bench.cli", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300, input=stdin)


def demo_rows(sample_id: str) -> list[dict[str, Any]]:
    """The rows of one demo clip."""
    for line in DEMO.read_text(encoding="utf-8").splitlines():
        if line.strip():
            clip = json.loads(line)
            if clip["sample_id"] == sample_id:
                return list(clip["rows"])
    raise KeyError(sample_id)


RATING_SECRETS = ("judge-said-2", "judge-said-5", "secret-model-x")
"""What a rater must never see: the judge's scores and the model's name in the questionnaire's sample."""


def overlap_site(deployment: Deployment, folder: Path) -> Deployment:
    """The demo server with a questionnaire rated by alice, and one segment reviewed independently
    by carol and dave (``info["questionnaire"]``, ``info["independent"]``)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    deployment.info["questionnaire"] = questionnaire(deployment, folder)
    admin = deployment.client("admin")
    assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [COUPLE[5]]}).status_code == 200
    key = admin.segments()[COUPLE[5]]["id"]
    deployment.info["independent"] = key
    for who, pattern, tone in (("carol", "attack_attack", "raised, clipped"), ("dave", "pursue_withdraw", "tense but quiet")):
        c = deployment.client(who)
        for n in (2, 3, 4):
            version = c.get(f"/api/segments/{key}/rows/{n}").json()["version"]
            fields = {"relation_pattern": pattern, "tone_of_voice": tone} if n == 2 else {}
            assert c.put(f"/api/segments/{key}/rows/{n}", {"version": version, "fields": fields, "reviewed": True}).status_code == 200
    return deployment


def questionnaire(deployment: Deployment, folder: Path, rater: str = "alice") -> str:
    """A two-item judge-rating questionnaire rated by ``rater``; returns its key."""
    import csv

    from rescue_bench.judge_ratings import read_sample_csv
    from rescue_bench.review import ratings
    from rescue_bench.review.db import Database
    from rescue_bench.review.users import get_user

    sample = folder / "sample.csv"
    with sample.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(
            [
                ["id", "task", "sample_id", "scenario", "row", "gold", "prediction", "judge_score", "human_score", "model"],
                ["er-1", "er", COUPLE[0], "couple", "4", "hurt and dismissed (intensity 6)", "annoyed, feels brushed off (intensity 4)", RATING_SECRETS[0], "", RATING_SECRETS[2]],
                ["vp-2", "vp", FAMILY[0], "family", "7", "Mia -> Dad: he never listens to her | Mia -> Mum: she takes Dad's side",
                 "Mia -> Dad: feels ignored by him | Mia -> Mum: sees her as neutral", RATING_SECRETS[1], "", RATING_SECRETS[2]],
            ]
        )
    db = Database(deployment.db_url)
    with db.write() as s:
        rating_set = ratings.import_ratings(s, read_sample_csv(sample), name="secret-model-x run", file_name=sample.name, sha256="0" * 64, raters=[get_user(s, rater)])
        key = rating_set.key
    db.dispose()
    return key


def axe_violations(page: Any) -> list[str]:
    """axe-core's violations on the page as one line each (rule, impact, first offending nodes)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    out = []
    for v in results.response["violations"]:
        nodes = "; ".join(" ".join(n["target"]) for n in v["nodes"][:4])
        out.append(f"{v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {nodes}")
    return out


def confirm_row(page: Any, presses: int = 12) -> int:
    """Ctrl+Enter on a row page until it moves on; returns the key presses it took. Marking reviewed
    first scrolls to the fields never in view (one screen per press), then confirms."""
    from playwright.sync_api import TimeoutError as StillThere

    start = page.url
    for n in range(1, presses + 1):
        page.keyboard.press("Control+Enter")
        try:
            page.wait_for_url(lambda url: url != start, timeout=1500)
            return n
        except StillThere:  # still on the row: the next screen of fields is in view now
            continue
    raise AssertionError(f"{start}: Ctrl+Enter never moved on after {presses} presses")


def save(session: Any, user: Any, segment: Any, position: int, *, version: int, fields: dict[str, Any], reviewed: bool | None = None, now: Any = None) -> Any:
    """A save the way the app makes it (:func:`~rescue_bench.review.edits.prepare_save`, then
    :func:`~rescue_bench.review.edits.apply_save`), in the caller's transaction; a lost race raises the
    error the API answers with (:func:`~rescue_bench.review.edits.stale_error`)."""
    from rescue_bench.review import edits

    plan = edits.prepare_save(session, user, segment, position, version=version, fields=fields, reviewed=reviewed, now=now)
    if isinstance(plan, edits.RowState):
        return plan
    try:
        return edits.apply_save(session, plan)
    except edits.StaleWrite:
        raise edits.stale_error(session, user, segment, position) from None
