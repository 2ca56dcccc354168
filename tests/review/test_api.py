"""The JSON API and pages against a real server, on SQLite and on PostgreSQL.

Auth, CSRF, access rules, saves with optimistic versioning (409), the audit log, export round trip,
XSS, media (range requests, traversal, symlink escape) and login throttling stored in the database.
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import quote, urlsplit

import pytest
from sqlalchemy import select

from rescue_bench.review.db import Database
from rescue_bench.review.models import LoginThrottle
from tests.review.helpers import COUPLE, FAMILY, PASSWORD, Client, Deployment, fresh_database, setup_database

pytestmark = pytest.mark.timeout(600)


def row_url(seg: dict, n: int) -> str:
    return f"/api/segments/{seg['id']}/rows/{n}"


# ------------------------------------------------------------------------------------------------
# log in, sessions, CSRF
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_login_sets_an_httponly_samesite_cookie_and_returns_the_csrf_token(deployment: Deployment):
    c = Client(deployment.server.base_url)
    resp = c.login("alice")
    assert resp.status_code == 200
    body = resp.json()
    assert set(body) >= {"csrf_token"} and len(body["csrf_token"]) >= 32
    cookie = resp.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie.replace("Lax", "lax") and "Path=/" in cookie
    assert PASSWORD not in cookie
    assert c.get("/api/me").json()["username"] == "alice"


def test_wrong_credentials_are_401_and_unauthenticated_requests_are_refused(deployment: Deployment):
    c = Client(deployment.server.base_url)
    assert c.login("alice", "wrong password").status_code == 401
    assert c.login("nobody-at-all", "whatever").status_code == 401
    assert c.get("/api/segments").status_code == 401
    page = c.get("/")
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    # a forged or tampered cookie is no session
    c.http.cookies.set("rescue_review", "eyJ1IjoxfQ.forged.signature")
    assert c.get("/api/segments").status_code == 401


def test_every_unsafe_request_needs_the_csrf_header(deployment: Deployment):
    c = deployment.client("alice")
    seg = c.segments()[COUPLE[0]]
    state = c.get(row_url(seg, 1)).json()
    body = {"version": state["version"], "fields": {"tone_of_voice": "csrf probe"}}
    no_header = c.http.put(row_url(seg, 1), json=body)
    assert no_header.status_code == 403 and "X-CSRF-Token" in no_header.json()["detail"]
    wrong = c.http.put(row_url(seg, 1), json=body, headers={"X-CSRF-Token": "not-the-token"})
    assert wrong.status_code == 403
    assert c.http.post(f"/api/segments/{seg['id']}/comments", json={"text": "x"}).status_code == 403
    assert c.http.post(f"/api/segments/{seg['id']}/discard", json={"reason": "x"}).status_code == 403
    assert c.http.post("/api/logout").status_code == 403
    # another user's token does not work with this session
    other = deployment.client("bob")
    assert c.http.put(row_url(seg, 1), json=body, headers={"X-CSRF-Token": other.csrf or ""}).status_code == 403
    # a cross-site origin is refused even with the token
    assert c.put(row_url(seg, 1), body, headers={"Origin": "https://evil.example"}).status_code == 403
    # and so is this host under another scheme (an https page is another origin of an http server)
    netloc = urlsplit(deployment.server.base_url).netloc
    assert c.put(row_url(seg, 1), body, headers={"Origin": f"https://{netloc}"}).status_code == 403
    assert c.put(row_url(seg, 1), body, headers={"Origin": f"ftp://{netloc}"}).status_code == 403
    # nothing was applied
    assert c.get(row_url(seg, 1)).json()["version"] == state["version"]
    # with the token it works
    assert c.put(row_url(seg, 1), body).status_code == 200


def test_login_accepts_json_only_from_the_same_origin(deployment: Deployment):
    c = Client(deployment.server.base_url)
    form = c.http.post("/api/login", content=f"username=alice&password={quote(PASSWORD)}", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert form.status_code == 403
    plain = c.http.post("/api/login", content=json.dumps({"username": "alice", "password": PASSWORD}), headers={"Content-Type": "text/plain"})
    assert plain.status_code == 403
    cross = c.http.post("/api/login", json={"username": "alice", "password": PASSWORD}, headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403


def test_logout_ends_the_session_everywhere(deployment: Deployment):
    a = deployment.client("carol")
    b = deployment.client("carol")  # a second browser of the same user
    assert a.post("/api/logout").status_code == 204
    assert a.get("/api/segments").status_code == 401
    assert b.get("/api/segments").status_code == 401
    # stolen cookie replay after logout
    c = Client(deployment.server.base_url)
    c.http.cookies = b.http.cookies
    assert c.get("/api/me").status_code == 401


# ------------------------------------------------------------------------------------------------
# access rules
# ------------------------------------------------------------------------------------------------


def test_annotators_see_and_edit_only_their_segments(deployment: Deployment):
    admin = deployment.client("admin")
    all_segments = admin.segments()
    assert set(all_segments) == set(COUPLE + FAMILY)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", s["id"]) for s in all_segments.values())
    alice = deployment.client("alice")
    assert set(alice.segments()) == set(COUPLE[:3])
    carol = deployment.client("carol")
    assert carol.segments() == {}
    foreign = all_segments[FAMILY[0]]  # bob's, not alice's
    assert alice.get(f"/api/segments/{foreign['id']}").status_code == 404
    assert alice.get(row_url(foreign, 1)).status_code == 404
    assert alice.put(row_url(foreign, 1), {"version": 0, "fields": {"tone_of_voice": "x"}}).status_code == 404
    assert alice.post(f"/api/segments/{foreign['id']}/comments", {"text": "x"}).status_code == 404
    assert alice.post(f"/api/segments/{foreign['id']}/discard", {"reason": "x"}).status_code == 404
    assert alice.get(f"/segments/{foreign['id']}").status_code == 404
    assert alice.get(f"/segments/{foreign['id']}/rows/1").status_code == 404
    assert alice.get("/api/export").status_code == 403
    assert alice.get("/api/audit").status_code == 403
    assert alice.put(f"/api/segments/{foreign['id']}/assignees", {"usernames": ["alice"]}).status_code == 403
    # admins reach everything and assign
    assert admin.get(row_url(foreign, 1)).status_code == 200
    resp = admin.put(f"/api/segments/{foreign['id']}/assignees", {"usernames": ["bob", "carol"]})
    assert resp.status_code == 200 and resp.json()["assignees"] == ["bob", "carol"]
    assert FAMILY[0] in carol.segments()
    assert admin.put(f"/api/segments/{foreign['id']}/assignees", {"usernames": ["bob"]}).status_code == 200
    assert carol.segments() == {}


# ------------------------------------------------------------------------------------------------
# saving, versions, audit
# ------------------------------------------------------------------------------------------------


def test_save_bumps_the_version_keeps_the_draft_and_audits_every_field(deployment: Deployment):
    alice = deployment.client("alice")
    seg = alice.segments()[COUPLE[1]]
    before = alice.get(row_url(seg, 2)).json()
    assert before["status"] == "pending" and before["row"] == before["draft"]
    emotions = [{"person": before["row"]["primary_speaker"], "emotion_description": "hurt and tired", "intensity": 9}]
    pattern = next(p for p in ("attack_attack", "withdraw_withdraw") if p != before["draft"].get("relation_pattern"))
    resp = alice.put(row_url(seg, 2), {"version": before["version"], "fields": {"internal_emotion": emotions, "relation_pattern": pattern}})
    assert resp.status_code == 200, resp.text
    after = resp.json()
    assert after["version"] == before["version"] + 1
    assert after["row"]["internal_emotion"] == emotions and after["row"]["relation_pattern"] == pattern
    assert after["draft"] == before["draft"]
    assert after["status"] == "edited" and after["updated_by"] == "alice"
    again = alice.get(row_url(seg, 2)).json()
    assert again["row"] == after["row"] and again["version"] == after["version"]
    audit = alice.get(row_url(seg, 2) + "/audit").json()
    edits = {e["field"]: e for e in audit if e["action"] == "edit" and e["version"] == after["version"]}
    assert set(edits) == {"internal_emotion", "relation_pattern"}
    assert edits["relation_pattern"]["old"] == before["draft"].get("relation_pattern")
    assert edits["relation_pattern"]["new"] == pattern
    assert edits["internal_emotion"]["old"] == before["draft"]["internal_emotion"]
    assert all(e["user"] == "alice" for e in edits.values())
    # a save that changes nothing does not create a version
    same = alice.put(row_url(seg, 2), {"version": after["version"], "fields": {"relation_pattern": pattern}})
    assert same.status_code == 200 and same.json()["version"] == after["version"]
    # marking reviewed is its own audited change
    rev = alice.put(row_url(seg, 2), {"version": after["version"], "fields": {}, "reviewed": True})
    assert rev.status_code == 200 and rev.json()["status"] == "reviewed" and rev.json()["reviewed_by"] == "alice"
    assert any(e["action"] == "review" and e["new"] is True for e in alice.get(row_url(seg, 2) + "/audit").json())


def test_a_stale_save_is_refused_with_the_current_row_and_never_applied(deployment: Deployment):
    alice, bob = deployment.client("alice"), deployment.client("bob")
    seg = alice.segments()[COUPLE[0]]  # shared by alice and bob
    start = alice.get(row_url(seg, 4)).json()
    first = bob.put(row_url(seg, 4), {"version": start["version"], "fields": {"tone_of_voice": "bob's tone"}})
    assert first.status_code == 200
    stale = alice.put(row_url(seg, 4), {"version": start["version"], "fields": {"tone_of_voice": "alice's tone", "utterance_type": "request"}})
    assert stale.status_code == 409
    body = stale.json()
    assert body["version"] == first.json()["version"]
    assert body["row"]["tone_of_voice"] == "bob's tone" and body["updated_by"] == "bob"
    now = alice.get(row_url(seg, 4)).json()
    assert now["row"]["tone_of_voice"] == "bob's tone"
    assert now["row"].get("utterance_type") == start["row"].get("utterance_type")
    # merging: alice resends on top of bob's version and both changes are kept
    merged = alice.put(row_url(seg, 4), {"version": body["version"], "fields": {"utterance_type": "request"}})
    assert merged.status_code == 200
    assert merged.json()["row"]["tone_of_voice"] == "bob's tone" and merged.json()["row"]["utterance_type"] == "request"


def test_bad_values_are_refused_with_the_field_named(deployment: Deployment):
    alice = deployment.client("alice")
    seg = alice.segments()[COUPLE[2]]
    v = alice.get(row_url(seg, 1)).json()["version"]
    bad = alice.put(row_url(seg, 1), {"version": v, "fields": {"internal_emotion": [{"person": "X", "intensity": "seven"}]}})
    assert bad.status_code == 422 and bad.json()["field"] == "internal_emotion"
    unknown = alice.put(row_url(seg, 1), {"version": v, "fields": {"no_such_field": 1}})
    assert unknown.status_code == 422 and "no_such_field" in unknown.json()["detail"]
    assert alice.put(row_url(seg, 1), {"version": "3", "fields": {}}).status_code == 422
    assert alice.get(row_url(seg, 99)).status_code == 404
    assert alice.get(row_url(seg, 1)).json()["version"] == v


def test_discard_and_restore_with_a_reason(deployment: Deployment):
    bob = deployment.client("bob")
    seg = bob.segments()[FAMILY[0]]
    assert bob.post(f"/api/segments/{seg['id']}/discard", {"reason": ""}).status_code == 422
    resp = bob.post(f"/api/segments/{seg['id']}/discard", {"reason": "audio unusable"})
    assert resp.status_code == 200 and resp.json()["status"] == "discarded"
    listed = bob.segments()[FAMILY[0]]
    assert listed["status"] == "discarded" and listed["status_reason"] == "audio unusable"
    v = bob.get(row_url(seg, 1)).json()["version"]
    assert bob.put(row_url(seg, 1), {"version": v, "fields": {"tone_of_voice": "x"}}).status_code == 423
    admin = deployment.client("admin")
    exported = [json.loads(line)["sample_id"] for line in admin.get("/api/export").text.splitlines()]
    assert FAMILY[0] not in exported
    with_discarded = [json.loads(line)["sample_id"] for line in admin.get("/api/export?include_discarded=true").text.splitlines()]
    assert FAMILY[0] in with_discarded
    progress = admin.get("/api/progress").json()["totals"]
    assert progress["segments_discarded"] >= 1
    assert bob.post(f"/api/segments/{seg['id']}/restore").status_code == 200
    assert bob.segments()[FAMILY[0]]["status"] == "open"
    actions = [e["action"] for e in admin.get("/api/audit").json() if e["segment"] == FAMILY[0]]
    assert "discard" in actions and "restore" in actions


def test_comments_and_progress_figures(deployment: Deployment):
    alice = deployment.client("alice")
    seg = alice.segments()[COUPLE[2]]
    assert alice.post(f"/api/segments/{seg['id']}/comments", {"text": "check row 3 timing", "row": 3}).status_code == 201
    assert alice.post(f"/api/segments/{seg['id']}/comments", {"text": "segment looks fine"}).status_code == 201
    comments = alice.get(f"/api/segments/{seg['id']}/comments").json()
    assert [(c["row"], c["text"], c["user"]) for c in comments[-2:]] == [(3, "check row 3 timing", "alice"), (None, "segment looks fine", "alice")]
    v = alice.get(row_url(seg, 1)).json()["version"]
    assert alice.put(row_url(seg, 1), {"version": v, "fields": {}, "reviewed": True}).status_code == 200
    mine = alice.get("/api/progress").json()
    assert "annotators" not in mine
    assert mine["totals"]["segments"] == 3 and mine["totals"]["segments_commented"] >= 1
    assert mine["totals"]["rows_reviewed"] >= 1
    assert mine["totals"]["rows_reviewed"] + mine["totals"]["rows_remaining"] == mine["totals"]["rows"]
    admin = deployment.client("admin").get("/api/progress").json()
    per = {a["username"]: a for a in admin["annotators"]}
    assert per["alice"]["segments"] == 3 and per["alice"]["comments"] >= 2 and per["alice"]["reviewed_by_them"] >= 1
    assert per["carol"]["segments"] == 0
    assert admin["totals"]["files"] == 1 and admin["totals"]["segments"] == 9


# ------------------------------------------------------------------------------------------------
# export
# ------------------------------------------------------------------------------------------------


def test_export_takes_reviewed_human_values_and_round_trips_byte_for_byte(deployment: Deployment, tmp_path):
    dave = deployment.client("dave")
    segs = dave.segments()
    seg_a, seg_b = segs[COUPLE[3]], segs[COUPLE[4]]
    a = dave.get(row_url(seg_a, 2)).json()
    reviewed = dave.put(row_url(seg_a, 2), {"version": a["version"], "fields": {"tone_of_voice": "EXPORTED TONE"}, "reviewed": True})
    assert reviewed.status_code == 200
    b = dave.get(row_url(seg_b, 2)).json()
    assert dave.put(row_url(seg_b, 2), {"version": b["version"], "fields": {"tone_of_voice": "UNREVIEWED TONE"}}).status_code == 200
    text = deployment.client("admin").get("/api/export").text
    clips = {json.loads(line)["sample_id"]: json.loads(line) for line in text.splitlines()}
    assert clips[COUPLE[3]]["rows"][1]["tone_of_voice"] == "EXPORTED TONE"
    assert clips[COUPLE[4]]["rows"][1]["tone_of_voice"] == b["draft"]["tone_of_voice"]
    # export -> import -> export is identical
    first = tmp_path / "first.jsonl"
    first.write_text(text, encoding="utf-8")
    with fresh_database(deployment.backend, tmp_path) as url:
        setup_database(url, users={}, clips_file=first)
        from rescue_bench.review.store import export_lines

        db = Database(url)
        with db.read() as session:
            second = "".join(export_lines(session))
        db.dispose()
    assert second == text


# ------------------------------------------------------------------------------------------------
# XSS
# ------------------------------------------------------------------------------------------------

XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def test_markup_in_a_field_is_escaped_on_every_page(deployment: Deployment):
    alice = deployment.client("alice")
    seg = alice.segments()[COUPLE[2]]
    v = alice.get(row_url(seg, 5)).json()["version"]
    resp = alice.put(row_url(seg, 5), {"version": v, "fields": {"dialogue_cleaned": XSS, "tone_of_voice": "</script><b>x"}})
    assert resp.status_code == 200
    alice.post(f"/api/segments/{seg['id']}/comments", {"text": XSS, "row": 5})
    for page in (f"/segments/{seg['id']}/rows/5", f"/segments/{seg['id']}/rows/4", f"/segments/{seg['id']}", "/"):
        html = alice.get(page).text
        assert "<script>window.__xss" not in html, page
        assert "<img src=x" not in html, page
        assert "</script><b>" not in html, page
        assert "&lt;script&gt;" in html or "\\u003cscript\\u003e" in html or page == "/", page
    row_page = alice.get(f"/segments/{seg['id']}/rows/5")
    csp = row_page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert row_page.headers["x-frame-options"] == "DENY" and row_page.headers["x-content-type-options"] == "nosniff"


# ------------------------------------------------------------------------------------------------
# media: range requests, traversal, symlink escape
# ------------------------------------------------------------------------------------------------


def test_row_clips_are_served_with_range_requests(deployment: Deployment):
    alice = deployment.client("alice")
    seg = alice.segments()[COUPLE[0]]
    full = alice.get(f"/media/{seg['id']}/rows/2.mp4")
    assert full.status_code == 200 and full.headers["content-type"] == "video/mp4"
    assert full.headers.get("accept-ranges") == "bytes" and len(full.content) > 1000
    part = alice.get(f"/media/{seg['id']}/rows/2.mp4", headers={"Range": "bytes=100-299"})
    assert part.status_code == 206
    assert part.headers["content-range"] == f"bytes 100-299/{len(full.content)}"
    assert part.content == full.content[100:300]
    assert alice.get(f"/media/{seg['id']}/rows/2.jpg").headers["content-type"] == "image/jpeg"
    assert alice.get(f"/media/{seg['id']}/video").status_code == 200
    # the row page shows the clip; a row without one says so
    assert f"/media/{seg['id']}/rows/2.mp4" in alice.get(f"/segments/{seg['id']}/rows/2").text
    no_clip = alice.get(f"/segments/{deployment.client('alice').segments()[COUPLE[2]]['id']}/rows/2").text
    assert 'id="no-video"' in no_clip
    # media of a segment the user may not see
    foreign = deployment.client("admin").segments()[FAMILY[0]]
    assert alice.get(f"/media/{foreign['id']}/video").status_code == 404
    assert Client(deployment.server.base_url).get(f"/media/{seg['id']}/rows/2.mp4").status_code == 303


def test_media_never_leaves_the_assets_folder(deployment: Deployment):
    alice = deployment.client("alice")
    segs = alice.segments()
    seg = segs[COUPLE[0]]
    secret = "top secret"
    probes = [
        f"/media/{seg['id']}/rows/3.mp4",  # a symlink to a file outside the assets folder
        f"/media/{segs[COUPLE[1]]['id']}/video",  # a manifest whose video is ../outside-secret.txt
        f"/media/{seg['id']}/rows/..%2F..%2F..%2Foutside-secret.txt",
        f"/media/{seg['id']}/rows/%2e%2e%2f%2e%2e%2foutside-secret.txt.mp4",
        f"/media/{quote('../' * 6 + 'etc/passwd', safe='')}/video",
        "/media/..%2F..%2Fetc%2Fpasswd/video",
        "/static/..%2F..%2F..%2F..%2Fetc%2Fpasswd",
        "/static/%2e%2e/%2e%2e/review.db",
    ]
    for path in probes:
        resp = alice.http.get(path)
        assert resp.status_code in (303, 400, 404, 405, 422), (path, resp.status_code)
        assert secret not in resp.text and "root:" not in resp.text, path
    # the secret file really exists and is reachable through the symlink on disk
    assert (deployment.assets / COUPLE[0] / "rows" / "3.mp4").read_text() == secret


# ------------------------------------------------------------------------------------------------
# login throttling (kept in the database)
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_repeated_failed_logins_are_slowed_down_and_the_lock_lives_in_the_database(deployment: Deployment):
    c = Client(deployment.server.base_url)
    codes = [c.login("dave", f"bad guess {i}").status_code for i in range(5)]
    assert codes == [401] * 5
    locked = c.login("dave", "bad guess 6")
    assert locked.status_code == 401  # the 6th failure is counted and starts the lock
    refused = c.login("dave")  # even the right password is refused while locked
    assert refused.status_code == 429
    wait = int(refused.headers["retry-after"])
    assert wait >= 1
    db = Database(deployment.db_url)
    with db.read() as session:
        row = session.scalars(select(LoginThrottle).where(LoginThrottle.key == "user:dave@127.0.0.1")).one()
        assert row.failures == 6 and row.locked_until is not None
    db.dispose()
    # other users are not locked out
    assert Client(deployment.server.base_url).login("alice").status_code == 200
    time.sleep(wait + 0.5)
    assert c.login("dave").status_code == 200
    db = Database(deployment.db_url)
    with db.read() as session:
        assert session.get(LoginThrottle, "user:dave@127.0.0.1") is None
    db.dispose()


# ------------------------------------------------------------------------------------------------
# pages and the OpenAPI page
# ------------------------------------------------------------------------------------------------


def test_pages_render_for_admins_and_annotators(deployment: Deployment):
    admin = deployment.client("admin")
    dash = admin.get("/")
    assert dash.status_code == 200
    for text in ("prepared files", "rows reviewed", "rows remaining", "commented segments", "discarded segments", 'id="annotators"'):
        assert text in dash.text
    alice = deployment.client("alice")
    dash = alice.get("/")
    assert 'id="annotators"' not in dash.text and COUPLE[0] in dash.text and FAMILY[0] not in dash.text
    seg = alice.segments()[COUPLE[0]]
    page = alice.get(f"/segments/{seg['id']}")
    assert page.status_code == 200 and 'id="segment-video"' in page.text and page.text.count('class="clickable"') == seg["rows"]
    row = alice.get(f"/segments/{seg['id']}/rows/2")
    assert row.status_code == 200
    data = json.loads(re.search(r'<script type="application/json" id="page-data">(.*?)</script>', row.text, re.S).group(1))
    assert data["position"] == 2 and data["row"]["row_index"] == 2
    assert '<option value="pursue_withdraw"' in row.text and '<option value="goal_align"' in row.text
    assert "cue 2:" in row.text  # subtitles from the manifest's cues


def test_openapi_page_is_served_without_any_cdn(deployment: Deployment):
    c = deployment.client("admin")  # admins only (test_hostile.py::test_api_docs_are_for_admins_only)
    spec = c.get("/api/openapi.json").json()
    for path in ("/api/login", "/api/segments", "/api/segments/{segment}/rows/{row_index}", "/api/export"):
        assert path in spec["paths"], path
    assert "409" in spec["paths"]["/api/segments/{segment}/rows/{row_index}"]["put"]["responses"]
    docs = c.get("/api/docs").text
    assert "swagger-ui-bundle.js" in docs
    assert not re.search(r"""(src|href)=["']https?://""", docs)
    assert c.get("/api/docs-static/swagger-ui-bundle.js").status_code == 200
