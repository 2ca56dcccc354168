"""The chain's metrics on a small case, every expected number worked out by hand (not by the code).

The clip (helpers.hand_clip), couple Ann and Bob, 8 rows:

    1 Ann  (angry 8; Ann->Bob "he ignores me")     5 Bob  (sad 5)
    2 Bob  (defensive 4; Bob->Ann "she attacks me") 6 Ann  (hopeful 6; Ann->Bob "he might try")
    3 Therapist -> Ann: evoke, attack_attack       7 Therapist -> Couple: track, repair_softening
    4 Ann  (lonely 9)                               8 Bob

ITP boundaries (0-based k, row k not the therapist): positive k = 1, 5; negative k = 0, 3, 4. Two of
each: pick_evenly([0, 3, 4], 2) takes indices 0 and 2, so k = 0 and 4. Decision points (1-based last
row shown): P1 = row 1 (no), P2 = row 2 (yes), P3 = row 5 (no), P4 = row 6 (yes). Recent rows: 5.

Gold by hand:
    P1  emotions Ann angry 8; stances Ann->Bob; no distressed client (one annotated)
    P2  whom Ann, how evoke, pattern attack_attack; emotions Ann 8, Bob 4; levels 8 vs 4 -> Ann
        distressed (8 >= 5, lead 4 >= 2); stances Ann->Bob, Bob->Ann; therapist addressed Ann
    P3  emotions Ann lonely 9 (row 4), Bob sad 5; levels 9 vs 5 -> Ann; stances Ann->Bob, Bob->Ann
    P4  whom Couple, how track, pattern repair_softening; emotions (rows 2-6) Bob sad 5, Ann hopeful 6;
        levels Ann 9 (row 4), Bob 5 -> Ann; stances Bob->Ann (row 2), Ann->Bob "he might try" (row 6);
        therapist addressed the couple (Ann and Bob)

The scripted agent:
    P1  state Ann 7 (+ Bob 2, no gold), pattern attack_attack, Ann->Bob; when yes; Bob/track; a turn
    P2  state Ann 8 only, pattern attack_attack, no stances; when yes; Ann/reframe; a turn; branch evoke
    P3  state unusable; when no
    P4  state Ann 6, Bob 9, pattern attack_attack, Ann->Bob; when yes; Bob/track; turn unusable; branch track
"""

from __future__ import annotations

import json

import pytest

from rescue_bench.agent import (
    AgentOptions,
    bertscore_requests,
    build_points,
    chain_record,
    judge_requests,
    summarize_chain,
    with_bertscores,
    with_judges,
)
from tests.agent.helpers import drive, hand_clip


def _state(emotions: dict, pattern: str, stances: list) -> str:
    return json.dumps(
        {
            "emotions": [{"client": c, "emotion": e, "intensity": i} for c, (e, i) in emotions.items()],
            "stances": [{"source": s, "target": t, "viewpoint": v} for s, t, v in stances],
            "pattern": pattern,
        }
    )


SCRIPT = {
    1: {"state": _state({"Ann": ("furious", 7), "Bob": ("calm", 2)}, "attack_attack", [("Ann", "Bob", "ignores me")]),
        "when": '{"answer": "yes"}', "whom_how": '{"target": "Bob", "strategy": "track"}', "turn": '{"turn": "Bob, she wants you to hear her."}'},
    2: {"state": _state({"Ann": ("angry", 8)}, "attack_attack", []),
        "when": '{"answer": "yes"}', "whom_how": '{"target": "Ann", "strategy": "reframe"}',
        "turn": '{"turn": "Ann, maybe the anger is about feeling alone?"}', "how_gold": '{"strategy": "evoke"}'},
    5: {"state": "not sure", "when": '{"answer": "no"}'},
    6: {"state": _state({"Ann": ("hopeful", 6), "Bob": ("sad", 9)}, "attack_attack", [("Ann", "Bob", "he may try")]),
        "when": '{"answer": "yes"}', "whom_how": '{"target": "Bob", "strategy": "track"}', "turn": '{"foo": 1}',
        "how_gold": "```json\n{\"strategy\": \"Track\"}\n```"},
}
# judge scores and BERTScore values handed out by (point row, what)
JUDGE = {(1, "emotions", "Ann"): 4, (2, "emotions", "Ann"): 5, (6, "emotions", "Ann"): 3, (6, "emotions", "Bob"): 2,
         (1, "stances", "Ann"): 5, (6, "stances", "Ann"): 4, (2, "turn", "judge_real"): 5, (2, "turn", "judge_strategy"): 2}
