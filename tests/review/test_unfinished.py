"""Nothing unfinished leaves as done: a segment two annotators finished and nobody adjudicated is
refused by export (command line and API, on SQLite and PostgreSQL), named, and written only when
marked; the summary counts rows as submitted / adjudicated / awaiting adjudication / draft-only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rescue_bench.data import load_clips
from tests.review.helpers import COUPLE, DEMO, Client, fresh_database, save, setup_database, start_server

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


def _finish_independently(url: str, sample_id: str, people: tuple[str, ...]) -> int:
    """``people`` each review every row of their own copy of ``sample_id``; returns its rows."""
    from sqlalchemy import select

    from rescue_bench.review import access, edits
    from rescue_bench.review.db import Database
    from rescue_bench.review.models import Segment
    from rescue_bench.review.users import get_user

    db = Database(url)
    with db.write() as s:
        seg = s.scalars(select(Segment).where(Segment.sample_id == sample_id)).one()
        access.set_mode(s, seg, "independent", by=None)
        for name in people:
            access.assign(s, seg, get_user(s, name), by=None)
    with db.write() as s:
        seg = s.scalars(select(Segment).where(Segment.sample_id == sample_id)).one()
        for name in people:
            user = get_user(s, name)
            for row in edits.segment_rows(s, user, seg):
                save(s, user, seg, row.position, version=row.version, fields={}, reviewed=True)
        rows = seg.row_count
    db.dispose()
    return rows


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder: Path = tmp_path_factory.mktemp(f"unfinished-{request.param}")
    with fresh_database(request.param, folder) as url:
        setup_database(url, users={"admin": "admin", "ann": "annotator", "ben": "annotator"}, clips_file=DEMO)
        rows = _finish_independently(url, COUPLE[0], ("ann", "ben"))
        server = start_server(url, folder)
        try:
            yield SimpleNamespace(server=server, url=url, folder=folder, rows=rows)
        finally:
            server.stop()


def _export(site: Any, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RESCUE_REVIEW_DB"}
    cmd = [sys.executable, "-m", "rescue_bench.cli", "review", "export", "--db", site.url, "--out", str(out), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def _exports(admin: Client) -> int:
    return sum(1 for e in admin.get("/api/audit", params={"limit": 5000}).json() if e["action"] == "export")


def test_a_finished_segment_nobody_adjudicated_is_refused_and_named(site: Any, tmp_path: Path) -> None:
    admin = Client(site.server.base_url)
    assert admin.login("admin").status_code == 200
    before = _exports(admin)
    out = tmp_path / "release.jsonl"
    refused = _export(site, out)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("error: 1 segment(s) await adjudication") and COUPLE[0] in refused.stderr, refused.stderr
    assert "--mark-unadjudicated" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not out.exists()
    api = admin.get("/api/export")
    assert api.status_code == 409 and COUPLE[0] in api.json()["detail"], api.text
    assert _exports(admin) == before  # nothing left, nothing audited


def test_marked_it_is_written_marked_and_counted_as_awaiting(site: Any, tmp_path: Path) -> None:
    out = tmp_path / "release.jsonl"
    done = _export(site, out, "--mark-unadjudicated")
    assert done.returncode == 0, done.stderr
    assert f"{site.rows} awaiting adjudication (1 segment(s), marked: {COUPLE[0]})" in done.stderr, done.stderr
    assert "untouched" not in done.stderr and "0 adjudicated" in done.stderr
    clips = {c["sample_id"]: c for c in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert clips[COUPLE[0]]["review_status"] == "awaiting_adjudication"
    drafts = {c.sample_id: c.to_json() for c in load_clips([DEMO])}
    assert clips[COUPLE[0]]["rows"] == drafts[COUPLE[0]]["rows"]  # nothing adjudicated: the draft
    assert all("review_status" not in c for sid, c in clips.items() if sid != COUPLE[0])
    admin = Client(site.server.base_url)
    assert admin.login("admin").status_code == 200
    api = admin.get("/api/export", params={"mark_unadjudicated": "true"})
    assert api.status_code == 200 and '"review_status":"awaiting_adjudication"' in api.text.replace(" ", "")


def test_once_adjudicated_it_leaves_as_adjudicated(site: Any, tmp_path: Path) -> None:
    admin = Client(site.server.base_url)
    assert admin.login("admin").status_code == 200
    seg = admin.segments()[COUPLE[0]]
    accepted = admin.post(f"/api/segments/{seg['id']}/adjudication/accept-agreed")
    assert accepted.status_code == 200 and accepted.json()["accepted"] == site.rows, accepted.text
    out = tmp_path / "release.jsonl"
    done = _export(site, out)
    assert done.returncode == 0, done.stderr
    assert f"{site.rows} adjudicated, 0 awaiting adjudication" in done.stderr, done.stderr
    assert all("review_status" not in json.loads(line) for line in out.read_text(encoding="utf-8").splitlines())
