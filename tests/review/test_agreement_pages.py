"""The agreement page answers at once with its point estimates and fetches its intervals after; each
value with disagreeing rows behind it links to them, and they link to their rows on the adjudication
page, which links onward to the next segment to adjudicate (SQLite and PostgreSQL, a real server)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.review.helpers import COUPLE, DEMO, Client, fresh_database, setup_database, start_server

pytestmark = pytest.mark.timeout(600)
QUERY = {"resamples": "200", "bertscore": "false"}


def _review_all(c: Client, key: str, rows: int, changes: dict[int, dict[str, Any]]) -> None:
    for n in range(1, rows + 1):
        version = c.get(f"/api/segments/{key}/rows/{n}").json()["version"]
        resp = c.put(f"/api/segments/{key}/rows/{n}", {"version": version, "fields": changes.get(n, {}), "reviewed": True})
        assert resp.status_code == 200, resp.text


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Two couple segments reviewed in full, independently, by carol and dave; they disagree on row
    2's relation pattern of the first one only."""
    folder: Path = tmp_path_factory.mktemp(f"agreement-{request.param}")
    with fresh_database(request.param, folder) as url:
        setup_database(url, users={"admin": "admin", "carol": "annotator", "dave": "annotator"}, clips_file=DEMO)
        server = start_server(url, folder)
        try:
            admin = Client(server.base_url)
            assert admin.login("admin").status_code == 200
            assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": COUPLE[:2]}).status_code == 200
            segs = admin.segments()
            keys = [segs[s]["id"] for s in COUPLE[:2]]
            for who, pattern in (("carol", "attack_attack"), ("dave", "pursue_withdraw")):
                c = Client(server.base_url)
                assert c.login(who).status_code == 200
                _review_all(c, keys[0], segs[COUPLE[0]]["rows"], {2: {"relation_pattern": pattern}})
                _review_all(c, keys[1], segs[COUPLE[1]]["rows"], {})
            yield SimpleNamespace(server=server, url=url, admin=admin, keys=keys)
        finally:
            server.stop()


def _pending(page: str) -> str | None:
    found = re.search(r'id="agreement-pending"[^>]*data-full="([^"]+)"', page)
    return html.unescape(found.group(1)) if found else None


@pytest.mark.slow
def test_the_first_load_answers_with_point_estimates_and_the_page_fetches_the_rest(site: Any) -> None:
    admin = site.admin
    first = admin.get("/agreement", params=QUERY)
    assert first.status_code == 200
    full_url = _pending(first.text)
    assert full_url is not None and 'class="ci"' not in first.text  # no interval computed yet
    assert "Krippendorff" in first.text and 'data-field="relation_pattern"' in first.text  # the estimates are there
    full = admin.get(full_url)
    assert full.status_code == 200 and _pending(full.text) is None and 'class="ci"' in full.text
    again = admin.get("/agreement", params=QUERY)
    assert _pending(again.text) is None and 'class="ci"' in again.text  # computed once for this state
    # a change: the next load answers at once again
    dave = Client(site.server.base_url)
    assert dave.login("dave").status_code == 200
    version = dave.get(f"/api/segments/{site.keys[0]}/rows/5").json()["version"]
    assert dave.put(f"/api/segments/{site.keys[0]}/rows/5", {"version": version, "fields": {"tone_of_voice": "flat"}, "reviewed": True}).status_code == 200
    assert _pending(admin.get("/agreement", params=QUERY).text) is not None
    # with nothing to wait for (no resamples, no BERTScore) the page is whole at once
    assert _pending(admin.get("/agreement", params={"resamples": "0", "bertscore": "false"}).text) is None


def test_a_value_with_disagreeing_rows_links_to_them_and_they_to_the_adjudication_page(site: Any) -> None:
    admin = site.admin
    page = admin.get("/agreement", params={**QUERY, "full": "true"}).text
    row = re.search(r'<tr data-field="relation_pattern">(.*?)</tr>', page, re.S)
    assert row is not None
    link = re.search(r'<a href="(/agreement/rows\?field=relation_pattern&amp;scope=all)"', row.group(1))
    assert link is not None, row.group(1)
    agreed = re.search(r'<tr data-field="utterance_type">(.*?)</tr>', page, re.S)
    assert agreed is not None and "/agreement/rows" not in agreed.group(1)  # nothing disagrees: no link
    rows = admin.get(html.unescape(link.group(1)))
    assert rows.status_code == 200
    listed = re.findall(r'<tr data-segment="([^"]+)" data-row="(\d+)">', rows.text)
    assert listed == [(COUPLE[0], "2")], listed
    assert "Attack attack" in rows.text and "Pursue withdraw" in rows.text and "attack_attack" not in rows.text  # labels, not their keys
    target = f"/segments/{site.keys[0]}/adjudicate?show=all#adj-2"
    assert f'href="{target}"' in rows.text
    adjudicate = admin.get(target.split("#")[0])
    assert adjudicate.status_code == 200 and 'id="adj-2"' in adjudicate.text
    assert admin.get("/agreement/rows", params={"field": "no_such_measure"}).status_code == 404
    carol = Client(site.server.base_url)
    assert carol.login("carol").status_code == 200
    assert carol.get(html.unescape(link.group(1))).status_code == 403


def test_the_adjudication_page_links_onward(site: Any) -> None:
    admin = site.admin
    first = admin.get(f"/segments/{site.keys[0]}/adjudicate").text
    assert f'href="/segments/{site.keys[1]}/adjudicate"' in first and "Next segment to adjudicate" in first
    second = admin.get(f"/segments/{site.keys[1]}/adjudicate").text
    assert f'href="/segments/{site.keys[0]}/adjudicate"' in second
    # the second segment adjudicated: the first one has nowhere onward but the dashboard
    accepted = admin.post(f"/api/segments/{site.keys[1]}/adjudication/accept-agreed")
    assert accepted.status_code == 200 and accepted.json()["accepted"] > 0
    first = admin.get(f"/segments/{site.keys[0]}/adjudicate").text
    assert "Next segment to adjudicate" not in first and "No other segment is ready to adjudicate" in first
    assert 'id="adj-onward"' in first and 'href="/"' in first
    dashboard = re.sub(r"<[^>]+>", "", admin.get("/").text)  # the adjudicated segment is the one segment done (as read)
    assert "1 segment done" in dashboard and "1 segments" not in dashboard
