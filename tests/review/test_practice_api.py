"""The practice page's API on a real server (two worker processes, SQLite and PostgreSQL): a person
plays the therapist against the default simulator (the fitted model, which hears the words), scored
like any agent of ``rescue sim eval``, and is debriefed once the episode is over.

The catalogue is the demo with a marker planted in every annotation the role cards and the hidden
state are built from: no page or answer a person gets may contain one; while an episode is played,
nor a pattern label nor a state's keys (the debrief shows distress and patterns once it is over).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.review.helpers import PASSWORD, Client, fresh_database, setup_database, start_server
from tests.review.practice_helpers import HORIZON, MARK, import_catalogue, marked_demo, open_debriefs

USERS = {"admin": "admin", "alice": "annotator", "bob": "annotator", "carol": "annotator"}

class PracticeDeployment:
    def __init__(self, url: str, base_url: str, folder: Path, data: Path):
        self.url, self.base_url, self.folder, self.data = url, base_url, folder, data

    def client(self, user: str | None = None) -> Client:
        c = Client(self.base_url)
        if user is not None:
            assert c.login(user, PASSWORD).status_code == 200
        return c


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def practice_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PracticeDeployment]:
    folder = tmp_path_factory.mktemp(f"practice-{request.param}")
    data = marked_demo(folder / "marked.jsonl")
    with fresh_database(request.param, folder) as url:
        setup_database(url, users=USERS)
        import_catalogue(url, data)
        server = start_server(url, folder, workers=2)
        try:
            yield PracticeDeployment(url, server.base_url, folder, data)
        finally:
            server.stop()


# ------------------------------------------------------------------------------------------------
# the same actions through the sim core
# ------------------------------------------------------------------------------------------------


def core_record(
    data: Path, start_key: str, agent: str, actions: list[dict[str, Any]], horizon: int = HORIZON, simulator: str = "fitted"
) -> dict[str, Any]:
    """The episode of ``actions`` run straight through rescue_bench.sim (no review code): the chain
    answered with the agent JSON a model would write, against ``simulator`` (the bundled model)."""
    from rescue_bench.data import load_clips
    from rescue_bench.sim import Episode, SimOptions, episode_starts

    options = SimOptions(horizon=horizon, per_clip=1, state="none")
    starts = [s for clip in load_clips([data]) for s in episode_starts(clip, options)[0]]
    start = next(s for s in starts if s.id == start_key)
    episode = Episode(start, agent=agent, options=options, subgroups=True, simulator=simulator)
    for action in actions:
        n = len(episode.steps)
        answers = {
            "when": json.dumps({"answer": "yes" if action["speak"] else "no"}),
            "whom_how": json.dumps({"target": action.get("whom"), "strategy": action.get("how")}),
            "turn": json.dumps({"turn": action.get("turn")}),
        }
        while len(episode.steps) == n:
            request = episode.next_request()
            assert request is not None and request.role == "agent"
            episode.answer(answers[request.step])
    assert episode.done
    return episode.record()


def play(c: Client, start: int, actions: list[dict[str, Any]], seen: list[str]) -> dict[str, Any]:
    resp = c.post("/api/practice/episodes", {"start": start})
    assert resp.status_code == 201, resp.text
    seen.append(resp.text)
    view = resp.json()
    for i, action in enumerate(actions, 1):
        assert view["step"] == i and not view["done"]
        page = c.get(f"/practice/{view['id']}")
        assert page.status_code == 200
        seen.append(page.text)
        resp = c.post(f"/api/practice/episodes/{view['id']}/steps", {"step": i, **action})
        assert resp.status_code == 200, resp.text
        seen.append(resp.text)
        view = resp.json()
    return view


def bundled_sha() -> str:
    from rescue_bench.sim import load_model

    return load_model().sha256()


def start_keys(url: str) -> dict[int, tuple[str, str]]:
    from sqlalchemy import select

    from rescue_bench.review.db import Database
    from rescue_bench.review.models import PracticeStart

    db = Database(url)
    with db.read() as session:
        out = {r.id: (r.key, r.scenario) for r in session.scalars(select(PracticeStart))}
    db.dispose()
    return out


def stored_start(url: str, start_id: int) -> str:
    from rescue_bench.review.db import Database
    from rescue_bench.review.models import PracticeStart

    db = Database(url)
    with db.read() as session:
        row = session.get(PracticeStart, start_id)
        assert row is not None
        text = row.start
    db.dispose()
    return text


# ------------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_practice_needs_a_login_and_the_csrf_header(practice_server: PracticeDeployment) -> None:
    anon = practice_server.client()
    assert anon.get("/api/practice").status_code == 401
    assert anon.get("/api/practice/episodes/1").status_code == 401
    assert anon.post("/api/practice/episodes", {"start": 1}).status_code in (401, 403)
    page = anon.get("/practice")
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    alice = practice_server.client("alice")
    csrf = alice.csrf
    alice.csrf = None  # a cross-site page cannot know the token
    assert alice.post("/api/practice/episodes", {"start": 1}).status_code == 403
    alice.csrf = csrf
    created = alice.post("/api/practice/episodes", {"start": 1})
    assert created.status_code == 201
    episode = created.json()["id"]
    alice.csrf = "forged"
    assert alice.post(f"/api/practice/episodes/{episode}/steps", {"step": 1, "speak": False}).status_code == 403
    alice.csrf = csrf
    # another person's episode does not exist for bob (404, the same as a made-up id)
    bob = practice_server.client("bob")
    assert bob.get(f"/api/practice/episodes/{episode}").status_code == 404
    assert bob.get(f"/practice/{episode}").status_code == 404
    assert bob.post(f"/api/practice/episodes/{episode}/steps", {"step": 1, "speak": False}).status_code == 404
    assert bob.get("/api/practice/episodes/999999").status_code == 404
    assert alice.get(f"/api/practice/episodes/{episode}").json()["step"] == 1  # bob changed nothing


def test_a_full_episode_scores_exactly_like_the_sim_core_and_leaks_nothing(practice_server: PracticeDeployment) -> None:
    keys = start_keys(practice_server.url)
    family = next(i for i, (_, scenario) in sorted(keys.items()) if scenario == "family")
    alice = practice_server.client("alice")
    open_debriefs(alice)  # the score comes once every start is played (test_scores_and_debriefs_open_once_every_start_is_played)
    seen: list[str] = [alice.get("/practice").text, alice.get("/api/practice").text]
    first = alice.post("/api/practice/episodes", {"start": family}).json()
    clients, group = first["clients"], first["group"]
    pair = f"{clients[0]} & {clients[1]}"
    assert pair in first["targets"] and group in first["targets"] and set(clients) <= set(first["targets"])
    actions = [
        {"speak": True, "whom": pair, "how": "track", "turn": "What happens between you two when this starts?"},
        {"speak": False},
        {"speak": True, "whom": group, "how": "reframe", "turn": "It sounds like each of you <b>wants</b> to be heard."},
    ]
    view = play(alice, family, actions, seen)
    assert view["done"] and view["step"] == HORIZON and view["targets"] == [] and view["score"] is not None

    # the record the server stored and the sim core's record of the same actions are one and the same
    expected = core_record(practice_server.data, keys[family][0], "human/alice", actions)
    for key in ("J", "final_max_distress", "peak_max_distress", "initial_max_distress", "deescalated",
                "neglect_hits", "neglect_turns", "left_out_hits", "left_out_steps", "attention_balance", "interventions"):
        assert view["score"][key] == expected["metrics"][key], key
    assert expected["simulator"] == "fitted" and expected["metrics"]["J"] is not None
    assert expected["steps"][0]["action"]["recipients"] == clients[:2]  # the pair reached the simulator as two clients
    assert len(view["transcript"]) == len(first["transcript"]) + sum(
        (1 if a["speak"] else 0) + len(s["client_turns"]) for a, s in zip(actions, expected["steps"])
    )
    assert any(r["you"] and "<b>wants</b>" in r["text"] for r in view["transcript"])  # kept as text

    # nothing hidden in anything sent while the episode is played: no annotation, no card, no
    # state, no pattern label; once it is over the debrief shows distress and patterns, never a
    # card's or an annotation's text
    from rescue_bench.labels import PATTERNS

    after = [alice.get(f"/api/practice/episodes/{view['id']}").text, alice.get(f"/practice/{view['id']}").text, alice.get("/practice").text]
    during, ended = "\n".join(seen[:-1]), "\n".join([seen[-1], *after])
    assert MARK in stored_start(practice_server.url, family)  # planted in the cards the server keeps
    assert MARK not in during and MARK not in ended
    for label in {p for ps in PATTERNS.values() for p in ps}:
        assert label not in during, label
    for key in ('"intensity"', '"valence"', '"stance', '"cards"', '"initial_state"', '"pattern"', '"state"'):
        assert key not in during, key
    for key in ('"cards"', '"initial_state"', '"emotion"', '"stance'):
        assert key not in ended, key
    page = alice.get(f"/practice/{view['id']}").text  # the page embeds its data as JSON with < escaped
    assert "<b>" not in page and "\\u003cb\\u003ewants" in page


def test_a_step_is_taken_once_and_checked(practice_server: PracticeDeployment) -> None:
    alice = practice_server.client("alice")
    view = alice.post("/api/practice/episodes", {"start": 1}).json()
    url = f"/api/practice/episodes/{view['id']}/steps"
    bad = [
        ({"step": 1, "speak": True, "whom": "Nobody", "how": "track", "turn": "hi"}, "whom"),
        ({"step": 1, "speak": True, "whom": view["targets"][0], "how": "not-a-strategy", "turn": "hi"}, "how"),
        ({"step": 1, "speak": True, "whom": view["targets"][0], "how": view["strategies"][0], "turn": "   "}, "turn"),
        ({"step": 1, "speak": True, "whom": view["targets"][0], "how": view["strategies"][0], "turn": "x" * 1001}, "turn"),
    ]
    for body, field in bad:
        resp = alice.post(url, body)
        assert resp.status_code == 422 and resp.json().get("field") == field, (body, resp.text)
    assert alice.post(url, {"step": 2, "speak": False}).status_code == 409  # not the next step
    assert alice.post(url, {"step": 1, "speak": False}).status_code == 200
    assert alice.post(url, {"step": 1, "speak": False}).status_code == 409  # a second tab / a double click
    assert alice.get(f"/api/practice/episodes/{view['id']}").json()["step"] == 2


@pytest.mark.slow
def test_export_practice_writes_a_sim_run_the_report_reads(practice_server: PracticeDeployment, tmp_path: Path) -> None:
    bob = practice_server.client("bob")
    seen: list[str] = []
    first_client = bob.get("/api/practice").json()["starts"][0]["clients"][0]
    actions = [{"speak": True, "whom": first_client, "how": "join", "turn": "I hear you."}, {"speak": False}, {"speak": False}]
    done = play(bob, 1, actions, seen)
    assert done["done"] and done["score"] is None  # bob has not played every start: no score yet
    expected = core_record(practice_server.data, start_keys(practice_server.url)[1][0], "human/bob", actions)
    out = tmp_path / "human-bob"
    run = subprocess.run(
        [sys.executable, "-m", "rescue_bench.cli", "review", "export-practice", "--db", practice_server.url, "--user", "bob", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in (out / "results" / "sim.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["agent"] == "human/bob" and records[0]["metrics"]["J"] == expected["metrics"]["J"]
    assert records[0]["practice"]["order"] == 1 and records[0]["practice"]["debrief_open"] is False
    info = json.loads((out / "run.json").read_text())
    assert info["agent"] == info["model"] == "human/bob" and info["horizon"] == HORIZON and info["simulator"] == "fitted"
    assert info["status"] == "success" and info["identity"]["kind"] == "sim" and info["source"] == "rescue review export-practice"
    assert records[0]["simulator_model"]["model"] == "default" and records[0]["simulator_model"]["sha256"] == bundled_sha()
    assert json.loads((out / "summary.json").read_text())["sim"]["both"]["episodes"] == 1

    # beside a reference agent in `rescue report`, on the same episode (its clip alone)
    sample = start_keys(practice_server.url)[1][0].split("/", 1)[1].rsplit("/", 1)[0]
    one_clip = tmp_path / "one.jsonl"
    one_clip.write_text(next(line for line in practice_server.data.read_text().splitlines() if json.loads(line)["sample_id"] == sample) + "\n")
    ref = tmp_path / "attend"
    sim = subprocess.run(
        [sys.executable, "-m", "rescue_bench.cli", "sim", "eval", "--model", "baseline/attend", "--data", str(one_clip),
         "--horizon", str(HORIZON), "--episodes-per-clip", "1", "--out", str(ref)],
        capture_output=True, text=True, timeout=600,
    )
    assert sim.returncode == 0, sim.stderr
    report = subprocess.run(
        [sys.executable, "-m", "rescue_bench.cli", "report", str(ref), str(out), "--out", str(tmp_path / "report")],
        capture_output=True, text=True, timeout=600,
    )
    assert report.returncode == 0, report.stderr
    text = "\n".join(p.read_text(errors="replace") for p in (tmp_path / "report").rglob("*.md"))
    assert "human/bob" in text and "baseline/attend" in text
    # the same simulator and model as `rescue sim eval`'s default: the report pairs them by episode
    comparisons = json.loads((tmp_path / "report" / "report.json").read_text())["sim"]["checks"]
    assert any({c["a"], c["b"]} == {"human/bob", "baseline/attend"} and c["episodes"] == 1 for c in comparisons), comparisons
    # and people can be compared with it blind: a pair of the two episodes of that start
    pairs = subprocess.run(
        [sys.executable, "-m", "rescue_bench.cli", "agreement", "sample", str(ref), str(out), "--data", str(one_clip), "--out", str(tmp_path / "pairs.jsonl")],
        capture_output=True, text=True, timeout=300,
    )
    assert pairs.returncode == 0, pairs.stderr
    line = json.loads((tmp_path / "pairs.jsonl").read_text())
    assert {line["a"]["run"], line["b"]["run"]} == {ref.name, out.name} and line["a"]["episode"] == records[0]["id"]
    assert "I hear you." in json.dumps(line) and "human/bob" not in json.dumps(line)


@pytest.mark.slow
def test_import_practice_from_the_command_line(tmp_path: Path) -> None:
    with fresh_database("sqlite", tmp_path) as url:
        setup_database(url, users={"admin": "admin"})
        cmd = [sys.executable, "-m", "rescue_bench.cli", "review", "import-practice", "--db", url, "--horizon", "2"]
        first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0 and "added 9 practice start(s) from 9 clip(s)" in first.stdout, first.stderr
        assert f"the fitted model {bundled_sha()}" in first.stdout  # which model the catalogue plays, by its sha256
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0 and "added 0" in again.stdout and "9 already there" in again.stdout
        empty = subprocess.run(
            [sys.executable, "-m", "rescue_bench.cli", "review", "export-practice", "--db", url, "--out", str(tmp_path / "x")],
            capture_output=True, text=True, timeout=300,
        )
        assert empty.returncode == 2 and "no finished practice episode" in empty.stderr and "Traceback" not in empty.stderr


@pytest.mark.slow
def test_an_episode_goes_on_in_another_server_process(practice_server: PracticeDeployment) -> None:
    """Nothing lives in a worker: step 1 on one server, step 2 on a second one over the same database."""
    alice = practice_server.client("alice")
    view = alice.post("/api/practice/episodes", {"start": 2}).json()
    assert alice.post(f"/api/practice/episodes/{view['id']}/steps", {"step": 1, "speak": False}).status_code == 200
    other = start_server(practice_server.url, practice_server.folder)
    try:
        again = Client(other.base_url)
        assert again.login("alice", PASSWORD).status_code == 200
        seen = again.get(f"/api/practice/episodes/{view['id']}").json()
        assert seen["step"] == 2 and seen["transcript"] == alice.get(f"/api/practice/episodes/{view['id']}").json()["transcript"]
        resp = again.post(f"/api/practice/episodes/{view['id']}/steps", {"step": 2, "speak": True, "whom": seen["group"], "how": seen["strategies"][0], "turn": "Go on."})
        assert resp.status_code == 200 and resp.json()["step"] == 3
        again.close()
    finally:
        other.stop()
    assert alice.get(f"/api/practice/episodes/{view['id']}").json()["step"] == 3


# ------------------------------------------------------------------------------------------------
# the page teaches: what the clients hear, words that count, the debrief
# ------------------------------------------------------------------------------------------------


def _start_id(url: str, key: str) -> int:
    return next(i for i, (k, _) in start_keys(url).items() if k == key)


def test_the_page_plays_the_fitted_simulator_and_says_what_it_hears_before_the_first_step(practice_server: PracticeDeployment) -> None:
    """The misuse that found it: the page played the scripted rules (which read the strategy label)
    and never said what the clients listen to."""
    from sqlalchemy import select

    from rescue_bench.review.db import Database
    from rescue_bench.review.models import PracticeModel

    alice = practice_server.client("alice")
    catalogue = alice.get("/api/practice").json()
    sha = bundled_sha()
    assert {(s["simulator"]["name"], s["simulator"]["sha256"], s["simulator"]["model"]) for s in catalogue["starts"]} == {("fitted", sha, "default")}
    db = Database(practice_server.url)
    with db.read() as session:  # the model the catalogue plays is stored whole, by its sha256
        assert [m.sha256 for m in session.scalars(select(PracticeModel))] == [sha]
    db.dispose()
    view = alice.post("/api/practice/episodes", {"start": 1}).json()
    hears = view["simulator"]
    assert view["step"] == 1 and hears["name"] == "fitted" and hears["sha256"] == sha
    assert hears["reads_tone"] is True and hears["reads_label"] is False and hears["smoke_test"] is False
    # the bundled model reads tone with the project's marker lists (a learned reader did not beat
    # them on held-out sessions), so the page names no learned reader's accuracy
    assert hears["tone"] is None
    assert hears["tone_effect"]["warm"] < 0 < hears["tone_effect"]["hostile"]
    page = alice.get(f"/practice/{view['id']}").text
    for phrase in ("What the simulated clients hear", "Whom your words reach", "The tone of your words", "Not heard:", "no words in it"):
        assert phrase in page, phrase
    assert 'id="listening" open' in page  # open before the first step
    assert "scripted smoke test" not in page


def test_a_turn_with_no_words_is_not_a_free_action_and_the_page_says_so(practice_server: PracticeDeployment) -> None:
    """The misuse that found it: "." to a client scored like a turn (and "de-escalated: yes")."""
    alice = practice_server.client("alice")
    open_debriefs(alice)
    seen: list[str] = []
    start = next(s for s in alice.get("/api/practice").json()["starts"] if s["scenario"] == "couple")
    client = start["clients"][0]
    dot = play(alice, start["id"], [{"speak": True, "whom": client, "how": "join", "turn": "."}] * HORIZON, seen)
    quiet = play(alice, start["id"], [{"speak": False}] * HORIZON, seen)
    assert dot["score"]["J"] == quiet["score"]["J"]  # scored as the silence it is
    assert dot["score"]["interventions"] == HORIZON and dot["score"]["neglect_turns"] == 0  # taken, but no turn was heard
    mine = [r for r in dot["transcript"] if r["you"]]
    assert len(mine) == HORIZON and all(r["text"] == "." and r["heard"]["silent"] and r["heard"]["recipients"] == [] for r in mine)
    steps = dot["debrief"]["steps"]
    assert all(s["wordless"] and s["heard"]["silent"] and s["left_out"] is not False for s in steps)
    # and words do count: an empathic and an insulting turn to the same client, same strategy, differ
    words = {
        "warm": f"{client}, I can see how much this hurts; it makes sense that you feel alone in this. I hear you.",
        "hostile": f"{client}, you are being ridiculous and selfish. Stop whining; nobody cares.",
    }
    played = {k: play(alice, start["id"], [{"speak": True, "whom": client, "how": "join", "turn": t}] * HORIZON, seen) for k, t in words.items()}
    assert {k: {r["heard"]["affect"] for r in v["transcript"] if r["you"]} for k, v in played.items()} == {"warm": {"warm"}, "hostile": {"hostile"}}
    assert played["warm"]["score"]["J"] >= played["hostile"]["score"]["J"]


def test_the_debrief_gives_the_scale_the_floor_the_optimum_and_each_step(practice_server: PracticeDeployment) -> None:
    """The misuse that found it: the end of an episode showed "J = -5.669" with no scale, no
    reference point, no step breakdown, and never said who was most distressed."""
    from rescue_bench.sim.floors import constant_policies

    alice = practice_server.client("alice")
    open_debriefs(alice)
    keys = start_keys(practice_server.url)
    family = next(i for i, (_, scenario) in sorted(keys.items()) if scenario == "family")
    first = alice.post("/api/practice/episodes", {"start": family}).json()
    clients, group = first["clients"], first["group"]
    assert first["debrief"] is None
    actions = [
        {"speak": True, "whom": group, "how": "reframe", "turn": "Each of you is trying to protect something that matters."},
        {"speak": True, "whom": clients[-1], "how": "join", "turn": f"{clients[-1]}, that sounds painful."},
        {"speak": False},
    ]
    done = play(alice, family, actions, [])
    d = done["debrief"]
    record = core_record(practice_server.data, keys[family][0], "human/alice", actions)
    ref = record["reference"]
    gamma, lam = d["gamma"], d["lambda"]
    assert d["J"] == record["metrics"]["J"] == done["score"]["J"]
    assert d["scale"] == pytest.approx([-(1 + lam) * sum(gamma**t for t in range(HORIZON)), sum(gamma**t for t in range(HORIZON))])
    assert (d["worst"], d["floor"], d["optimum"]) == (ref["worst"], ref["floor"], ref["optimum"])
    assert d["worst"] <= d["floor"] <= d["optimum"] and d["worst"] <= d["J"] <= d["optimum"]
    assert d["constant_policies"] == len(constant_policies("family"))
    assert d["floor_policy"] == ref["floor_policy"] and "always" in d["floor_words"]
    if d["optimum"] - d["floor"] > 1e-9:
        assert d["normalised"] == pytest.approx((d["J"] - d["floor"]) / (d["optimum"] - d["floor"]))
    else:
        assert d["normalised"] is None and d["normalised_note"]
    steps = d["steps"]
    assert [s["t"] for s in steps] == [1, 2, 3]
    assert [s["most_distressed"] for s in steps] == [s["top_before"] for s in record["steps"]]
    assert all(s["most_distressed"] in clients and 0 < s["their_distress"] <= 1 for s in steps)
    assert (steps[0]["whom"], steps[0]["how"], steps[0]["turn"]) == (group, "reframe", actions[0]["turn"])
    assert steps[0]["left_out"] is True and steps[0]["group_address"] is True  # one neglect rule: the whole group leaves them out
    assert steps[1]["heard"]["recipients"] == [clients[-1]] and steps[1]["left_out"] == (steps[1]["most_distressed"] != clients[-1])
    assert steps[2]["spoke"] is False and steps[2]["left_out"] is True
    assert [s["reward"] for s in steps] == [s["reward"] for s in record["steps"]]
    assert all(set(s["distress_after"]) == set(clients) and s["pattern_after"] for s in steps)
    assert set(d["patterns"]) == {p for s in steps for p in (s["pattern_before"], s["pattern_after"])}
    assert all(p["definition"] for p in d["patterns"].values())
    assert done["score"]["group_turns"] == 1 and done["score"]["neglect_hits"] >= 1


def test_the_clients_never_repeat_a_line_in_an_episode(practice_server: PracticeDeployment) -> None:
    """The misuse that found it: two clients said the same template line in one episode (Carmen
    spoken to, then silence, then Luis: a family start of the marked demo)."""
    alice = practice_server.client("alice")
    start = _start_id(practice_server.url, "sim/demo_family/f03_reyes_family/15")
    actions = [
        {"speak": True, "whom": "Carmen", "how": "join", "turn": "Carmen, I hear how hard this is for you."},
        {"speak": False},
        {"speak": True, "whom": "Luis", "how": "join", "turn": "Luis, I hear how hard this is for you."},
    ]
    done = play(alice, start, actions, [])
    said = [r["text"] for r in done["transcript"] if r["simulated"] and not r["you"]]
    assert len(said) >= HORIZON and len(said) == len(set(said)), said


# ------------------------------------------------------------------------------------------------
# the page stops teaching the simulator; the export keeps the play order and is a run like any
# ------------------------------------------------------------------------------------------------


def _export(url: str, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rescue_bench.cli", "review", "export-practice", "--db", url, "--out", str(out), *args],
        capture_output=True, text=True, timeout=300,
    )


def test_scores_and_debriefs_open_once_every_start_is_played_and_the_export_keeps_the_play_order(
    practice_server: PracticeDeployment, tmp_path: Path
) -> None:
    """The misuse that found it: the debrief showed the floor's exact sentence and each step's score
    after the first episode, so a person learnt the simulator start by start before playing the next
    one that is exported as the human reference, and the export kept no play order."""
    from sqlalchemy import select

    from rescue_bench.review.db import Database
    from rescue_bench.review.models import PracticeEpisode, User

    carol = practice_server.client("carol")
    starts = carol.get("/api/practice").json()["starts"]
    order = [s["id"] for s in reversed(starts)]  # played in another order than the catalogue's
    for k, start in enumerate(order):
        view = play(carol, start, [{"speak": False}] * HORIZON, [])
        last = k == len(order) - 1
        assert view["done"] and view["debrief_open"] is last and view["starts_left"] == len(order) - k - 1
        assert (view["score"] is not None, view["debrief"] is not None) == (last, last), k
        listed = carol.get("/api/practice").json()["episodes"]
        assert all((e["J"] is not None) is last for e in listed)
        page = carol.get(f"/practice/{view['id']}").text
        assert ('"debrief": null' in page) is not last and "floor_words" not in page or last
    again = play(carol, order[0], [{"speak": False}] * HORIZON, [])
    assert again["score"] is not None and again["debrief"] is not None  # from now on, every episode is debriefed
    db = Database(practice_server.url)
    with db.read() as session:
        opened = list(session.scalars(
            select(PracticeEpisode.debrief_open).join(User, User.id == PracticeEpisode.user_id).where(User.username == "carol").order_by(PracticeEpisode.id)
        ))
    db.dispose()
    assert opened == [False] * len(order) + [True]  # what the person could read when each began
    out = tmp_path / "carol"
    done = _export(practice_server.url, out, "--user", "carol")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "results" / "sim.jsonl").read_text().splitlines()]
    by_start = {r["id"]: r["practice"] for r in records}
    keys = start_keys(practice_server.url)
    assert len(records) == len(order)  # the first attempt at each start; the replay after the debrief is not exported
    assert [by_start[keys[s][0]]["order"] for s in order] == list(range(1, len(order) + 1))
    assert all(p["debrief_open"] is False and p["began"] for p in by_start.values())


def test_the_practice_export_goes_through_the_run_lifecycle(practice_server: PracticeDeployment, tmp_path: Path) -> None:
    """One folder, one run: run.json says running then success with the run's identity; the same
    export again is the same run; after more play it is another run, refused unless --overwrite."""
    bob = practice_server.client("bob")
    if not any(e["finished"] for e in bob.get("/api/practice").json()["episodes"]):
        play(bob, 1, [{"speak": False}] * HORIZON, [])
    out = tmp_path / "bob"
    first = _export(practice_server.url, out, "--user", "bob")
    assert first.returncode == 0, first.stderr
    info = json.loads((out / "run.json").read_text())
    assert info["kind"] == "sim" and info["status"] == "success" and info["failure"] is None
    assert info["identity"]["settings"]["model"] == "human/bob" and info["identity"]["data"]
    assert info["settings"]["options"]["horizon"] == HORIZON and info["versions"]["rescue_bench"] and info["created"]
    assert info["counts"]["failed_steps"] == 0 and info["episodes"] == len((out / "results" / "sim.jsonl").read_text().splitlines())
    again = _export(practice_server.url, out, "--user", "bob")
    assert again.returncode == 0, again.stderr  # the same run: written again in place
    played = {e["start"] for e in bob.get("/api/practice").json()["episodes"] if e["finished"]}
    fresh = next(s["id"] for s in bob.get("/api/practice").json()["starts"] if s["id"] not in played)
    play(bob, fresh, [{"speak": False}] * HORIZON, [])
    before = (out / "results" / "sim.jsonl").read_bytes()
    refused = _export(practice_server.url, out, "--user", "bob")
    assert refused.returncode == 2 and "holds a different run" in refused.stderr and "--overwrite" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and (out / "results" / "sim.jsonl").read_bytes() == before
    replaced = _export(practice_server.url, out, "--user", "bob", "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert len((out / "results" / "sim.jsonl").read_text().splitlines()) == len(before.splitlines()) + 1
    assert json.loads((out / "run.json").read_text())["status"] == "success"
