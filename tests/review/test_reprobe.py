"""The security re-probe's findings, each as its attack, on SQLite and on PostgreSQL: a JSON body in
any spelling of its type, other people's failed logins, practice parameters that are not finite,
world-readable database files, wildcard listen addresses, forged audit notes, the Questionnaires
page's upload of a default sample, and an export of practice episodes that fails half-way."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.review.helpers import COUPLE, DEMO, Client, fresh_database, setup_database, start_server
from tests.review.practice_helpers import import_catalogue, open_debriefs

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

JSON_TYPES = ("application/JSON", "Application/Json; charset=utf-8", "application/vnd.api+JSON", "application/problem+json")
"""Content types FastAPI reads as JSON besides the plain ``application/json``."""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder: Path = tmp_path_factory.mktemp(f"reprobe-{request.param}")
    with fresh_database(request.param, folder) as url:
        users = {"admin": "admin", "alice": "annotator", "bob": "annotator", "lockme": "annotator", "sprayed": "annotator"}
        setup_database(url, users=users, clips_file=DEMO, assign={"alice": COUPLE[:1], "bob": COUPLE[:1]})
        import_catalogue(url, DEMO, horizon=1)  # one step finishes an episode
        server = start_server(url, folder, extra_args=("--login-delay", "30"))
        try:
            yield SimpleNamespace(server=server, url=url, folder=folder, backend=request.param)
        finally:
            server.stop()


def _client(site: Any, user: str | None = None, *, source: str | None = None) -> Client:
    c = Client(site.server.base_url, source=source)
    if user:
        resp = c.login(user)
        assert resp.status_code == 200, resp.text
    return c


def _rescue(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RESCUE_REVIEW_DB"}
    return subprocess.run([sys.executable, "-m", "rescue_bench.cli", "review", *args], capture_output=True, text=True, timeout=timeout, env=env)


# ------------------------------------------------------------------------------------------------
# the JSON body guard: every body FastAPI reads as JSON
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", JSON_TYPES)
def test_every_json_content_type_is_held_to_the_guard(site: Any, content_type: str) -> None:
    alice = _client(site, "alice")
    seg = alice.segments()[COUPLE[0]]
    headers = {"Content-Type": content_type, "X-CSRF-Token": alice.csrf or ""}
    row_url = f"/api/segments/{seg['id']}/rows/2"
    before = alice.get(row_url).json()
    # a number that is not finite: FastAPI parses it, and its error answer cannot echo it
    for body in ('{"version": NaN, "fields": {}}', '{"version": 0, "fields": {"tone_of_voice": Infinity}}', '{"version": 1e999, "fields": {}}'):
        resp = alice.http.put(row_url, content=body, headers=headers)
        assert 400 <= resp.status_code < 500, (body, resp.status_code, resp.text)
    # a NUL byte and a lone surrogate in text: refused, never stored
    for text in ("comment\\u0000with NUL", "comment\\ud800alone"):
        resp = alice.http.post(f"/api/segments/{seg['id']}/comments", content='{"text": "' + text + '"}', headers=headers)
        assert 400 <= resp.status_code < 500, (text, resp.status_code, resp.text)
    episode = alice.post("/api/practice/episodes", {"start": 1}).json()
    targets, strategies = episode["targets"], episode["strategies"]
    step = {"step": 1, "speak": True, "whom": targets[0], "how": strategies[0], "turn": "I hear you\\u0000both"}
    resp = alice.http.post(f"/api/practice/episodes/{episode['id']}/steps", content=json.dumps(step).replace("\\\\u0000", "\\u0000"), headers=headers)
    assert 400 <= resp.status_code < 500, resp.text
    assert alice.get(f"/api/practice/episodes/{episode['id']}").json()["step"] == 1  # the step was not taken
    after = alice.get(row_url).json()
    assert after["version"] == before["version"] and after["row"] == before["row"]
    texts = [c["text"] for c in alice.get(f"/api/segments/{seg['id']}/comments").json()]
    assert not any("comment" in t and ("\x00" in t or "with NUL" in t or "alone" in t) for t in texts), texts


@pytest.mark.parametrize("content_type", ("application/json", *JSON_TYPES))
def test_a_lone_surrogate_is_refused_without_a_session_too(site: Any, content_type: str) -> None:
    anonymous = Client(site.server.base_url)
    resp = anonymous.http.post("/api/login", content='{"username": "\\ud800", "password": "x"}', headers={"Content-Type": content_type})
    assert resp.status_code in (400, 422), (resp.status_code, resp.text)
    resp = anonymous.http.post("/api/login", content='{"username": "alice", "password": "\\udfff"}', headers={"Content-Type": content_type})
    assert resp.status_code in (400, 422), (resp.status_code, resp.text)


def test_a_plain_json_body_still_works_in_every_spelling(site: Any) -> None:
    """The negative control: a valid body in each JSON type is answered as usual."""
    alice = _client(site, "alice")
    seg = alice.segments()[COUPLE[0]]
    for i, content_type in enumerate(JSON_TYPES):
        resp = alice.http.post(
            f"/api/segments/{seg['id']}/comments", content=json.dumps({"text": f"spelled {i}"}), headers={"Content-Type": content_type, "X-CSRF-Token": alice.csrf or ""}
        )
        assert resp.status_code == 201, (content_type, resp.text)


# ------------------------------------------------------------------------------------------------
# throttling: per address and per (user, address), never per user alone
# ------------------------------------------------------------------------------------------------


def test_other_peoples_failed_logins_never_lock_a_user_out(site: Any) -> None:
    attacker = Client(site.server.base_url, source="127.0.0.2")
    codes = [attacker.login("lockme", f"guess {i}").status_code for i in range(7)]
    assert codes[:6] == [401] * 6 and codes[6] == 429, codes  # the pair is locked after the free failures
    assert attacker.login("lockme").status_code == 429  # the attacker's address stays locked, right password or not
    assert _client(site, source="127.0.0.3").login("lockme").status_code == 200  # the user, from elsewhere, gets in


def test_spraying_made_up_names_locks_the_address_not_the_users(site: Any) -> None:
    sprayer = Client(site.server.base_url, source="127.0.0.4")
    codes = [sprayer.login(f"nobody{i}", "guess").status_code for i in range(22)]
    assert codes[:21] == [401] * 21 and codes[21] == 429, codes
    assert sprayer.login("sprayed").status_code == 429  # everyone behind that address waits
    assert _client(site, source="127.0.0.5").login("sprayed").status_code == 200  # nobody else does


# ------------------------------------------------------------------------------------------------
# audit notes escape what was typed
# ------------------------------------------------------------------------------------------------


def test_a_typed_name_cannot_fake_the_address_or_carry_control_characters(site: Any) -> None:
    typed = ["lead from 192.168.7.7", "evil\n\x1b[31mred\x07", 'quote" from 10.9.9.9']
    someone = Client(site.server.base_url, source="127.0.0.6")
    for name in typed:
        assert someone.login(name, "wrong").status_code == 401
    entries = _client(site, "admin").get("/api/audit", params={"limit": 200}).json()
    notes = [e["note"] for e in entries if e["action"] == "login_failed" and e["note"] and e["note"].endswith(" from 127.0.0.6")]
    assert len(notes) == len(typed), notes
    for note in notes:
        assert not any(ord(c) < 32 or ord(c) == 127 for c in note), repr(note)
        name, _, address = note.rpartition(" from ")
        assert address == "127.0.0.6" and json.loads(name) in typed, note  # the name is one quoted string


# ------------------------------------------------------------------------------------------------
# the Questionnaires page takes a default sample
# ------------------------------------------------------------------------------------------------


def _default_sample(n: int = 200) -> str:
    """A sample of ``rescue agreement sample``'s default size: 200 judged items, about 65 kB."""
    import csv
    import io

    from rescue_bench.judge_ratings import SAMPLE_COLUMNS

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(SAMPLE_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for i in range(n):
        task = "er" if i % 2 else "vp"
        writer.writerow({
            "id": f"{task}-{i}", "task": task, "sample_id": COUPLE[i % len(COUPLE)], "scenario": "couple", "row": str(i % 9 + 1),
            "gold": f"Alex feels hurt and dismissed when Sam turns away; she wants to be heard first ({i})" * 2,
            "prediction": f"Alex is frustrated and feels ignored, and Sam withdraws to avoid the fight ({i})", "judge_score": "3", "human_score": "",
        })
    return buffer.getvalue()


def test_the_questionnaires_page_takes_a_default_200_item_sample(site: Any) -> None:
    sample = _default_sample()
    assert 60_000 < len(sample) < 80_000, len(sample)
    admin = _client(site, "admin")
    resp = admin.post("/api/ratings", {"name": f"default sample {site.backend}", "file_name": "sample.csv", "csv": sample, "raters": ["alice"]})
    assert resp.status_code == 201, resp.text
    assert resp.json()["items"] == 200
    # the route's own limit still holds, and other routes keep the field limit
    huge = admin.post("/api/ratings", {"name": "too big", "csv": "x" * 5_000_001, "raters": []})
    assert huge.status_code in (413, 422), huge.status_code
    seg = admin.segments()[COUPLE[0]]
    assert admin.post(f"/api/segments/{seg['id']}/comments", {"text": "x" * 20_001}).status_code == 422


# ------------------------------------------------------------------------------------------------
# practice parameters: finite and bounded wherever they enter
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "1e309", "1e308", "nan", "-1"])
def test_import_practice_refuses_a_lambda_that_is_not_finite_and_bounded(site: Any, value: str) -> None:
    out = _rescue("import-practice", "--db", site.url, "--lambda", value)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--lambda" in out.stderr and "Traceback" not in out.stderr
    assert "added" not in out.stdout


