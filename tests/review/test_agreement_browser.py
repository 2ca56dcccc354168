"""The agreement page in a real browser (Playwright driving Debian's chromium): its intervals arrive
after the first answer without a reload, a low value leads to the rows that disagree and on to
their adjudication, and the adjudication page leads onward. Screenshots in test-artifacts/review/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.review.helpers import Deployment, Page, overlap_site

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def site(sqlite_deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    return overlap_site(sqlite_deployment, tmp_path_factory.mktemp("agreement-sample"))


def test_intervals_arrive_in_place_and_a_low_value_leads_to_its_rows(browser: Any, site: Deployment) -> None:
    key = site.info["independent"]
    p = Page(browser, site, "admin")
    page = p.page
    p.goto("/agreement?resamples=300&bertscore=false")
    page.wait_for_selector("#agreement-report[data-resamples='300']")  # the full report took the quick one's place
    assert page.locator("#agreement-pending").count() == 0 and page.url.endswith("/agreement?resamples=300&bertscore=false")
    link = page.locator("#agreement tr[data-field=relation_pattern] td.alpha a")
    assert link.count() == 1 and "low" in (link.get_attribute("class") or "")  # carol and dave disagree on row 2
    p.shot("agreement-full.png")
    link.click()
    page.wait_for_url("**/agreement/rows?field=relation_pattern*")
    rows = page.locator("#disagreements tbody tr")
    assert rows.count() == 1 and rows.first.get_attribute("data-row") == "2"
    shown = rows.first.inner_text()  # labels as people read them, not their keys
    assert "Attack attack" in shown and "Pursue withdraw" in shown and "attack_attack" not in shown
    p.shot("agreement-disagreements.png")
    rows.first.locator("a", has_text="Adjudicate row 2").click()
    page.wait_for_url(f"**/segments/{key}/adjudicate?show=all#adj-2")
    # the row lands in view below the sticky header, with the focus
    page.wait_for_function("document.activeElement && document.activeElement.id === 'adj-2'")
    top = page.locator("#adj-2").bounding_box()["y"]
    assert page.locator(".topbar").bounding_box()["height"] <= top < 768 - 60, top
    onward = page.locator("#adj-onward")
    assert onward.locator("a", has_text="Dashboard").count() == 1
    onward.scroll_into_view_if_needed()
    p.shot("adjudicate-onward.png")
    assert not p.errors, p.errors
    p.close()
