"""Joint success and neglect that cannot be won by a constant policy, on hand-built chain records.

Six decision points of one couple clip (Ann, Bob; group label "Couple"), every number by hand:

    A  gold yes, whom Ann,    how evoke, distressed Ann, therapist addressed [Ann]
    B  gold yes, whom Couple, how track, distressed Ann, therapist addressed [Ann, Bob] (the couple)
    C  gold no
    D  gold no
    E  gold no, distressed Bob (the therapist did not speak: not a neglect point)
    F  gold yes, whom None (no STP gold there: not a joint point), distressed Ann, addressed [Bob]
"""

from __future__ import annotations

from typing import Any

import pytest

from rescue_bench.agent import summarize_chain
from rescue_bench.agent.metrics import REFERENCE_POLICIES, reference_metrics, reference_records

PEOPLE = ["Ann", "Bob"]


def _record(name: str, gold: dict[str, Any], said: tuple[str, str | None, str | None] | None) -> dict[str, Any]:
    when, whom, how = said if said is not None else ("no", None, None)
    recipients = None if when != "yes" else ([] if whom is None else (list(PEOPLE) if whom == "Couple" else [whom]))
    full = {"when": "no", "whom": None, "how": None, "recipients": None, "distressed": None, "turn": None}
    full.update(gold)
    return {
        "id": f"agent/{name}",
        "task": "agent",
        "sample_id": "hand/clip",
        "scenario": "couple",
        "row": 1,
        "n_rows": 9,
        "branch": False,
        "participants": list(PEOPLE),
        "candidates": {"targets": ["Ann", "Bob", "Couple"], "strategies": ["evoke", "track"], "patterns": []},
        "gold": full,
        "prediction": {"when": when, "whom": whom, "how": how, "how_given_gold": None, "pattern": None, "turn": None, "recipients": recipients},
        "steps": {},
        "scores": {"emotions": [], "stances": []},
        "valid": True,
        "error": None,
    }


GOLD = {
    "A": {"when": "yes", "whom": "Ann", "how": "evoke", "distressed": "Ann", "recipients": ["Ann"]},
    "B": {"when": "yes", "whom": "Couple", "how": "track", "distressed": "Ann", "recipients": ["Ann", "Bob"]},
    "C": {"when": "no"},
    "D": {"when": "no"},
    "E": {"when": "no", "distressed": "Bob"},
    "F": {"when": "yes", "whom": None, "how": None, "distressed": "Ann", "recipients": ["Bob"]},
}


def _agent(said: dict[str, tuple[str, str | None, str | None] | None]) -> list[dict[str, Any]]:
    return [_record(k, g, said.get(k)) for k, g in GOLD.items()]


SILENT = _agent({})
SPEAKER = _agent({k: ("yes", "Couple", "track") for k in GOLD})
MIXED = _agent({"A": ("yes", "Ann", "evoke"), "C": ("yes", "Bob", "track"), "F": ("yes", "Ann", "evoke")})


def test_an_always_silent_agent_scores_the_constant_policy_level_not_more():
    s = summarize_chain(SILENT)["both"]
    # yes points with complete gold: A, B (0 of 2 right); no points: C, D, E (3 of 3 right)
    assert s["joint_yes"] == pytest.approx(0.0)
    assert s["joint_no"] == pytest.approx(1.0)
    assert s["joint"] == pytest.approx(0.5)  # pooled over points it was 3 / 5 = 60%
    assert s["support"]["joint"] == 5


def test_an_always_speaking_agent_scores_half_its_success_where_the_therapist_spoke():
    s = summarize_chain(SPEAKER)["both"]
    assert s["joint_yes"] == pytest.approx(1 / 2)  # B right (Couple, track), A wrong
    assert s["joint_no"] == pytest.approx(0.0)
    assert s["joint"] == pytest.approx(1 / 4)


def test_joint_by_hand():
    s = summarize_chain(MIXED)["both"]
    # yes: A right, B silent; no: C spoke (wrong), D, E silent (right)
    assert s["joint"] == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_joint_is_undefined_without_points_of_both_kinds():
    s = summarize_chain([r for r in SILENT if r["gold"]["when"] == "no"])["both"]
    assert s["joint"] is None and s["joint_no"] == pytest.approx(1.0)


def test_neglect_is_measured_where_the_therapist_spoke_and_a_group_address_does_not_attend():
    # neglect points: A, B, F (distressed client, therapist took the turn, addressed clients known)
    silent = summarize_chain(SILENT)["both"]
    assert silent["support"]["neglect_agent"] == 3
    assert silent["neglect_agent"] == pytest.approx(1.0)  # silence leaves the client unattended
    speaker = summarize_chain(SPEAKER)["both"]
    assert speaker["neglect_agent"] == pytest.approx(1.0)  # always addressing the group wins nothing
    assert speaker["group_address_agent"] == pytest.approx(1.0)
    mixed = summarize_chain(MIXED)["both"]
    assert mixed["neglect_agent"] == pytest.approx(1 / 3)  # A Ann (attends), B silent, F Ann (attends)
    # the real therapist at the same points: A [Ann] attends, B the couple, F [Bob] leaves Ann out
    assert mixed["neglect_therapist"] == pytest.approx(2 / 3)
    assert mixed["support"]["neglect_therapist"] == 3
    assert mixed["group_address_therapist"] == pytest.approx(1 / 3)


def test_reference_rows_come_from_the_gold_of_the_same_points():
    assert [name for name, _ in REFERENCE_POLICIES] == ["always_silent", "always_group", "therapist"]
    silent = summarize_chain(reference_records(MIXED, "always_silent"))["both"]
    assert silent["joint"] == pytest.approx(0.5) and silent["neglect_agent"] == pytest.approx(1.0)
    group = summarize_chain(reference_records(MIXED, "always_group"))["both"]
    # addresses "Couple" with no strategy: every joint point wrong; every neglect point a group address
    assert group["joint"] == pytest.approx(0.0)
    assert group["when_recall"] == pytest.approx(1.0)
    assert group["neglect_agent"] == pytest.approx(1.0) and group["group_address_agent"] == pytest.approx(1.0)
    therapist = summarize_chain(reference_records(MIXED, "therapist"))["both"]
    assert therapist["joint"] == pytest.approx(1.0)
    assert therapist["neglect_agent"] == pytest.approx(summarize_chain(MIXED)["both"]["neglect_therapist"])
    table = reference_metrics(MIXED)
    assert set(table) == {"always_silent", "always_group", "therapist"}
    assert table["always_silent"]["both"]["joint"] == pytest.approx(0.5)