def test_a_start_stored_with_a_refused_lambda_is_never_a_500_and_import_practice_repairs_it(site: Any, tmp_path: Path) -> None:
    """An older version stored lambda 1e308 (J -inf) and inf; the page, the API and new episodes keep
    working for everyone, and ``import-practice`` with good values repairs the starts."""
    from sqlalchemy import select

    from rescue_bench.review.db import Database
    from rescue_bench.review.models import PracticeEpisode, PracticeStart

    alice = _client(site, "alice")
    played = alice.post("/api/practice/episodes", {"start": 3}).json()
    done = alice.post(f"/api/practice/episodes/{played['id']}/steps", {"step": 1, "speak": False})
    assert done.status_code == 200 and done.json()["done"], done.text
    db = Database(site.url)
    with db.write() as s:
        rows = {r.id: r for r in s.scalars(select(PracticeStart).where(PracticeStart.id.in_([3, 4])))}
        for sid, lam in ((3, 1e308), (4, float("inf"))):
            options = json.loads(rows[sid].options)
            options["lam"] = lam
            rows[sid].options = json.dumps(options)  # what an older version wrote (Infinity for inf)
        finished = s.get(PracticeEpisode, played["id"])
        record = json.loads(finished.record)
        record["metrics"]["J"] = float("-inf")
        finished.record = json.dumps(record)
    db.dispose()
    catalogue = alice.get("/api/practice")
    assert catalogue.status_code == 200, catalogue.text
    assert {3, 4}.isdisjoint({s["id"] for s in catalogue.json()["starts"]})
    assert alice.get("/practice").status_code == 200
    refused = alice.post("/api/practice/episodes", {"start": 4})
    assert refused.status_code == 409 and "import-practice" in refused.json()["detail"], refused.text
    assert alice.get(f"/api/practice/episodes/{played['id']}").status_code == 409
    # the way back
    out = _rescue("import-practice", "--db", site.url)
    assert out.returncode == 0, out.stderr
    assert "repaired 2 start(s)" in out.stderr, out.stderr
    assert {3, 4} <= {s["id"] for s in alice.get("/api/practice").json()["starts"]}
    open_debriefs(alice)  # scores show once every start is played
    score = alice.get(f"/api/practice/episodes/{played['id']}").json()["score"]
    assert score is not None and isinstance(score["J"], float) and abs(score["J"]) < 1e6
    assert alice.post("/api/practice/episodes", {"start": 4}).status_code == 201
    exported = _rescue("export-practice", "--db", site.url, "--user", "alice", "--out", str(tmp_path / "alice"))
    assert exported.returncode == 0, exported.stderr