BERT = {(1, "emotions", "Ann"): 0.9, (2, "emotions", "Ann"): 1.0, (6, "emotions", "Ann"): 0.7, (6, "emotions", "Bob"): 0.5,
        (1, "stances", "Ann"): 0.6, (6, "stances", "Ann"): 0.8, (2, "turn", None): 0.8}


def _who(record: dict, key: str) -> tuple:
    part, name = key.split("/", 1)
    if part == "turn":
        return (record["row"], "turn", name if name != "turn" else None)
    field = "client" if part == "emotions" else "source"
    return (record["row"], part, record["scores"][part][int(name)][field])


@pytest.fixture(scope="module")
def records() -> list[dict]:
    clip = hand_clip()
    points = build_points(clip, AgentOptions())
    assert [p.row for p in points] == [1, 2, 5, 6]
    out = []
    for point in points:
        chain, _ = drive(point, SCRIPT[point.row])
        record = chain_record(point, chain.results, "explicit")
        requests = judge_requests(point, record)
        record = with_judges(record, {r.key: (JUDGE[_who(record, r.key)], False) for r in requests})
        record = with_bertscores(record, {k: BERT[_who(record, k if k != "turn" else "turn/turn")] for k, _, _ in bertscore_requests(record)})
        out.append(record)
    return out


def test_gold_by_hand(records):
    g = {r["row"]: r["gold"] for r in records}
    assert [g[k]["when"] for k in (1, 2, 5, 6)] == ["no", "yes", "no", "yes"]
    assert (g[2]["whom"], g[2]["how"], g[2]["pattern"], g[2]["recipients"]) == ("Ann", "evoke", "attack_attack", ["Ann"])
    assert (g[6]["whom"], g[6]["how"], g[6]["pattern"], g[6]["recipients"]) == ("Couple", "track", "repair_softening", ["Ann", "Bob"])
    assert g[1]["whom"] is None and g[1]["turn"] is None and g[1]["distressed"] is None
    assert {c: (e["emotion"], e["intensity"], e["row"]) for c, e in g[5]["emotions"].items()} == {"Ann": ("lonely", 9, 4), "Bob": ("sad", 5, 5)}
    assert g[6]["levels"] == {"Ann": 9, "Bob": 5} and g[6]["emotions"]["Ann"]["intensity"] == 6
    assert [g[k]["distressed"] for k in (2, 5, 6)] == ["Ann", "Ann", "Ann"]
    assert [s["viewpoint"] for s in g[6]["stances"]["Ann"]] == ["he might try"]
    assert [s["viewpoint"] for s in g[6]["stances"]["Bob"]] == ["she attacks me"]


def test_steps_by_hand(records):
    s = summarize_chain(records)["both"]
    # when: gold no, yes, no, yes; said yes, yes, no, yes -> TP 2, FP 1, FN 0, TN 1
    assert s["when_precision"] == pytest.approx(2 / 3)
    assert s["when_recall"] == pytest.approx(1.0)
    assert s["when_f1"] == pytest.approx(4 / 5)  # 2*2 / (2*2 + 1 + 0)
    assert s["when_accuracy"] == pytest.approx(3 / 4)
    # whom: P2 Ann right, P4 Bob (gold Couple) wrong; how: P2 reframe (evoke) wrong, P4 track right
    assert s["whom_recall_at_1"] == pytest.approx(1 / 2)
    assert s["how_recall_at_1"] == pytest.approx(1 / 2)
    assert s["how_given_gold_target"] == pytest.approx(2 / 2)  # evoke, then "Track" in a fence
    # joint, balanced: at the yes points P2 (wrong strategy) and P4 (wrong target) 0 of 2; at the no
    # points P1 (spoke: fail) and P3 (silent: success) 1 of 2; the mean of 0 and 1/2
    assert (s["joint_yes"], s["joint_no"]) == (pytest.approx(0.0), pytest.approx(1 / 2))
    assert s["joint"] == pytest.approx(1 / 4)
    assert s["whom_given_intervened"] == pytest.approx(1 / 2)
    assert s["how_given_intervened"] == pytest.approx(1 / 2)
    assert s["how_given_right_target"] == pytest.approx(0 / 1)  # only P2 had the right target, and the wrong strategy
    assert s["support"]["how_given_right_target"] == 1
    assert s["pattern_accuracy"] == pytest.approx(1 / 2)  # P2 right, P4 wrong


