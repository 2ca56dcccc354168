"""The practice page in a real browser (Playwright driving Debian's chromium): a person logs in,
opens the practice list, starts a family session, reads what the simulated clients hear, types "."
(heard as silence, and told so), keeps listening once, speaks to the whole family, and reads the
debrief: J on its scale, this episode's floor and optimum, the normalised score, the steps.
Screenshots (1366x768) go to test-artifacts/review/practice-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.review.helpers import ARTIFACTS, CHROMIUM, DEMO, Client, Page, fresh_database, setup_database, start_server
from tests.review.practice_helpers import import_catalogue, open_debriefs

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium not installed"),
    pytest.mark.timeout(600),
]
pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    folder: Path = tmp_path_factory.mktemp("practice-browser")
    with fresh_database("sqlite", folder) as url:
        setup_database(url, users={"alice": "annotator", "bob": "annotator", "dan": "annotator"})
        import_catalogue(url, DEMO, horizon=3)
        server = start_server(url, folder)
        try:
            yield SimpleNamespace(server=server)
        finally:
            server.stop()


def _start_family(page: Any) -> None:
    family = page.locator("#practice-starts tbody tr", has_text="family").first
    family.locator("button.practice-play").click()
    page.wait_for_selector("#transcript li")


def _played_but(site: Any, user: str, scenario: str = "family") -> None:
    """``user`` has played every start but the first of ``scenario`` (the one the test plays in the
    browser): finishing it opens their scores and debriefs."""
    client = Client(site.server.base_url)
    assert client.login(user).status_code == 200
    left = next(s["id"] for s in client.get("/api/practice").json()["starts"] if s["scenario"] == scenario)
    open_debriefs(client, leave=left)
    client.close()


def test_play_one_short_episode_in_the_browser_and_read_the_debrief(browser: Any, site: Any) -> None:
    _played_but(site, "alice")
    p = Page(browser, site, "alice")
    page = p.page
    page.click("#practice-link a")
    page.wait_for_selector("#practice-starts")
    assert page.locator("#practice-starts tbody tr").count() == 9
    assert page.locator("#practice-starts tbody tr", has_text="fitted model").count() == 9  # the default simulator, named
    p.shot("practice-list.png")

    family = page.locator("#practice-starts tbody tr", has_text="family").first
    family.locator("button.practice-play").click()
    page.wait_for_selector("#transcript li")
    assert page.locator("#step-count").inner_text() == "step 1 of 3"
    # before the first step: what the clients hear, open, in plain words (words, tone, whom; not the label)
    hears = page.locator("#listening")
    assert hears.evaluate("e => e.open")
    text = hears.inner_text()
    for phrase in ("Whom your words reach", "tone of your words", "warm", "hostile", "Not heard", "strategy you pick", "“.”"):
        assert phrase in text, phrase
    speaker = page.locator("#transcript li .speaker-name").first
    assert speaker.inner_text().strip() and speaker.evaluate("e => getComputedStyle(e).color") != "rgb(255, 255, 255)"  # readable, not the top bar's white
    for control in ("#whom", "#how", "#turn", "#speak-no", "#speak-yes"):
        assert page.locator(control).evaluate("e => e.labels && e.labels.length > 0"), control
    p.shot("practice-step1.png")

    # step 1: a "." to one client: taken, and heard as silence, and the page says so
    rows_before = page.locator("#transcript li").count()
    page.select_option("#whom", page.locator("#whom option").first.inner_text())
    page.fill("#turn", ".")
    page.click("#take-step")
    page.wait_for_selector("#step-count:text('step 2 of 3')")
    mine = page.locator("#transcript li.you").last
    assert "silence" in mine.locator(".heard").inner_text() and "no words" in mine.locator(".heard").inner_text()
    assert "counted as silence" in page.locator("#toast").inner_text()
    assert page.locator("#transcript li").count() == rows_before + 2  # the "." and a client's answer
    p.shot("practice-wordless.png")

    # step 2: keep listening (the speaking fields hide)
    page.check("#speak-no")
    assert page.locator("#speak-fields").is_hidden()
    page.click("#take-step")
    page.wait_for_selector("#step-count:text('step 3 of 3')")

    # step 3: warm words to the whole family (markup stays text); how they were heard
    page.check("#speak-yes")
    targets = page.locator("#whom option").all_inner_texts()
    page.select_option("#whom", "Family" if "Family" in targets else targets[-1])
    page.select_option("#how", "reframe")
    page.fill("#turn", "Each of you is trying to protect something that <i>matters</i>; I can hear how painful this is.")
    page.click("#take-step")
    page.wait_for_selector("#debrief:not([hidden])")
    assert page.locator("#step-form").is_hidden()
    last = page.locator("#transcript li.you").last
    assert "<i>matters</i>" in last.inner_text() and last.locator("i").count() == 0
    assert "warm words, reaching everyone" in last.locator(".heard").inner_text()

    # the clients' replies never repeat verbatim within the episode
    said = [t.strip() for t in page.locator("#transcript li.simulated:not(.you) .text").all_inner_texts()]
    assert len(said) >= 3 and len(said) == len(set(said)), said

    # the debrief: J with its scale, the floor named, the optimum, the normalised score, the steps
    assert page.locator("#debrief").is_visible() and page.locator("#debrief-title").evaluate("e => document.activeElement === e")  # focus moved to it
    j = float(page.locator("#score-J").inner_text().split("=")[1].replace("\u2212", "-"))
    scale = page.locator("#scale-text").inner_text()
    assert "between" in scale and "higher is better" in scale and "most distressed" in scale
    reference = page.locator("#reference").inner_text()
    assert "Best fixed rule (the floor)" in reference and ("always speak to" in reference or "always keep listening" in reference)
    assert "Best possible (the optimum)" in reference and "Your normalised score" in reference
    assert page.locator("#scale-bar .mark").count() == 4 and j == j
    rows = page.locator("#breakdown tbody tr")
    assert rows.count() == 3
    first, second, third = (rows.nth(i).inner_text() for i in range(3))
    assert "silence: no words in your turn" in first and "yes: silence" in first
    assert "Kept listening" in second
    assert "yes: a turn to everyone at once" in third  # one neglect rule: a whole-group address leaves them out
    assert "→" in third and ("pattern stays" in third or "pattern:" in third)
    assert page.locator("#patterns dt").count() >= 1
    page.locator("#toast").evaluate("e => { e.hidden = true; }")  # the toast fades on its own; not in the pictures
    p.shot("practice-debrief-viewport.png")  # where the page scrolled to: the debrief's heading
    page.locator("body").evaluate("() => window.scrollTo(0, 0)")  # the sticky top bar at the top of the full page
    page.screenshot(path=str(ARTIFACTS / "practice-debrief.png"), full_page=True)

    # the list shows the finished episodes with their J (the other starts were played before)
    p.goto("/practice")
    assert page.locator("#practice-episodes tbody tr", has_text="finished").count() == 9
    assert page.locator("#practice-episodes tbody tr").first.locator("td.num").last.inner_text() != "—"
    p.shot("practice-list-after.png")
    p.close()


def test_the_practice_pages_pass_axe_with_zero_violations(browser: Any, site: Any) -> None:
    """The practice list, an episode before its first step (what the clients hear), after a
    wordless turn, and the debrief are held to the same rule as every other page."""
    from tests.review.helpers import axe_violations

    _played_but(site, "bob")
    p = Page(browser, site, "bob")
    page = p.page
    p.goto("/practice")
    page.wait_for_selector("#practice-starts")
    found = {"practice list": axe_violations(page)}
    _start_family(page)
    found["practice episode, what the clients hear"] = axe_violations(page)
    page.fill("#turn", "...")
    page.click("#take-step")
    page.wait_for_selector("#transcript li.you .heard.unheard")
    found["practice episode, a wordless turn"] = axe_violations(page)
    for _ in range(2):
        page.check("#speak-no")
        page.click("#take-step")
        page.wait_for_selector(f"#step-count:text('{'step 3 of 3' if _ == 0 else '3 of 3 steps'}')")
    page.wait_for_selector("#debrief:not([hidden])")
    found["practice debrief"] = axe_violations(page)
    p.shot("practice-axe-debrief.png")
    p.close()
    bad = {k: v for k, v in found.items() if v}
    assert not bad, "\n".join(f"{k}: {line}" for k, lines in bad.items() for line in lines)


@pytest.fixture(scope="module")
def scripted_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A catalogue that plays the scripted smoke test, horizon 5 (its four-client family is beyond
    the optimum's search budget)."""
    from rescue_bench.data import load_clips
    from rescue_bench.review import practice
    from rescue_bench.review.db import Database

    folder: Path = tmp_path_factory.mktemp("practice-scripted")
    with fresh_database("sqlite", folder) as url:
        setup_database(url, users={"carol": "annotator"})
        db = Database(url)
        with db.write() as session:
            practice.import_starts(session, load_clips([DEMO]), practice.practice_options(horizon=5), "scripted")
        db.dispose()
        server = start_server(url, folder)
        try:
            yield SimpleNamespace(server=server)
        finally:
            server.stop()


