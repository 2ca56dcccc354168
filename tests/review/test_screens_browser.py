"""The annotator's hands on every screen, in a real browser (Playwright driving Debian's chromium):
each test is the keys a person presses, at 1024x768, 1366x768, 200% zoom of 1366x768 and 3840x2160.
The misuses they replay once lost work or a keystroke's meaning:

- at 1024 wide and at 200% zoom, Ctrl+Enter never marked a row reviewed: the field it scrolled to
  stayed under the sticky toolbar, "not in view" for ever;
- Alt+C pressed in a text field of the form left the focus there, and the comment typed next went
  into the row's Dialogue;
- an unfinished comment was gone after leaving the row and coming back;
- Ctrl+Enter discarded a row in the skip dialog and confirmed everywhere else.

Screenshots go to test-artifacts/review/screens-*.png.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.review.helpers import ARTIFACTS, CHROMIUM, COUPLE, SCREENS, Deployment, Page

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium not installed"),
    pytest.mark.timeout(600),
]
pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")

FIRST_ROW = {"1024x768": 3, "1366x768": 7, "200pct": 11, "3840x2160": 15}
"""Each screen's session starts on its own row of COUPLE[0] (it has a segment video) and takes three."""

MARKED_IN_VIEW = """() => {
    const bar = document.querySelector('.toolbar').getBoundingClientRect().bottom;
    const top = Math.max(bar, 0), bottom = window.innerHeight;
    return [...document.querySelectorAll('.field.unseen')].filter((f) => {
        const r = f.getBoundingClientRect();
        return r.height > 0 && Math.min(r.bottom, bottom) - Math.max(r.top, top) >= Math.min(r.height, (bottom - top) / 2);
    }).map((f) => f.dataset.field);
}"""
"""The fields on screen (below the toolbar) still marked "was not in view"."""


@pytest.fixture(scope="module")
def site(sqlite_deployment: Deployment) -> Deployment:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return sqlite_deployment


def _moved(page: Any, url: str, timeout: float = 1500) -> bool:
    from playwright.sync_api import TimeoutError as StillThere

    try:
        page.wait_for_url(lambda now: now != url, timeout=timeout)
        page.wait_for_selector("#row-form:focus")
        return True
    except StillThere:
        return False


def _confirm(page: Any, screen: str, shot: bool = False) -> int:
    """Ctrl+Enter until the row moves on (the presses it took); after every press held back, no field
    on screen still carries its "was not in view" mark."""
    url = page.url
    for n in range(1, 16):
        page.keyboard.press("Control+Enter")
        if _moved(page, url):
            return n
        assert page.evaluate(MARKED_IN_VIEW) == [], (screen, n)
        if shot and n == 1:
            page.screenshot(path=str(ARTIFACTS / f"screens-confirm-{screen}.png"))
    raise AssertionError(f"{screen}: Ctrl+Enter never moved on from {url}")


@pytest.mark.parametrize("screen", list(SCREENS))
def test_a_keyboard_session_on_every_screen(browser: Any, site: Deployment, screen: str):
    key = site.segment_key(COUPLE[0])
    api = site.client("alice")
    first = FIRST_ROW[screen]
    p = Page(browser, site, "alice", **SCREENS[screen])
    page = p.page
    width = SCREENS[screen]["viewport"]["width"]
    p.goto(f"/segments/{key}/rows/{first}")
    page.wait_for_load_state("load")
    # the clip beside the form where the width allows it, else above it; nothing scrolls sideways
    clip, form = page.locator("#row-video").bounding_box(), page.locator("#row-form").bounding_box()
    if width >= 1024:
        assert clip["x"] + clip["width"] <= form["x"] and clip["y"] < form["y"] + 200, (screen, clip, form)
    else:
        assert clip["y"] + clip["height"] <= form["y"] and form["y"] < 384, (screen, clip, form)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    p.shot(f"screens-arrival-{screen}.png")

    # 1. the draft is right: Ctrl+Enter, again while it shows fields not yet in view
    presses = _confirm(page, screen, shot=True)
    assert presses <= 8, (screen, presses)
    assert api.get(f"/api/segments/{key}/rows/{first}").json()["reviewed"]

    # 2. fix the relation label: Alt+J to its list, the label's printed letter, then confirm
    page.wait_for_url(f"**/rows/{first + 1}")
    relation = "#f-relation_cycle_state" if page.locator("#f-primary_speaker").input_value() == "Therapist" else "#f-relation_pattern"
    for _ in range(4):
        page.keyboard.press("Alt+KeyJ")
        if page.evaluate("document.activeElement.id") == relation[1:]:
            break
    assert page.evaluate("document.activeElement.id") == relation[1:], screen
    new = "attack_attack" if page.locator(relation).input_value() != "attack_attack" else "withdraw_withdraw"
    page.keyboard.press("a" if new == "attack_attack" else "w")
    _confirm(page, screen)
    saved = api.get(f"/api/segments/{key}/rows/{first + 1}").json()
    assert saved["reviewed"] and new in (saved["row"].get("relation_pattern"), saved["row"].get("relation_cycle_state"))

    # 3. in a text field of the form, Alt+C goes to the comment box: the comment typed next is a
    #    comment, and the field keeps what it held
    page.wait_for_url(f"**/rows/{first + 2}")
    row = api.get(f"/api/segments/{key}/rows/{first + 2}").json()
    page.focus("#f-dialogue_cleaned")
    page.keyboard.press("Alt+KeyC")
    assert page.evaluate("document.activeElement.id") == "comment-text", screen
    page.keyboard.type(f"check the cut ({screen})")
    assert page.locator("#f-dialogue_cleaned").input_value() == (row["row"].get("dialogue_cleaned") or "")
    page.keyboard.press("Control+Enter")  # posts the comment; the row stays
    page.locator("#comments li", has_text=f"check the cut ({screen})").wait_for()
    assert page.url.endswith(f"/rows/{first + 2}") and page.locator("#dirty").is_hidden()
    # 4. skip it with a reason: Esc, Ctrl+Space, the reason, Ctrl+Enter (which confirms: skip)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Space")
    page.wait_for_selector("#flag[open]")
    page.keyboard.type("two voices overlap")
    p.shot(f"screens-skip-{screen}.png")
    here = page.url
    page.keyboard.press("Control+Enter")
    assert _moved(page, here, timeout=10000)
    after = api.get(f"/api/segments/{key}/rows/{first + 2}").json()
    assert (after["status"], after["flag_reason"], after["version"]) == ("skipped", "two voices overlap", row["version"] + 1)
    assert after["row"] == row["row"]  # the comment went nowhere near the annotation
    p.close()


