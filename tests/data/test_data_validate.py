"""``rescue data validate``: each hard error exits 2 with one line naming file, line, clip, row and field;
soft findings are listed as warnings and do not fail."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rescue_bench.data.load import MAX_PROBLEMS_PER_FILE
from rescue_bench.data.validate import has_mojibake, validate_paths
from tests.factories import write_lines


def lines_of(result, prefix: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(prefix)]


def assert_clean_failure(result) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert re.search(r"^FAILED: .* [1-9]\d* errors", result.stdout, re.M)


def test_valid_file_exits_zero(invoke, tmp_path, clip_dict):
    path = write_lines(tmp_path / "ok.jsonl", [clip_dict("a/1"), clip_dict("a/2", "family", 3)])
    result = invoke("data", "validate", path)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == "OK: 1 input(s), 2 clips, 5 rows, 0 errors, 0 warnings"


def test_no_path_validates_the_demo(invoke):
    from rescue_bench.data.load import demo_path

    result = invoke("data", "validate")
    assert result.exit_code == 0, result.output
    assert result.stdout == invoke("data", "validate", str(demo_path())).stdout  # the same file, the same report
    assert result.stdout.strip().endswith("0 errors, 0 warnings")


def test_not_json(invoke, tmp_path, clip_dict):
    path = write_lines(tmp_path / "bad.jsonl", [clip_dict("a/1"), '{"sample_id": "a/2", "rows": [', clip_dict("a/3")])
    result = invoke("data", "validate", path)
    assert_clean_failure(result)
    (line,) = lines_of(result, "error:")
    assert f"{path}:2" in line and "not valid JSON" in line


def test_wrong_type_names_clip_row_and_field(invoke, tmp_path, clip_dict):
    clip = clip_dict("grp/clip7", n_rows=4)
    clip["rows"][2]["internal_emotion"] = [{"person": "Ana", "emotion_description": "x", "intensity": "high"}]
    clip["rows"][2]["row_index"] = 3
    path = write_lines(tmp_path / "types.jsonl", [clip_dict("a/1"), clip])
    result = invoke("data", "validate", path)
    assert_clean_failure(result)
    (line,) = lines_of(result, "error:")
    assert line.startswith(f"error: {path}:2, clip grp/clip7, row 3, field internal_emotion[0].intensity:")
    assert "high" in line


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda c: c.update(rows="not a list"), "field rows"),
        (lambda c: c.update(scenario="friends"), "field scenario"),
        (lambda c: c["rows"][0].update(target="Bo"), "field target"),
        (lambda c: c["rows"][0].update(start_time="0:01"), "field start_time"),
        (lambda c: c["rows"][1].update(row_index=True), "field row_index"),
    ],
)
def test_other_wrong_types(invoke, tmp_path, clip_dict, mutate, field):
    clip = clip_dict("a/1")
    mutate(clip)
    result = invoke("data", "validate", write_lines(tmp_path / "t.jsonl", [clip]))
    assert_clean_failure(result)
    (line,) = lines_of(result, "error:")
    assert field in line and "clip a/1" in line and "t.jsonl:1" in line


def test_not_an_object(invoke, tmp_path):
    result = invoke("data", "validate", write_lines(tmp_path / "t.jsonl", [[1, 2]]))
    assert_clean_failure(result)
    assert "expected a JSON object" in lines_of(result, "error:")[0]


@pytest.mark.parametrize("missing", ["sample_id", "scenario", "rows"])
def test_missing_required_field(invoke, tmp_path, clip_dict, missing):
    clip = clip_dict("a/1")
    del clip[missing]
    result = invoke("data", "validate", write_lines(tmp_path / "m.jsonl", [clip]))
    assert_clean_failure(result)
    (line,) = lines_of(result, "error:")
    assert "m.jsonl:1" in line and f"field {missing}" in line and "required field is missing" in line


def test_duplicate_sample_id_in_one_file_and_across_files(invoke, tmp_path, clip_dict):
    one = write_lines(tmp_path / "one.jsonl", [clip_dict("a/1"), clip_dict("a/2"), clip_dict("a/1")])
    result = invoke("data", "validate", one)
    assert_clean_failure(result)
    (line,) = lines_of(result, "error:")
    assert f"{one}:3, clip a/1, field sample_id: duplicate sample_id (first seen at {one}:1)" in line
    two = write_lines(tmp_path / "two.jsonl", [clip_dict("a/2")])
    result = invoke("data", "validate", one, two)
    assert_clean_failure(result)
    errors = lines_of(result, "error:")
    assert len(errors) == 2 and any(f"{two}:1, clip a/2" in e for e in errors)


def test_missing_file(invoke, tmp_path):
    result = invoke("data", "validate", tmp_path / "absent.jsonl")
    assert_clean_failure(result)
    assert lines_of(result, "error:") == [f"error: {tmp_path / 'absent.jsonl'}: no such file or folder"]


def test_unreadable_file(invoke, tmp_path, clip_dict, monkeypatch):
    path = write_lines(tmp_path / "locked.jsonl", [clip_dict("a/1")])
    real_open = Path.open

    def deny(self, *args, **kwargs):
        if self.name == "locked.jsonl":
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    result = invoke("data", "validate", path)
    assert_clean_failure(result)
    assert lines_of(result, "error:") == [f"error: {path}: cannot read file: Permission denied"]


def test_not_utf8_line_is_named_and_the_rest_still_checked(invoke, tmp_path, clip_dict):
    path = tmp_path / "latin1.jsonl"
    good = json.dumps(clip_dict("a/1")).encode()
    bad = json.dumps(clip_dict("a/2")).replace("waiting", "wa\xefting").encode("latin-1")
    broken = b'{"sample_id": 5}'
    path.write_bytes(b"\xef\xbb\xbf" + good + b"\n" + bad + b"\n" + broken + b"\n")
    result = invoke("data", "validate", path)
    assert_clean_failure(result)
    errors = lines_of(result, "error:")
    assert f"{path}:2" in errors[0] and "not UTF-8" in errors[0]
    assert any(f"{path}:3" in e for e in errors)  # checking went on after the bad line
    assert "1 clips" in result.stdout  # the BOM on line 1 is tolerated


def test_every_problem_is_listed_up_to_a_cap(invoke, tmp_path, clip_dict):
    clip = clip_dict("a/1", n_rows=4)
    for r in clip["rows"]:
        r["end_time"] = "late"
    path = write_lines(tmp_path / "many.jsonl", [clip, "nope", clip_dict("a/2")])
    result = invoke("data", "validate", path)
    assert_clean_failure(result)
    errors = lines_of(result, "error:")
    assert len(errors) == 5
    assert [e.split(", row ")[1].split(",")[0] for e in errors[:4]] == ["1", "2", "3", "4"]
    flood = write_lines(tmp_path / "flood.jsonl", ["nope"] * (MAX_PROBLEMS_PER_FILE + 50))
    result = invoke("data", "validate", flood)
    assert_clean_failure(result)
    errors = lines_of(result, "error:")
    assert len(errors) == MAX_PROBLEMS_PER_FILE + 1 and "too many problems" in errors[-1]


def test_each_problem_is_one_line(invoke, tmp_path, clip_dict):
    clip = clip_dict("a/1")
    clip["rows"][0]["dialogue_cleaned"] = 12345
    result = invoke("data", "validate", write_lines(tmp_path / "x.jsonl", [clip, "{\n"]))
    assert_clean_failure(result)
    for line in result.stdout.splitlines():
        assert line.startswith(("error:", "warning:", "FAILED:", "OK:", "..."))


def test_closed_sets_and_ranges_are_errors_and_the_soft_findings_warnings(invoke, tmp_path, clip_dict):
    clip = clip_dict("a/1", n_rows=4)
    rows = clip["rows"]
    rows[0]["relation_pattern"] = "stonewalling"
    rows[1]["relation_cycle_state"] = "escalation_conflict"  # a family pattern in a couple clip
    rows[1]["support_strategy"][0]["strategy_type"] = "boundary"  # a family strategy
    rows[2]["utterance_type"] = "complaint"
    rows[2]["internal_emotion"] = [{"person": "Ana", "emotion_description": "x", "intensity": 11},
                                   {"person": "Bo", "emotion_description": "y", "intensity": 6.5}]
    rows[3]["target"] = []
    rows[0]["dialogue_cleaned"] = "I don\u00e2\u20ac\u2122t know."
    path = write_lines(tmp_path / "soft.jsonl", [clip])
    result = invoke("data", "validate", path)
    assert result.exit_code == 2, result.output
    errors = lines_of(result, "error:")
    expected = [
        ("row 1, field relation_pattern", "'stonewalling' is not a couple relation pattern"),
        ("row 2, field relation_cycle_state", "'escalation_conflict' is not a couple relation pattern"),
        ("row 2, field support_strategy[0].strategy_type", "'boundary' is not a couple strategy"),
        ("row 3, field utterance_type", "'complaint' is not an utterance type"),
        ("row 3, field internal_emotion[0].intensity", "outside 0-10"),
        ("row 3, field internal_emotion[1].intensity", "not a whole number"),
    ]
    for where, what in expected:
        assert any(f"{path}:1, clip a/1, {where}: " in e and what in e for e in errors), (where, errors)
    assert len(errors) == len(expected)
    warnings = lines_of(result, "warning:")
    for where, what in [("row 4, field target", "empty target"), ("row 1, field dialogue_cleaned", "mojibake")]:
        assert any(f"{path}:1, clip a/1, {where}: " in w and what in w for w in warnings), (where, warnings)
    assert result.stdout.strip().splitlines()[-1].endswith("6 errors, 2 warnings")


def test_repair_mojibake_is_opt_in(invoke, tmp_path, clip_dict):
    clip = clip_dict("a/1")
    clip["rows"][0]["dialogue_cleaned"] = "I don\u00e2\u20ac\u2122t know."
    path = write_lines(tmp_path / "moj.jsonl", [clip])
    plain = invoke("data", "validate", path)
    assert plain.exit_code == 0 and "1 warnings" in plain.stdout
    repaired = invoke("data", "validate", path, "--repair-mojibake")
    assert repaired.exit_code == 0 and "0 warnings" in repaired.stdout
    assert "\u00e2\u20ac\u2122" in path.read_text(encoding="utf-8")  # the file itself is never rewritten


def test_warning_cap(invoke, tmp_path, clip_dict):
    clip = clip_dict("a/1", n_rows=6)
    for r in clip["rows"]:
        r["target"] = []
    result = invoke("data", "validate", write_lines(tmp_path / "w.jsonl", [clip]), "--max-warnings", "2")
    assert result.exit_code == 0
    assert len(lines_of(result, "warning:")) == 2 and "4 more warnings not shown" in result.stdout
    assert "6 warnings" in result.stdout


def test_has_mojibake_ignores_legitimate_characters():
    assert has_mojibake("don\u00e2\u20ac\u2122t")
    for fine in ("don\u2019t", "caf\u00e9", "&amp;", "\ufb01ne", "na\u00efve \u2014 ok", "plain"):
        assert not has_mojibake(fine)


def test_validate_paths_returns_clips_and_problems(tmp_path, clip_dict):
    clip = clip_dict("a/1")
    clip["rows"][0]["target"] = []
    result = validate_paths([write_lines(tmp_path / "v.jsonl", [clip])])
    assert [c.sample_id for c in result.clips] == ["a/1"]
    assert not result.errors and len(result.warnings) == 1
    assert result.warnings[0].row_index == 1 and result.warnings[0].field == "target"


def test_usage_errors_do_not_traceback(invoke):
    result = invoke("data", "validate", "--max-warnings", "lots")
    assert result.exit_code == 2 and "Traceback" not in result.output


@pytest.mark.parametrize("speaker", [None, "", "   ", "missing"])
def test_row_without_primary_speaker_is_an_error(invoke, tmp_path, clip_dict, speaker):
    clip = clip_dict("grp/nospeaker", n_rows=4)
    if speaker == "missing":
        del clip["rows"][2]["primary_speaker"]
    else:
        clip["rows"][2]["primary_speaker"] = speaker
    path = write_lines(tmp_path / "speakers.jsonl", [clip_dict("a/1"), clip])
    result = invoke("data", "validate", path)
    assert_clean_failure(result)
    (line,) = lines_of(result, "error:")
    assert line.startswith(f"error: {path}:2, clip grp/nospeaker, row 3, field primary_speaker:")


@pytest.mark.parametrize("content", ["", "\n\n  \n", "\ufeff"])
@pytest.mark.parametrize("command", [("data", "validate"), ("data", "stats"), ("tasks", "build", "--out", "OUT"), ("eval",)])
def test_an_input_without_clips_is_an_error(invoke, tmp_path, content, command):
    path = tmp_path / "empty.jsonl"
    path.write_text(content, encoding="utf-8")
    args = [a.replace("OUT", str(tmp_path / "out")) for a in command]
    data = [str(path)] if command[0] == "data" else ["--data", str(path)]
    result = invoke(*args, *data, "--out", str(tmp_path / "run")) if command == ("eval",) else invoke(*args, *data)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{path}: no clips" in result.output