def test_the_smoke_test_says_so_and_a_debrief_without_an_optimum_says_why(browser: Any, scripted_site: Any) -> None:
    from tests.review.helpers import axe_violations

    client = Client(scripted_site.server.base_url)
    assert client.login("carol").status_code == 200
    open_debriefs(client, leave=next(s["id"] for s in client.get("/api/practice").json()["starts"] if "Luis" in s["clients"]))
    client.close()
    p = Page(browser, scripted_site, "carol")
    page = p.page
    p.goto("/practice")
    page.wait_for_selector("#practice-starts")
    assert page.locator("#practice-starts tbody tr", has_text="scripted rules (a smoke test)").count() == 9
    page.locator("#practice-starts tbody tr", has_text="Luis").locator("button.practice-play").click()  # four clients
    page.wait_for_selector("#transcript li")
    text = page.locator("#listening").inner_text()
    assert "scripted smoke test" in text and "strategy you pick" in text and "not to the tone" in text
    p.shot("practice-scripted-step1.png")
    for step in range(1, 6):
        page.check("#speak-no")
        page.click("#take-step")
        page.wait_for_selector(f"#step-count:text('{f'step {step + 1} of 5' if step < 5 else '5 of 5 steps'}')")
    page.wait_for_selector("#debrief:not([hidden])")
    reference = page.locator("#reference").inner_text()
    assert "not searched (too many states)" in reference and "none: the best sequence of moves could not be searched" in reference
    assert page.locator("#scale-bar .mark").count() == 0 and page.locator("#scale-bar").is_hidden()  # no range to draw without both ends
    assert page.locator("#score-final_max_distress").inner_text() == "1.00"
    assert page.locator("#breakdown tbody tr").count() == 5 and page.locator("#breakdown tbody tr", has_text="Kept listening").count() == 5
    found = axe_violations(page)
    page.locator("#toast").evaluate("e => { e.hidden = true; }")
    page.locator("body").evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "practice-scripted-debrief.png"), full_page=True)
    p.close()
    assert not found, found


def test_before_every_start_is_played_the_episode_ends_without_score_or_debrief(browser: Any, site: Any) -> None:
    """Scores and debriefs teach the simulator: a person who has not played every start ends an
    episode with a message saying how many are left, and no score anywhere."""
    p = Page(browser, site, "dan")
    page = p.page
    p.goto("/practice")
    _start_family(page)
    for step in range(1, 4):
        page.check("#speak-no")
        page.click("#take-step")
        page.wait_for_selector(f"#step-count:text('{f'step {step + 1} of 3' if step < 3 else '3 of 3 steps'}')")
    later = page.locator("#debrief-later")
    later.wait_for()
    assert "open once you have played every session: 8 left" in later.inner_text()
    assert later.evaluate("e => document.activeElement === e")  # focus moved to what the page says
    assert page.locator("#debrief").is_hidden() and page.locator("#debrief-ready").is_hidden()
    page.locator("#toast").evaluate("e => { e.hidden = true; }")
    p.shot("practice-ended-before-every-start.png")
    p.goto("/practice")
    assert page.locator("#practice-episodes tbody tr").first.locator("td.num").last.inner_text() == "—"
    p.close()
