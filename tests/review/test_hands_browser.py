"""The annotator's hands, in a real browser (Playwright driving Debian's chromium): each test is a
misuse that once lost work or changed a label unseen.

- Ctrl+Enter in the comment box posts the comment; it never marks the row reviewed nor moves on;
- after a page load the focus is on the form region, so arrow and page keys scroll and change no label;
- shortcuts do not act from inside a text field, except the field's own.

Screenshots go to test-artifacts/review/hands-*.png.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.review.helpers import ARTIFACTS, CHROMIUM, COUPLE, Deployment, Page, confirm_row

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium not installed"),
    pytest.mark.timeout(600),
]
pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")

FORM_VALUES = """(() => [...document.querySelectorAll('#row-form select, #row-form input, #row-form textarea')]
    .map((e) => e.type === 'checkbox' ? e.checked : e.value))()"""
"""Every control's value in the row form, in document order."""


@pytest.fixture(scope="module")
def site(sqlite_deployment: Deployment) -> Deployment:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return sqlite_deployment


def test_ctrl_enter_in_the_comment_box_posts_the_comment_and_leaves_the_row_as_it_was(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[1])
    api = site.client("alice")
    before = api.get(f"/api/segments/{key}/rows/3").json()
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/3")
    page.keyboard.press("Alt+KeyC")  # the comment box, from the keyboard
    assert page.evaluate("document.activeElement.id") == "comment-text"
    page.keyboard.type("the speaker changes mid-row: check the cut")
    page.keyboard.press("Control+Enter")
    page.locator("#comments li", has_text="the speaker changes mid-row").wait_for()
    assert page.url.endswith(f"/segments/{key}/rows/3")  # still on this row
    assert page.locator("#comment-text").input_value() == ""
    after = api.get(f"/api/segments/{key}/rows/3").json()
    assert after["version"] == before["version"] and after["reviewed"] == before["reviewed"]
    comments = api.get(f"/api/segments/{key}/comments").json()
    assert [c["text"] for c in comments if c["row"] == 3] == ["the speaker changes mid-row: check the cut"]
    p.shot("hands-comment-posted.png")
    # nor does Ctrl+S act from the comment box: it saves nothing
    page.fill("#comment-text", "half typed")
    page.keyboard.press("Control+s")
    page.wait_for_timeout(300)
    assert page.url.endswith(f"/segments/{key}/rows/3")
    assert page.locator("#comment-text").input_value() == "half typed"
    assert api.get(f"/api/segments/{key}/rows/3").json()["version"] == before["version"]
    p.close()


@pytest.mark.parametrize("width", [1366, 1024])
def test_arrow_and_page_keys_after_a_page_load_scroll_and_change_no_label(browser: Any, site: Deployment, width: int):
    key = site.segment_key(COUPLE[1])
    p = Page(browser, site, "alice")
    page = p.page
    page.set_viewport_size({"width": width, "height": 768})
    p.goto(f"/segments/{key}/rows/4")
    page.wait_for_load_state("load")
    values = page.evaluate(FORM_VALUES)
    focused = page.evaluate("document.activeElement.tagName")
    assert focused not in ("SELECT", "INPUT", "TEXTAREA"), focused
    for k in ("ArrowDown", "ArrowDown", "ArrowDown", "PageDown", "ArrowUp", "PageDown"):
        page.keyboard.press(k)
    page.wait_for_timeout(300)
    assert page.evaluate(FORM_VALUES) == values  # no label changed
    scrolled = page.evaluate("window.scrollY + document.getElementById('row-form').scrollTop")
    assert scrolled > 100, scrolled  # the keys scrolled the form
    assert page.locator("#dirty").is_hidden()
    p.shot(f"hands-scrolled-{width}.png")
    p.close()