# ------------------------------------------------------------------------------------------------
# export-practice: written and audited all or nothing
# ------------------------------------------------------------------------------------------------


def _finished_episodes_and_export_count(site: Any) -> Any:
    """Alice and Bob each finish an episode of start 2; returns a counter of audited exports."""
    for name in ("alice", "bob"):
        person = _client(site, name)
        episode = person.post("/api/practice/episodes", {"start": 2}).json()
        assert person.post(f"/api/practice/episodes/{episode['id']}/steps", {"step": 1, "speak": False}).status_code == 200
    admin = _client(site, "admin")
    return lambda: sum(1 for e in admin.get("/api/audit", params={"limit": 5000}).json() if e["action"] == "export")


def test_export_practice_that_fails_half_way_writes_and_audits_nothing(site: Any, tmp_path: Path) -> None:
    exports = _finished_episodes_and_export_count(site)
    before = exports()
    out = tmp_path / "runs"
    out.mkdir()
    (out / "bob").write_text("a file where bob's folder goes", encoding="utf-8")
    failed = _rescue("export-practice", "--db", site.url, "--out", str(out))
    assert failed.returncode == 2 and failed.stderr.startswith("error: cannot write"), failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1 and "Traceback" not in failed.stderr
    assert sorted(p.name for p in out.iterdir()) == ["bob"], list(out.rglob("*"))  # alice's run was not written either
    assert exports() == before  # and nothing was audited
    (out / "bob").unlink()
    ok = _rescue("export-practice", "--db", site.url, "--out", str(out))
    assert ok.returncode == 0, ok.stderr
    assert (out / "alice" / "results" / "sim.jsonl").is_file() and (out / "bob" / "results" / "sim.jsonl").is_file()
    assert exports() == before + 2
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging folder left


