"""The builders against an independent construction over the real release lines in ../shared.

Nothing from the real files is copied here: assertions are on structure and computed values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tasks.task_oracle import expected_all, observed

FILES = ("couple_samples.jsonl", "family_samples.jsonl")

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def real_files(real_data) -> list[Path]:
    """The two release files; skipped unless both are there."""
    paths = [real_data / f for f in FILES]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"real release lines not found in {real_data}")
    return paths


@pytest.fixture(scope="module")
def raw_clips(real_files) -> list[dict]:
    clips = []
    for p in real_files:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                clips.append(json.loads(line))
    return clips


@pytest.fixture(scope="module")
def built(raw_clips, real_files):
    from rescue_bench.data.load import load_clips
    from rescue_bench.tasks import build_all

    clips = load_clips(real_files)
    assert [c.sample_id for c in clips] == [c["sample_id"] for c in raw_clips]
    return build_all(clips)


TASKS = ("itp", "rpp", "stp", "ssp", "er", "vp")


@pytest.mark.parametrize("task", TASKS)
def test_builders_match_independent_construction(raw_clips, built, task):
    want = expected_all(raw_clips)[task]
    got = observed(built)[task]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w


@pytest.mark.parametrize("task", TASKS)
def test_every_task_has_instances_in_both_scenarios(built, task):
    for scenario in ("couple", "family"):
        assert sum(1 for i in built[task] if i.scenario == scenario) > 0, (task, scenario)


def test_real_rows_are_indexed_by_position(raw_clips):
    # the builders number rows by position; the release's row_index agrees
    for c in raw_clips:
        assert [r.get("row_index") for r in c["rows"]] == list(range(1, len(c["rows"]) + 1))


def test_real_instances_do_not_leak_gold_annotations(raw_clips, built):
    # every annotation string that can hold a gold (emotions, viewpoints, strategy contents, pattern
    # rationales) must stay out of the model input
    by_clip = {c["sample_id"]: c for c in raw_clips}
    for task, items in built.items():
        for inst in items:
            c = by_clip[inst.sample_id]
            blob = json.dumps({k: v for k, v in inst.model_input().model_dump(exclude_none=True).items() if k != "candidates"})
            for r in c["rows"]:
                secrets = [e.get("emotion_description") for e in r.get("internal_emotion") or []]
                secrets += [v.get("viewpoint") for v in r.get("viewpoints_attitudes") or []]
                secrets += [s.get("strategy_content") for s in r.get("support_strategy") or []]
                secrets += [r.get("relation_pattern_reason"), r.get("relation_cycle_reason")]
                for secret in secrets:
                    if isinstance(secret, str) and len(secret.strip()) > 12:
                        assert json.dumps(secret)[1:-1] not in blob, (task, inst.id)


def test_repairing_mojibake_keeps_the_same_instances(real_files):
    from rescue_bench.data.load import load_clips
    from rescue_bench.tasks import build_all

    plain = observed(build_all(load_clips(real_files)))
    repaired = observed(build_all(load_clips(real_files, repair_mojibake=True)))
    for task in TASKS:
        assert [(i["sample_id"], i["row"]) for i in plain[task]] == [(i["sample_id"], i["row"]) for i in repaired[task]]