def test_the_alt_keys_act_from_a_text_field_and_its_own_keys_save(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[1])
    api = site.client("alice")
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/5")
    page.fill("#f-tone_of_voice", "soft, hesitant")
    page.keyboard.press("Control+s")  # the form's own: saves what was typed
    page.wait_for_selector("#row-status.edited")
    assert api.get(f"/api/segments/{key}/rows/5").json()["row"]["tone_of_voice"] == "soft, hesitant"
    # Alt+J leaves the text field for the next label list: the letter pressed next picks a label
    # there, it is not typed into the field
    page.focus("#f-tone_of_voice")
    page.keyboard.press("Alt+KeyJ")
    focused = page.evaluate("document.activeElement.dataset.kind")
    assert focused in ("utterance", "pattern", "strategy"), focused
    assert page.locator("#f-tone_of_voice").input_value() == "soft, hesitant"
    # Alt+N from a text field with an edit not saved asks before it goes
    page.fill("#f-tone_of_voice", "typed, not saved")
    page.keyboard.press("Alt+KeyN")
    page.wait_for_selector("#leave[open]")
    page.click("#leave-stay")
    # Esc leaves a field for the form region
    page.focus("#f-tone_of_voice")
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") == "row-form"
    p.close()


def test_a_hung_save_shows_keeps_the_buttons_off_answers_a_second_ctrl_s_and_can_be_retried(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[1])
    api = site.client("alice")
    before = api.get(f"/api/segments/{key}/rows/6").json()
    p = Page(browser, site, "alice")
    page = p.page
    page.clock.install()  # the page's timers, so 10 s pass without waiting them
    held: list[Any] = []
    page.route(f"**/api/segments/{key}/rows/6", lambda route: held.append(route) if route.request.method == "PUT" else route.continue_())
    p.goto(f"/segments/{key}/rows/6")
    page.fill("#f-tone_of_voice", "typed while the server hung")
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.locator("#save-state", has_text="Saving").wait_for()
    assert page.locator("#save").is_disabled() and page.locator("#save-reviewed").is_disabled()
    page.keyboard.press("Control+s")  # a second Ctrl+S is answered, not silently dropped
    page.locator("#toast", has_text="Still saving").wait_for()
    assert len(held) == 1  # and sends nothing more
    p.shot("hands-save-hung.png")
    page.clock.fast_forward(11_000)
    page.locator("#save-state", has_text="Not saved").wait_for()
    assert page.locator("#save-retry").is_visible() and page.locator("#save").is_enabled()
    assert page.locator("#f-tone_of_voice").input_value() == "typed while the server hung"
    assert api.get(f"/api/segments/{key}/rows/6").json()["version"] == before["version"]
    p.shot("hands-save-timed-out.png")
    # the hung request did reach the server after all: the retry sees its own save, not a conflict
    assert api.put(f"/api/segments/{key}/rows/6", {"version": before["version"], "fields": {"tone_of_voice": "typed while the server hung"}}).status_code == 200
    for route in held:
        route.abort()
    page.unroute(f"**/api/segments/{key}/rows/6")
    page.click("#save-retry")
    page.wait_for_selector("#row-status.edited")
    assert page.locator("#conflict").is_hidden() and page.locator("#dirty").is_hidden()
    assert page.locator("#save-state", has_text="Not saved").count() == 0
    p.close()


