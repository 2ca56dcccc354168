"""Every parser: never an exception, bounded work (property and fuzz tests)."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rescue_bench.parse import (
    ParsedAnswer,
    extract_json,
    parse_er,
    parse_itp,
    parse_judge,
    parse_ranking,
    parse_vp,
    parse_vp_rubric,
)
from tests.parse.cases import COUPLE_S, COUPLE_T, FAMILY_T

# --------------------------------------------------------------------------------------------------
# Never an exception, bounded time (property / fuzz tests)
# --------------------------------------------------------------------------------------------------

PARSERS = {
    "itp": parse_itp,
    "ranking": lambda raw: parse_ranking(raw, COUPLE_S),
    "targets": lambda raw: parse_ranking(raw, FAMILY_T),
    "er": parse_er,
    "vp": lambda raw: parse_vp(raw, COUPLE_T),
    "judge": parse_judge,
    "vp_rubric": parse_vp_rubric,
}


def _check_all(raw: object) -> None:
    for name, parser in PARSERS.items():
        parsed = parser(raw)
        assert isinstance(parsed, ParsedAnswer), name
        assert parsed.valid == (parsed.prediction is not None), name
        assert (parsed.error is None) == parsed.valid, name
    extract_json(raw)
    extract_json(raw, ["answer", "ranking"])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(["answer", "ranking", "emotion", "intensity", "viewpoints", "target", "viewpoint", "score"])
        | st.text(max_size=8),
        children,
        max_size=4,
    ),
    max_leaves=20,
)

fragments = st.sampled_from(
    ["{", "}", "[", "]", '"', "'", ",", ":", "```", "```json\n", "\n", "\\", "yes", "no", "true", "null",
     '{"answer": ', '{"ranking": [', '"track"', '"score": 4', "1e999", "NaN", "\x00", "\ufffd", "\u201c"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_any_text_never_raises(text):
    _check_all(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(fragments | st.text(max_size=5), max_size=60).map("".join))
def test_json_like_soup_never_raises(text):
    _check_all(text)


@settings(max_examples=200, deadline=None)
@given(json_values, st.text(max_size=30), st.text(max_size=30), st.booleans())
def test_embedded_json_never_raises(value, before, after, fenced):
    body = json.dumps(value)
    _check_all(before + (f"```json\n{body}\n```" if fenced else body) + after)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_bytes_never_raise(data):
    _check_all(data)


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_decoded_values_never_raise(value):
    _check_all(value)



ADVERSARIAL = [
    "[" * 2000 + "1," * 100_000,
    '{"a":' * 40_000,
    "{" * 300_000,
    '"' * 100_000,
    "{'" * 50_000,
    "[1," * 100_000,
    " " * 200_000,
    ", " * 100_000,
    "`" * 100_000,
    "```" + " " * 100_000,
    '{"ranking": "' + " ," * 50_000 + '"}',
    '{"score": "' + "1" * 100_000 + '"}',
    '{"a": [' * 20_000,
    "['" * 40_000,
    '{"' * 50_000,
    "\\" * 100_000,
    "\x00" * 100_000,
    "[" * 10_000 + "]" * 10_000,
    "answer" * 30_000,
    "yes " * 50_000,
    "." * 100_000 + "track",
    "1. " * 30_000,
    '{"viewpoints": [' + '{"target": "a", "viewpoint": "b"},' * 20_000 + "]}",
    "x" * 3_000_000 + '{"answer": "yes"}',
]


@pytest.mark.parametrize("raw", ADVERSARIAL, ids=[f"adv{i}" for i in range(len(ADVERSARIAL))])
def test_adversarial_inputs_are_fast(raw):
    t0 = time.perf_counter()
    _check_all(raw)
    assert time.perf_counter() - t0 < 3.0
