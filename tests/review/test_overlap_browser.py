"""Real-browser tests of issue 13 (Playwright driving Debian's chromium against a real server): a rater
completes one rating with the keyboard, an admin adjudicates a row, and the new pages are
photographed at 1366x768 into test-artifacts/review/ for a reviewer to look at."""

from __future__ import annotations

import csv
from typing import Any

import pytest

from tests.review.helpers import ARTIFACTS, COUPLE, FAMILY, Deployment, Page

pytestmark = pytest.mark.timeout(600)

SECRETS = ("judge-said-2", "judge-said-5", "secret-model-x")


@pytest.fixture(scope="module")
def site(sqlite_deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    """The demo server with a questionnaire rated by alice, and one segment reviewed independently
    by carol and dave."""
    from rescue_bench.judge_ratings import read_sample_csv
    from rescue_bench.review import ratings
    from rescue_bench.review.db import Database
    from rescue_bench.review.users import get_user

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    sample = tmp_path_factory.mktemp("sample") / "sample.csv"
    with sample.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(
            [
                ["id", "task", "sample_id", "scenario", "row", "gold", "prediction", "judge_score", "human_score", "model"],
                ["er-1", "er", COUPLE[0], "couple", "4", "hurt and dismissed (intensity 6)", "annoyed, feels brushed off (intensity 4)", SECRETS[0], "", SECRETS[2]],
                ["vp-2", "vp", FAMILY[0], "family", "7", "Mia -> Dad: he never listens to her | Mia -> Mum: she takes Dad's side",
                 "Mia -> Dad: feels ignored by him | Mia -> Mum: sees her as neutral", SECRETS[1], "", SECRETS[2]],
            ]
        )
    db = Database(sqlite_deployment.db_url)
    with db.write() as s:
        rating_set = ratings.import_ratings(s, read_sample_csv(sample), name="secret-model-x run", file_name=sample.name, sha256="0" * 64, raters=[get_user(s, "alice")])
        sqlite_deployment.info["questionnaire"] = rating_set.key
    db.dispose()
    admin = sqlite_deployment.client("admin")
    assert admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [COUPLE[5]]}).status_code == 200
    key = admin.segments()[COUPLE[5]]["id"]
    sqlite_deployment.info["independent"] = key
    for who, pattern, tone in (("carol", "attack_attack", "raised, clipped"), ("dave", "pursue_withdraw", "tense but quiet")):
        c = sqlite_deployment.client(who)
        for n in (2, 3, 4):
            version = c.get(f"/api/segments/{key}/rows/{n}").json()["version"]
            fields = {"relation_pattern": pattern, "tone_of_voice": tone} if n == 2 else {}
            assert c.put(f"/api/segments/{key}/rows/{n}", {"version": version, "fields": fields, "reviewed": True}).status_code == 200
    return sqlite_deployment


def test_a_rater_completes_one_rating_with_the_keyboard(browser: Any, site: Deployment):
    key = site.info["questionnaire"]
    p = Page(browser, site, "alice")
    page = p.page
    page.click("#my-questionnaires a")
    page.wait_for_url(f"**/ratings/{key}/1")
    assert "hurt and dismissed" in page.locator("#reference").inner_text()
    assert "brushed off" in page.locator("#answer").inner_text()
    assert page.locator(".score-option").count() == 5
    text = page.content()
    assert not [s for s in SECRETS if s in text]
    page.keyboard.press("4")
    assert page.locator(".score-option.chosen .score-num").inner_text() == "4"
    page.fill("#rate-note", "right feeling, weaker")
    p.shot("rate.png")
    page.locator("#rate-note").press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/ratings/{key}/2")  # saved, on to the next item not rated yet
    assert "1 of 2 rated" in page.locator("#rated-count").inner_text()
    item = site.client("alice").get(f"/api/ratings/{key}/items/1").json()
    assert item["score"] == 4 and item["note"] == "right feeling, weaker"
    p.shot("rate-vp.png")
    p.goto("/ratings")
    p.shot("ratings.png")
    p.close()


def test_an_admin_adjudicates_a_row_and_sees_agreement(browser: Any, site: Deployment):
    key = site.info["independent"]
    p = Page(browser, site, "admin")
    page = p.page
    p.shot("dashboard-admin-overlap.png")
    p.goto(f"/segments/{key}/adjudicate")
    card = page.locator("#adj-2")
    assert card.locator("tr[data-field]").count() == 2  # relation pattern and tone of voice
    p.shot("adjudicate.png")
    card.locator("tr[data-field=relation_pattern] .option", has_text="dave").locator("input").check()
    card.locator("tr[data-field=tone_of_voice] .custom-value").fill("tense, then raised")
    card.locator(".adj-save").click()
    card.locator(".adj-status", has_text="adjudicated").wait_for()
    assert page.locator("#adj-done").inner_text() == "1"
    final = site.client("admin").get(f"/api/segments/{key}/rows/2").json()
    assert final["reviewed"] and final["row"]["relation_pattern"] == "pursue_withdraw" and final["row"]["tone_of_voice"] == "tense, then raised"
    page.click("#accept-agreed")
    page.wait_for_load_state("load")
    page.wait_for_selector("#adj-3", state="detached")
    p.goto("/agreement?resamples=200&bertscore=false")
    assert page.locator("#agreement tbody tr[data-field=relation_pattern]").count() == 1
    p.shot("agreement.png")
    p.goto(f"/segments/{key}/rows/2")
    assert page.locator("#copy-banner").is_visible() and page.locator("#others-table").is_visible()
    p.shot("row-final-copy.png")
    p.close()
    annotator = Page(browser, site, "carol")
    annotator.goto(f"/segments/{key}/rows/2")
    assert annotator.page.locator("#copy-banner").is_visible() and annotator.page.locator("#others").count() == 0
    assert "tense but quiet" not in annotator.page.content()  # dave's value stays hidden until adjudicated
    annotator.shot("row-own-copy.png")
    annotator.close()