def test_restored_local_edits_can_be_discarded_and_do_not_return_after_leaving_without_saving(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[1])
    api = site.client("alice")
    stored = api.get(f"/api/segments/{key}/rows/7").json()["row"].get("tone_of_voice") or ""
    local = f"rescue-review:edits:alice:{key}:7"
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/7")
    page.fill("#f-tone_of_voice", "kept in this browser")
    page.wait_for_timeout(400)
    page = p.reopen()  # the tab is closed: the edit is kept in the browser
    page.goto(f"{site.server.base_url}/segments/{key}/rows/7")
    page.wait_for_selector("#restored:not([hidden])")
    assert page.locator("#f-tone_of_voice").input_value() == "kept in this browser"
    p.shot("hands-restored.png")
    page.click("#discard-local")
    assert page.locator("#f-tone_of_voice").input_value() == stored
    assert page.locator("#restored").is_hidden() and page.locator("#dirty").is_hidden()
    assert page.evaluate(f"localStorage.getItem('{local}')") is None
    page.reload()
    assert page.locator("#restored").is_hidden() and page.locator("#f-tone_of_voice").input_value() == stored
    # leaving with unsaved changes asks: stay, save and go on, or leave without saving
    page.fill("#f-tone_of_voice", "typed, then left without saving")
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+KeyN")
    page.wait_for_selector("#leave[open]")
    p.shot("hands-leave.png")
    page.click("#leave-stay")
    assert page.url.endswith("/rows/7") and page.locator("#f-tone_of_voice").input_value() == "typed, then left without saving"
    page.click(".crumbs a[href='/']")  # a breadcrumb asks too
    page.wait_for_selector("#leave[open]")
    page.click("#leave-stay")
    page.keyboard.press("Alt+KeyN")
    page.wait_for_selector("#leave[open]")
    page.click("#leave-drop")
    page.wait_for_url(f"**/segments/{key}/rows/8")
    page.goto(f"{site.server.base_url}/segments/{key}/rows/7")
    page.wait_for_selector("#row-form")
    assert page.locator("#f-tone_of_voice").input_value() == stored
    assert page.locator("#restored").is_hidden() and page.locator("#dirty").is_hidden()
    # save and go on: saved, then the next row
    page.fill("#f-tone_of_voice", "saved on the way out")
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+KeyN")
    page.wait_for_selector("#leave[open]")
    page.click("#leave-save")
    page.wait_for_url(f"**/segments/{key}/rows/8")
    assert api.get(f"/api/segments/{key}/rows/7").json()["row"]["tone_of_voice"] == "saved on the way out"
    assert not p.dialogs  # no browser dialog on the way
    p.close()


def test_the_toast_of_a_saved_row_survives_the_move_to_the_next_row(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[2])
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/9")
    page.fill("#f-tone_of_voice", "flat")
    confirm_row(page)
    page.wait_for_url(f"**/segments/{key}/rows/10")
    page.locator("#toast", has_text="Row 9 saved and marked reviewed").wait_for()
    p.shot("hands-toast-next-row.png")
    p.close()


def test_a_label_has_the_same_printed_key_in_a_couple_and_a_family(browser: Any, site: Deployment):
    from tests.review.helpers import FAMILY

    for sample in (COUPLE[0], FAMILY[0]):  # bob has one of each
        key = site.segment_key(sample)
        p = Page(browser, site, "bob")
        page = p.page
        rows = site.client("bob").get(f"/api/segments/{key}").json()["rows"]
        client_row = next(r["row_index"] for r in rows if r["speaker"] not in ("Therapist", "Couple", "Family"))
        p.goto(f"/segments/{key}/rows/{client_row}")
        pattern = page.locator("#f-relation_pattern")
        assert pattern.locator("option[value=pursue_withdraw]").inner_text() == "P · Pursue withdraw"
        pattern.focus()
        page.keyboard.press("p")
        assert pattern.input_value() == "pursue_withdraw", sample
        page.keyboard.press("z")  # no choice has it: nothing changes (no type-ahead either)
        assert pattern.input_value() == "pursue_withdraw"
        utterance = page.locator("#f-utterance_type")
        utterance.focus()
        page.keyboard.press("o")  # the tenth utterance type
        assert utterance.input_value() == "other"
        assert "None of the above" in page.locator("#f-utterance_type-hint").inner_text()
        page.keyboard.press("0")
        assert utterance.input_value() == ""
        p.shot(f"hands-keys-{sample.split('/')[0]}.png")
        p.close()


def _in_view(page: Any, selector: str) -> bool:
    """Whether the element shows (its first 150 px, or all of it), inside the window and the form's scroll box."""
    return page.locator(selector).first.evaluate(
        """(e) => { const r = e.getBoundingClientRect(), f = document.getElementById('row-form').getBoundingClientRect();
                    const top = Math.max(f.top, 0), bottom = Math.min(f.bottom, window.innerHeight);
                    return Math.min(r.bottom, bottom) - Math.max(r.top, top) >= Math.min(r.height, 150) - 1; }"""
    )


