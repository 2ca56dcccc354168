"""A rater answers the closed loop's pairwise questionnaire in a real browser (Playwright driving
Debian's chromium against a real server), by keyboard alone, on pairs drawn from real `rescue sim
eval` runs whose folders carry planted names; the pages are photographed at 1024x768, 1366x768,
200% zoom and 3840 wide into test-artifacts/review/ for a reviewer to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.review.helpers import ARTIFACTS, Deployment, Page, axe_violations, log_in, rescue

pytestmark = pytest.mark.timeout(900)

PLANTED = "agentzyxplanted"
"""In every run folder's name (the sample names runs by their folder): never on a rater's page."""
ZOOM_200 = {"viewport": {"width": 683, "height": 384}, "device_scale_factor": 2}


@pytest.fixture(scope="module")
def site(sqlite_deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    """The demo server with four pairs of real closed-loop episodes for alice to compare."""
    from rescue_bench.judge_ratings import write_pair_sample
    from rescue_bench.report.pairs import draw_pairs
    from rescue_bench.report.runs import load_runs
    from rescue_bench.review import pairs
    from rescue_bench.review.db import Database
    from rescue_bench.review.users import get_user
    from tests.report.pair_helpers import make_runs

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    folder = tmp_path_factory.mktemp("closed-loop")
    runs = make_runs(folder, ("attend", "group"), prefix=f"{PLANTED}-")
    drawn, _ = draw_pairs(load_runs(runs), n=4, seed=0)
    write_pair_sample(drawn, folder / "pairs.jsonl")
    sqlite_deployment.info.update(runs=runs, sample=folder / "pairs.jsonl")
    db = Database(sqlite_deployment.db_url)
    with db.write() as s:
        rating_set = pairs.import_pairs(s, drawn, name=f"{PLANTED} pairs", file_name="pairs.jsonl", sha256="0" * 64, raters=[get_user(s, "alice")])
        sqlite_deployment.info["pairs"] = rating_set.key
    db.dispose()
    return sqlite_deployment


def _wide(browser: Any, site: Deployment, **context: Any) -> Any:
    """A page of alice's in a context of its own size, logged in by keyboard."""
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    page.goto(site.server.base_url + "/login")
    log_in(page, "alice")
    page.wait_for_url(site.server.base_url + "/")
    return ctx, page


def test_a_rater_answers_pairs_by_keyboard_alone(browser: Any, site: Deployment) -> None:
    key = site.info["pairs"]
    p = Page(browser, site, "alice")
    page = p.page
    p.goto(f"/ratings/{key}")
    page.wait_for_url(f"**/ratings/{key}/1")
    assert page.locator("#context .turn").count() >= 1 and page.locator("#first .turn.therapist").count() == 3
    assert PLANTED not in page.content() and "baseline/" not in page.content()
    p.shot("pair-1366.png")
    found = axe_violations(page)
    assert not found, found

    # pair 1: B is better; the key moves to the reason, Ctrl+Enter saves and opens the next pair
    page.keyboard.press("b")
    assert page.locator(".choice-option.chosen .choice-name").inner_text() == "B"
    assert page.evaluate("document.activeElement.id") == "pair-reason"
    page.keyboard.type("B asks each of them how they feel")
    p.shot("pair-answered-1366.png")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/ratings/{key}/2")

    # pair 2: as good, and each side rated 1-5 with Tab and the arrow keys
    page.keyboard.press("t")
    page.keyboard.type("both keep listening")
    page.keyboard.press("Tab")  # the first side's rating
    page.keyboard.press("Space")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Tab")  # the second side's rating
    page.keyboard.press("Space")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/ratings/{key}/3")

    # pair 3: A first, then Esc leaves the reason and B changes the answer; the reason stays
    page.keyboard.press("a")
    page.keyboard.type("the second turn names the pattern")
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    assert page.locator("#pair-reason").input_value() == "the second turn names the pattern"
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/ratings/{key}/4")

    # pair 4, the last: saved, and the page says every pair is answered
    page.keyboard.press("a")
    page.keyboard.type("warmer")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#toast:has-text('every pair of this questionnaire is answered')")
    assert page.locator("#rated-count").inner_text() == "4 of 4 answered"
    p.close()

    alice = site.client("alice")
    views = [alice.get(f"/api/ratings/{key}/pairs/{n}").json() for n in (1, 2, 3, 4)]
    assert [v["preferred"] for v in views] == ["second", "tie", "second", "first"]
    assert (views[1]["support_first"], views[1]["support_second"]) == (4, 1)
    assert views[0]["reason"] == "B asks each of them how they feel"


