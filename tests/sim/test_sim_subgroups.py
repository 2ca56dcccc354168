"""Pair and subgroup targets of the closed loop (the practice page's person; `rescue sim eval --subgroups`)."""

from __future__ import annotations

import json

from rescue_bench.data import load_clips
from rescue_bench.sim import Episode, SimOptions, episode_starts
from rescue_bench.sim.episode import subgroup_members, subgroup_targets


def test_subgroup_labels_cover_every_pair_and_subgroup_short_of_the_group() -> None:
    assert subgroup_targets(["A", "B"]) == []  # a couple's pair is the group
    assert subgroup_targets(["A", "B", "C"]) == ["A & B", "A & C", "B & C"]
    assert len(subgroup_targets(["A", "B", "C", "D"])) == 6 + 4
    assert subgroup_members("A & C", ["A", "B", "C"]) == ["A", "C"]
    assert subgroup_members("C & A", ["A", "B", "C"]) is None and subgroup_members("A", ["A", "B", "C"]) is None


def _first_family_start():
    options = SimOptions(horizon=1, per_clip=1, state="none")
    clip = next(c for c in load_clips(None) if c.scenario == "family")
    return episode_starts(clip, options)[0][0], options


def _speak_to(episode: Episode, whom: str) -> dict:
    answers = {"when": json.dumps({"answer": "yes"}), "whom_how": json.dumps({"target": whom, "strategy": "track"}), "turn": json.dumps({"turn": "Go on."})}
    while (request := episode.next_request()) is not None:
        episode.answer(answers[request.step])
    return episode.record()


def test_a_pair_reaches_the_simulator_as_its_two_clients_only_when_offered() -> None:
    start, options = _first_family_start()
    pair = " & ".join(start.clients[:2])
    offered = Episode(start, agent="human/x", options=options, subgroups=True)
    assert pair in offered.live_point().targets
    record = _speak_to(offered, pair)
    assert record["steps"][0]["action"]["whom"] == pair and record["steps"][0]["action"]["recipients"] == start.clients[:2]
    plain = Episode(start, agent="some/model", options=options)  # agents of `rescue sim eval`: unchanged
    assert pair not in plain.live_point().targets
    assert _speak_to(plain, pair)["steps"][0]["action"]["whom"] is None  # not a target they may name


def test_sim_eval_offers_pairs_and_subgroups_with_the_option(tmp_path) -> None:
    """Appendix B lets the supporter address one client, a pair or subgroup, or the group: with
    ``--subgroups`` the agents of ``rescue sim eval`` are offered every pair and subgroup too, and
    the choice is part of the run (``run.json``'s options)."""
    from typer.testing import CliRunner

    from rescue_bench.cli import app
    from rescue_bench.engine.sim import SimSettings, build_episodes

    clips = [c for c in load_clips(None) if c.scenario == "family"][:1]
    offered = build_episodes(SimSettings(model="some/model", options=SimOptions(horizon=1, per_clip=1, subgroups=True)), clips)
    plain = build_episodes(SimSettings(model="some/model", options=SimOptions(horizon=1, per_clip=1)), clips)
    clients = offered[0].start.clients
    pair = f"{clients[0]} & {clients[1]}"
    assert pair in offered[0].live_point().targets
    assert pair not in plain[0].live_point().targets

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["sim", "eval", "--model", "baseline/group", "--subgroups", "--limit", "1", "--out", str(out), "--display", "none"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["settings"]["options"]["subgroups"] is True
