"""Real-browser tests of the row form's accessibility and speed (Playwright driving Debian's chromium).

Every page an annotator, an admin or a rater opens passes axe-core with zero violations; the focus
lands on the first field; per-choice hotkeys, Ctrl+Enter (save, mark reviewed, next row), next segment
and the clip's play/replay/speed keys work; labels show readable names with their definitions; fields
follow the row's speaker role; the segment video follows the row list; unsaved edits survive an
expired session. Screenshots go to test-artifacts/review/.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.review.helpers import ARTIFACTS, CHROMIUM, COUPLE, Deployment, Page
from tests.review.test_overlap_browser import site  # noqa: F401  (the fixture: questionnaire + independent segment)

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium not installed"),
    pytest.mark.timeout(600),
]
pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")


def _axe(page: Any) -> list[str]:
    """axe-core's violations on the page as one line each (rule, impact, first offending nodes)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    out = []
    for v in results.response["violations"]:
        nodes = "; ".join(" ".join(n["target"]) for n in v["nodes"][:4])
        out.append(f"{v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {nodes}")
    return out


def _key(site: Deployment, sample_id: str) -> str:
    return site.client("admin").segments()[sample_id]["id"]


def test_every_page_passes_axe_with_zero_violations(browser: Any, site: Deployment):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    found: dict[str, list[str]] = {}
    anon = browser.new_context()
    login = anon.new_page()
    login.goto(site.server.base_url + "/login")
    found["login"] = _axe(login)
    anon.close()
    admin = Page(browser, site, "admin")
    independent = site.info["independent"]
    couple = _key(site, COUPLE[0])
    pages = {
        "dashboard (admin)": "/",
        "segment": f"/segments/{couple}",
        "row": f"/segments/{couple}/rows/2",
        "row (final copy)": f"/segments/{independent}/rows/2",
        "adjudication": f"/segments/{independent}/adjudicate",
        "agreement": "/agreement?resamples=50&bertscore=false",
        "questionnaires": "/ratings",
    }
    for name, path in pages.items():
        admin.goto(path)
        admin.page.wait_for_load_state("load")
        found[name] = _axe(admin.page)
    admin.close()
    alice = Page(browser, site, "alice")
    found["dashboard (annotator)"] = _axe(alice.page)
    alice.goto(f"/ratings/{site.info['questionnaire']}/1")
    found["questionnaire item"] = _axe(alice.page)
    alice.close()
    bad = {k: v for k, v in found.items() if v}
    assert not bad, "\n".join(f"{k}: {line}" for k, lines in bad.items() for line in lines)
