"""Every file of ../shared/data/rescue_real (real release lines, read in place, never copied):
it validates with no hard error, round-trips losslessly, and its statistics match a hand computation
made here directly from the JSON, independent of the package's models and stats code."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from rescue_bench.data.load import read_jsonl, read_path
from rescue_bench.data.stats import dataset_stats

pytestmark = pytest.mark.real


def raw_clips(real_data) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(real_data.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def test_every_file_validates_without_hard_errors(real_data, invoke):
    for path in sorted(real_data.glob("*.jsonl")):
        result = read_jsonl(path)
        assert not result.errors, [str(p) for p in result.errors]
        cli = invoke("data", "validate", path)
        assert cli.exit_code == 0, cli.output
        assert " 0 errors" in cli.stdout
    assert invoke("data", "validate", real_data).exit_code == 0


def test_every_clip_round_trips(real_data):
    raws = raw_clips(real_data)
    clips = read_path(real_data).clips
    assert len(clips) == len(raws)
    assert [c.to_json() for c in clips] == raws


def hand_stats(raws: list[dict]) -> dict[str, dict[str, float]]:
    """Table 3 computed from the plain JSON with no package code."""
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for clip in raws:
        for scope in (clip["scenario"], "all"):
            a = acc[scope]
            rows = clip["rows"]
            a["samples"] += 1
            a["rows"] += len(rows)
            a["therapist_rows"] += sum(1 for r in rows if r.get("primary_speaker") == "Therapist")
            a["span_s"] += max(r["end_time"] for r in rows) - min(r["start_time"] for r in rows)
            a["speakers"] += len({r["primary_speaker"] for r in rows} - {"Couple", "Family", "", None})
    return {
        scope: {
            "samples": a["samples"],
            "rows": a["rows"],
            "therapist_share": a["therapist_rows"] / a["rows"],
            "duration_min": a["span_s"] / 60,
            "avg_rows": a["rows"] / a["samples"],
            "avg_speakers": a["speakers"] / a["samples"],
        }
        for scope, a in acc.items()
    }


def test_stats_match_a_hand_computation(real_data, invoke):
    raws = raw_clips(real_data)
    expected = hand_stats(raws)
    ours = dataset_stats(read_path(real_data).clips)
    assert ours["couple"]["samples"] == 6 and ours["family"]["samples"] == 2
    for scope in ("couple", "family", "all"):
        for key, value in expected[scope].items():
            assert ours[scope][key] == pytest.approx(value), (scope, key)
    # the couple clips have two partners and the therapist, as in the paper (3.0)
    assert ours["couple"]["avg_speakers"] == pytest.approx(3.0)
    cli = invoke("data", "stats", *sorted(real_data.glob("*.jsonl")), "--json")
    assert cli.exit_code == 0
    printed = json.loads(cli.stdout)
    assert printed["all"]["rows"] == expected["all"]["rows"]
    assert printed["family"]["therapist_share"] == pytest.approx(expected["family"]["therapist_share"])
    assert "paper" not in printed["all"]  # not the full release


def test_therapist_labels_are_counted_as_in_the_json(real_data):
    raws = raw_clips(real_data)
    ours = dataset_stats(read_path(real_data).clips)
    for scope in ("couple", "family"):
        therapist = [r for c in raws if c["scenario"] == scope for r in c["rows"] if r["primary_speaker"] == "Therapist"]
        labelled = [r for r in therapist if (r.get("relation_cycle_state") or "").strip()]
        assert sum(ours[scope]["relation_patterns"].values()) == len(labelled)
        assert ours[scope]["relation_patterns_empty"] == len(therapist) - len(labelled)
        firsts = [r["support_strategy"][0] for r in therapist if r.get("support_strategy")]
        assert sum(ours[scope]["strategies"].values()) == sum(1 for s in firsts if (s.get("strategy_type") or "").strip())


def test_strict_refuses_only_the_release_quirks(real_data, invoke):
    from rescue_bench.data.validate import validate_paths

    loose = validate_paths([real_data])
    strict = validate_paths([real_data], strict=True)
    assert not loose.errors
    quirks = {"relation_pattern_evidence_rows", "target", "primary_speaker", "draft_problems"}
    assert {p.field.split("[")[0] for p in strict.errors if p.field} <= quirks
    # what strict refuses was a warning before, the same place and message: nothing new is found
    assert {(p.sample_id, p.row_index, p.field, p.message) for p in strict.errors} <= {
        (p.sample_id, p.row_index, p.field, p.message) for p in loose.warnings
    }
    assert invoke("data", "validate", "--strict", real_data).exit_code == (2 if strict.errors else 0)