@pytest.mark.parametrize("link", ["bob", "alice/results"])
def test_export_practice_never_writes_through_a_symbolic_link(site: Any, tmp_path: Path, link: str) -> None:
    """As root, ``OUT/<user>`` pointing at /etc made export-practice write there."""
    exports = _finished_episodes_and_export_count(site)
    before = exports()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "runs"
    (out / link).parent.mkdir(parents=True)
    (out / link).symlink_to(elsewhere, target_is_directory=True)
    refused = _rescue("export-practice", "--db", site.url, "--out", str(out))
    assert refused.returncode == 2 and "symbolic link" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    assert list(elsewhere.iterdir()) == [] and exports() == before
    assert not list((out / "alice").glob("*.json")) if (out / "alice").is_dir() else True


# ------------------------------------------------------------------------------------------------
# serve: wildcard addresses, the session lifetime
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0", "::0", "0000", "0:0:0:0:0:0:0:0", "0x0", "0.0"])
def test_every_spelling_of_every_interface_needs_allowed_host(site: Any, host: str) -> None:
    out = _rescue("serve", "--db", site.url, "--host", host, "--port", "0", timeout=60)  # a server that starts would time out
    assert out.returncode == 2, out.stderr
    assert "--allowed-host" in out.stderr and "listens on every interface" in out.stderr


def test_serve_honours_the_session_hours_of_the_environment(site: Any, tmp_path: Path) -> None:
    server = start_server(site.url, tmp_path, extra_env={"RESCUE_REVIEW_SESSION_HOURS": "1.5"})
    try:
        resp = Client(server.base_url).login("alice")
        assert resp.status_code == 200
        assert "max-age=5400" in resp.headers["set-cookie"].lower(), resp.headers["set-cookie"]
    finally:
        server.stop()
    assert "max-age=43200" in Client(site.server.base_url).login("alice").headers["set-cookie"].lower()  # the default: 12 h


# ------------------------------------------------------------------------------------------------
# a world-readable SQLite file (PostgreSQL has no file)
# ------------------------------------------------------------------------------------------------

COMMANDS = (
    ("users", "list"),
    ("settings",),
    ("import-practice",),
    ("export", "--out", "{tmp}/out.jsonl"),
    ("agreement", "--resamples", "0", "--no-bertscore"),
    ("export-ratings", "--out", "{tmp}/ratings.csv"),
)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_makes_a_world_readable_database_private(command: tuple[str, ...], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'restored.db'}"
    setup_database(url, users={"admin": "admin"}, clips_file=DEMO)
    os.chmod(tmp_path / "restored.db", 0o644)  # a restored copy
    out = _rescue(*[a.format(tmp=tmp_path) for a in command], "--db", url)
    assert stat.S_IMODE((tmp_path / "restored.db").stat().st_mode) == 0o600, out.stderr
    assert "made it private" in out.stderr


def test_serve_makes_a_world_readable_database_private(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'restored.db'}"
    setup_database(url, users={"admin": "admin"})
    os.chmod(tmp_path / "restored.db", 0o644)
    server = start_server(url, tmp_path)
    try:
        assert stat.S_IMODE((tmp_path / "restored.db").stat().st_mode) == 0o600
        assert "made it private" in server.log.read_text(encoding="utf-8")
    finally:
        server.stop()


def test_a_command_on_a_missing_database_creates_no_file(tmp_path: Path) -> None:
    for command in (("import-practice",), ("users", "list"), ("serve", "--port", "0")):
        out = _rescue(*command, "--db", str(tmp_path / "typo.db"), timeout=60)
        assert out.returncode == 2 and "rescue review init" in out.stderr, out.stderr
        assert not (tmp_path / "typo.db").exists(), command
    assert _rescue("init", "--db", str(tmp_path / "typo.db")).returncode == 0  # init creates it
    assert stat.S_IMODE((tmp_path / "typo.db").stat().st_mode) == 0o600