def test_save_and_mark_reviewed_confirms_only_what_was_in_view(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[1])
    api = site.client("alice")
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/11")  # a therapist row: the support strategy sits far below
    assert page.locator("#f-primary_speaker").input_value() == "Therapist"
    assert not _in_view(page, "#field-support_strategy")
    page.click("#save-reviewed")
    page.locator("#toast", has_text="Not marked reviewed yet").wait_for()
    assert not api.get(f"/api/segments/{key}/rows/11").json()["reviewed"]  # nothing confirmed unseen
    assert "Support strategy" in page.locator("#toast").inner_text()  # named, and scrolled to:
    assert _in_view(page, "#field-support_strategy")  # in view now, so no longer marked
    assert "unseen" not in (page.locator("#field-support_strategy").get_attribute("class") or "")
    p.shot("hands-unseen.png")
    presses = 1
    while page.url.endswith("/rows/11") and presses < 12:
        page.keyboard.press("Control+Enter")
        presses += 1
        page.wait_for_timeout(300)
    page.wait_for_url(f"**/segments/{key}/rows/12")
    assert api.get(f"/api/segments/{key}/rows/11").json()["reviewed"]
    assert presses >= 2
    # scrolled through by hand first: one Ctrl+Enter confirms
    p.goto(f"/segments/{key}/rows/15")
    for _ in range(12):
        page.keyboard.press("PageDown")
    page.wait_for_timeout(300)
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/segments/{key}/rows/16")
    assert api.get(f"/api/segments/{key}/rows/15").json()["reviewed"]
    # a window tall enough to show the whole form: one Ctrl+Enter confirms at once
    page.set_viewport_size({"width": 1366, "height": 3000})
    p.goto(f"/segments/{key}/rows/12")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/segments/{key}/rows/13")
    assert api.get(f"/api/segments/{key}/rows/12").json()["reviewed"]
    p.close()


def test_a_row_is_skipped_or_discarded_with_a_reason_from_the_keyboard(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[2])
    api = site.client("alice")
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/12")
    page.focus("#f-tone_of_voice")
    page.keyboard.press("Control+Space")  # not from inside a text field
    assert page.locator("#flag").is_hidden()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Space")
    page.wait_for_selector("#flag[open]")
    assert page.evaluate("document.activeElement.id") == "flag-reason"
    page.keyboard.press("Enter")  # no reason: nothing is sent
    assert page.locator("#flag").is_visible()
    page.keyboard.type("two voices overlap, check with the lead")
    p.shot("hands-flag-dialog.png")
    page.keyboard.press("Enter")  # Enter: skip
    page.wait_for_url(f"**/segments/{key}/rows/13")
    page.locator("#toast", has_text="Row 12 skipped").wait_for()
    row = api.get(f"/api/segments/{key}/rows/12").json()
    assert (row["status"], row["flag_reason"]) == ("skipped", "two voices overlap, check with the lead")
    page.click("#row-skip")
    page.fill("#flag-reason", "not a therapy exchange")
    page.keyboard.press("Alt+KeyD")  # Alt+D: discard (Ctrl+Enter confirms: skip)
    page.wait_for_url(f"**/segments/{key}/rows/14")
    assert api.get(f"/api/segments/{key}/rows/13").json()["status"] == "discarded"
    # the segment's row list says so, with the reason
    p.goto(f"/segments/{key}")
    listed = page.locator("#rows tbody tr[data-row='12']")
    assert "skipped" in listed.inner_text() and "two voices overlap" in listed.inner_text()
    # back on the row: the flag shows, and can be cleared
    p.goto(f"/segments/{key}/rows/12")
    assert page.locator("#flag-banner").is_visible() and page.locator("#row-status").inner_text() == "skipped"
    p.shot("hands-flagged-row.png")
    page.click("#flag-clear")
    page.wait_for_selector("#flag-banner", state="hidden")
    assert api.get(f"/api/segments/{key}/rows/12").json()["status"] == "pending"
    p.close()