def test_alt_d_discards_in_the_skip_dialog_and_enter_skips(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[1])
    api = site.client("alice")
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/4")
    page.keyboard.press("Control+Space")
    page.wait_for_selector("#flag[open]")
    assert "Alt+D" in page.locator("#flag-discard").inner_text()
    page.keyboard.type("not a therapy exchange")
    page.keyboard.press("Alt+KeyD")
    page.wait_for_url(f"**/segments/{key}/rows/5")
    assert api.get(f"/api/segments/{key}/rows/4").json()["status"] == "discarded"
    page.wait_for_selector("#row-form:focus")
    page.keyboard.press("Control+Space")
    page.keyboard.type("later")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/segments/{key}/rows/6")
    assert api.get(f"/api/segments/{key}/rows/5").json()["status"] == "skipped"
    p.close()


def test_an_unfinished_comment_comes_back_when_the_person_returns_to_the_row(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[1])
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/8")
    page.keyboard.press("Alt+KeyC")
    page.keyboard.type("the therapist's name is wrong in row 8")
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+KeyN")  # the form holds no edit: the next row opens at once
    page.wait_for_url(f"**/segments/{key}/rows/9")
    assert page.locator("#comment-text").input_value() == ""  # kept for row 8 only
    page.keyboard.press("Alt+KeyP")
    page.wait_for_url(f"**/segments/{key}/rows/8")
    page.wait_for_selector("#comment-kept")
    assert page.locator("#comment-text").input_value() == "the therapist's name is wrong in row 8"
    p.shot("screens-comment-kept.png")
    page.keyboard.press("Alt+KeyC")
    page.keyboard.press("Control+Enter")
    page.locator("#comments li", has_text="the therapist's name is wrong").wait_for()
    assert page.locator("#comment-kept").count() == 0
    page.reload()
    assert page.locator("#comment-text").input_value() == "" and page.locator("#comment-kept").count() == 0
    # a comment left unfinished goes with the person's logout, like the unsaved edits
    page.keyboard.press("Alt+KeyC")
    page.keyboard.type("half a thought")
    page.click("#logout")
    page.wait_for_url("**/login")
    assert page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('rescue-review:comment:'))") == []
    p.errors.clear()
    p.close()


def test_the_key_bar_lists_every_key_of_the_row_page(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[1])
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/10")
    bar = page.locator("#keybar")
    box = bar.bounding_box()
    assert box and box["y"] >= 0 and box["y"] + box["height"] <= 768
    shown = bar.locator("kbd").all_inner_texts()
    page.keyboard.press("Shift+?")
    page.wait_for_selector("#keys[open]")
    listed = page.locator("#keys dt kbd").all_inner_texts()
    page.keyboard.press("Escape")
    for chord in ("Ctrl+Enter", "Ctrl+S", "Ctrl+Space", "Alt+C", "Alt+N / Alt+P", "Alt+Shift+N", "Alt+J / Alt+Shift+J", "Esc", "Alt+K / Alt+R", "Alt+L"):
        assert chord in shown, chord
    page_keys = [k for k in listed if " in the " not in k and k != "?"]  # a dialog's or a box's own keys are listed in the dialog only
    assert page_keys and set(page_keys) <= set(shown), set(page_keys) - set(shown)
    p.close()


