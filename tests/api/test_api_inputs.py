"""The Python API takes what a user naturally passes: a path as a string or a ``Path`` (never read
as a sequence of one-character paths), a list of them, and task names in any case; anything else is
one error naming what is expected."""

from __future__ import annotations

import pytest

import rescue_bench as rb
from rescue_bench.data.load import demo_path


@pytest.mark.parametrize("given", [str(demo_path()), demo_path(), [str(demo_path())], [demo_path()]])
def test_load_clips_takes_a_path_a_string_or_a_list(given):
    clips = rb.load_clips(given)
    assert len(clips) == 9 and clips[0].sample_id == "demo_couple/c01_dana_and_marcus"


def test_a_missing_path_given_as_a_string_is_one_problem_naming_it(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(rb.DataError) as caught:
        rb.load_clips(str(missing))
    assert [p.file for p in caught.value.problems] == [str(missing)]


@pytest.mark.parametrize("name", ["ITP", "Itp", " itp "])
def test_build_instances_takes_a_task_name_in_any_case(name):
    clips = rb.load_clips()
    assert [i.id for i in rb.build_instances(clips, name)] == [i.id for i in rb.build_instances(clips, "itp")]


def test_an_unknown_task_names_the_six():
    with pytest.raises(ValueError, match="unknown task 'XYZ'; expected one of itp, rpp, stp, ssp, er, vp"):
        rb.build_instances(rb.load_clips(), "XYZ")
