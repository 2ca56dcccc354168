"""The chain machine, the step parsers and the decision points' rules, on hand-made clips."""

from __future__ import annotations

import json

import pytest

from rescue_bench.agent import (
    AgentOptions,
    Chain,
    build_points,
    chain_record,
    parse_state,
    parse_strategy,
    parse_turn,
    parse_whom_how,
    with_bertscores,
    with_judges,
)
from rescue_bench.agent.points import most_distressed, therapist_recipients
from rescue_bench.data.models import Row
from rescue_bench.parse import parse_itp
from rescue_bench.tasks import BuildOptions, build_instances, instance_id
from tests.agent.helpers import drive, hand_clip
from tests.factories import T, clip, emo, row, strat

CLIENTS = ["Ann", "Bob"]
PATTERNS = ["pursue_withdraw", "attack_attack"]


# -- parsers ---------------------------------------------------------------------------------------


def test_parse_state_forms():
    listed = parse_state(
        'Here: {"emotions": [{"client": "ann", "emotion": "hurt", "intensity": "7"}, {"client": "Zed", "emotion": "x", "intensity": 1}],'
        ' "stances": [{"source": "Ann", "target": "bob", "viewpoint": "distant"}, {"source": "Ann", "target": "Ann", "viewpoint": "self"}],'
        ' "pattern": "Attack-Attack"}',
        CLIENTS,
        PATTERNS,
    )
    assert listed.valid
    assert listed.prediction == {
        "emotions": {"Ann": {"emotion": "hurt", "intensity": 7}},  # an unknown client is dropped
        "stances": {"Ann": [{"target": "Bob", "viewpoint": "distant"}]},  # a stance toward oneself is dropped
        "pattern": "attack_attack",
    }
    mapped = parse_state({"emotions": {"Bob": {"emotion": "calm", "intensity": 2}}, "stances": {"Bob": {"Ann": "fine"}}, "pattern": ["bogus", "pursue_withdraw"]}, CLIENTS, PATTERNS)
    assert mapped.prediction == {"emotions": {"Bob": {"emotion": "calm", "intensity": 2}}, "stances": {"Bob": [{"target": "Ann", "viewpoint": "fine"}]}, "pattern": "pursue_withdraw"}
    # an emotion without a usable intensity is not an emotion (ER's rule); nothing usable -> invalid
    bad = parse_state('{"emotions": [{"client": "Ann", "emotion": "hurt", "intensity": 11}], "pattern": "nope"}', CLIENTS, PATTERNS)
    assert not bad.valid and bad.prediction is None
    for garbage in (None, "", "no idea", "[1, 2]", b"\xff\xfe"):
        assert not parse_state(garbage, CLIENTS, PATTERNS).valid


def test_an_echoed_step_template_is_no_answer():
    """The attack: the step's answer template sent back. A turn of "<what the therapist says ...>" was
    a valid turn, a placeholder stance a valid stance, and the timing template's alternatives a "no"."""
    from rescue_bench.agent.prompts import CONTRACT

    echoed_turn = parse_turn(CONTRACT["turn"])
    assert not echoed_turn.valid and "template" in (echoed_turn.error or "")
    assert not parse_turn("<what the therapist says, one to three sentences>").valid
    assert not parse_itp(CONTRACT["when"]).valid and not parse_itp("I keep listening. " + CONTRACT["when"]).valid
    echoed_state = parse_state(CONTRACT["state"].replace("<integer 0-10>", "5"), CLIENTS, PATTERNS)
    assert not echoed_state.valid
    placeholder_stance = parse_state(
        '{"emotions": [{"client": "Ann", "emotion": "hurt", "intensity": 6}], '
        '"stances": [{"source": "Ann", "target": "Bob", "viewpoint": "<what source thinks of target>"}]}', CLIENTS, PATTERNS,
    )
    assert placeholder_stance.valid and placeholder_stance.prediction["stances"] == {}  # the emotion counts, the placeholder not
    assert parse_turn('{"turn": "Say more about that."}').valid  # the control: a turn is a turn


