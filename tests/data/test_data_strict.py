"""Validation is the same everywhere and strict where we write.

Invalid JSON numbers are hard errors wherever release JSON is read; reversed times and a
``row_index`` that is not the row's position are errors of ``rescue data validate``; ``--strict``
turns the quirks the published release tolerates into errors; and the one public API
(:func:`clip_findings`, :func:`clip_problems`, :func:`row_problems`) gives other layers the same
rules on a clip, a raw clip dict or a single row dict from a web form.
"""

from __future__ import annotations

import json
import math

import pytest

from rescue_bench.data.load import read_folder, read_jsonl
from rescue_bench.data.models import Row
from rescue_bench.data.validate import clip_findings, clip_problems, row_problems, validate_paths
from tests.factories import release_row, write_lines


def lines_of(result, prefix: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(prefix)]


def write_raw(path, texts: list[str]):
    path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return path


# -- invalid JSON numbers ------------------------------------------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_invalid_json_numbers_are_errors_naming_row_and_field(invoke, tmp_path, clip_dict, constant):
    clip = clip_dict("a/1", n_rows=3)
    text = json.dumps(clip).replace("\"start_time\": 3.0", f"\"start_time\": {constant}", 1)
    assert constant in text
    path = write_raw(tmp_path / "nan.jsonl", [json.dumps(clip_dict("a/0")), text])
    result = read_jsonl(path)
    (error,) = result.errors
    assert (error.file, error.line, error.sample_id, error.row_index, error.field) == (str(path), 2, "a/1", 2, "start_time")
    assert "not a valid JSON number" in error.message
    assert [c.sample_id for c in result.clips] == ["a/0"]
    cli = invoke("data", "validate", path)
    assert cli.exit_code == 2 and "Traceback" not in cli.output
    assert f"error: {path}:2, clip a/1, row 2, field start_time:" in cli.stdout


def test_invalid_number_in_the_folder_layout(tmp_path):
    (tmp_path / "grp").mkdir()
    (tmp_path / "grp" / "c.json").write_text(
        '{"rows": [{"row_index": 1, "primary_speaker": "Ann", "start_time": 0, "end_time": NaN}]}', encoding="utf-8"
    )
    (error,) = read_folder(tmp_path).errors
    assert (error.sample_id, error.row_index, error.field) == ("grp/c", 1, "end_time")


def test_nan_from_python_is_refused_by_the_models():
    with pytest.raises(ValueError):
        Row.model_validate({"primary_speaker": "Ann", "start_time": math.nan})
    problems = row_problems({"primary_speaker": "Ann", "end_time": math.inf}, position=1, participants=["Ann"], scenario="couple")
    assert [(p.severity, p.field) for p in problems] == [("error", "end_time")]


# -- errors of rescue data validate ----------------------------------------------------------------


def test_reversed_times_are_an_error(invoke, tmp_path, clip_dict):
    clip = clip_dict("a/1", n_rows=3)
    clip["rows"][1]["start_time"], clip["rows"][1]["end_time"] = 9.0, 8.0
    path = write_lines(tmp_path / "rev.jsonl", [clip])
    result = invoke("data", "validate", path)
    assert result.exit_code == 2, result.output
    (line,) = lines_of(result, "error:")
    assert line.startswith(f"error: {path}:1, clip a/1, row 2, field end_time:") and "before start_time" in line


def test_row_index_off_its_position_and_repeated_are_errors(invoke, tmp_path, clip_dict):
    clip = clip_dict("a/1", n_rows=4)
    clip["rows"][2]["row_index"] = 2  # a repeat of row 2
    clip["rows"][3]["row_index"] = 7  # off its position
    path = write_lines(tmp_path / "idx.jsonl", [clip])
    result = invoke("data", "validate", path)
    assert result.exit_code == 2, result.output
    errors = lines_of(result, "error:")
    assert len(errors) == 2
    assert "row 2, field row_index" in errors[0] and "position 3" in errors[0] and "repeats" in errors[0]
    assert "row 7, field row_index" in errors[1] and "position 4" in errors[1]


# -- --strict --------------------------------------------------------------------------------------


def quirky_clip(clip_dict):
    clip = clip_dict("a/1", n_rows=4)
    rows = clip["rows"]
    rows[0]["relation_pattern_evidence_rows"] = [1, 9]  # no row 9
    rows[1]["target"] = ["Couple", "Ana"]  # a group target beside a name
    rows[2]["relation_pattern_evidence_rows"] = [0]  # the release's own quirk
    rows[3]["draft_problems"] = [
        {"field": "target", "problem": "unknown name", "value": "x"},
        {"field": "internal_emotion[0].intensity", "problem": "not 0-10", "value": 12},
    ]
    return clip


