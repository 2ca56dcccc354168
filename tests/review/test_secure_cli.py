"""``rescue review`` commands attacked or misused: the database file's permissions, user names, secrets
in error messages and process environments, questionnaire ids, and what export says it wrote."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.review.helpers import COUPLE, DEMO, PASSWORD, Client, fresh_database, rescue, save, setup_database, start_server

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
ENV = {"RESCUE_REVIEW_PASSWORD": "a long password"}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_database_file_is_private(tmp_path: Path):
    old = os.umask(0o022)
    try:
        assert rescue("review", "init", cwd=tmp_path).returncode == 0
        assert rescue("review", "users", "add", "lead", "--role", "admin", cwd=tmp_path, env=ENV).returncode == 0
    finally:
        os.umask(old)
    files = [p for p in tmp_path.iterdir() if p.name.startswith("rescue_review.db")]
    assert files
    for path in files:
        assert _mode(path) & 0o077 == 0, (path.name, oct(_mode(path)))
    # an existing database made readable by others is tightened by init
    os.chmod(tmp_path / "rescue_review.db", 0o644)
    out = rescue("review", "init", cwd=tmp_path)
    assert out.returncode == 0 and _mode(tmp_path / "rescue_review.db") & 0o077 == 0


def test_user_names_are_strict_and_unique_whatever_the_case(tmp_path: Path):
    assert rescue("review", "init", cwd=tmp_path).returncode == 0
    for bad in ("alice\n", "al\tice", "bob\r", " carol", "dave\u200b", "x" * 65):
        out = rescue("review", "users", "add", bad, cwd=tmp_path, env=ENV)
        assert out.returncode == 2 and "not allowed" in out.stderr, (bad, out.stderr)
    assert rescue("review", "users", "add", "Ann", cwd=tmp_path, env=ENV).returncode == 0
    dup = rescue("review", "users", "add", "ann", cwd=tmp_path, env=ENV)
    assert dup.returncode == 2 and "already exists" in dup.stderr
    listed = rescue("review", "users", "list", cwd=tmp_path).stdout
    assert listed.count("\n") == 1


def test_a_refused_users_add_prints_no_hash_and_no_sql(tmp_path: Path):
    import sqlite3

    assert rescue("review", "init", cwd=tmp_path).returncode == 0
    with sqlite3.connect(tmp_path / "rescue_review.db") as conn:  # the database refuses the write
        conn.execute("CREATE TRIGGER no_new_users BEFORE INSERT ON users BEGIN SELECT RAISE(ABORT, 'no new users today'); END")
    out = rescue("review", "users", "add", "eve", cwd=tmp_path, env=ENV)
    text = out.stdout + out.stderr
    assert out.returncode == 2 and "Traceback" not in text
    assert "$argon2" not in text and "parameters" not in text.lower() and "INSERT" not in text, text
    assert len(out.stderr.strip().splitlines()) == 1 and "no new users today" in out.stderr


def test_questionnaire_ids_are_not_a_hash_of_the_name(tmp_path: Path):
    from rescue_bench.review.db import Database
    from rescue_bench.review.ratings import import_ratings

    name = "gpt-4o-run-3"
    keys = []
    for i in range(2):
        url = f"sqlite:///{tmp_path / f'r{i}.db'}"
        setup_database(url, users={"admin": "admin"})
        db = Database(url)
        with db.write() as session:
            item = {"id": "r1", "task": "er", "sample_id": "s", "scenario": "couple", "row": 1, "gold": "g", "prediction": "p"}
            keys.append(import_ratings(session, [item], name=name, file_name="x.csv", sha256="0" * 64).key)
        db.dispose()
    unsalted = base64.urlsafe_b64encode(hashlib.sha256(f"ratings\x1f{name}".encode()).digest()[:12]).decode("ascii")
    assert unsalted not in keys and keys[0] != keys[1]
    assert all(len(k) >= 16 for k in keys)


def _saved_database(url: str) -> None:
    """The demo with one row reviewed, one saved but not reviewed, one segment discarded."""
    from sqlalchemy import select

    from rescue_bench.review import edits
    from rescue_bench.review.access import get_segment
    from rescue_bench.review.db import Database
    from rescue_bench.review.models import Segment
    from rescue_bench.review.users import get_user

    setup_database(url, users={"admin": "admin"}, clips_file=DEMO)
    db = Database(url)
    with db.write() as session:
        admin = get_user(session, "admin")
        keys = {s.sample_id: s.key for s in session.scalars(select(Segment))}
        seg = get_segment(session, admin, keys[COUPLE[0]])
        save(session, admin, seg, 1, version=0, fields={"tone_of_voice": "reviewed-tone"}, reviewed=True)
        save(session, admin, seg, 2, version=0, fields={"tone_of_voice": "saved-tone"})
        for position, state in ((3, "discarded"), (4, "skipped"), (5, "skipped")):  # row flags, with a reason
            plan = edits.prepare_save(session, admin, seg, position, version=0, fields={}, flag=edits.FlagChange(state, "unclear audio"))
            assert isinstance(plan, edits.SavePlan)
            edits.apply_save(session, plan)
        edits.set_status(session, admin, get_segment(session, admin, keys[COUPLE[1]]), "discarded", "no audio")
    db.dispose()


def test_export_counts_what_it_wrote_and_can_include_saved_edits(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'review.db'}"
    _saved_database(url)
    out = tmp_path / "out.jsonl"
    done = rescue("review", "export", "--db", url, "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    total = sum(len(json.loads(line)["rows"]) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip())
    discarded_rows = 18
    draft_only = total - discarded_rows - 2
    for text in ("8 clip(s)", "1 row(s) submitted", "0 adjudicated", "0 awaiting adjudication", f"{draft_only} draft-only",
                 "1 saved but not reviewed (written as the draft", "1 discarded segment(s) left out", "1 discarded and 2 skipped row(s)"):
        assert text in done.stderr, (text, done.stderr)
    rows = {(c["sample_id"], r.get("row_index")): r for line in out.read_text().splitlines() for c in [json.loads(line)] for r in c["rows"]}
    assert rows[(COUPLE[0], 1)]["tone_of_voice"] == "reviewed-tone" and rows[(COUPLE[0], 2)]["tone_of_voice"] != "saved-tone"
    with_saved = rescue("review", "export", "--db", url, "--out", str(out), "--include-saved", cwd=tmp_path)
    assert with_saved.returncode == 0 and "1 saved but not reviewed (written with their edits" in with_saved.stderr, with_saved.stderr
    rows = {(c["sample_id"], r.get("row_index")): r for line in out.read_text().splitlines() for c in [json.loads(line)] for r in c["rows"]}
    assert rows[(COUPLE[0], 2)]["tone_of_voice"] == "saved-tone"


def _environ(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().replace(b"\x00", b"\n").decode(errors="replace")
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\x00", b" ").decode(errors="replace")
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split()
    found = [int(p) for p in out]
    return found + [g for c in found for g in _children(c)]


def test_the_postgresql_password_stays_out_of_ps_and_worker_environments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from sqlalchemy.engine import make_url

    from rescue_bench.review.db import without_password

    with fresh_database("postgresql", tmp_path) as url:
        monkeypatch.delenv("RESCUE_TEST_POSTGRES_URL")  # the test's own variable holds the password too
        setup_database(url, users={"admin": "admin"}, clips_file=DEMO)
        parsed = make_url(url)
        password = parsed.password
        assert password
        bare = without_password(parsed).render_as_string(hide_password=False)
        secret_file = tmp_path / "pgpass"
        secret_file.write_text(str(password) + "\n", encoding="utf-8")
        os.chmod(secret_file, 0o600)
        server = start_server(bare, tmp_path, workers=2, extra_args=("--db-password-file", str(secret_file)))
        try:
            c = Client(server.base_url)
            assert c.login("admin", PASSWORD).status_code == 200
            time.sleep(0.5)
            pids = [server.process.pid, *_children(server.process.pid)]
            assert len(pids) >= 3, pids  # the server and its two workers
            for pid in pids:
                assert f":{password}@" not in _cmdline(pid), pid
                assert f":{password}@" not in _environ(pid) and f"={password}\n" not in _environ(pid), pid
        finally:
            server.stop()
        # a password inside --db is taken out of the workers' environment too
        server = start_server(url, tmp_path, workers=2)
        try:
            c = Client(server.base_url)
            assert c.login("admin", PASSWORD).status_code == 200
            time.sleep(0.5)
            for pid in _children(server.process.pid):
                assert f":{password}@" not in _environ(pid), pid
        finally:
            server.stop()


def test_import_holds_clips_to_the_strict_rules_and_export_passes_them(tmp_path: Path):
    assert rescue("review", "init", cwd=tmp_path).returncode == 0
    clip = json.loads(DEMO.read_text(encoding="utf-8").splitlines()[0])
    clip["rows"][0]["relation_pattern_evidence_rows"] = [0]  # a quirk of the published release
    quirky = tmp_path / "quirky.jsonl"
    quirky.write_text(json.dumps(clip) + "\n", encoding="utf-8")
    refused = rescue("review", "import", str(quirky), cwd=tmp_path)
    assert refused.returncode == 2 and "relation_pattern_evidence_rows" in refused.stderr and "--lenient" in refused.stderr
    assert "imported" not in refused.stdout
    clip["rows"][1]["end_time"] = -1.0  # an error in any mode
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(clip) + "\n", encoding="utf-8")
    assert rescue("review", "import", str(broken), "--lenient", cwd=tmp_path).returncode == 2
    assert rescue("review", "import", str(quirky), "--lenient", cwd=tmp_path).returncode == 0
    out = tmp_path / "out.jsonl"
    done = rescue("review", "export", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0 and "--strict" in done.stderr  # the lenient import's quirk is reported
    url = f"sqlite:///{tmp_path / 'saved.db'}"
    _saved_database(url)
    assert rescue("review", "export", "--db", url, "--out", str(out), "--include-saved", "--include-discarded", cwd=tmp_path).returncode == 0
    checked = rescue("data", "validate", "--strict", str(out), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
