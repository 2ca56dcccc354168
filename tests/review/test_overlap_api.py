"""Overlap review through the JSON API and pages of a real server, on SQLite and on PostgreSQL: overlap with
independent copies, the blind rule between annotators, adjudication, export precedence, agreement,
and the judge-rating questionnaire with its blind rule (no judge score, no model name)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from rescue_bench.review.ratings import ITEM_KEYS
from tests.review.helpers import COUPLE, FAMILY, Deployment

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

SEG = COUPLE[5]
"""The segment two annotators review independently (nobody else is assigned to it)."""


def _save(c, key: str, n: int, fields: dict, reviewed: bool = True) -> dict:
    version = c.get(f"/api/segments/{key}/rows/{n}").json()["version"]
    resp = c.put(f"/api/segments/{key}/rows/{n}", {"version": version, "fields": fields, "reviewed": reviewed})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_two_annotators_review_one_segment_blind_then_an_admin_adjudicates_and_exports(deployment: Deployment):
    admin, carol, dave = deployment.client("admin"), deployment.client("carol"), deployment.client("dave")
    assert carol.post("/api/overlap", {"k": 2}).status_code == 403  # admins only
    resp = admin.post("/api/overlap", {"k": 2, "usernames": ["carol", "dave"], "segments": [SEG], "seed": 1})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["switched"] == [SEG] and sorted(a["user"] for a in body["added"]) == ["carol", "dave"]
    key = carol.segments()[SEG]["id"]
    assert carol.segments()[SEG]["mode"] == "independent"
    # each edits a copy of their own; neither sees the other's value, nor the history of it
    _save(carol, key, 2, {"relation_pattern": "attack_attack", "tone_of_voice": "carol-only-tone"})
    _save(dave, key, 2, {"relation_pattern": "withdraw_withdraw", "tone_of_voice": "dave-only-tone"})
    _save(carol, key, 3, {"tone_of_voice": "same"})
    _save(dave, key, 3, {"tone_of_voice": "same"})
    assert carol.get(f"/api/segments/{key}/rows/2").json()["row"]["tone_of_voice"] == "carol-only-tone"
    for c, hidden in ((carol, "dave-only-tone"), (dave, "carol-only-tone")):
        for path in (f"/api/segments/{key}/rows/2", f"/api/segments/{key}/rows/2/audit", f"/segments/{key}/rows/2", f"/segments/{key}", f"/api/segments/{key}", "/"):
            assert hidden not in c.get(path).text, path
        assert c.get(f"/api/segments/{key}/rows/2/others").status_code == 403
    # a comment can quote a value: the other annotator does not read it either (admins do)
    assert carol.post(f"/api/segments/{key}/comments", {"text": "carol-note: I heard it as sharp", "row": 2}).status_code == 201
    assert "carol-note" not in dave.get(f"/api/segments/{key}/comments").text and "carol-note" not in dave.get(f"/segments/{key}/rows/2").text
    assert "carol-note" in admin.get(f"/api/segments/{key}/comments").text and "carol-note" in carol.get(f"/segments/{key}").text
    final = admin.get(f"/api/segments/{key}/rows/2").json()
    assert final["version"] == 0 and final["row"] == final["draft"]
    # the admin sees the disputes side by side
    adj = admin.get(f"/api/segments/{key}/adjudication").json()
    assert adj["annotators"] == ["carol", "dave"] and adj["summary"]["disputed"] == 1 and adj["summary"]["agreed"] == 1
    row2 = next(r for r in adj["rows"] if r["row_index"] == 2)
    disputes = {d["field"]: d for d in row2["disputes"]}  # in the release format's field order
    assert sorted(disputes) == ["relation_pattern", "tone_of_voice"]
    assert {o["value"]: o["annotators"] for o in disputes["relation_pattern"]["options"]} == {"attack_attack": ["carol"], "withdraw_withdraw": ["dave"]}
    assert carol.get(f"/api/segments/{key}/adjudication").status_code == 403
    page = admin.get(f"/segments/{key}/adjudicate")
    assert page.status_code == 200 and "carol-only-tone" in page.text and "dave-only-tone" in page.text
    url = f"/api/segments/{key}/rows/2/adjudication"
    undecided = admin.put(url, {"version": 0, "take": {"relation_pattern": "dave"}})
    assert undecided.status_code == 422 and undecided.json()["field"] == "tone_of_voice"
    done = admin.put(url, {"version": 0, "take": {"relation_pattern": "dave"}, "values": {"tone_of_voice": "flat, then sharp"}})
    assert done.status_code == 200, done.text
    assert done.json()["reviewed"] and done.json()["row"]["relation_pattern"] == "withdraw_withdraw"
    assert done.json()["row"]["tone_of_voice"] == "flat, then sharp"
    stale = admin.put(url, {"version": 0, "take": {"relation_pattern": "carol", "tone_of_voice": "carol"}})
    assert stale.status_code == 409 and stale.json()["row"]["relation_pattern"] == "withdraw_withdraw"
    assert admin.post(f"/api/segments/{key}/adjudication/accept-agreed").json() == {"accepted": 1}  # row 3
    audit = admin.get(f"/api/segments/{key}/rows/2/audit").json()
    choices = {e["field"]: e for e in audit if e["action"] == "adjudicate"}
    assert choices["relation_pattern"]["user"] == "admin" and choices["relation_pattern"]["note"] == "from dave"
    assert choices["tone_of_voice"]["new"] == "flat, then sharp" and choices["tone_of_voice"]["note"] == "edited by admin"
    # export: adjudicated values; one annotator's version on request
    exported = {json.loads(line)["sample_id"]: json.loads(line) for line in admin.get("/api/export").text.splitlines()}
    assert exported[SEG]["rows"][1]["tone_of_voice"] == "flat, then sharp"
    assert exported[SEG]["rows"][2]["tone_of_voice"] == "same"
    carols = [json.loads(line) for line in admin.get("/api/export", params={"annotator": "carol"}).text.splitlines()]
    assert [c["sample_id"] for c in carols] == [SEG] and carols[0]["rows"][1]["tone_of_voice"] == "carol-only-tone"
    # once every row is adjudicated the annotators see the others' values (the default reveal rule)
    assert admin.put("/api/settings/reveal", {"reveal": "always"}).json() == {"reveal": "always"}
    others = carol.get(f"/api/segments/{key}/rows/2/others")
    assert others.status_code == 200
    names = {c["name"]: c["row"]["tone_of_voice"] for c in others.json()["copies"]}
    assert names == {"dave": "dave-only-tone", "final": "flat, then sharp"} and "tone_of_voice" in others.json()["fields"]
    assert "dave-only-tone" in carol.get(f"/segments/{key}/rows/2").text  # and the row page shows them
    assert "carol-note" in dave.get(f"/api/segments/{key}/comments").text
    assert admin.put("/api/settings/reveal", {"reveal": "sometimes"}).status_code == 422
    admin.put("/api/settings/reveal", {"reveal": "adjudicated"})
    assert carol.get(f"/api/segments/{key}/rows/2/others").status_code == 403  # 17 rows still to adjudicate


def test_mode_changes_and_agreement_report_through_the_api(deployment: Deployment):
    admin, carol, dave = deployment.client("admin"), deployment.client("carol"), deployment.client("dave")
    key = admin.segments()[FAMILY[1]]["id"]
    assert carol.put(f"/api/segments/{key}/mode", {"mode": "independent"}).status_code in (403, 404)
    assert admin.put(f"/api/segments/{key}/assignees", {"usernames": ["carol", "dave"]}).status_code == 200
    resp = admin.put(f"/api/segments/{key}/mode", {"mode": "independent"})
    assert resp.status_code == 200 and resp.json() == {"mode": "independent", "assignees": ["carol", "dave"]}
    assert admin.put(f"/api/segments/{key}/mode", {"mode": "parallel"}).status_code == 422
    for n, (a, b) in enumerate([(5, 5), (3, 6), (7, 7)], start=2):
        for c, level in ((carol, a), (dave, b)):
            person = c.get(f"/api/segments/{key}/rows/{n}").json()["row"].get("primary_speaker") or "Mia"
            _save(c, key, n, {"internal_emotion": [{"person": person, "emotion_description": "tense", "intensity": level}]})
    # work saved in the own copies: no going back to shared
    assert admin.put(f"/api/segments/{key}/mode", {"mode": "shared"}).status_code == 422
    report = admin.get("/api/agreement", params={"resamples": 50, "bertscore": "false"}).json()
    assert carol.get("/api/agreement").status_code == 403
    fields = {(f["field"], f["scope"]): f for f in report["fields"]}
    family = fields[("intensity", "family")]
    assert family["units"] >= 3 and family["level"] == "interval" and family["alpha"] is not None
    assert {"alpha", "alpha_ci", "cohen_kappa", "fleiss_kappa", "units", "segments", "notes"} <= set(family)
    assert set(report) >= {"segments", "rows", "annotators", "fields", "text", "changes", "settings"}
    page = admin.get("/agreement", params={"resamples": 50, "bertscore": "false"})
    assert page.status_code == 200 and "Krippendorff" in page.text and "Emotion intensity" in page.text
    assert carol.get("/agreement").status_code == 403


# ------------------------------------------------------------------------------------------------
# the judge-rating questionnaire
# ------------------------------------------------------------------------------------------------

SECRETS = ("judge-said-4711", "judge-said-4712", "judge-said-4713", "secret-model-x")
"""Planted in the sample's judge_score and model columns and in the set's name: a rater must never
receive any of them."""


def _sample(folder: Path) -> Path:
    path = folder / "secret-model-x_sample.csv"
    rows = [
        ["id", "task", "sample_id", "scenario", "row", "gold", "prediction", "judge_score", "human_score", "model"],
        ["er-1", "er", COUPLE[0], "couple", "4", "hurt and dismissed (intensity 6)", "annoyed (intensity 4)", SECRETS[0], "", SECRETS[3]],
        ["vp-2", "vp", FAMILY[0], "family", "7", "Mia -> Dad: he never listens", "Mia -> Dad: feels ignored <b>by him</b>", SECRETS[1], "", SECRETS[3]],
        ["er-3", "er", COUPLE[1], "couple", "2", "calm (intensity 2)", "tense (intensity 7)", SECRETS[2], "", SECRETS[3]],
    ]
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


@pytest.fixture(scope="module")
def questionnaire(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> str:
    from rescue_bench.judge_ratings import read_sample_csv
    from rescue_bench.review import ratings
    from rescue_bench.review.db import Database
    from rescue_bench.review.users import get_user

    sample = _sample(tmp_path_factory.mktemp("sample"))
    db = Database(deployment.db_url)
    with db.write() as s:
        rating_set = ratings.import_ratings(
            s, read_sample_csv(sample), name="secret-model-x sample", file_name=sample.name, sha256="0" * 64,
            raters=[get_user(s, "alice"), get_user(s, "bob")],
        )
        key = rating_set.key
    db.dispose()
    return key


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text] + (["judge_score"] if "judge_score" in text else [])


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_a_rater_never_receives_the_judge_score_or_the_model_name(deployment: Deployment, questionnaire: str):
    alice = deployment.client("alice")
    responses = [alice.get("/"), alice.get("/ratings"), alice.get("/api/ratings"), alice.get("/api/me")]
    first = alice.get(f"/ratings/{questionnaire}")
    assert first.status_code == 303 and first.headers["location"] == f"/ratings/{questionnaire}/1"
    for n in (1, 2, 3):
        page = alice.get(f"/ratings/{questionnaire}/{n}")
        assert page.status_code == 200
        item = alice.get(f"/api/ratings/{questionnaire}/items/{n}")
        assert tuple(item.json()) == ITEM_KEYS
        assert not {k for k in _keys(item.json()) if "judge" in k.lower() or "model" in k.lower()}
        responses += [page, item]
    rated = alice.put(f"/api/ratings/{questionnaire}/items/2", {"score": 4, "note": "close enough"})
    assert rated.status_code == 200 and rated.json()["score"] == 4
    responses.append(rated)
    for resp in responses:
        assert _leaks(resp.text) == [], resp.request.url
    # what the rater does see: the reference, the answer (escaped), the judge's rubric, a neutral title
    page = alice.get(f"/ratings/{questionnaire}/2").text
    assert "Mia -&gt; Dad: he never listens" in page and "feels ignored &lt;b&gt;by him&lt;/b&gt;" in page
    assert "right people" in page and "Questionnaire " in page  # the VP rubric's words
    listing = alice.get("/api/ratings").json()
    assert listing[0]["title"].startswith("Questionnaire ") and "name" not in listing[0]


def test_ratings_access_scores_and_export(deployment: Deployment, questionnaire: str):
    alice, bob, carol, admin = (deployment.client(n) for n in ("alice", "bob", "carol", "admin"))
    assert carol.get(f"/api/ratings/{questionnaire}/items/1").status_code == 404
    assert carol.put(f"/api/ratings/{questionnaire}/items/1", {"score": 3}).status_code == 404
    assert carol.get(f"/ratings/{questionnaire}/1").status_code == 404
    assert alice.put(f"/api/ratings/{questionnaire}/items/1", {"score": 6}).status_code == 422
    assert alice.put(f"/api/ratings/{questionnaire}/items/1", {"score": "5"}).status_code == 422
    assert alice.put(f"/api/ratings/{questionnaire}/items/9", {"score": 5}).status_code == 404
    assert alice.put(f"/api/ratings/{questionnaire}/items/1", {"score": 5}).status_code == 200
    assert bob.put(f"/api/ratings/{questionnaire}/items/1", {"score": 3}).status_code == 200
    # raters do not see each other's scores
    assert alice.get(f"/api/ratings/{questionnaire}/items/1").json()["score"] == 5
    assert bob.get(f"/api/ratings/{questionnaire}/items/1").json()["score"] == 3
    # admins see the set's real name and everyone's progress, may look at items, and export
    sets = admin.get("/api/ratings").json()
    mine = next(s for s in sets if s["id"] == questionnaire)
    assert mine["name"] == "secret-model-x sample" and mine["raters"]["alice"] >= 1 and mine["raters"]["bob"] == 1
    assert admin.get(f"/ratings/{questionnaire}/1").status_code == 200
    assert alice.get("/api/ratings/export").status_code == 403
    exported = admin.get("/api/ratings/export", params={"set": questionnaire})
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    scores = {(r["id"], r["rater"]): r["human_score"] for r in rows}
    assert scores[("er-1", "alice")] == "5" and scores[("er-1", "bob")] == "3" and scores[("er-3", "bob")] == ""
    assert not _leaks(exported.text.replace("secret-model-x_sample", ""))
    assert re.match(r"^id,task,sample_id,scenario,row,rater,human_score$", exported.text.splitlines()[0])