def test_parse_whom_how_keeps_a_usable_part():
    assert parse_whom_how('{"target": "the couple", "strategy": "Goal Alignment"}', ["Ann", "Bob", "Couple"], ["goal_align"]).prediction == {"whom": "Couple", "how": "goal_align"}
    half = parse_whom_how('{"target": "Bob", "strategy": "hug"}', CLIENTS, ["track"])
    assert not half.valid and half.prediction == {"whom": "Bob", "how": None} and "strategy" in half.error
    assert parse_whom_how("I would speak to Bob", CLIENTS, ["track"]).prediction is None


def test_parse_turn_and_strategy():
    assert parse_turn('{"turn": "  Say more.  "}').prediction == "Say more."
    assert parse_turn('{"turn": ["One.", "Two."]}').prediction == "One. Two."
    assert parse_turn("Can you tell her that?").prediction == "Can you tell her that?"  # no JSON: the reply is the turn
    assert not parse_turn('{"foo": 1}').valid and not parse_turn("x" * 1001).valid and not parse_turn("  ").valid
    assert parse_strategy("evoke", ["evoke", "join"]).prediction == "evoke"
    assert parse_strategy('{"strategy": ["bogus", "join"]}', ["evoke", "join"]).prediction == "join"
    assert not parse_strategy("probably something gentle", ["evoke"]).valid


# -- the chain -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def points():
    return build_points(hand_clip(), AgentOptions())


def _p(points, row_):
    return next(p for p in points if p.row == row_)


def test_full_chain_order_and_conversation(points):
    p2 = _p(points, 2)
    answers = {"state": '{"pattern": "attack_attack"}', "when": "Yes.", "whom_how": '{"target": "Ann", "strategy": "evoke"}',
               "turn": '{"turn": "Ann, stay with that."}', "how_gold": '{"strategy": "evoke"}'}
    chain, requests = drive(p2, answers)
    assert [r.step for r in requests] == ["state", "when", "whom_how", "turn", "how_gold"]
    # one conversation: each main call extends the previous one by the agent's answer and a question
    for before, after in zip(requests[:3], requests[1:4]):
        assert after.messages[: len(before.messages)] == before.messages
        assert after.messages[len(before.messages)] == {"role": "assistant", "content": answers[before.step]}
    # the branch: the state answer, then SSP's question naming the gold target; never seen by the main chain
    branch = requests[4].messages
    assert branch[:3] == requests[0].messages + ({"role": "assistant", "content": answers["state"]},)
    assert "Suppose your next turn addresses Ann." in branch[3]["content"]
    assert all("Suppose" not in m["content"] for r in requests[:4] for m in r.messages)
    assert chain.done and chain.next_request() is None
    assert [m["role"] for m in chain.main] == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]


def test_silence_unusable_when_and_failed_calls_end_the_main_chain(points):
    p2 = _p(points, 2)
    _, requests = drive(p2, {"state": "{}", "when": '{"answer": "no"}', "how_gold": "track"})
    assert [r.step for r in requests] == ["state", "when", "how_gold"]
    _, requests = drive(p2, {"state": "{}", "when": "maybe later", "how_gold": "track"})
    assert [r.step for r in requests] == ["state", "when", "how_gold"]
    chain, requests = drive(p2, {"state": None})  # the call itself failed: nothing to continue from
    assert [r.step for r in requests] == ["state"]
    assert chain.results["state"].error == "no answer"
    # an unusable whom/how still leads to the turn (the agent speaks anyway)
    _, requests = drive(p2, {"state": "{}", "when": "yes", "whom_how": "garbage", "turn": "Say more.", "how_gold": "track"})
    assert [r.step for r in requests] == ["state", "when", "whom_how", "turn", "how_gold"]
    # a point without gold target and strategy has no branch; state none starts with the timing step
    _, requests = drive(_p(points, 1), {"when": "yes", "whom_how": "{}", "turn": "x"}, state="none")
    assert [r.step for r in requests] == ["when", "whom_how", "turn"]
    assert "Step: timing." in requests[0].messages[1]["content"] and "Transcript" in requests[0].messages[1]["content"]


