"""Progress that counts the annotators' own copies (on SQLite and PostgreSQL): two annotators who
submitted rows in their independent copies must show, per annotator and per copy, and every row once
as reviewed / awaiting adjudication / conflicting / discarded / pending (as Argilla shows a queue)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.review.helpers import COUPLE, FAMILY, Deployment

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

SEG = COUPLE[5]


def _put(client: Any, key: str, n: int, **body: Any) -> dict[str, Any]:
    version = client.get(f"/api/segments/{key}/rows/{n}").json()["version"]
    resp = client.put(f"/api/segments/{key}/rows/{n}", {"version": version, **body})
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def _segment(progress: dict[str, Any], key: str) -> dict[str, Any]:
    return next(s for s in progress["segments"] if s["id"] == key)


def test_the_annotators_copies_count_per_annotator_per_copy_and_per_row(deployment: Deployment):
    admin = deployment.client("admin")
    assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [SEG]}).status_code == 200
    key = admin.segments()[SEG]["id"]
    rows = admin.get(f"/api/segments/{key}").json()["rows"]
    n = len(rows)
    before = admin.get("/api/progress").json()
    seg = _segment(before, key)
    assert seg["final"] == {"rows": n, "reviewed": 0, "awaiting": 0, "conflicting": 0, "discarded": 0, "pending": n}
    assert {c["user"]: c["counts"]["pending"] for c in seg["copies"]} == {"carol": n, "dave": n}
    carol, dave = deployment.client("carol"), deployment.client("dave")
    for who, pattern in ((carol, "attack_attack"), (dave, "withdraw_withdraw")):
        _put(who, key, 1, reviewed=True)  # both keep the draft: agreed
        _put(who, key, 2, fields={"relation_pattern": pattern}, reviewed=True)  # they differ: a conflict
        _put(who, key, 3, fields={"tone_of_voice": "low"}, reviewed=True)  # the same edit: agreed
        _put(who, key, 5, flag={"state": "discarded", "reason": "crosstalk"})  # both discard it
    _put(carol, key, 4, flag={"state": "skipped", "reason": "ask"})
    _put(dave, key, 4, flag={"state": "discarded", "reason": "noise"})  # one discard: still pending
    _put(carol, key, 6, fields={"tone_of_voice": "saved, not submitted"})
    after = admin.get("/api/progress").json()
    per = {a["username"]: a["progress"] for a in after["annotators"]}
    assert per["carol"] == {"rows": n, "submitted": 3, "draft": 1, "skipped": 1, "discarded": 1, "pending": n - 6}
    dave_rows = sum(s["rows"] for s in dave.get("/api/progress").json()["segments"])  # two shared segments too
    assert per["dave"] == {"rows": dave_rows, "submitted": 3, "draft": 0, "skipped": 0, "discarded": 2, "pending": dave_rows - 5}
    seg = _segment(after, key)
    assert {c["user"]: c["counts"]["submitted"] for c in seg["copies"]} == {"carol": 3, "dave": 3}
    assert seg["reviewed"] == 0  # the final copy: nothing adjudicated yet
    assert seg["final"] == {"rows": n, "reviewed": 0, "awaiting": 2, "conflicting": 1, "discarded": 1, "pending": n - 4}
    total = after["rows"]
    assert total["conflicting"] == 1 and total["awaiting"] == 2
    assert total["rows"] == sum(s["rows"] for s in after["segments"])
    # adjudicating the conflict makes it reviewed
    version = admin.get(f"/api/segments/{key}/rows/2").json()["version"]
    assert admin.put(f"/api/segments/{key}/rows/2/adjudication", {"version": version, "take": {"relation_pattern": "carol"}}).status_code == 200
    seg = _segment(admin.get("/api/progress").json(), key)
    assert (seg["final"]["conflicting"], seg["final"]["reviewed"], seg["reviewed"]) == (0, 1, 1)
    # an annotator polls the same endpoint: their own segments and totals, nothing of the others'
    mine = carol.get("/api/progress").json()
    assert set(mine) == {"totals", "segments"}
    assert [s["id"] for s in mine["segments"]] == [key] and "copies" not in mine["segments"][0]
    assert mine["segments"][0]["reviewed"] == 3  # her own copy


def test_a_segment_every_annotator_finished_reads_the_same_on_its_page_the_dashboard_and_the_tiles(deployment: Deployment):
    """It read "19 (0 reviewed) · pending" on its page and "to adjudicate" on the dashboard, beside a
    "rows reviewed (final copy) 0" tile: one word, one meaning."""
    import re

    admin = deployment.client("admin")
    seg_id = FAMILY[2]
    assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [seg_id]}).status_code == 200
    key = admin.segments()[seg_id]["id"]
    n = len(admin.get(f"/api/segments/{key}").json()["rows"])
    carol, dave = deployment.client("carol"), deployment.client("dave")
    for who in (carol, dave):
        for i in range(1, n + 1):
            _put(who, key, i, fields={"tone_of_voice": "flat" if who is carol or i != 2 else "sharp"}, reviewed=True)

    def text(path: str) -> str:
        return " ".join(re.sub(r"<[^>]+>", " ", admin.get(path).text).split())

    listed = admin.segments()[seg_id]
    assert (listed["progress"], listed["reviewed"]) == ("to_adjudicate", 0)
    page = text(f"/segments/{key}")
    assert f"Rows {n} (0 reviewed); submitted: carol {n}/{n}, dave {n}/{n}" in page
    assert "Status to adjudicate" in page and "Status pending" not in page
    assert page.count("to adjudicate: conflicting") == 1 and page.count("to adjudicate: alike") == n - 1
    dashboard = text("/")
    tile = re.search(r"(\d+) rows reviewed · submitted, to adjudicate: (\d+) alike, (\d+) conflicting", dashboard)
    progress = admin.get("/api/progress").json()
    assert tile and [int(x) for x in tile.groups()] == [progress["totals"]["rows_reviewed"], progress["rows"]["awaiting"], progress["rows"]["conflicting"]]
    assert re.search(rf"carol {n} ?/{n} submitted", dashboard)
    # decided: reviewed everywhere, and done
    assert admin.post(f"/api/segments/{key}/adjudication/accept-agreed").json()["accepted"] == n - 1
    version = admin.get(f"/api/segments/{key}/rows/2").json()["version"]
    assert admin.put(f"/api/segments/{key}/rows/2/adjudication", {"version": version, "take": {"tone_of_voice": "dave"}}).status_code == 200
    page = text(f"/segments/{key}")
    assert f"Rows {n} ({n} reviewed)" in page and "Status done" in page and "to adjudicate" not in page
    assert admin.segments()[seg_id]["progress"] == "done"