def test_quirks_are_warnings_by_default_and_errors_with_strict(invoke, tmp_path, clip_dict):
    clip = quirky_clip(clip_dict)
    path = write_lines(tmp_path / "q.jsonl", [clip])
    plain = invoke("data", "validate", path)
    assert plain.exit_code == 0, plain.output
    warnings = lines_of(plain, "warning:")
    expected = [
        ("row 1, field relation_pattern_evidence_rows", "9"),
        ("row 2, field target", "group target"),
        ("row 3, field relation_pattern_evidence_rows", "[0]"),
        ("row 4, field draft_problems", "2 draft problems left"),
    ]
    for where, what in expected:
        assert any(where in w and what in w for w in warnings), (where, warnings)
    assert len(warnings) == len(expected)
    assert "2 draft problems left in 1 row" in plain.stdout.splitlines()[-1]

    strict = invoke("data", "validate", "--strict", path)
    assert strict.exit_code == 2, strict.output
    errors = lines_of(strict, "error:")
    for where, what in expected:
        assert any(where in e and what in e for e in errors), (where, errors)
    assert len(errors) == len(expected) and not lines_of(strict, "warning:")


def test_strict_passes_clean_data_and_leaves_other_findings_as_warnings(invoke, tmp_path, clip_dict):
    ok = write_lines(tmp_path / "ok.jsonl", [clip_dict("a/1"), clip_dict("a/2", "family", 3)])
    assert invoke("data", "validate", "--strict", ok).exit_code == 0
    clip = clip_dict("a/3")
    clip["rows"][0]["target"] = []  # an empty target: a warning whatever the mode
    soft = invoke("data", "validate", "--strict", write_lines(tmp_path / "soft.jsonl", [clip]))
    assert soft.exit_code == 0 and len(lines_of(soft, "warning:")) == 1


def test_an_unknown_name_is_an_error_without_strict(invoke, tmp_path, clip_dict):
    clip = clip_dict("a/1", n_rows=3)
    clip["rows"][2]["primary_speaker"] = "Zed"  # not a participant
    result = invoke("data", "validate", write_lines(tmp_path / "zed.jsonl", [clip]))
    assert result.exit_code == 2
    assert any("row 3, field primary_speaker" in e and "'Zed'" in e for e in lines_of(result, "error:"))


def test_the_demo_passes_strict(invoke):
    result = invoke("data", "validate", "--strict")
    assert result.exit_code == 0, result.output


def test_participants_are_matched_and_group_speaker_allowed(clip_dict, tmp_path):
    clip = clip_dict("a/1", n_rows=3)
    clip["rows"][0]["primary_speaker"] = "Couple"
    clip["rows"][0]["target"] = ["Therapist"]
    path = write_lines(tmp_path / "g.jsonl", [clip])
    assert not validate_paths([path], strict=True).problems


# -- the API other layers call ---------------------------------------------------------------------


def test_clip_findings_strict_flag(tmp_path, clip_dict):
    path = write_lines(tmp_path / "q.jsonl", [quirky_clip(clip_dict)])
    (clip,) = read_jsonl(path).clips
    loose = clip_findings(clip, str(path), 1)
    strict = clip_findings(clip, str(path), 1, strict=True)
    assert {p.severity for p in loose} == {"warning"} and len(loose) == 4
    assert {p.severity for p in strict} == {"error"} and len(strict) == 4
    assert [p.field for p in strict] == [p.field for p in loose]


def test_clip_problems_on_a_raw_dict(clip_dict):
    raw = quirky_clip(clip_dict)
    raw["rows"][0]["start_time"] = "soon"
    problems = clip_problems(raw)
    assert any(p.severity == "error" and p.field == "start_time" and p.row_index == 1 for p in problems)
    fixed = clip_dict("a/1")
    assert clip_problems(fixed) == []
    assert clip_problems({"rows": []})[0].field == "sample_id"


def form_row(**overrides):
    fields = {"row_index": 2, "start_time": 1.0, "end_time": 2.0, "relation_pattern_evidence_rows": [1, 2], **overrides}
    return release_row(**fields)


def test_row_problems_on_a_web_form_row():
    kwargs = dict(position=2, participants=["Ana", "Bo"], scenario="couple", n_rows=3)
    assert row_problems(form_row(), **kwargs) == []
    cases = {
        "start_time": form_row(start_time="1.0"),  # a type error from the release model
        "end_time": form_row(end_time=0.5),  # reversed
        "row_index": form_row(row_index=5),  # off its position
        "primary_speaker": form_row(primary_speaker="Zed"),  # unknown speaker, strict by default
        "relation_pattern_evidence_rows": form_row(relation_pattern_evidence_rows=[4]),  # out of range
        "target": form_row(target=["Couple", "Bo"]),
        "draft_problems": form_row(draft_problems=[{"field": "x", "problem": "y", "value": None}]),
    }
    for fld, raw in cases.items():
        problems = row_problems(raw, **kwargs)
        assert [(p.severity, p.field) for p in problems] == [("error", fld)], (fld, problems)
        assert problems[0].row_index in (2, 5)
    no_speaker = row_problems(form_row(primary_speaker=" "), **kwargs)
    assert [(p.severity, p.field) for p in no_speaker] == [("error", "primary_speaker")]
    loose = row_problems(form_row(primary_speaker="Zed"), **{**kwargs, "strict": False})
    assert [(p.severity, p.field) for p in loose] == [("error", "primary_speaker")]  # a name is checked whatever the mode
    quirk = row_problems(form_row(target=["Couple", "Bo"]), **{**kwargs, "strict": False})
    assert [(p.severity, p.field) for p in quirk] == [("warning", "target")]
    assert row_problems("not a row", **kwargs)[0].severity == "error"  # type: ignore[arg-type]