def test_the_pair_page_at_1024_200_percent_zoom_and_3840_wide(browser: Any, site: Deployment) -> None:
    key = site.info["pairs"]
    for name, context, width in (
        ("1024", {"viewport": {"width": 1024, "height": 768}}, 1024),
        ("zoom200", ZOOM_200, 683),
        ("3840", {"viewport": {"width": 3840, "height": 2160}}, 3840),
    ):
        ctx, page = _wide(browser, site, **context)
        page.goto(f"{site.server.base_url}/ratings/{key}/1")
        page.wait_for_load_state("load")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, name  # nothing scrolls sideways
        first, second = page.locator("#first-title").bounding_box(), page.locator("#second-title").bounding_box()
        assert first and second
        side_by_side = abs(first["y"] - second["y"]) < 1
        assert side_by_side == (name != "zoom200"), (name, first, second)  # one column only when the window is narrow
        for button in ("#pair-save", "#pair-reason"):
            box = page.locator(button).bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, (name, button, box)
        page.screenshot(path=str(ARTIFACTS / f"pair-{name}.png"))
        page.screenshot(path=str(ARTIFACTS / f"pair-{name}-full.png"), full_page=True)
        ctx.close()


def test_the_questionnaires_page_lists_the_pairs_for_the_rater(browser: Any, site: Deployment) -> None:
    p = Page(browser, site, "alice")
    p.goto("/ratings")
    row = p.page.locator("#questionnaires tr", has_text="pairs: which continuation")
    assert row.count() == 1 and PLANTED not in p.page.content()
    p.shot("pair-questionnaires.png")
    p.close()
    admin = Page(browser, site, "admin")
    admin.goto("/ratings")
    assert PLANTED in admin.page.content()  # admins see the set's real name
    admin.close()


def test_nothing_in_the_sample_reaches_the_page_but_what_a_rater_reads(site: Deployment, tmp_path: Path) -> None:
    """The pages' text holds the session and the continuations; no run, no episode id, no J."""
    alice = site.client("alice")
    key = site.info["pairs"]
    for n in (1, 2, 3, 4):
        text = alice.get(f"/ratings/{key}/{n}").text
        assert PLANTED not in text and "sim/demo_" not in text and "baseline/" not in text


def test_sample_import_rate_export_score_end_to_end(site: Deployment, tmp_path: Path) -> None:
    """The whole study on the command line and the API: raters who follow J agree with it fully, raters
    who reverse it not at all, whichever side each was shown first (the export's A/B translation)."""
    import csv
    import json

    from tests.report.pair_helpers import episode_J

    runs, sample = site.info["runs"], site.info["sample"]
    made = rescue("review", "import-ratings", str(sample), "--db", site.db_url, "--name", "end to end", "--rater", "bob", "--rater", "carol", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    key = made.stdout.rsplit("/ratings/", 1)[1].strip()
    J = episode_J(runs)
    for user, follows in (("bob", True), ("carol", False)):
        client = site.client(user)
        for n in range(1, 5):
            view = client.get(f"/api/ratings/{key}/pairs/{n}").json()
            pair = next(json.loads(line) for k, line in enumerate(sample.read_text().splitlines(), 1) if k == n)
            first = "A" if view["first"] == [{"listening": False, "to": [], "text": "", **t} for t in pair["a"]["turns"]] else "B"
            better_side = "A" if J[(pair["a"]["run"], pair["a"]["episode"])] > J[(pair["b"]["run"], pair["b"]["episode"])] else "B"
            chosen = better_side if follows else ("B" if better_side == "A" else "A")
            answer = client.put(f"/api/ratings/{key}/pairs/{n}", {"preferred": "first" if chosen == first else "second", "reason": "r"})
            assert answer.status_code == 200, answer.text
    out = tmp_path / "preferences.csv"
    done = rescue("review", "export-ratings", "--db", site.db_url, "--set", "end to end", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 8 and {r["shown_first"] for r in rows} <= {"A", "B"}
    scored = rescue("agreement", "score", str(out), *map(str, runs), "--out", str(tmp_path / "people"), "--resamples", "100", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    result = json.loads((tmp_path / "people" / "agreement.json").read_text())
    per_rater = {r["rater"]: r["with_J"]["value"] for r in result["per_rater"]}
    assert per_rater == {"bob": 1.0, "carol": 0.0} and result["agreement"]["both"]["value"] == 0.5
    assert result["alpha"]["alpha"] is not None and result["alpha"]["alpha"] < 0  # they disagree on every pair
