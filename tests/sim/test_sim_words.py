"""The simulator hears what was said: words count, a label does not, an empty turn is not free."""

from __future__ import annotations

import json

import pytest

from rescue_bench.data.load import load_clips
from rescue_bench.sim import Episode, SimOptions, episode_starts
from rescue_bench.sim.hearing import hear
from rescue_bench.sim.prompts import system_prompt, user_prompt

OPTS = SimOptions(horizon=5, state="none")
EMPATHIC = "{name}, I can see how much this hurts. It makes sense that you feel alone in this; I hear you."
INSULT = "{name}, honestly, you are being ridiculous and selfish. Stop whining; nobody cares how you feel."


def _starts():
    return [s for clip in load_clips(None) for s in episode_starts(clip, OPTS)[0]]


def _play(start, turn: str | None, strategy: str = "track", simulator: str = "fitted") -> dict:
    """An agent that speaks to the client most distressed at the start, with ``turn`` (``None``: silence)."""
    target = max(start.clients, key=lambda c: start.initial.emotions[c].intensity)
    episode = Episode(start, agent="test/agent", simulator=simulator, options=OPTS)
    while (request := episode.next_request()) is not None:
        if request.step == "when":
            episode.answer(json.dumps({"answer": "no" if turn is None else "yes"}))
        elif request.step == "whom_how":
            episode.answer(json.dumps({"target": target, "strategy": strategy}))
        else:
            episode.answer(json.dumps({"turn": (turn or "").format(name=target)}))
    return episode.record()


def _total(records: list[dict]) -> float:
    return sum(r["metrics"]["J"] for r in records if r["metrics"]["J"] is not None)


def test_an_insulting_turn_scores_below_an_empathic_one_under_the_same_target_and_label():
    starts = _starts()
    empathic = [_play(s, EMPATHIC) for s in starts]
    insult = [_play(s, INSULT) for s in starts]
    diffs = [a["metrics"]["J"] - b["metrics"]["J"] for a, b in zip(empathic, insult)]
    assert all(d >= -1e-9 for d in diffs), diffs  # the insult never helps
    assert sum(d > 1e-9 for d in diffs) >= 3  # and it costs in several episodes
    assert {s["heard"]["affect"] for r in insult for s in r["steps"]} == {"hostile"}
    assert {s["heard"]["affect"] for r in empathic for s in r["steps"]} == {"warm"}


def test_the_declared_label_changes_nothing_the_fitted_simulator_hears():
    starts = _starts()
    for start in starts[:6]:
        a, b = _play(start, EMPATHIC, "track"), _play(start, EMPATHIC, "join")
        assert [s["state"] for s in a["steps"]] == [s["state"] for s in b["steps"]]
        assert [s["client_turns"] for s in a["steps"]] == [s["client_turns"] for s in b["steps"]]


def test_the_scripted_smoke_test_reads_the_label_a_client_cannot_hear():
    """The negative control of the label check: the scripted rules calm on a fitting label."""
    starts = _starts()
    differ = sum(_play(s, EMPATHIC, "track", "scripted")["metrics"]["J"] != _play(s, EMPATHIC, "enact", "scripted")["metrics"]["J"] for s in starts)
    assert differ > 0


@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_turn_is_heard_as_silence_not_as_a_free_turn(empty):
    starts = _starts()
    spoken = [_play(s, empty) for s in starts]
    silent = [_play(s, None) for s in starts]
    empathic = [_play(s, EMPATHIC) for s in starts]
    assert [r["metrics"]["J"] for r in spoken] == [r["metrics"]["J"] for r in silent]
    assert all(s["heard"]["silent"] and s["heard"]["recipients"] == [] for r in spoken for s in r["steps"])
    assert [r["metrics"]["J"] for r in spoken] != [r["metrics"]["J"] for r in empathic]
    assert all(r["metrics"]["invalid_agent_steps"] == len(r["steps"]) for r in spoken)  # and counted


@pytest.mark.parametrize("wordless", [".", "...", " ?! ", "\u2014"])
def test_a_turn_with_no_words_is_heard_as_silence_not_as_a_neutral_turn(wordless):
    """The practice page's misuse: a person typed "." and it scored as a turn to the client (and
    "de-escalated: yes"); a turn with no words reaches nobody and is counted like an empty one."""
    starts = _starts()
    spoken = [_play(s, wordless) for s in starts]
    silent = [_play(s, None) for s in starts]
    assert [r["metrics"]["J"] for r in spoken] == [r["metrics"]["J"] for r in silent]
    assert all(s["heard"]["silent"] and s["action"]["intervened"] for r in spoken for s in r["steps"])
    assert all(r["metrics"]["invalid_agent_steps"] == len(r["steps"]) for r in spoken)
    assert all(r["metrics"]["interventions"] == len(r["steps"]) for r in spoken)  # the agent did decide to speak
    short = [_play(s, "Mm.") for s in starts]  # one word is words
    assert not any(s["heard"]["silent"] for r in short for s in r["steps"])
    assert all(r["metrics"]["invalid_agent_steps"] == 0 for r in short)


def test_the_order_in_which_a_turn_names_the_clients_changes_nothing():
    clients = ["Luis", "Carmen", "Sofia"]
    a = hear({"intervened": True, "recipients": [], "turn": "Luis and Sofia, let us pause.", "how": "track"}, clients)
    b = hear({"intervened": True, "recipients": [], "turn": "Sofia and Luis, let us pause.", "how": "track"}, clients)
    assert a["recipients"] == b["recipients"] == ["Luis", "Sofia"]
    named = hear({"intervened": True, "recipients": ["Carmen"], "turn": "Carmen, and you too, Luis.", "how": "track"}, clients)
    assert named["recipients"] == ["Luis", "Carmen"]  # the declared target and whoever the words name
    room = hear({"intervened": True, "recipients": [], "turn": "Let us pause.", "how": "track"}, clients)
    assert room["recipients"] == clients  # no target, no name: said to the room


def test_no_simulator_prompt_holds_the_declared_label_or_a_rule_of_reaction():
    start = _starts()[0]
    action = {"intervened": True, "whom": start.clients[0], "how": "counterbalance", "turn": "I hear you.", "recipients": [start.clients[0]]}
    heard = hear(action, start.clients)
    text = system_prompt(start.scenario, start.cards) + user_prompt(start.transcript, start.initial, heard, 2, 5)
    assert "counterbalance" not in text and "strategy" not in text.lower()
    assert "fitting move calms" not in text and "left out while distressed" not in text
    assert 'said: "I hear you."' in text and f"spoke to {start.clients[0]}" in text