@pytest.mark.parametrize("screen", ["1024x768", "1366x768", "200pct"])
def test_no_table_of_the_admins_dashboard_is_cut_off(browser: Any, site: Deployment, screen: str):
    """At 1366 the segment list ran past its card: "Assigned to" was cut off."""
    admin = site.client("admin")
    target = COUPLE[5]
    if admin.segments()[target]["mode"] != "independent":  # the long cells: an independent segment's copies and link
        assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [target]}).status_code == 200
        key = admin.segments()[target]["id"]
        for who in ("carol", "dave"):
            c = site.client(who)
            for n in (1, 2, 3):
                version = c.get(f"/api/segments/{key}/rows/{n}").json()["version"]
                fields = {"tone_of_voice": f"{who}'s tone"} if n == 2 else {}
                assert c.put(f"/api/segments/{key}/rows/{n}", {"version": version, "fields": fields, "reviewed": True}).status_code == 200
    p = Page(browser, site, "admin", **SCREENS[screen])
    page = p.page
    p.goto("/")
    page.wait_for_load_state("load")
    cut = page.evaluate("""() => [...document.querySelectorAll('.table-wrap')].filter((e) => e.scrollWidth > e.clientWidth + 1)
        .map((e) => `${e.getAttribute('aria-label')}: ${e.scrollWidth} > ${e.clientWidth}`)""")
    assert cut == [], (screen, cut)
    assert page.evaluate("document.documentElement.scrollWidth") <= SCREENS[screen]["viewport"]["width"]
    assert page.locator("#segments th", has_text="Assigned to").is_visible()
    page.locator("#segments").scroll_into_view_if_needed()
    p.shot(f"screens-dashboard-{screen}.png")
    p.close()


def test_practice_steps_by_keyboard_keep_the_focus_on_the_next_step_and_its_button_in_view(browser: Any, site: Deployment):
    """After each step the focus went back to the page's top, "Take this step" sat below the fold at
    1366x768, and the strategies read as their ids (goal_align). At the end the focus is on what the
    end says: that the debrief waits for the other sessions, or, on the last, the debrief itself."""
    from tests.review.helpers import DEMO
    from tests.review.practice_helpers import import_catalogue, open_debriefs

    import_catalogue(site.db_url, DEMO, horizon=3)
    p = Page(browser, site, "alice")
    page = p.page

    def play(start: str, shot: str) -> None:
        p.goto("/practice")
        page.locator(f"button.practice-play[data-start='{start}']").click()
        page.wait_for_selector("#transcript li")
        for step in (1, 2, 3):
            button = page.locator("#take-step").bounding_box()
            assert button and 0 <= button["y"] and button["y"] + button["height"] <= 768, (step, button)
            assert page.evaluate("document.activeElement.name") == "speak", step  # the step's first control
            labels = page.locator("#how option").all_inner_texts()
            assert labels and all("_" not in t and t[0].isupper() for t in labels), labels
            if step == 1:
                p.shot(shot)
            # the keys: Tab to whom (Down picks the next), Tab to the strategy, Tab to the words, Tab to the button, Enter
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.id") == "whom"
            page.keyboard.press("ArrowDown")
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.id") == "how"
            page.keyboard.press("Tab")
            page.keyboard.type(f"It sounds like this has been hard for both of you ({step}).")
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.id") == "take-step"
            page.keyboard.press("Enter")
            if step < 3:
                page.wait_for_selector(f"#step-count:has-text('step {step + 1} of 3')")
        page.wait_for_selector("#step-count:has-text('3 of 3 steps')")

    starts = [s["id"] for s in site.client("alice").get("/api/practice").json()["starts"]]
    play(starts[0], "screens-practice-step1.png")
    assert page.evaluate("document.activeElement.id") == "debrief-later"
    assert f"{len(starts) - 1} left" in page.locator("#debrief-later").inner_text() and page.locator("#debrief").is_hidden()
    open_debriefs(site.client("alice"), leave=starts[1])
    play(starts[1], "screens-practice-last-step1.png")
    page.wait_for_selector("#debrief:not([hidden])")
    assert page.evaluate("document.activeElement.id") == "debrief-title"
    p.shot("screens-practice-debrief.png")
    p.close()


def test_ctrl_enter_in_the_questionnaires_note_saves_and_moves_on(browser: Any, site: Deployment, tmp_path: Any):
    """Ctrl+Enter confirms on every page: in a questionnaire's note it did nothing."""
    from tests.review.helpers import questionnaire

    key = questionnaire(site, tmp_path, rater="bob")
    p = Page(browser, site, "bob")
    page = p.page
    p.goto(f"/ratings/{key}/1")
    page.keyboard.press("4")
    page.focus("#rate-note")
    page.keyboard.type("the answer misses the intensity")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/ratings/{key}/2")
    rated = site.client("bob").get(f"/api/ratings/{key}/items/1").json()
    assert (rated["score"], rated["note"]) == (4, "the answer misses the intensity")
    p.close()