def test_failed_whom_how_call_and_record_errors(points):
    p2 = _p(points, 2)
    chain, _ = drive(p2, {"state": "{}", "when": "yes", "whom_how": None, "how_gold": "evoke"})
    record = chain_record(p2, chain.results, "explicit")
    assert "turn" not in record["steps"]
    # the turn owed and not given: nothing computed yet, then the floors of the judge and BERTScore in a run that has them
    assert record["scores"]["turn"] == {"valid": False, "judge_real": None, "bertscore": None, "judge_strategy": None}
    floored = with_bertscores(with_judges(record, {}), {})
    assert floored["scores"]["turn"] == {"valid": False, "judge_real": 1, "bertscore": 0.0, "judge_strategy": 1}
    assert record["scores"]["neglect_agent"] is True  # it spoke and named nobody: the distressed client is left out
    assert record["valid"] is False and record["error"].startswith("state:")


def test_answer_without_pending_request_raises(points):
    chain, _ = drive(_p(points, 1), {"when": "no"}, state="none")
    with pytest.raises(RuntimeError):
        chain.answer("x")
    with pytest.raises(ValueError):
        Chain(_p(points, 1), "implicit")


# -- decision points -------------------------------------------------------------------------------


def test_points_are_itp_boundaries_with_single_task_ids():
    c = hand_clip()
    points = build_points(c, AgentOptions())
    itp = build_instances([c], "itp", BuildOptions().with_context(5))
    assert [p.single_ids["itp"] for p in points] == [i.id for i in itp]
    assert [p.gold.when for p in points] == [i.gold for i in itp]
    assert [p.context for p in points] == [i.context for i in itp]
    stp = {i.id: i.gold for i in build_instances([c], "stp", BuildOptions().with_context(5))}
    for p in points:
        assert p.single_ids["stp"] == instance_id("stp", c.sample_id, p.row + 1)
        assert stp.get(p.single_ids["stp"]) == p.gold.whom  # gold whom exactly where STP has an instance
        assert p.last_speaker == c.rows[p.row - 1].speaker
        assert p.id.startswith("agent-") and c.sample_id not in p.id


def test_recipients_and_distress_rules():
    def r(**fields):
        return Row.model_validate({"primary_speaker": T, **fields})

    clients = ["Ann", "Bob", "Cyd"]
    assert therapist_recipients(r(target=["Bob"], support_strategy=[strat("join", ["Ann", "Therapist"])]), clients, "Family") == ["Ann"]
    assert therapist_recipients(r(target=["Family"]), clients, "Family") == clients
    assert therapist_recipients(r(target=["Ann", "Cyd"]), clients, "Family") == ["Ann", "Cyd"]
    assert therapist_recipients(r(target=["Therapist", "Zed"]), clients, "Family") is None
    assert most_distressed({"Ann": 7, "Bob": 5}, 2, 5) == "Ann"
    assert most_distressed({"Ann": 7, "Bob": 6}, 2, 5) is None  # lead of 1 < margin 2
    assert most_distressed({"Ann": 4, "Bob": 0}, 2, 5) is None  # below the minimum
    assert most_distressed({"Ann": 9}, 2, 5) is None  # nobody to compare with
    assert most_distressed({"Ann": 8, "Bob": 8, "Cyd": 1}, 2, 5) is None  # a tie at the top


def test_recent_window_and_ignored_annotations():
    c = clip(
        [
            row("Ann", "a", internal_emotion=[emo("Ann", "old", 9)]),
            row("Bob", "b", internal_emotion=[emo("Bob", "", 8), emo("Bob", "ok", 7.5), emo("Bob", "calm", 3), emo("Bob", "later", 9)]),
            row("Ann", "c", internal_emotion=[emo("Therapist", "x", 9), emo("Ann", "tired", 6)]),
            row(T, "d", target=["Ann"]),
            row("Bob", "e"),
        ]
    )
    points = build_points(c, AgentOptions(recent=2, context=2))
    p = next(p for p in points if p.row == 3)
    # rows 2-3 only; Bob's first usable item (a description and a whole 0-10 intensity) wins in a row
    assert {k: (v.emotion, v.intensity) for k, v in p.gold.emotions.items()} == {"Bob": ("calm", 3), "Ann": ("tired", 6)}
    assert p.gold.levels == {"Bob": 3, "Ann": 6} and p.gold.distressed == "Ann"
    assert [v.row_index for v in p.context] == [2, 3]
    assert json.dumps(p.model_input()).count("tired") == 0
    assert parse_itp('{"answer": "yes"}').prediction == "yes"
