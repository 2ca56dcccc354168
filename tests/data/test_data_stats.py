"""dataset_stats on tiny hand-made clips whose every number is computed by hand below."""

from __future__ import annotations

import pytest

from rescue_bench.data.models import Clip
from rescue_bench.data.stats import (
    clip_span_seconds,
    clip_speakers,
    dataset_stats,
    is_full_release,
    paper_table3,
    support_target,
    with_paper,
)
from rescue_bench.labels import FAMILY_PATTERNS, UTTERANCE_TYPES
from tests.factories import row as release_format_row
from tests.factories import strat as strategy_item


def row(i, speaker, target, start=None, end=None, **kw):
    """Row ``i`` of the hand-made clips below: speaker, target and times in the order of the comments."""
    return release_format_row(speaker, None, row_index=i, target=target, start_time=start, end_time=end, **kw)


def strat(kind, target):
    return [strategy_item(kind, target, strategy_content="...")]


COUPLE = Clip.model_validate({
    "sample_id": "hand/couple", "scenario": "couple", "participants": ["Ana", "Bo"], "rows": [
        row(1, "Ana", ["Therapist"], 10, 14, utterance_type="disclosure",
            internal_emotion=[{"person": "Ana", "emotion_description": "sad", "intensity": 6}]),
        row(2, "Bo", ["Ana"], 15, 20, utterance_type="accusation",
            internal_emotion=[{"person": "Bo", "emotion_description": "angry", "intensity": 8},
                              {"person": "Ana", "emotion_description": "hurt", "intensity": 7.5}]),
        row(3, "Therapist", ["Couple"], 21, 30, relation_cycle_state="pursue_withdraw",
            support_strategy=strat("track", ["Ana", "Bo"])),
        row(4, "Therapist", ["Bo"], 31, 40, relation_cycle_state="", support_strategy=[]),
        row(5, "Couple", ["Therapist"], 41, 70, utterance_type=""),
    ]})
# span 70 - 10 = 60 s; speakers Ana, Bo, Therapist (the group speaker does not count); 2 of 5 rows Therapist

FAMILY = Clip.model_validate({
    "sample_id": "hand/family", "scenario": "family", "participants": ["Mo", "Kid"], "rows": [
        row(1, "Therapist", ["Mo"], 0, 5, relation_cycle_state="boundary_hierarchy_strain",
            support_strategy=strat("boundary", [])),
        row(2, "Mo", ["Family"], utterance_type="weird_type",
            internal_emotion=[{"person": "Mo", "emotion_description": "tense", "intensity": 11}]),
        row(3, "Kid", ["Mo"], 200, 300, utterance_type="reflection",
            internal_emotion=[{"person": "Kid", "emotion_description": "calm", "intensity": 3},
                              {"person": "Mo", "emotion_description": "unsure", "intensity": None}]),
    ]})
# span 300 - 0 = 300 s (row 2 has no times); speakers Therapist, Mo, Kid; 1 of 3 rows Therapist


def test_table3_per_scenario_and_pooled():
    s = dataset_stats([COUPLE, FAMILY])
    assert set(s) == {"couple", "family", "all"}
    c, f, a = s["couple"], s["family"], s["all"]
    assert (c["samples"], c["rows"], f["samples"], f["rows"], a["samples"], a["rows"]) == (1, 5, 1, 3, 2, 8)
    assert c["duration_min"] == pytest.approx(1.0)
    assert f["duration_min"] == pytest.approx(5.0)
    assert a["duration_min"] == pytest.approx(6.0)
    assert a["avg_duration_min"] == pytest.approx(3.0)
    assert a["avg_rows"] == pytest.approx(4.0)
    assert c["avg_speakers"] == f["avg_speakers"] == a["avg_speakers"] == pytest.approx(3.0)
    assert c["therapist_share"] == pytest.approx(2 / 5)
    assert f["therapist_share"] == pytest.approx(1 / 3)
    assert a["therapist_share"] == pytest.approx(3 / 8)
    assert (c["therapist_rows"], c["client_rows"]) == (2, 2)


