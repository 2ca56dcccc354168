"""The judge-rating files round-trip whatever a model answered: one CSV reader for the sample and the
ratings, and a writer whose cells survive readers that split lines on every Unicode line break."""

from __future__ import annotations

import csv
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from rescue_bench.judge_ratings import SAMPLE_COLUMNS, read_human_csv, read_sample_csv, write_sample

AWKWARD = [
    "first line\u2028second line",  # LINE SEPARATOR: str.splitlines() splits on it
    "para one\u2029para two",  # PARAGRAPH SEPARATOR
    "next\x85line",  # NEL
    "tab\x0bvertical, form\x0cfeed",
    "file\x1cgroup\x1drecord\x1e",
    'she said "no", then left',
    "two\nlines\r\nand a CR\ronly",
    "trailing space ",
]


def _rows(answers: list[str], gold: str = "gold {i}\u2028with a break") -> list[dict]:
    return [
        {"id": f"id{i}", "task": "er" if i % 2 else "vp", "sample_id": f"s{i}", "scenario": "couple", "row": i,
         "gold": gold.format(i=i), "prediction": answer, "judge_score": 3, "human_score": 1 + i % 5}
        for i, answer in enumerate(answers)
    ]


def test_a_filled_sample_with_line_separators_reads_back(tmp_path):
    """A model's answer with U+2028 in it broke the ratings reader (it split the file with
    str.splitlines()); both readers now read the same cells the writer wrote."""
    path = write_sample(_rows(AWKWARD), tmp_path / "sample.csv")
    items = read_sample_csv(path)
    assert [i["prediction"] for i in items] == AWKWARD
    rated, unrated = read_human_csv(path)
    assert unrated == 0
    assert [(r["id"], r["task"], r["human_score"]) for r in rated] == [(f"id{i}", "er" if i % 2 else "vp", 1 + i % 5) for i in range(len(AWKWARD))]
    # each line a line-splitting tool sees is whole: every awkward cell is quoted
    text = path.read_text(encoding="utf-8")
    for answer in AWKWARD[:5]:
        assert f'"{answer}"' in text


def test_ordinary_cells_are_written_as_before(tmp_path):
    """Only cells that hold a line break of some kind are quoted beyond what csv quotes anyway."""
    rows = _rows(["plain answer", "with, comma", "two\nlines"], gold="gold {i}")
    path = write_sample(rows, tmp_path / "sample.csv")
    expected = io.StringIO(newline="")
    writer = csv.DictWriter(expected, fieldnames=list(SAMPLE_COLUMNS))
    writer.writeheader()
    writer.writerows(rows)
    assert path.read_bytes() == expected.getvalue().encode("utf-8")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1).filter(lambda s: s.strip() and "\x00" not in s), min_size=1, max_size=4))
def test_any_answer_round_trips(tmp_path_factory, answers):
    path = write_sample(_rows(answers), tmp_path_factory.mktemp("rt") / "sample.csv")
    assert [i["prediction"] for i in read_sample_csv(path)] == answers
    assert len(read_human_csv(path)[0]) == len(answers)


def test_a_vp_answer_is_written_as_one_text_and_read_back_one_line_per_viewpoint():
    from rescue_bench.judge_ratings import answer_text, text_parts

    value = [{"source": "Robin", "target": "Casey", "viewpoint": "feels unheard"}, {"target": "Therapist", "viewpoint": "wants help"}]
    text = answer_text("vp", value, client="Robin")
    assert text == "Robin -> Casey: feels unheard | Robin -> Therapist: wants help"
    assert text_parts("vp", text) == ["Robin -> Casey: feels unheard", "Robin -> Therapist: wants help"]
    er = answer_text("er", {"emotion": "hurt | angry", "intensity": 4})
    assert er == "hurt | angry (intensity 4)" and text_parts("er", er) == [er]  # one line whatever it holds
    assert answer_text("vp", None) == "" and answer_text("er", "not json") == "not json"
