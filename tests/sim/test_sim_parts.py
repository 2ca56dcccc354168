"""The simulator's answer parser, the baseline chain replayed in episodes, and the cards' horizon."""

from __future__ import annotations

import json

from rescue_bench.agent import AgentOptions, baseline_chain_answers
from rescue_bench.data.load import load_clips
from rescue_bench.sim import Episode, SimOptions, StrategyPrior, episode_starts, parse_simulator, role_cards
from tests.sim.helpers import MARK, hand_clip, leak_clip

CLIENTS = ["Ann", "Bob"]
PATTERNS = ["attack_attack", "repair_softening"]


def _answer(**over):
    base = {
        "speaker": "Ann",
        "turn": "Fine.",
        "state": {
            "emotions": [{"client": "Ann", "emotion": "tired", "valence": "negative", "intensity": 6},
                         {"client": "bob", "emotion": "calm", "valence": "Neutral", "intensity": 2}],
            "stances": [{"source": "Ann", "target": "Bob", "stance": "guarded"}, {"source": "Bob", "target": "Ann", "stance": "warm"}],
            "pattern": "Attack-Attack",
        },
    }
    base.update(over)
    return "Here you go: " + json.dumps(base)


def test_a_complete_answer_parses_with_canonical_labels():
    parsed = parse_simulator(_answer(), CLIENTS, PATTERNS)
    assert parsed.valid, parsed.error
    state = parsed.prediction["state"]
    assert state["emotions"]["Bob"] == {"emotion": "calm", "valence": "neutral", "intensity": 2}
    assert state["stances"] == {"Ann->Bob": "guarded", "Bob->Ann": "warm"} and state["pattern"] == "attack_attack"
    passed = parse_simulator(_answer(speaker=None, turn=None), CLIENTS, PATTERNS)
    assert passed.valid and passed.prediction["speaker"] is None and passed.prediction["turn"] is None


def test_incomplete_or_out_of_range_answers_are_invalid_with_a_reason():
    good = json.loads(_answer().split(": ", 1)[1])
    cases = {
        "speaker 'Therapy'": dict(good, speaker="Therapy"),
        "a speaker without a turn": dict(good, turn=""),
        "for Ann": dict(good, state=dict(good["state"], emotions=[dict(good["state"]["emotions"][0], intensity=11), good["state"]["emotions"][1]])),
        "Bob->Ann": dict(good, state=dict(good["state"], stances=good["state"]["stances"][:1])),
        "pattern": dict(good, state=dict(good["state"], pattern="calm_waters")),
    }
    for why, payload in cases.items():
        parsed = parse_simulator(json.dumps(payload), CLIENTS, PATTERNS)
        assert not parsed.valid and why in parsed.error, (why, parsed.error)
    assert not parse_simulator("no idea", CLIENTS, PATTERNS).valid
    assert not parse_simulator(None, CLIENTS, PATTERNS).valid


def test_cards_read_only_rows_up_to_the_start():
    clip = leak_clip()
    cards = role_cards(clip, 0)  # after the first row: Bob has not spoken
    assert cards["Ann"].intensity == 7 and cards["Ann"].emotion == f"{MARK} hurt 0"
    assert cards["Bob"].emotion is None and cards["Bob"].stances == []
    assert cards["Ann"].utterance_types == ["disclosure"] and cards["Ann"].revealed == ["we talked about the trip 0"]
    later = role_cards(clip, 6)  # rows 0-6: Ann spoke three times, Bob twice
    assert later["Ann"].emotion == f"{MARK} hurt 2" and later["Bob"].emotion == f"{MARK} calm 1"


def test_the_baseline_chain_is_replayed_from_the_real_start_point():
    clips = load_clips(None)
    options = SimOptions(horizon=3)
    starts, points = [], []
    for c in clips:
        s, p = episode_starts(c, options)
        starts += s
        points += p
    by_id = {p.id: p for p in points}
    chosen = [by_id[s.point_id] for s in starts[:3]]
    answers = baseline_chain_answers(clips, points, "majority", AgentOptions(), chosen=chosen)
    for start in starts[:3]:
        e = Episode(start, agent="baseline/majority", options=options, replay=answers[start.point_id])
        record = e.record()
        for step in record["steps"]:
            assert {k: v["raw"] for k, v in step["chain"].items()} == {k: v for k, v in answers[start.point_id].items() if k != "how_gold"}


def test_reference_agents_need_the_prior_and_silence_has_no_turns():
    start = episode_starts(hand_clip(), SimOptions(per_clip=1))[0][0]
    try:
        Episode(start, agent="baseline/attend")
    except ValueError as exc:
        assert "prior" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("a reference agent without its prior must be refused")
    r = Episode(start, agent="baseline/silent", prior=StrategyPrior([hand_clip()])).record()
    assert all(not s["action"]["intervened"] and set(s["chain"]) == {"when"} for s in r["steps"])
