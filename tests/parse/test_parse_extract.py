"""rescue_bench.parse.extract: finding the JSON in a reply, whatever surrounds it."""

from __future__ import annotations

import time

import pytest

from rescue_bench.parse import (
    extract_json,
    parse_ranking,
)
from tests.parse.cases import COUPLE_S, fence


class TestExtractJson:
    def test_plain(self):
        assert extract_json('{"answer": "yes"}') == {"answer": "yes"}

    def test_whitespace_around(self):
        assert extract_json('\n\n  {"answer": "yes"}  \n') == {"answer": "yes"}

    def test_fenced(self):
        assert extract_json("Here you go:\n" + fence({"ranking": ["a"]}) + "\nThanks") == {"ranking": ["a"]}

    def test_fenced_no_language(self):
        assert extract_json('```\n{"score": 3}\n```') == {"score": 3}

    def test_fenced_single_line(self):
        assert extract_json('```json{"score": 3}```') == {"score": 3}

    def test_unclosed_fence(self):
        assert extract_json('```json\n{"score": 3}') == {"score": 3}

    def test_in_prose(self):
        text = 'After weighing the cues, my answer is {"answer": "no"} because the client keeps talking.'
        assert extract_json(text) == {"answer": "no"}

    def test_last_object_wins(self):
        text = 'Format: {"answer": "yes"}. Final: {"answer": "no"}'
        assert extract_json(text, ["answer"]) == {"answer": "no"}
        assert extract_json(text) == {"answer": "no"}

    def test_last_keyed_object_preferred_over_later_unkeyed(self):
        text = '{"ranking": ["track"]} and some metadata {"confidence": 0.4}'
        assert extract_json(text, ["ranking"]) == {"ranking": ["track"]}
        assert extract_json(text) == {"confidence": 0.4}  # without keys: simply the last

    def test_keyed_in_fence_and_prose(self):
        text = fence({"note": 1}) + ' then {"ranking": ["join"]}'
        assert extract_json(text, ["ranking"]) == {"ranking": ["join"]}

    def test_nested_object_holding_key(self):
        assert extract_json('{"result": {"ranking": ["a", "b"]}}', ["ranking"]) == {"ranking": ["a", "b"]}

    def test_nested_deeper_list(self):
        text = '{"outputs": [{"x": 1}, {"answer": "yes"}, {"answer": "no"}]}'
        assert extract_json(text, ["answer"]) == {"answer": "no"}

    def test_key_case_insensitive(self):
        assert extract_json('{"Ranking": ["a"]}', ["ranking"]) == {"Ranking": ["a"]}

    def test_top_level_array(self):
        assert extract_json('["a", "b"]') == ["a", "b"]
        assert extract_json('["a", "b"]', ["ranking"]) == ["a", "b"]  # fallback: no keyed candidate

    def test_array_in_prose(self):
        assert extract_json("I rank them: [\"a\", \"b\"] overall.") == ["a", "b"]

    def test_already_decoded(self):
        assert extract_json({"answer": "yes"}) == {"answer": "yes"}
        assert extract_json([1, 2]) == [1, 2]

    def test_bytes(self):
        assert extract_json(b'{"answer": "yes"}') == {"answer": "yes"}
        assert extract_json(b'\xff\xfe{"answer": "yes"}') == {"answer": "yes"}

    @pytest.mark.parametrize("text", ["", "   ", "no json here", "{", "}{", "[unclosed", "{'a' 1}", None, 42])
    def test_nothing(self, text):
        assert extract_json(text) is None

    def test_trailing_comma_repaired(self):
        assert extract_json('{"ranking": ["a", "b",],}') == {"ranking": ["a", "b"]}

    def test_single_quotes_repaired(self):
        assert extract_json("Answer: {'answer': 'yes'} done") == {"answer": "yes"}

    def test_python_literals(self):
        assert extract_json("{'answer': True, 'x': None}") == {"answer": True, "x": None}

    def test_curly_quotes_repaired(self):
        assert extract_json("{\u201canswer\u201d: \u201cyes\u201d}") == {"answer": "yes"}

    def test_apostrophe_in_single_quoted_repair(self):
        text = "{'viewpoints': [{'target': 'Alan', 'viewpoint': \"he doesn't listen\"}]}"
        assert extract_json(text)["viewpoints"][0]["viewpoint"] == "he doesn't listen"

    def test_json_scalar_whole_text(self):
        assert extract_json("4") == 4
        assert extract_json('"yes"') == "yes"

    def test_braces_inside_strings(self):
        text = '{"viewpoint": "she said {not now} and left", "target": "Tom"}'
        assert extract_json(text)["viewpoint"] == "she said {not now} and left"

    def test_huge_prefix_keeps_tail(self):
        text = "blah " * 400_000 + '{"answer": "yes"}'
        t0 = time.perf_counter()
        assert extract_json(text, ["answer"]) == {"answer": "yes"}
        assert time.perf_counter() - t0 < 2.0

    def test_deep_nesting_does_not_raise(self):
        assert extract_json("[" * 100_000) is None
        deep = extract_json("[" * 5000 + "]" * 5000)  # beyond the decoder's depth: None, never a crash
        assert deep is None or isinstance(deep, list)

    def test_never_raises_on_recursion_bomb_in_fence(self):
        assert extract_json("```json\n" + "[" * 50_000 + "\n```") is None



def test_primary_key_preferred_over_later_synonym():
    text = '{"ranking": ["track", "join"]} {"answer": "I am not sure"}'
    assert extract_json(text, ["ranking", "answer"]) == {"ranking": ["track", "join"]}
    assert parse_ranking(text, COUPLE_S).prediction == ["track", "join"]
