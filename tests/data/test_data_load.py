"""Loaders: the older per-clip folder layout, opt-in mojibake repair, and lossless round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rescue_bench.data import DataError, load_clips, read_folder, read_jsonl, read_path, read_paths
from rescue_bench.data.load import demo_path, iter_jsonl_lines, repair_text
from rescue_bench.data.models import Clip
from tests.factories import release_clip, write_lines

MOJIBAKE = "I don\u00e2\u20ac\u2122t know"
REPAIRED = "I don\u2019t know"


def write_json(path, payload):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_folder_layout(tmp_path):
    couple_rows = release_clip(n_rows=4)["rows"]
    family_rows = release_clip(scenario="family", n_rows=3)["rows"]
    named_family = release_clip(n_rows=2)["rows"]
    named_family[1]["support_strategy"][0]["target"] = ["Family"]
    write_json(tmp_path / "ana_and_bo" / "001_segment01.json", {"rows": couple_rows})
    write_json(tmp_path / "family_therapy" / "003" / "merged.json", {"rows": family_rows})
    write_json(tmp_path / "misc" / "clip9.json", {"rows": named_family, "note": "kept"})
    result = read_folder(tmp_path)
    assert not result.problems
    clips = {c.sample_id: c for c in result.clips}
    assert set(clips) == {"ana_and_bo/001_segment01", "family_therapy/003/merged", "misc/clip9"}
    assert clips["ana_and_bo/001_segment01"].scenario == "couple"
    assert clips["family_therapy/003/merged"].scenario == "family"  # by path
    assert clips["misc/clip9"].scenario == "family"  # a row names the Family group
    assert clips["ana_and_bo/001_segment01"].participants == ["Ana"]  # inferred from speakers and targets
    assert clips["misc/clip9"].to_json()["note"] == "kept"
    assert len(clips["ana_and_bo/001_segment01"].rows) == 4
    # read_path dispatches on folders too, and read_paths/load_clips accept them
    assert len(read_path(tmp_path).clips) == 3
    assert len(load_clips([tmp_path])) == 3


def test_folder_layout_problems_name_the_file(tmp_path, invoke):
    good = write_json(tmp_path / "a" / "good.json", {"rows": release_clip()["rows"]})
    (tmp_path / "a" / "broken.json").write_text("{oops", encoding="utf-8")
    write_json(tmp_path / "a" / "list.json", [1, 2])
    bad_rows = release_clip()["rows"]
    bad_rows[1]["end_time"] = "later"
    write_json(tmp_path / "b" / "typed.json", {"rows": bad_rows})
    result = read_folder(tmp_path)
    assert [c.sample_id for c in result.clips] == ["a/good"]
    messages = sorted(str(p) for p in result.errors)
    assert any("broken.json, clip a/broken: not valid JSON" in m for m in messages)
    assert any("list.json, clip a/list: expected a JSON object" in m for m in messages)
    assert any("typed.json, clip b/typed, row 2, field end_time: Input should be a number" in m for m in messages)
    cli = invoke("data", "validate", tmp_path)
    assert cli.exit_code == 2 and cli.stdout.count("error:") == 3 and good.exists()


def test_empty_folder_is_an_error(tmp_path):
    assert "no .json clip files" in str(read_path(tmp_path).errors[0])


def test_folder_of_jsonl_files(tmp_path):
    write_lines(tmp_path / "part1.jsonl", [release_clip("a/1")])
    write_lines(tmp_path / "part2.jsonl", [release_clip("a/2"), release_clip("a/3")])
    assert [c.sample_id for c in read_path(tmp_path).clips] == ["a/1", "a/2", "a/3"]


def test_mojibake_repair_is_opt_in(tmp_path):
    clip = release_clip()
    clip["rows"][0]["dialogue_cleaned"] = MOJIBAKE
    clip["rows"][0]["viewpoints_attitudes"] = [
        {"source": "Ana", "target": "Bo", "viewpoint": "He doesn\u00e2\u20ac\u2122t listen", "attitude": "hurt"}]
    path = write_lines(tmp_path / "m.jsonl", [clip])
    gold = read_jsonl(path).clips[0]
    assert gold.rows[0].dialogue_cleaned == MOJIBAKE  # untouched by default
    assert gold.to_json() == clip
    fixed = read_jsonl(path, repair_mojibake=True).clips[0]
    assert fixed.rows[0].dialogue_cleaned == REPAIRED
    assert fixed.rows[0].viewpoints_attitudes[0].viewpoint == "He doesn\u2019t listen"
    assert load_clips([path], repair_mojibake=True)[0].rows[0].text == REPAIRED


def test_repair_only_touches_mojibake():
    text = "she said \u201cfine\u201d &amp; left \u2014 na\u00efve \ufb01x, " + MOJIBAKE
    assert repair_text(text) == "she said \u201cfine\u201d &amp; left \u2014 na\u00efve \ufb01x, " + REPAIRED
    assert repair_text({"a": [MOJIBAKE, 3, None]}) == {"a": [REPAIRED, 3, None]}


def test_round_trip_keeps_null_empty_missing_and_unknown_keys(tmp_path):
    clip = release_clip(n_rows=3)
    clip["rows"][0]["utterance_type"] = None
    clip["rows"][1]["utterance_type"] = ""
    del clip["rows"][2]["tone_of_voice"]
    clip["rows"][2]["relation_cycle_reason"] = "extra key"
    clip["rows"][0]["internal_emotion"][0]["confidence"] = 0.5
    clip["annotator"] = {"id": 7}
    path = write_lines(tmp_path / "rt.jsonl", [clip])
    loaded = read_jsonl(path).clips[0]
    assert loaded.to_json() == clip
    assert json.loads(next(iter_jsonl_lines([loaded]))) == clip


def test_round_trip_of_the_demo():
    raw = [json.loads(line) for line in demo_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    clips = load_clips()
    assert [c.to_json() for c in clips] == raw


def test_load_clips_raises_one_error_with_all_problems(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", ["nope", release_clip("a/1"), "{"])
    with pytest.raises(DataError) as info:
        load_clips([path])
    assert len(info.value.problems) == 2 and "(+1 more)" in str(info.value)


def test_read_paths_reports_duplicates_once_per_repeat(tmp_path):
    path = write_lines(tmp_path / "d.jsonl", [release_clip("a/1"), release_clip("a/1"), release_clip("a/1")])
    result = read_paths([path])
    assert len(result.clips) == 1 and len(result.errors) == 2


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
optional_text = st.one_of(st.none(), names)


@settings(max_examples=60, deadline=None)
@given(
    utterance=optional_text,
    tone=st.one_of(st.just("<missing>"), optional_text),
    intensity=st.one_of(st.none(), st.integers(-3, 20), st.floats(allow_nan=False, allow_infinity=False)),
    extra=st.dictionaries(st.sampled_from(["x_note", "x_flag", "x_list"]), st.one_of(names, st.booleans(), st.lists(st.integers(), max_size=3))),
)
def test_round_trip_property(utterance, tone, intensity, extra):
    clip = release_clip(n_rows=2)
    row = clip["rows"][0]
    row["utterance_type"] = utterance
    if tone == "<missing>":
        del row["tone_of_voice"]
    else:
        row["tone_of_voice"] = tone
    row["internal_emotion"][0]["intensity"] = intensity
    row.update(extra)
    text = json.dumps(clip, ensure_ascii=False)
    assert Clip.model_validate(json.loads(text)).to_json() == json.loads(text)
