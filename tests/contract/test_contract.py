"""The answer contract and its parsers agree: what we build or show parses back to what was meant."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rescue_bench import contract
from rescue_bench.contract import FORMATS, RANK_SIZE, RUBRICS, answer_object, answer_text, judge_format
from rescue_bench.data.load import load_clips
from rescue_bench.labels import GROUP_LABELS, ITP_LABELS, TASKS, patterns, strategies
from rescue_bench.parse import (
    ParsedAnswer,
    parse_er,
    parse_itp,
    parse_judge,
    parse_ranking,
    parse_vp,
    parse_vp_rubric,
)
from rescue_bench.prompts import judge_prompt, render
from rescue_bench.tasks import build_all

COUPLE = ["Alan", "Evelyn", GROUP_LABELS["couple"]]
FAMILY = ["Mary-Ann", "Tom", "Lucy", GROUP_LABELS["family"]]
CANDIDATES: dict[str, list[list[str]]] = {
    "rpp": [list(patterns("couple")), list(patterns("family"))],
    "stp": [COUPLE, FAMILY],
    "ssp": [list(strategies("couple")), list(strategies("family"))],
}

Parser = Callable[[Any, list[str]], ParsedAnswer]
PARSERS: dict[str, Parser] = {
    "itp": lambda raw, _: parse_itp(raw),
    "rpp": lambda raw, cands: parse_ranking(raw, cands),
    "stp": lambda raw, cands: parse_ranking(raw, cands),
    "ssp": lambda raw, cands: parse_ranking(raw, cands),
    "er": lambda raw, _: parse_er(raw),
    "vp": lambda raw, people: parse_vp(raw, people),
    "judge": lambda raw, _: parse_judge(raw),
    "judge_authors": lambda raw, _: parse_vp_rubric(raw),
}
"""The parser that reads each answer format (the second argument: candidates or participants)."""


def test_every_task_and_judge_has_a_format_and_a_parser():
    assert set(FORMATS) == set(PARSERS) == {*TASKS, "judge", "judge_authors"}
    assert {judge_format(r).name for r in RUBRICS} == {"judge", "judge_authors"}
    with pytest.raises(ValueError, match="unknown rubric"):
        judge_format("other")


# -- answer_object parses back to its value (property) ----------------------------------------------

words = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).map(str.strip).filter(bool)


@st.composite
def task_values(draw) -> tuple[str, Any, list[str]]:
    """A format name, a valid value of it (as its parser returns it) and the parser's closed set."""
    name = draw(st.sampled_from(sorted(FORMATS)))
    if name == "itp":
        return name, draw(st.sampled_from(ITP_LABELS)), []
    if name in CANDIDATES:
        cands = draw(st.sampled_from(CANDIDATES[name]))
        ranking = draw(st.lists(st.sampled_from(cands), min_size=1, max_size=RANK_SIZE, unique=True))
        return name, ranking, cands
    if name == "er":
        return name, {"emotion": draw(words), "intensity": draw(st.integers(0, 10))}, []
    if name == "vp":
        people = draw(st.sampled_from([COUPLE, FAMILY]))
        items = st.fixed_dictionaries({"target": st.sampled_from(people), "viewpoint": words})
        return name, draw(st.lists(items, min_size=1, max_size=4)), people
    if name == "judge":
        return name, draw(st.integers(1, 5)), []
    return name, {"target_score": draw(st.integers(0, 2)), "viewpoint_score": draw(st.integers(0, 4))}, []


@settings(max_examples=400, deadline=None)
@given(task_values(), st.booleans())
def test_answer_object_parses_back_to_its_value(case, ascii_only):
    name, value, closed_set = case
    text = json.dumps(answer_object(name, value), ensure_ascii=ascii_only)
    parsed = PARSERS[name](text, closed_set)
    assert parsed.valid, (text, parsed.error)
    assert parsed.prediction == value


def test_answer_text_is_compact_json_of_answer_object():
    value = {"emotion": "hurt, \u00e9branl\u00e9e", "intensity": 7}
    assert answer_text("er", value) == '{"emotion": "hurt, \u00e9branl\u00e9e", "intensity": 7}'
    assert json.loads(answer_text("er", value)) == answer_object("er", value)


def test_answer_object_leaves_out_keys_the_contract_does_not_ask_for():
    gold = [{"source": "Alan", "target": "Evelyn", "viewpoint": "she never listens", "attitude": "negative"}]
    assert answer_object("vp", gold) == {"viewpoints": [{"target": "Evelyn", "viewpoint": "she never listens"}]}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("itp", "maybe"),
        ("rpp", "track"),
        ("rpp", [3]),
        ("er", {"emotion": "sad", "intensity": 11}),
        ("er", {"emotion": "sad", "intensity": 6.5}),
        ("er", {"emotion": "sad", "intensity": True}),
        ("vp", [{"target": "Alan", "viewpoint": None}]),
        ("judge", 0),
        ("judge", 4.0),
        ("judge_authors", {"target_score": 3, "viewpoint_score": 1}),
        ("nope", 1),
    ],
)
def test_answer_object_refuses_values_the_format_cannot_carry(name, value):
    with pytest.raises(ValueError):
        answer_object(name, value)


# -- every tolerated key parses ---------------------------------------------------------------------

