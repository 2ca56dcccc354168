"""The closed loop's pairwise questionnaire through the JSON API and pages of a real server, on SQLite
and on PostgreSQL: the blind rule (planted agent names, runs and J values never reach a rater), the
sides shuffled per rater and exported in the sample's A/B terms, the answer's checks, and the
command line (import-ratings, export-ratings) feeding `rescue agreement score`."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.review.pairs import PAIR_KEYS
from tests.review.helpers import COUPLE, FAMILY, Deployment, rescue

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

SECRETS = ("agent-zyx-planted", "run-zyx-secret-left", "run-zyx-secret-right", "1.98765", "0.12398", "baseline/")
"""Planted in the sample (run folder names, an agent's name in unknown keys, J values) and in the set's
name: a rater must never receive any of them."""
PAIRS = 12


def _turns(words: str, client: str) -> list[dict[str, Any]]:
    return [
        {"speaker": "Therapist", "to": [client], "text": f"{client}, {words}"},
        {"speaker": client, "text": f"I hear {words.split()[0]}."},
        {"speaker": "Therapist", "listening": True},
        {"speaker": client, "text": "Mm."},
    ]


def pair_sample(folder: Path, n: int = PAIRS) -> Path:
    """A pair sample as `rescue agreement sample` writes it, plus what an attacker might slip in: J
    values and agent names under keys the reader does not know, and runs named after the agents."""
    path = folder / f"{SECRETS[0]}_pairs.jsonl"
    lines = []
    for k in range(n):
        clip = (COUPLE + FAMILY)[k % 6]
        client = "Dana" if clip in COUPLE else "Mia"
        lines.append(
            {
                "pair_id": f"pair-{k + 1:04d}", "scenario": "couple" if clip in COUPLE else "family", "sample_id": clip, "start_row": 4,
                "context": [{"speaker": "Therapist", "to": [client], "text": "What brings you here today?"}, {"speaker": client, "text": "We keep fighting."}],
                "a": {"run": SECRETS[1], "episode": f"sim/{clip}/4", "turns": _turns(f"left words {k}", client), "J": -1.98765, "agent": SECRETS[0]},
                "b": {"run": SECRETS[2], "episode": f"sim/{clip}/4", "turns": _turns(f"right words {k}", client), "J": 0.12398, "model": "baseline/group"},
                "J": {"a": -1.98765, "b": 0.12398}, "agent_a": SECRETS[0],
            }
        )
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pair_set(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> str:
    from rescue_bench.judge_ratings import read_pair_sample
    from rescue_bench.review import pairs
    from rescue_bench.review.db import Database
    from rescue_bench.review.users import get_user

    sample = pair_sample(tmp_path_factory.mktemp("pairs"))
    db = Database(deployment.db_url)
    with db.write() as s:
        rating_set = pairs.import_pairs(
            s, read_pair_sample(sample), name=f"{SECRETS[0]} vs baseline/group", file_name=sample.name, sha256="0" * 64,
            raters=[get_user(s, "alice"), get_user(s, "bob")],
        )
        key = rating_set.key
    db.dispose()
    return key


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _reachable(client: Any, start: list[str]) -> dict[str, Any]:
    """Every page, API answer and static file the client reaches by following the links, forms and
    scripts of the pages from ``start`` (same site; logging out aside)."""
    seen: dict[str, Any] = {}
    queue = list(start)
    while queue and len(seen) < 200:
        path = queue.pop(0)
        if path in seen or "logout" in path:
            continue
        resp = client.get(path)
        seen[path] = resp
        if resp.headers.get("content-type", "").startswith("text/html"):
            for ref in re.findall(r'(?:href|src|action)="(/[^"#?]*)', resp.text):
                if ref not in seen:
                    queue.append(ref)
    return seen


def test_a_rater_never_receives_an_agent_name_a_run_or_a_J(deployment: Deployment, pair_set: str) -> None:
    alice = deployment.client("alice")
    first = alice.get(f"/ratings/{pair_set}")
    assert first.status_code == 303 and first.headers["location"] == f"/ratings/{pair_set}/1"
    start = ["/", "/ratings", "/api/ratings", "/api/me", *(f"/ratings/{pair_set}/{n}" for n in range(1, PAIRS + 1))]
    start += [f"/api/ratings/{pair_set}/pairs/{n}" for n in range(1, PAIRS + 1)]
    reached = _reachable(alice, start)
    assert len(reached) > 2 * PAIRS + 4 and "/static/pair.js" in reached and "/static/app.js" in reached
    for n in range(1, PAIRS + 1):
        view = reached[f"/api/ratings/{pair_set}/pairs/{n}"].json()
        assert tuple(view) == PAIR_KEYS
        assert not {k for k in _keys(view) if re.search(r"run|episode|agent|model|^J$|score", k)}
    answered = alice.put(f"/api/ratings/{pair_set}/pairs/2", {"preferred": "second", "reason": "warmer, and it asked Dana", "support_first": 2, "support_second": 4})
    assert answered.status_code == 200, answered.text
    responses = [*reached.values(), answered, alice.get(f"/ratings/{pair_set}/2"), alice.get("/api/ratings")]
    for resp in responses:
        assert resp.status_code in (200, 303), (resp.request.url, resp.status_code)
        assert _leaks(resp.text) == [], resp.request.url
    # what the rater does see: the session so far, both continuations, a neutral title
    page = alice.get(f"/ratings/{pair_set}/3").text
    assert "We keep fighting." in page and "left words 2" in page and "right words 2" in page and "Questionnaire " in page
    assert "(keeps listening)" in page and "simulated" in page
    listing = alice.get("/api/ratings").json()
    mine = next(s for s in listing if s["id"] == pair_set)
    assert mine["kind"] == "pairs" and mine["rated"] == 1 and "name" not in mine
    # nor can a rater ask for the export or for the set's items as another kind
    assert alice.get("/api/ratings/export", params={"set": pair_set}).status_code == 403
    assert alice.get(f"/api/ratings/{pair_set}/items/1").status_code == 404


def test_sides_are_shuffled_per_rater_and_answers_export_in_the_sample_terms(deployment: Deployment, pair_set: str) -> None:
    alice, bob, admin = (deployment.client(n) for n in ("alice", "bob", "admin"))
    shown: dict[str, list[str]] = {}
    for name, who in (("alice", alice), ("bob", bob)):
        shown[name] = []
        for n in range(1, PAIRS + 1):
            view = who.get(f"/api/ratings/{pair_set}/pairs/{n}").json()
            again = who.get(f"/api/ratings/{pair_set}/pairs/{n}").json()
            assert again["first"] == view["first"]  # the same order every time a rater opens it
            shown[name].append("A" if "left words" in view["first"][0]["text"] else "B")
            answer = who.put(f"/api/ratings/{pair_set}/pairs/{n}", {"preferred": "first", "reason": "the first one listens"})
            assert answer.status_code == 200 and answer.json()["preferred"] == "first"
    assert set(shown["alice"]) == {"A", "B"} and set(shown["bob"]) == {"A", "B"}  # both orders for each rater
    assert shown["alice"] != shown["bob"]  # and not the same order for everyone
    exported = admin.get("/api/ratings/export", params={"set": pair_set})
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert exported.text.splitlines()[0] == "pair_id,a_run,a_episode,b_run,b_episode,scenario,sample_id,rater,preferred,reason,support_a,support_b,shown_first"
    for row in rows:
        k = int(row["pair_id"].split("-")[1]) - 1
        assert row["shown_first"] == shown[row["rater"]][k]
        assert row["preferred"] == row["shown_first"]  # "the first one" in the sample's terms
        assert row["a_run"] == SECRETS[1] and row["b_run"] == SECRETS[2]  # the admin's export names the runs
    # the admin sees the set's name and everyone's progress; raters do not see each other's answers
    sets = admin.get("/api/ratings").json()
    mine = next(s for s in sets if s["id"] == pair_set)
    assert mine["name"].startswith(SECRETS[0]) and mine["raters"] == {"alice": PAIRS, "bob": PAIRS}
    assert alice.get(f"/api/ratings/{pair_set}/pairs/1").json()["reason"] == "the first one listens"


def test_an_answer_is_checked(deployment: Deployment, pair_set: str) -> None:
    alice, carol, admin = (deployment.client(n) for n in ("alice", "carol", "admin"))
    url = f"/api/ratings/{pair_set}/pairs/1"
    for body, field in (
        ({"preferred": "left", "reason": "x"}, "preferred"),
        ({"preferred": "tie", "reason": ""}, "reason"),
        ({"preferred": "tie", "reason": "   "}, "reason"),
        ({"preferred": "tie", "reason": "same", "support_first": 6}, "support_first"),
        ({"preferred": "tie", "reason": "same", "support_second": "3"}, "support_second"),
        ({"preferred": "tie", "reason": "x" * 2001}, "reason"),
    ):
        resp = alice.put(url, body)
        assert resp.status_code == 422 and field in resp.text, (body, resp.text)
    assert alice.put(f"/api/ratings/{pair_set}/pairs/{PAIRS + 1}", {"preferred": "tie", "reason": "same"}).status_code == 404
    assert carol.get(url).status_code == 404 and carol.put(url, {"preferred": "tie", "reason": "same"}).status_code == 404
    assert carol.get(f"/ratings/{pair_set}/1").status_code == 404
    assert admin.get(f"/ratings/{pair_set}/1").status_code == 200  # admins may look
    assert admin.put(url, {"preferred": "tie", "reason": "same"}).status_code == 404  # but are not raters of it
    ok = alice.put(url, {"preferred": "tie", "reason": "as good", "support_first": 3, "support_second": 3})
    assert ok.status_code == 200 and ok.json()["preferred"] == "tie" and ok.json()["support_second"] == 3


def test_import_and_export_ratings_from_the_command_line(deployment: Deployment, tmp_path: Path) -> None:
    if deployment.backend != "sqlite":
        pytest.skip("the command line is the same on both backends; the API tests cover PostgreSQL")
    sample = pair_sample(tmp_path, n=3)
    made = rescue("review", "import-ratings", str(sample), "--db", deployment.db_url, "--name", "cli pairs", "--rater", "dave", cwd=tmp_path)
    assert made.returncode == 0 and "imported 3 pair(s)" in made.stdout, made.stderr
    key = made.stdout.rsplit("/ratings/", 1)[1].strip()
    dave = deployment.client("dave")
    assert dave.put(f"/api/ratings/{key}/pairs/1", {"preferred": "second", "reason": "kinder"}).status_code == 200
    out = tmp_path / "answers.csv"
    done = rescue("review", "export-ratings", "--db", deployment.db_url, "--set", "cli pairs", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0 and "wrote 1 answer(s) of 3" in done.stderr, done.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["preferred"] for r in rows] == [("B" if rows[0]["shown_first"] == "A" else "A"), "", ""]
    # a bad line is refused naming the file and line, and nothing is imported
    bad = tmp_path / "bad.jsonl"
    lines = sample.read_text().splitlines()
    second = json.loads(lines[1])
    del second["b"]
    bad.write_text("\n".join([lines[0], json.dumps(second)]) + "\n")
    refused = rescue("review", "import-ratings", str(bad), "--db", deployment.db_url, "--name", "bad pairs", cwd=tmp_path)
    assert refused.returncode == 2 and f"{bad}:2: field b: missing" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert "bad pairs" not in json.dumps(deployment.client("admin").get("/api/ratings").json())
