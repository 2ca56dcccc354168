"""``rescue review`` commands in subprocesses: init, users, import, assign, export, serve's checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.review.helpers import COUPLE, DEMO, Client, rescue, start_server

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


def test_rescue_help_lists_review_and_stays_light(tmp_path: Path):
    out = rescue("--help", cwd=tmp_path)
    assert out.returncode == 0 and "review" in out.stdout
    # the review stack is imported only when a review command runs
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, rescue_bench.cli; print(any(m in sys.modules for m in ('fastapi', 'sqlalchemy', 'uvicorn', 'alembic')))"],
        capture_output=True, text=True, timeout=120,
    )
    assert probe.stdout.strip() == "False", probe.stderr


def test_a_team_server_from_scratch_then_export_round_trip(tmp_path: Path):
    """docs/review.md's three commands (init, users add, import) plus export, on the default SQLite file."""
    assert rescue("review", "init", cwd=tmp_path).returncode == 0
    assert (tmp_path / "rescue_review.db").is_file()
    env = {"RESCUE_REVIEW_PASSWORD": "a long password"}
    added = rescue("review", "users", "add", "lead", "--role", "admin", cwd=tmp_path, env=env)
    assert added.returncode == 0, added.stderr
    assert rescue("review", "users", "add", "ann", cwd=tmp_path, env=env).returncode == 0
    imported = rescue("review", "import", str(DEMO), "--assign", "ann", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "imported 9 segment(s), 176 row(s)" in imported.stdout
    listed = rescue("review", "users", "list", cwd=tmp_path)
    assert "lead\tadmin\tactive" in listed.stdout and "ann\tannotator\tactive" in listed.stdout
    first = tmp_path / "first.jsonl"
    assert rescue("review", "export", "--out", str(first), cwd=tmp_path).returncode == 0
    demo_clips = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()]
    exported = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    assert exported == demo_clips  # nothing reviewed yet: the drafts, every key kept
    other = tmp_path / "other"
    other.mkdir()
    assert rescue("review", "init", "--db", "second.db", cwd=other).returncode == 0
    assert rescue("review", "import", str(first), "--db", "second.db", cwd=other).returncode == 0
    second = other / "second.jsonl"
    assert rescue("review", "export", "--db", "second.db", "--out", str(second), cwd=other).returncode == 0
    assert second.read_bytes() == first.read_bytes()
    # serve uses the same database; log in with the password set above
    server = start_server(f"sqlite:///{tmp_path / 'rescue_review.db'}", tmp_path)
    try:
        c = Client(server.base_url)
        assert c.login("ann", "a long password").status_code == 200
        assert len(c.segments()) == 9
    finally:
        server.stop()


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path):
    assert rescue("review", "init", cwd=tmp_path).returncode == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "x/1", "scenario": "couple", "rows": [{"row_index": "one"}]}\nnot json\n', encoding="utf-8")
    out = rescue("review", "import", str(bad), cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "bad.jsonl:1, clip x/1, row 1, field row_index" in out.stderr and "bad.jsonl:2" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 2  # one line per problem, nothing else
    assert rescue("review", "import", str(DEMO), cwd=tmp_path).returncode == 0
    dup = rescue("review", "import", str(DEMO), cwd=tmp_path)
    assert dup.returncode == 2 and "already in the review database" in dup.stderr and len(dup.stderr.strip().splitlines()) == 1
    skip = rescue("review", "import", str(DEMO), "--skip-existing", cwd=tmp_path)
    assert skip.returncode == 0 and "skipped 9" in skip.stdout
    # passwords: never a flag, no terminal and no variable is an error; weak ones are refused
    nopw = rescue("review", "users", "add", "x", cwd=tmp_path, stdin="")
    assert nopw.returncode == 2 and "RESCUE_REVIEW_PASSWORD" in nopw.stderr
    weak = rescue("review", "users", "add", "x", cwd=tmp_path, env={"RESCUE_REVIEW_PASSWORD": "short"})
    assert weak.returncode == 2 and "at least 8" in weak.stderr
    role = rescue("review", "users", "add", "y", "--role", "boss", cwd=tmp_path, env={"RESCUE_REVIEW_PASSWORD": "long enough"})
    assert role.returncode == 2 and "role must be one of admin, annotator" in role.stderr
    assert rescue("review", "assign", "--user", "nobody", cwd=tmp_path).returncode == 2
    assert rescue("review", "users", "add", "ann", cwd=tmp_path, env={"RESCUE_REVIEW_PASSWORD": "long enough"}).returncode == 0
    missing = rescue("review", "assign", "--user", "ann", "--segment", "no/such", cwd=tmp_path)
    assert missing.returncode == 2 and "no such segment: no/such" in missing.stderr
    ok = rescue("review", "assign", "--user", "ann", "--segment", COUPLE[0], "--segment", COUPLE[1], cwd=tmp_path)
    assert ok.returncode == 0 and "assigned 2 segment(s) to ann" in ok.stdout
    removed = rescue("review", "assign", "--user", "ann", "--segment", COUPLE[1], "--remove", cwd=tmp_path)
    assert removed.returncode == 0 and "unassigned 1" in removed.stdout


def test_serve_refuses_a_database_that_is_not_initialised_and_masks_passwords(tmp_path: Path):
    out = rescue("review", "serve", "--db", str(tmp_path / "empty.db"), cwd=tmp_path)
    assert out.returncode == 2 and "rescue review init" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    pg = rescue("review", "serve", "--db", "postgresql://someone:hunter2@127.0.0.1:1/nowhere", cwd=tmp_path)
    assert pg.returncode == 2 and "hunter2" not in pg.stderr and "***" in pg.stderr
    bad_url = rescue("review", "init", "--db", "mysql://u@h/db", cwd=tmp_path)
    assert bad_url.returncode == 2 and "unsupported database" in bad_url.stderr


def test_import_with_assets_reports_what_it_found_and_serve_remembers_the_folder(tmp_path: Path):
    from tests.review.helpers import make_assets

    rows = json.loads(DEMO.read_text(encoding="utf-8").splitlines()[0])["rows"]
    assets = tmp_path / "assets"
    make_assets(assets, COUPLE[0], rows, clip_rows=(1, 2), video=False)
    assert rescue("review", "init", cwd=tmp_path).returncode == 0
    out = rescue("review", "import", str(DEMO), "--assets", str(assets), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "1/9 segments with a manifest, 0 with a video, 2/176 row clips" in out.stdout
    env = {"RESCUE_REVIEW_PASSWORD": "a long password"}
    assert rescue("review", "users", "add", "lead", "--role", "admin", cwd=tmp_path, env=env).returncode == 0
    server = start_server(f"sqlite:///{tmp_path / 'rescue_review.db'}", tmp_path)  # no --assets given
    try:
        c = Client(server.base_url)
        c.login("lead", "a long password")
        key = c.segments()[COUPLE[0]]["id"]
        assert c.get(f"/media/{key}/rows/1.mp4").status_code == 200
    finally:
        server.stop()


def test_serve_with_two_workers_on_postgresql_shares_sessions_and_throttling(tmp_path: Path):
    """Several worker processes against one PostgreSQL: a session made by one worker works on the
    others, and a save through one is seen by all (nothing lives in a process's memory)."""
    from tests.review.helpers import PASSWORD, fresh_database, setup_database

    with fresh_database("postgresql", tmp_path) as url:
        setup_database(url, users={"admin": "admin"}, clips_file=DEMO)
        server = start_server(url, tmp_path, workers=2)
        try:
            c = Client(server.base_url)
            assert c.login("admin", PASSWORD).status_code == 200
            key = c.segments()[COUPLE[0]]["id"]
            version = c.get(f"/api/segments/{key}/rows/1").json()["version"]
            assert c.put(f"/api/segments/{key}/rows/1", {"version": version, "fields": {"tone_of_voice": "two workers"}}).status_code == 200
            for _ in range(20):  # new connections are spread over the workers
                fresh = Client(server.base_url)
                fresh.http.cookies = c.http.cookies
                got = fresh.get(f"/api/segments/{key}/rows/1").json()
                assert got["row"]["tone_of_voice"] == "two workers" and got["version"] == version + 1
                fresh.close()
            stale = Client(server.base_url)
            stale.http.cookies, stale.csrf = c.http.cookies, c.csrf
            assert stale.put(f"/api/segments/{key}/rows/1", {"version": version, "fields": {"tone_of_voice": "stale"}}).status_code == 409
        finally:
            server.stop()


def test_serve_on_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path):
    import socket

    assert rescue("review", "init", cwd=tmp_path).returncode == 0
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        out = rescue("review", "serve", "--port", str(port), cwd=tmp_path)
    lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    assert out.returncode == 2, out.stderr
    assert lines == [f"error: cannot listen on 127.0.0.1:{port}: address already in use (another server? choose another --port)"], lines
