"""The adjudicator's hands, in a real browser (Playwright driving Debian's chromium), at 1024x768,
1366x768, 200% zoom of 1366x768 and 3840x2160: the keys a person presses to decide the rows two
annotators disputed. It once took 26 keystrokes a row (22 Tabs, Space, 2 Tabs, Enter), and a link
to a row landed with the row under the sticky header and the focus on the page's body.

Screenshots go to test-artifacts/review/adjudicate-*.png.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.review.helpers import ARTIFACTS, CHROMIUM, FAMILY, SCREENS, Deployment, Page, demo_rows, make_assets

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium not installed"),
    pytest.mark.timeout(600),
]
pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")

SEGMENT = FAMILY[1]
FIRST_ROW = {"1024x768": 1, "1366x768": 5, "200pct": 9, "3840x2160": 13}
"""Each screen decides its own rows (a link to its first one opens the page)."""

LANDED = """(card) => {
    const r = card.getBoundingClientRect();
    const covers = [document.querySelector('.topbar'), document.getElementById('adj-player')]
        .filter((e) => e && getComputedStyle(e).position === 'sticky').map((e) => e.getBoundingClientRect().bottom);
    return {top: r.top, under: Math.max(0, ...covers), height: window.innerHeight, focused: document.activeElement === card};
}"""


@pytest.fixture(scope="module")
def site(sqlite_deployment: Deployment) -> Deployment:
    """SEGMENT with a video and row clips, reviewed in full by carol and dave in their own copies:
    dave's tone of voice differs on every row, his relation pattern on every client row."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    site = sqlite_deployment
    make_assets(site.assets, SEGMENT, demo_rows(SEGMENT), clip_rows=(1, 2, 3))
    admin = site.client("admin")
    assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [SEGMENT]}).status_code == 200
    key = admin.segments()[SEGMENT]["id"]
    for who in ("carol", "dave"):
        c = site.client(who)
        for r in c.get(f"/api/segments/{key}").json()["rows"]:
            row = c.get(f"/api/segments/{key}/rows/{r['row_index']}").json()
            fields: dict[str, Any] = {}
            if who == "dave":
                fields["tone_of_voice"] = f"dave's tone {r['row_index']}"
                if row["row"].get("relation_pattern"):
                    fields["relation_pattern"] = "escalation_conflict" if row["row"]["relation_pattern"] != "escalation_conflict" else "mutual_disengagement"
            resp = c.put(f"/api/segments/{key}/rows/{r['row_index']}", {"version": row["version"], "fields": fields, "reviewed": True})
            assert resp.status_code == 200, resp.text
    site.info["adjudicate"] = key
    return site


def _disputes(site: Deployment, key: str) -> dict[int, list[str]]:
    rows = site.client("admin").get(f"/api/segments/{key}/adjudication").json()["rows"]
    return {r["row_index"]: [d["field"] for d in r["disputes"]] for r in rows}


def _final(site: Deployment, key: str, n: int) -> dict[str, Any]:
    rows = site.client("admin").get(f"/api/segments/{key}/adjudication").json()["rows"]
    return next(r["final"] for r in rows if r["row_index"] == n)


