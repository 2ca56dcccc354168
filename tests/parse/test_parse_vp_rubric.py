"""The authors' VP rubric answer: target 0-2 plus viewpoint 0-4, integers, no rounding."""

import pytest

from rescue_bench.parse import parse_vp_rubric


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"target_score": 2, "viewpoint_score": 4}', {"target_score": 2, "viewpoint_score": 4}),
        ('```json\n{"target_score": 0, "viewpoint_score": 0}\n```', {"target_score": 0, "viewpoint_score": 0}),
        ('Scores: {"target_score": "1", "viewpoint_score": 3.0}', {"target_score": 1, "viewpoint_score": 3}),
    ],
)
def test_valid(raw, expected):
    parsed = parse_vp_rubric(raw)
    assert parsed.valid and parsed.prediction == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "garbage",
        '{"target_score": 3, "viewpoint_score": 1}',
        '{"target_score": 1, "viewpoint_score": 5}',
        '{"target_score": 1.5, "viewpoint_score": 2}',
        '{"target_score": 1}',
        '{"score": 4}',
    ],
)
def test_invalid(raw):
    parsed = parse_vp_rubric(raw)
    assert not parsed.valid and parsed.prediction is None and parsed.error


@pytest.mark.parametrize(
    "raw",
    [
        '{"Target_Score": 2, "Viewpoint_Score": 4}',
        '{"TARGET_SCORE": 2, "VIEWPOINT_SCORE": 4}',
        '```json\n{" target_score ": 2, "Viewpoint_score": 4}\n```',
    ],
)
def test_keys_ignore_case_like_every_other_parser(raw):
    # the parse module promises lenient form ("wrong case" included); parse_judge reads {"Score": 4}
    parsed = parse_vp_rubric(raw)
    assert parsed.valid, parsed.error
    assert parsed.prediction == {"target_score": 2, "viewpoint_score": 4}