def test_the_dashboard_counts_the_annotators_copies_and_refreshes_itself(browser: Any, site: Deployment):
    admin = site.client("admin")
    target = COUPLE[4]  # dave's: switched to independent copies for carol and dave
    assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [target], "seed": 3}).status_code == 200
    key = admin.segments()[target]["id"]
    carol = site.client("carol")
    for n in (1, 2):
        version = carol.get(f"/api/segments/{key}/rows/{n}").json()["version"]
        assert carol.put(f"/api/segments/{key}/rows/{n}", {"version": version, "reviewed": True}).status_code == 200
    p = Page(browser, site, "admin")
    page = p.page
    page.clock.install()
    p.goto("/")
    cell = page.locator("#annotators tr[data-user=carol] td[data-p='annotators/carol/progress/submitted']")
    assert cell.inner_text() == "2"  # her own copy's work shows, though nothing is adjudicated
    row = page.locator("#segments tr", has_text=target)
    assert "carol 2/" in row.inner_text() and row.locator("[data-p-value]").evaluate("m => m.value") == 0
    # she submits one more row: the page shows it without a reload
    version = carol.get(f"/api/segments/{key}/rows/3").json()["version"]
    assert carol.put(f"/api/segments/{key}/rows/3", {"version": version, "reviewed": True}).status_code == 200
    page.clock.fast_forward(16_000)
    page.locator("#annotators tr[data-user=carol] td[data-p='annotators/carol/progress/submitted']", has_text="3").wait_for()
    assert "carol 3/" in row.inner_text()
    assert page.locator("#progress-updated", has_text="updated").is_visible()
    p.shot("hands-dashboard-progress.png")
    p.close()


ZOOM_200 = {"viewport": {"width": 683, "height": 384}, "device_scale_factor": 2}
"""A 1366x768 laptop at 200% zoom: the page lays out in 683x384 CSS pixels."""


def _zoomed(browser: Any, site: Deployment, user: str, **context: Any) -> Any:
    """A logged-in Page whose context has its own viewport (and device scale)."""
    p = Page(browser, site, user)
    p.context.close()
    p.context = browser.new_context(**context)
    p.page = p.context.new_page()
    p.page.on("pageerror", lambda exc: p.errors.append(str(exc)))
    p.page.goto(site.server.base_url + "/login")
    from tests.review.helpers import log_in

    log_in(p.page, user)
    p.page.wait_for_url(site.server.base_url + "/")
    return p


def test_narrow_windows_and_200_percent_zoom_keep_the_form_near_the_top_the_toolbar_in_view_and_nothing_sideways(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[0])
    alice = site.client("alice")
    version = alice.get(f"/api/segments/{key}/rows/5").json()["version"]
    assert alice.put(f"/api/segments/{key}/rows/5", {"version": version, "reviewed": True}).status_code == 200  # "Unmark reviewed" shows
    # 1024 wide: the form at the top beside the clip, and the toolbar stays in view while it scrolls
    p = _zoomed(browser, site, "alice", viewport={"width": 1024, "height": 768})
    page = p.page
    p.goto(f"/segments/{key}/rows/5")
    form_top = page.locator("#row-form").bounding_box()["y"]
    assert form_top < 200 and form_top < page.locator("#subtitles").bounding_box()["y"]
    for _ in range(4):
        page.keyboard.press("PageDown")
    page.wait_for_timeout(200)
    assert page.evaluate("window.scrollY + document.getElementById('row-form').scrollTop") > 500
    save = page.locator("#save").bounding_box()
    assert 0 <= save["y"] and save["y"] + save["height"] <= 768, save
    p.shot("hands-1024-scrolled.png")
    p.close()
    # 200% zoom: the toolbar wraps, nothing is cut off, no page scrolls sideways
    for user, paths in {
        "alice": [f"/segments/{key}/rows/5", f"/segments/{key}", "/"],
        "admin": ["/", f"/segments/{key}/rows/5"],
    }.items():
        p = _zoomed(browser, site, user, **ZOOM_200)
        page = p.page
        for path in paths:
            p.goto(path)
            page.wait_for_load_state("load")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 683, (user, path, width)
            if "/rows/" in path:
                for button in ("#save", "#save-reviewed", "#unreview", "#row-skip", "#next-segment"):
                    box = page.locator(button).bounding_box()
                    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 683, (button, box)
            if path == "/":
                wrap = page.locator("#segments").locator("xpath=..")
                # the table grows with the page: no 134 px box scrolling inside a 384 px window
                assert wrap.evaluate("e => e.scrollHeight <= e.clientHeight + 1"), path
        p.shot(f"hands-200-{user}.png")
        p.close()