@pytest.mark.parametrize("screen", list(SCREENS))
def test_disputed_rows_are_decided_by_keyboard_on_every_screen(browser: Any, site: Deployment, screen: str):
    key = site.info["adjudicate"]
    disputes = _disputes(site, key)
    first = FIRST_ROW[screen]
    two = next(n for n in range(first + 1, first + 4) if len(disputes[n]) == 2)  # a client row: tone and pattern
    p = Page(browser, site, "admin", **SCREENS[screen])
    page = p.page
    # a link to a row lands with the row in view below the sticky header and player, and focused
    p.goto(f"/segments/{key}/adjudicate#adj-{first}")
    card = page.locator(f"#adj-{first}")
    page.wait_for_function("(n) => document.activeElement && document.activeElement.id === 'adj-' + n", arg=first)
    where = card.evaluate(LANDED)
    assert where["focused"] and where["under"] <= where["top"] < where["height"] - 60, (screen, where)
    assert page.evaluate("document.documentElement.scrollWidth") <= SCREENS[screen]["viewport"]["width"]
    p.shot(f"adjudicate-landed-{screen}.png")
    # keys printed on every value: an annotator's digit, D the draft, O a value of one's own
    first_field = card.locator("tr[data-field]").first
    assert [k.strip() for k in first_field.locator("label.option kbd").all_inner_texts()][:2] == ["1", "2"]

    # 1 takes carol's value of every field the row disputes; Enter decides it and goes on
    keys = 0
    n = first
    while n < two:
        page.keyboard.press("1")
        page.keyboard.press("Enter")
        keys += 2
        final = _wait_final(site, key, n)
        assert final["reviewed"] and final["row"]["tone_of_voice"] != f"dave's tone {n}", (screen, n)
        n += 1
        page.wait_for_function("(n) => document.activeElement && document.activeElement.id === 'adj-' + n", arg=n)
    # a mixed row: carol's values, then the first field (Down from the row) from dave: 1, Down, 2, Enter
    assert len(disputes[two]) == 2
    page.keyboard.press("1")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("2")
    p.shot(f"adjudicate-mixed-{screen}.png")
    page.keyboard.press("Enter")
    final = _wait_final(site, key, two)
    assert final["reviewed"]
    assert (final["row"]["tone_of_voice"] == f"dave's tone {two}") == (disputes[two][0] == "tone_of_voice")
    carol = next(r for r in site.client("admin").get(f"/api/segments/{key}/adjudication").json()["rows"] if r["row_index"] == two)["draft"]  # she kept the draft
    assert (final["row"]["relation_pattern"] != carol["relation_pattern"]) == (disputes[two][0] == "relation_pattern")
    # the focus is on the next row to decide: N and P move between rows to decide, in one key each
    page.wait_for_function("(n) => document.activeElement && document.activeElement.id === 'adj-' + n", arg=two + 1)
    page.keyboard.press("n")
    page.wait_for_function("(n) => document.activeElement && document.activeElement.id === 'adj-' + n", arg=two + 2)
    where = page.locator(f"#adj-{two + 2}").evaluate(LANDED)
    assert where["under"] <= where["top"] < where["height"] - 60, (screen, where)
    page.keyboard.press("p")
    page.wait_for_function("(n) => document.activeElement && document.activeElement.id === 'adj-' + n", arg=two + 1)
    # D takes the draft; O a value of one's own, typed, and Enter decides
    page.keyboard.press("o")
    assert page.evaluate("document.activeElement.classList.contains('custom-value')")
    page.keyboard.press("Escape")  # back to its field; Up to the row
    page.keyboard.press("ArrowUp")
    assert page.evaluate("document.activeElement.id") == f"adj-{two + 1}"
    page.keyboard.press("d")
    page.keyboard.press("Enter")
    final = _wait_final(site, key, two + 1)
    rows = site.client("admin").get(f"/api/segments/{key}/adjudication").json()["rows"]
    draft = next(r for r in rows if r["row_index"] == two + 1)["draft"]
    assert final["reviewed"] and final["row"]["tone_of_voice"] == draft.get("tone_of_voice")
    per_row = (keys + 4) / (two - first + 1)
    assert per_row <= 4, per_row
    p.close()


def _wait_final(site: Deployment, key: str, n: int, tries: int = 50) -> dict[str, Any]:
    import time

    for _ in range(tries):
        final = _final(site, key, n)
        if final["reviewed"]:
            return final
        time.sleep(0.1)
    return final


def test_a_value_of_ones_own_is_typed_and_decided_with_enter(browser: Any, site: Deployment):
    key = site.info["adjudicate"]
    disputes = _disputes(site, key)
    n = next(r for r in sorted(disputes) if r >= 17 and disputes[r])
    p = Page(browser, site, "admin")
    page = p.page
    p.goto(f"/segments/{key}/adjudicate#adj-{n}")
    page.wait_for_function("(n) => document.activeElement && document.activeElement.id === 'adj-' + n", arg=n)
    page.keyboard.press("1")  # every field from carol, then the first one typed
    page.keyboard.press("ArrowDown")
    field = page.evaluate("document.activeElement.dataset.field")
    if field != "tone_of_voice":
        page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.field") == "tone_of_voice"
    page.keyboard.press("o")
    page.keyboard.press("Control+a")
    page.keyboard.type("low, then rising")
    page.keyboard.press("Enter")
    final = _wait_final(site, key, n)
    assert final["reviewed"] and final["row"]["tone_of_voice"] == "low, then rising"
    p.close()