def test_state_by_hand(records):
    s = summarize_chain(records)["both"]
    # emotion items: P1 Ann (|7-8|=1 -> 4; judge 4), P2 Ann (5; 5), P2 Bob left out (1; 1),
    # P3 Ann and Bob unusable state (1; 1 each), P4 Ann (|6-6| -> 5; judge 3), P4 Bob (|9-5|=4 -> 1; judge 2)
    assert s["support"]["emotion_intensity"] == 7
    assert s["emotion_intensity"] == pytest.approx((4 + 5 + 1 + 1 + 1 + 5 + 1) / 7)
    assert s["emotion_judge"] == pytest.approx((4 + 5 + 1 + 1 + 1 + 3 + 2) / 7)
    assert s["emotion_score"] == pytest.approx((4 + 5 + 1 + 1 + 1 + 4 + 1.5) / 7)
    assert s["emotion_bertscore"] == pytest.approx((0.9 + 1.0 + 0 + 0 + 0 + 0.7 + 0.5) / 7)
    # stance sources: P1 Ann (5), P2 Ann and Bob left out (1, 1), P3 both (1, 1), P4 Ann (4), P4 Bob left out (1)
    assert s["stance_judge"] == pytest.approx((5 + 1 + 1 + 1 + 1 + 4 + 1) / 7)
    assert s["stance_bertscore"] == pytest.approx((0.6 + 0.8) / 7)


def test_turn_neglect_validity_by_hand(records):
    s = summarize_chain(records)["both"]
    # turns scored where the therapist spoke and the agent did: P2 (5, 2, 0.8), P4 unusable (1, 1, 0)
    assert s["turn_judge_real"] == pytest.approx((5 + 1) / 2)
    assert s["turn_judge_strategy"] == pytest.approx((2 + 1) / 2)
    assert s["turn_bertscore"] == pytest.approx((0.8 + 0.0) / 2)
    # neglect points (Ann distressed, the therapist spoke): P2 and P4 (P3 is a "no"). The agent
    # spoke at P2 to Ann (attends) and at P4 to Bob (leaves Ann out)
    assert s["support"]["neglect_agent"] == 2
    assert s["neglect_agent"] == pytest.approx(1 / 2)
    # the therapist at P2 addressed Ann, at P4 the whole couple (a group address does not attend)
    assert s["neglect_therapist"] == pytest.approx(1 / 2)
    assert s["group_address_therapist"] == pytest.approx(1 / 2)
    assert s["group_address_agent"] == pytest.approx(0 / 2)
    assert s["invalid_state"] == pytest.approx(1 / 4)
    assert s["invalid_when"] == pytest.approx(0 / 4)
    assert s["invalid_whom_how"] == pytest.approx(0 / 3)
    assert s["invalid_turn"] == pytest.approx(1 / 3)  # turns asked at P1, P2, P4; P4's is unusable
    assert s["invalid_rate"] == pytest.approx(2 / 4)  # P3 (state) and P4 (turn)
    assert s["n"] == 4


def test_scenarios_and_missing_judges(records):
    summary = summarize_chain(records)
    assert summary["couple"] == summary["both"]
    assert summary["family"]["n"] == 0 and summary["family"]["when_f1"] is None
    # without a judge the judged means are undefined, never guessed; intensity still counts
    raw = [dict(r, scores=dict(r["scores"], emotions=[dict(i, judge_score=None if i["valid"] else i["judge_score"]) for i in r["scores"]["emotions"]])) for r in records]
    s = summarize_chain(raw)["both"]
    assert s["emotion_judge"] is None and s["emotion_intensity"] == pytest.approx(18 / 7)