def test_the_keys_are_in_view_at_1366x768_and_a_4k_screen_gets_a_readable_form(browser: Any, site: Deployment):
    key = site.segment_key(COUPLE[0])
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/6")
    bar = page.locator("#keybar").bounding_box()
    assert bar and bar["y"] >= 0 and bar["y"] + bar["height"] <= 768
    assert "Ctrl+Enter" in page.locator("#keybar").inner_text() and "Ctrl+Space" in page.locator("#keybar").inner_text()
    page.keyboard.press("Shift+?")
    page.wait_for_selector("#keys[open]")
    assert page.locator("#keys").inner_text().count("Alt+") >= 5
    page.keyboard.press("Escape")
    assert page.locator("#keys").is_hidden()
    assert page.locator("a.toplink[href='/api/docs']").count() == 0  # annotators see no admin link
    p.close()
    p = _zoomed(browser, site, "alice", viewport={"width": 3840, "height": 2160})
    page = p.page
    p.goto(f"/segments/{key}/rows/6")
    box = page.locator("#f-tone_of_voice").bounding_box()
    assert box["height"] >= 40, box  # about 1.5 times a laptop's field
    width = page.locator("#row-form").bounding_box()["width"]
    assert width <= 2400, width  # lines stay readable, not 3000 px long
    assert page.locator("#keybar").bounding_box()["y"] + page.locator("#keybar").bounding_box()["height"] <= 2161
    p.shot("hands-4k.png")
    p.close()
    admin = Page(browser, site, "admin")
    assert admin.page.locator("a.toplink[href='/api/docs']").count() == 1
    admin.close()