VALUES: dict[str, tuple[Any, list[str]]] = {
    "itp": ("no", []),
    "rpp": (["attack_attack", "pursue_withdraw"], list(patterns("couple"))),
    "stp": (["Tom", "Family"], FAMILY),
    "ssp": (["goal_align", "track", "join"], list(strategies("couple"))),
    "er": ({"emotion": "ashamed", "intensity": 3}, []),
    "vp": ([{"target": "Evelyn", "viewpoint": "feels dismissed by her"}], COUPLE),
    "judge": (2, []),
    "judge_authors": ({"target_score": 1, "viewpoint_score": 4}, []),
}


def _key_variants() -> list[tuple[str, str, str]]:
    return [
        (name, key.name, spelling)
        for name, fmt in FORMATS.items()
        for key in fmt.keys
        for accepted in key.accepted
        for spelling in (accepted, accepted.upper(), accepted.title())
    ]


@pytest.mark.parametrize(("name", "key", "spelling"), _key_variants())
def test_every_accepted_key_parses(name, key, spelling):
    value, closed_set = VALUES[name]
    obj = answer_object(name, value)
    renamed = {(spelling if k == key else k): v for k, v in obj.items()}
    parsed = PARSERS[name](json.dumps(renamed), closed_set)
    assert parsed.valid and parsed.prediction == value, (renamed, parsed.error)


@pytest.mark.parametrize("name", ["rpp", "stp", "ssp"])
@pytest.mark.parametrize("item_key", contract.RANKING_ITEM.accepted)
def test_ranking_items_written_as_objects_parse_under_every_item_key(name, item_key):
    value, closed_set = VALUES[name]
    raw = json.dumps({contract.RANKING.name: [{item_key: label} for label in value]})
    assert PARSERS[name](raw, closed_set).prediction == value


def test_vp_item_keys_are_the_contract_item_keys():
    value, people = VALUES["vp"]
    (item,) = answer_object("vp", value)[contract.VIEWPOINTS.name]
    assert tuple(item) == tuple(k.name for k in FORMATS["vp"].item_keys)
    assert parse_vp(json.dumps({"viewpoints": [{"TARGET": "evelyn", "Viewpoint": "x"}]}), people).prediction == [
        {"target": "Evelyn", "viewpoint": "x"}
    ]


# -- what the model is shown parses ----------------------------------------------------------------

_STRING_SLOT = re.compile(r'"<[^">]*>"')
_NUMBER_SLOT = re.compile(r"<(?:integer )?(\d+)-(\d+)>")


def fill(example: str, labels: list[str]) -> str:
    """The example with its placeholders filled: ``"<...>"`` by ``labels`` in turn, numbers by the top
    of their range."""
    pool = iter(labels)
    text = _STRING_SLOT.sub(lambda m: json.dumps(next(pool)), example)
    return _NUMBER_SLOT.sub(lambda m: m.group(2), text)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_example_shown_parses_once_filled(name):
    value, closed_set = VALUES[name]
    fmt = FORMATS[name]
    labels = closed_set[:RANK_SIZE] if name in CANDIDATES else ["Evelyn", "a feeling"] if name == "vp" else ["a feeling"]
    alternatives = fmt.example.split(" or ")  # ITP shows one object per answer
    for alternative in alternatives:
        filled = fill(alternative, labels)
        assert "<" not in filled, filled
        parsed = PARSERS[name](filled, closed_set)
        assert parsed.valid, (filled, parsed.error)
        if name in CANDIDATES:
            assert parsed.prediction == labels


def test_examples_name_exactly_the_format_keys():
    for name, fmt in FORMATS.items():
        shown = set(re.findall(r'"([a-z_]+)":', fmt.example))
        assert shown == {k.name for k in (*fmt.keys, *(fmt.item_keys if name == "vp" else ()))}, name


@pytest.mark.parametrize("rubric", RUBRICS)
def test_the_reask_parses_once_its_placeholders_are_filled(rubric):
    fmt = judge_format(rubric)
    assert fmt.reask
    template = re.search(r"exactly (\{.*?\}) where", fmt.reask).group(1)
    ranges = re.findall(r"\b([A-Z]) (?:is )?an integer from (\d+) to (\d+)", fmt.reask)
    assert {letter for letter, _, _ in ranges} == set(re.findall(r"\b([A-Z])\b", template))
    for pick in (1, 2):  # the bottom, then the top of every range
        reply = template
        for letter, lo, hi in ranges:
            reply = re.sub(rf"\b{letter}\b", (lo, hi)[pick - 1], reply)
        parsed = PARSERS[fmt.name](reply, [])
        assert parsed.valid, (reply, parsed.error)
    assert FORMATS["itp"].reask is None  # only judges are re-asked


def test_prompts_show_the_contract_examples():
    built = build_all(load_clips(None))
    for task, items in built.items():
        prompt = render(items[0])
        assert FORMATS[task].example in prompt.system and prompt.user.endswith(FORMATS[task].example)
    er, vp = built["er"][0], built["vp"][0]
    assert judge_format("default").example in judge_prompt("er", er.gold, er.gold, er.client).system
    vp_pred = answer_object("vp", vp.gold)["viewpoints"]
    assert judge_format("default").example in judge_prompt("vp", vp.gold, vp_pred, vp.client).system
    authors = judge_prompt("vp", vp.gold, vp_pred, vp.client, rubric="authors")
    assert judge_format("authors").example in authors.user
    assert judge_format("default").example not in authors.system + authors.user