def test_label_distributions():
    s = dataset_stats([COUPLE, FAMILY])
    c, f, a = s["couple"], s["family"], s["all"]
    assert c["relation_patterns"]["pursue_withdraw"] == 1 and sum(c["relation_patterns"].values()) == 1
    assert c["relation_patterns_empty"] == 1
    assert list(f["relation_patterns"]) == list(FAMILY_PATTERNS)  # every label listed, in SPEC order
    assert f["relation_patterns"]["boundary_hierarchy_strain"] == 1
    assert c["strategies"]["track"] == 1 and c["therapist_rows_without_strategy"] == 1
    assert f["strategies"]["boundary"] == 1
    assert c["targets"] == {"Couple": 1}  # two names -> the group label
    assert f["targets"] == {"Family": 0, "Mo": 1}  # empty strategy target -> the row's target
    assert a["target_kinds"] == {"individual": 1, "group": 1}
    assert c["utterance_types"]["disclosure"] == 1 and c["utterance_types"]["accusation"] == 1
    assert c["utterance_types_missing"] == 0  # the group speaker's row is not a client row
    assert list(f["utterance_types"])[-1] == "weird_type"  # out-of-set labels are kept, after the set
    assert list(f["utterance_types"])[: len(UTTERANCE_TYPES)] == list(UTTERANCE_TYPES)
    assert c["emotion_intensities"]["6"] == 1 and c["emotion_intensities"]["8"] == 1
    assert c["emotion_intensity_invalid"] == 1  # 7.5
    assert f["emotion_intensity_invalid"] == 1  # 11; null intensities are not counted at all
    assert a["emotion_intensities"]["3"] == 1
    assert c["emotion_intensity_mean"] == pytest.approx(7.0)
    assert sum(a["emotion_intensities"].values()) == 3


def test_helpers():
    assert clip_span_seconds(COUPLE) == pytest.approx(60.0)
    assert clip_speakers(COUPLE) == {"Ana", "Bo", "Therapist"}
    assert support_target(COUPLE.rows[2], "couple") == "Couple"
    assert support_target(COUPLE.rows[3], "couple") is None
    assert support_target(FAMILY.rows[0], "family") == "Mo"
    therapist_in_target = Clip.model_validate({"sample_id": "x", "scenario": "family", "rows": [
        row(1, "Therapist", ["Therapist", "Kid"], support_strategy=strat("join", []))]})
    assert support_target(therapist_in_target.rows[0], "family") == "Kid"


def test_no_times_and_no_clips():
    untimed = Clip.model_validate({"sample_id": "x", "scenario": "couple", "rows": [row(1, "Ana", ["Bo"])]})
    s = dataset_stats([untimed])
    assert s["couple"]["duration_min"] == 0 and s["couple"]["clips_without_times"] == 1
    empty = dataset_stats([])
    for scope in ("couple", "family", "all"):
        assert empty[scope]["samples"] == 0
        assert empty[scope]["therapist_share"] is None and empty[scope]["avg_rows"] is None


def test_paper_values_only_on_the_full_release():
    paper = paper_table3()
    assert paper["couple"]["samples"] == 174 and paper["all"]["rows"] == 7079
    assert paper["family"]["therapist_share"] == pytest.approx(0.471)
    small = dataset_stats([COUPLE, FAMILY])
    assert not is_full_release(small)
    assert "paper" not in with_paper(small)["all"]
    assert with_paper(small, force=True)["all"]["paper"]["samples"] == 191
    fake_full = {"couple": {"samples": 174}, "family": {"samples": 17}, "all": {"samples": 191}}
    assert is_full_release(fake_full)
    assert with_paper(fake_full)["couple"]["paper"]["rows"] == 5875


def test_stats_cli_json_and_table(invoke, tmp_path):
    import json

    from tests.factories import write_lines

    path = write_lines(tmp_path / "hand.jsonl", [COUPLE.to_json(), FAMILY.to_json()])
    result = invoke("data", "stats", path, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["couple"]["samples"] == 1 and data["all"]["rows"] == 8
    assert data["all"]["therapist_share"] == pytest.approx(3 / 8)
    table = invoke("data", "stats", path)
    assert table.exit_code == 0 and "therapist_share" in table.stdout and "Traceback" not in table.output
    paper = invoke("data", "stats", path, "--json", "--paper")
    assert json.loads(paper.stdout)["family"]["paper"]["samples"] == 17


def test_stats_cli_bad_input(invoke, tmp_path):
    missing = invoke("data", "stats", tmp_path / "nope.jsonl")
    assert missing.exit_code == 2
    assert missing.stderr.strip().count("\n") == 0 and "no such file" in missing.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n", encoding="utf-8")
    result = invoke("data", "stats", broken)
    assert result.exit_code == 2 and "broken.jsonl:1" in result.stderr and "Traceback" not in result.output


def test_full_release_shows_the_paper_beside_ours(invoke, tmp_path):
    import json

    from tests.factories import release_clip, write_lines

    clips = [release_clip(f"c/{i}") for i in range(174)] + [release_clip(f"f/{i}", "family") for i in range(17)]
    path = write_lines(tmp_path / "full.jsonl", clips)
    data = json.loads(invoke("data", "stats", path, "--json").stdout)
    assert data["all"]["samples"] == 191
    assert data["couple"]["paper"]["therapist_share"] == pytest.approx(0.354)
    table = invoke("data", "stats", path)
    assert table.exit_code == 0 and "paper" in table.stdout and "7,079" in table.stdout