def test_every_new_page_state_passes_axe(browser: Any, site: Deployment):
    from tests.review.helpers import DEMO, axe_violations
    from tests.review.practice_helpers import import_catalogue

    found: dict[str, list[str]] = {}
    key = site.segment_key(COUPLE[0])
    alice = site.client("alice")
    rows = alice.get(f"/api/segments/{key}").json()["rows"]
    therapist = next(r["row_index"] for r in rows if r["speaker"] == "Therapist" and r["row_index"] > 6)
    version = alice.get(f"/api/segments/{key}/rows/{therapist}").json()["version"]
    fields = {"utterance_type": "disclosure", "relation_pattern": "attack_attack"}  # client-only values on a therapist row
    assert alice.put(f"/api/segments/{key}/rows/{therapist}", {"version": version, "fields": fields}).status_code == 200
    version = alice.get(f"/api/segments/{key}/rows/{therapist + 1}").json()["version"]
    assert alice.put(f"/api/segments/{key}/rows/{therapist + 1}", {"version": version, "flag": {"state": "skipped", "reason": "check"}}).status_code == 200
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/segments/{key}/rows/{therapist}")
    assert page.locator(".role-note:not([hidden])").count() >= 1
    for details in page.locator("details.defs").all()[:2]:
        details.evaluate("d => d.open = true")
    found["row: role notes, definitions open"] = axe_violations(page)
    page.click("#save-reviewed")  # fields never in view get marked
    page.wait_for_selector(".field.unseen")
    found["row: fields not yet seen"] = axe_violations(page)
    for opener, dialog in (("#row-skip", "#flag"), ("#keys-open", "#keys")):
        page.click(opener)
        page.wait_for_selector(f"{dialog}[open]")
        found[f"row: dialog {dialog}"] = axe_violations(page)
        page.keyboard.press("Escape")
    page.fill("#f-tone_of_voice", "typed")
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+KeyN")
    page.wait_for_selector("#leave[open]")
    found["row: leave dialog"] = axe_violations(page)
    page.click("#leave-stay")
    page.wait_for_timeout(400)
    page = p.reopen()
    page.goto(f"{site.server.base_url}/segments/{key}/rows/{therapist}")
    page.wait_for_selector("#restored:not([hidden])")
    found["row: restored local edits"] = axe_violations(page)
    page.click("#discard-local")
    page.goto(f"{site.server.base_url}/segments/{key}/rows/{therapist + 1}")
    found["row: a skipped row"] = axe_violations(page)
    page.goto(f"{site.server.base_url}/segments/{key}")
    found["segment: flagged rows"] = axe_violations(page)
    page.goto(site.server.base_url + "/")
    found["dashboard (annotator)"] = axe_violations(page)
    p.close()
    # the practice transcript, long enough to scroll in a small window
    import_catalogue(site.db_url, DEMO, horizon=3)
    small = _zoomed(browser, site, "alice", **ZOOM_200)
    small.goto("/practice")
    small.page.locator("button.practice-play").first.click()
    small.page.wait_for_selector("#transcript li")
    assert small.page.locator(".practice-transcript").evaluate("e => e.scrollHeight > e.clientHeight")
    found["practice episode (200%)"] = axe_violations(small.page)
    small.goto(f"/segments/{key}/rows/{therapist}")
    found["row (200%)"] = axe_violations(small.page)
    small.goto("/practice")
    found["practice list (200%)"] = axe_violations(small.page)
    small.goto("/segments/no-such-segment")
    found["error page (200%)"] = axe_violations(small.page)
    small.close()
    # an admin: progress of independent copies, adjudication's way on
    admin = site.client("admin")
    target = COUPLE[3]
    assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [target], "seed": 5}).status_code == 200
    ind = admin.segments()[target]["id"]
    a = Page(browser, site, "admin")
    found["dashboard (admin, progress)"] = axe_violations(a.page)
    a.goto(f"/segments/{ind}/adjudicate?show=all")
    assert a.page.locator("#adj-onward").is_visible()
    found["adjudication with the way on"] = axe_violations(a.page)
    a.close()
    bad = {k: v for k, v in found.items() if v}
    assert not bad, "\n".join(f"{k}: {line}" for k, lines in bad.items() for line in lines)


def test_the_questionnaire_keys_do_not_act_from_the_login_dialog(browser: Any, site: Deployment, tmp_path: Any):
    """Digits and Enter rate an item; typed into the password of the login dialog (the session
    ended) they must neither change the score nor keep the dialog from logging in."""
    from tests.review.helpers import PASSWORD, overlap_site

    overlap_site(site, tmp_path)
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/ratings/{site.info['questionnaire']}/1")
    page.keyboard.press("4")
    assert page.locator("input[name=score][value='4']").is_checked()
    page.context.clear_cookies()  # the session ends
    page.keyboard.press("Enter")  # save: the server asks for the password again
    page.wait_for_selector("#relogin[open]")
    page.keyboard.type("2" + PASSWORD)  # a digit typed in the password field
    assert page.locator("input[name=score][value='4']").is_checked()
    page.fill("#relogin-password", PASSWORD)
    page.keyboard.press("Enter")  # logs in (the page's Enter does not swallow it), then saves
    page.wait_for_selector("#relogin", state="hidden")
    page.wait_for_url(lambda url: not url.endswith("/1"))
    rated = site.client("alice").get(f"/api/ratings/{site.info['questionnaire']}/items/1").json()
    assert rated["score"] == 4
    p.close()
