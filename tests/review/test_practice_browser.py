"""The practice page in a real browser (Playwright driving Debian's chromium): a person logs in,
opens the practice list, starts a family session, keeps listening once, speaks to a pair and to
the whole family, and sees the score. Screenshots (1366x768) go to test-artifacts/review/practice-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.review.helpers import ARTIFACTS, CHROMIUM, DEMO, Page, fresh_database, setup_database, start_server
from tests.review.practice_helpers import import_catalogue

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
        setup_database(url, users={"alice": "annotator"})
        import_catalogue(url, DEMO, horizon=3)
        server = start_server(url, folder)
        try:
            yield SimpleNamespace(server=server)
        finally:
            server.stop()


def test_play_one_short_episode_in_the_browser(browser: Any, site: Any) -> None:
    p = Page(browser, site, "alice")
    page = p.page
    page.click("#practice-link a")
    page.wait_for_selector("#practice-starts")
    assert page.locator("#practice-starts tbody tr").count() == 9
    p.shot("practice-list.png")

    family = page.locator("#practice-starts tbody tr", has_text="family").first
    family.locator("button.practice-play").click()
    page.wait_for_selector("#transcript li")
    assert page.locator("#step-count").inner_text() == "step 1 of 3"
    rows_before = page.locator("#transcript li").count()
    speaker = page.locator("#transcript li .speaker-name").first
    assert speaker.inner_text().strip() and speaker.evaluate("e => getComputedStyle(e).color") != "rgb(255, 255, 255)"  # readable, not the top bar's white
    # every control is labelled
    for control in ("#whom", "#how", "#turn", "#speak-no", "#speak-yes"):
        assert page.locator(control).evaluate("e => e.labels && e.labels.length > 0"), control
    p.shot("practice-step1.png")

    # step 1: keep listening (the speaking fields hide)
    page.check("#speak-no")
    assert page.locator("#speak-fields").is_hidden()
    page.click("#take-step")
    page.wait_for_selector("#step-count:text('step 2 of 3')")
    assert page.locator("#transcript li").count() == rows_before + 1  # a client spoke

    # step 2: speak to a pair with a strategy, in one's own words (markup stays text)
    page.check("#speak-yes")
    targets = page.locator("#whom option").all_inner_texts()
    pair = next(t for t in targets if " & " in t)
    page.select_option("#whom", pair)
    page.select_option("#how", "track")
    assert page.locator("#how-help").inner_text().strip()  # the strategy's definition
    page.fill("#turn", "What happens between the two of you <i>right then</i>?")
    page.click("#take-step")
    page.wait_for_selector("#step-count:text('step 3 of 3')")
    mine = page.locator("#transcript li.you").last
    assert "<i>right then</i>" in mine.inner_text() and mine.locator("i").count() == 0
    p.shot("practice-step3.png")

    # step 3: the whole family, then the score
    group = targets[-1] if " & " not in targets[-1] else next(t for t in targets if t.lower() == "family")
    page.select_option("#whom", "Family" if "Family" in targets else group)
    page.select_option("#how", "reframe")
    page.fill("#turn", "Each of you is trying to protect something that matters.")
    page.click("#take-step")
    page.wait_for_selector("#score:not([hidden])")
    assert page.locator("#step-form").is_hidden()
    j = page.locator("#score-J").inner_text()
    assert j not in ("", "—") and float(j) == float(j)
    p.shot("practice-score.png")

    # the list shows the finished episode with its J
    p.goto("/practice")
    assert page.locator("#practice-episodes tbody tr", has_text="finished").count() == 1
    p.shot("practice-list-after.png")
    p.close()


def test_the_practice_pages_pass_axe_with_zero_violations(browser: Any, site: Any) -> None:
    """The practice list and an episode's page are held to the same rule as every other page."""
    from tests.review.helpers import axe_violations

    p = Page(browser, site, "alice")
    page = p.page
    p.goto("/practice")
    page.wait_for_selector("#practice-starts")
    found = {"practice list": axe_violations(page)}
    page.locator("#practice-starts tbody tr button.practice-play").first.click()
    page.wait_for_selector("#transcript li")
    found["practice episode"] = axe_violations(page)
    page.check("#speak-yes")
    found["practice episode (speaking)"] = axe_violations(page)
    p.shot("practice-axe-episode.png")
    p.close()
    bad = {k: v for k, v in found.items() if v}
    assert not bad, "\n".join(f"{k}: {line}" for k, lines in bad.items() for line in lines)
