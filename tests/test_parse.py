"""Tests of rescue_bench.parse: lenient answer parsing, strict validation, never an exception."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rescue_bench import labels
from rescue_bench.parse import (
    ALIASES,
    ParsedAnswer,
    extract_json,
    match_label,
    normalize_label,
    parse_er,
    parse_itp,
    parse_judge,
    parse_ranking,
    parse_vp,
)

COUPLE_P = labels.patterns("couple")
FAMILY_P = labels.patterns("family")
COUPLE_S = labels.strategies("couple")
FAMILY_S = labels.strategies("family")
COUPLE_T = ["Alan", "Evelyn", labels.group_label("couple")]
FAMILY_T = ["Mary-Ann", "Tom", "Lucy", labels.group_label("family")]


def fence(obj: object, lang: str = "json") -> str:
    return f"```{lang}\n{json.dumps(obj)}\n```"


# --------------------------------------------------------------------------------------------------
# extract_json
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# normalize_label / match_label
# --------------------------------------------------------------------------------------------------


class TestLabels:
    @pytest.mark.parametrize(
        "raw, norm",
        [
            ("pursue_withdraw", "pursue_withdraw"),
            ("Pursue-Withdraw", "pursue_withdraw"),
            ("  pursue  withdraw ", "pursue_withdraw"),
            ("pursue__-__withdraw", "pursue_withdraw"),
            ("PURSUE \u2013 WITHDRAW", "pursue_withdraw"),
            ('"track".', "track"),
            ("**goal_align**", "goal_align"),
            ("`join`", "join"),
            ("", ""),
            ("___", ""),
        ],
    )
    def test_normalize(self, raw, norm):
        assert normalize_label(raw) == norm

    def test_normalize_non_string(self):
        assert normalize_label(None) == ""
        assert normalize_label(3) == ""

    @pytest.mark.parametrize(
        "value, expected",
        [
            ("pursue_withdraw", "pursue_withdraw"),
            ("Pursue Withdraw", "pursue_withdraw"),
            ("ATTACK-ATTACK", "attack_attack"),
            ("mixed transition", "mixed_transition"),
            ("1. repair_softening", "repair_softening"),
            ("- withdraw_withdraw", "withdraw_withdraw"),
            ("constructive_alignment: both partners listen", "constructive_alignment"),
            ("attack_attack (both blame)", "attack_attack"),
            ("pursuer-distancer", "pursue_withdraw"),
            ("pursue distance", "pursue_withdraw"),
            ("demand-withdraw", "pursue_withdraw"),
            ("pursue", None),
            ("pursue_withdraws", None),
            ("attack", None),
            ("", None),
            ("cross_generational_coalition", None),  # a family label is not a couple label
        ],
    )
    def test_match_couple_patterns(self, value, expected):
        assert match_label(value, COUPLE_P) == expected

    def test_aliases_only_to_candidates(self):
        assert match_label("goal alignment", COUPLE_S) == "goal_align"
        assert match_label("goal-aligning", COUPLE_S) == "goal_align"
        assert match_label("goal alignment", FAMILY_S) is None
        assert match_label("boundaries", FAMILY_S) == "boundary"
        assert match_label("Boundary making", FAMILY_S) == "boundary"
        assert match_label("boundaries", COUPLE_S) is None

    def test_group_aliases(self):
        assert match_label("both", COUPLE_T) == "Couple"
        assert match_label("The couple", COUPLE_T) == "Couple"
        assert match_label("couple", COUPLE_T) == "Couple"
        assert match_label("everyone", COUPLE_T) == "Couple"
        assert match_label("the family", FAMILY_T) == "Family"
        assert match_label("Everyone", FAMILY_T) == "Family"
        assert match_label("all", FAMILY_T) == "Family"
        assert match_label("both", FAMILY_T) is None  # two of several members are not the family

    def test_names_ignore_case(self):
        assert match_label("alan", COUPLE_T) == "Alan"
        assert match_label("EVELYN", COUPLE_T) == "Evelyn"
        assert match_label("mary ann", FAMILY_T) == "Mary-Ann"
        assert match_label("Therapist", COUPLE_T) is None

    def test_aliases_can_be_disabled_or_replaced(self):
        assert match_label("pursuer distancer", COUPLE_P, aliases={}) is None
        assert match_label("chasing", COUPLE_P, aliases={"chasing": "pursue_withdraw"}) == "pursue_withdraw"

    def test_alias_dict_is_normalised_and_targets_are_real_labels(self):
        every_label = set(COUPLE_P) | set(FAMILY_P) | set(COUPLE_S) | set(FAMILY_S) | set(labels.GROUP_LABELS.values())
        for key, target in ALIASES.items():
            assert key == normalize_label(key)
            for t in (target,) if isinstance(target, str) else target:
                assert t in every_label, t

    def test_non_string_value(self):
        assert match_label(None, COUPLE_P) is None
        assert match_label(["track"], COUPLE_S) is None
        assert match_label("track", []) is None

    def test_huge_value(self):
        assert match_label("track: " + "x" * 100_000, COUPLE_S) == "track"
        assert match_label("x" * 100_000, COUPLE_S) is None


# --------------------------------------------------------------------------------------------------
# ITP
# --------------------------------------------------------------------------------------------------


class TestITP:
    @pytest.mark.parametrize(
        "raw, expected",
        [
            ('{"answer": "yes"}', "yes"),
            ('{"answer": "no"}', "no"),
            ('{"answer": "YES"}', "yes"),
            ('{"Answer": " No. "}', "no"),
            ('{"answer": true}', "yes"),
            ('{"answer": false}', "no"),
            ('{"answer": "Yes, the client has finished."}', "yes"),
            (fence({"answer": "no"}), "no"),
            ('I think the therapist should step in. {"answer": "yes"}', "yes"),
            ('{"prediction": "no"}', "no"),
            ("yes", "yes"),
            ("No.", "no"),
            ("  YES  ", "yes"),
            ("**No**\n\nThe partner is still talking.", "no"),
            ("Answer: yes", "yes"),
            ("Final answer: no", "no"),
            ('"yes"', "yes"),
            ("true", "yes"),
            ("{'answer': 'no'}", "no"),
        ],
    )
    def test_valid(self, raw, expected):
        parsed = parse_itp(raw)
        assert parsed == ParsedAnswer(expected, True, None)

    @pytest.mark.parametrize(
        "raw",
        [
            "",
            "   ",
            None,
            "maybe",
            "No idea",
            "Not sure, perhaps yes",
            '{"answer": "maybe"}',
            '{"answer": 1}',
            '{"answer": null}',
            '{"reply": "yes"}',
            "The therapist should probably intervene here.",
            "{",
            "[]",
        ],
    )
    def test_invalid(self, raw):
        parsed = parse_itp(raw)
        assert parsed.prediction is None
        assert parsed.valid is False
        assert isinstance(parsed.error, str) and parsed.error

    def test_last_answer_wins(self):
        assert parse_itp('{"answer": "yes"} wait, actually {"answer": "no"}').prediction == "no"

    def test_to_dict(self):
        assert parse_itp("yes").to_dict() == {"prediction": "yes", "valid": True, "error": None}


# --------------------------------------------------------------------------------------------------
# Ranking
# --------------------------------------------------------------------------------------------------


class TestRanking:
    def test_contract(self):
        raw = '{"ranking": ["pursue_withdraw", "attack_attack", "withdraw_withdraw"]}'
        assert parse_ranking(raw, COUPLE_P) == ParsedAnswer(
            ["pursue_withdraw", "attack_attack", "withdraw_withdraw"], True, None
        )

    def test_case_and_separators(self):
        raw = '{"ranking": ["Pursue-Withdraw", "ATTACK ATTACK", "mixed_Transition"]}'
        assert parse_ranking(raw, COUPLE_P).prediction == ["pursue_withdraw", "attack_attack", "mixed_transition"]

    def test_invalid_labels_dropped(self):
        raw = '{"ranking": ["bogus", "attack_attack", "cross_generational_coalition", "repair_softening"]}'
        parsed = parse_ranking(raw, COUPLE_P)
        assert parsed.prediction == ["attack_attack", "repair_softening"]
        assert parsed.valid and parsed.error is None

    def test_repeats_dropped_and_truncated_to_k(self):
        raw = '{"ranking": ["track", "Track", "join", "join", "reframe", "evoke"]}'
        assert parse_ranking(raw, COUPLE_S).prediction == ["track", "join", "reframe"]
        assert parse_ranking(raw, COUPLE_S, k=1).prediction == ["track"]
        assert parse_ranking(raw, COUPLE_S, k=5).prediction == ["track", "join", "reframe", "evoke"]

    def test_no_valid_label_is_invalid(self):
        parsed = parse_ranking('{"ranking": ["bogus", "nonsense"]}', COUPLE_P)
        assert parsed.prediction is None and not parsed.valid
        assert "no valid label" in parsed.error

    def test_empty_list(self):
        assert not parse_ranking('{"ranking": []}', COUPLE_P).valid

    @pytest.mark.parametrize("key", ["labels", "prediction", "answer", "Ranking"])
    def test_tolerated_keys(self, key):
        assert parse_ranking(json.dumps({key: ["join"]}), COUPLE_S).prediction == ["join"]

    def test_single_string(self):
        assert parse_ranking('{"ranking": "safeguard"}', COUPLE_S).prediction == ["safeguard"]

    def test_single_string_holding_a_list(self):
        assert parse_ranking('{"ranking": "track, reframe > join"}', COUPLE_S).prediction == [
            "track",
            "reframe",
            "join",
        ]

    def test_top_level_array(self):
        assert parse_ranking('["join", "enact"]', FAMILY_S).prediction == ["join", "enact"]

    def test_items_as_objects(self):
        raw = '{"ranking": [{"label": "join", "p": 0.6}, {"strategy": "track"}, {"x": 1}]}'
        assert parse_ranking(raw, COUPLE_S).prediction == ["join", "track"]

    def test_nested(self):
        raw = '{"response": {"ranking": ["boundary"]}}'
        assert parse_ranking(raw, FAMILY_S).prediction == ["boundary"]

    def test_fenced_with_prose(self):
        raw = "Let me think.\n\n" + fence({"ranking": ["Goal alignment", "join", "track"]}) + "\nDone."
        assert parse_ranking(raw, COUPLE_S).prediction == ["goal_align", "join", "track"]

    def test_family_labels(self):
        raw = '{"ranking": ["Cross-Generational Coalition", "escalation conflict", "pursue_withdraw"]}'
        assert parse_ranking(raw, FAMILY_P).prediction == [
            "cross_generational_coalition",
            "escalation_conflict",
            "pursue_withdraw",
        ]

    def test_targets(self):
        raw = '{"ranking": ["both", "alan", "Therapist"]}'
        assert parse_ranking(raw, COUPLE_T).prediction == ["Couple", "Alan"]

    def test_bare_list_without_json(self):
        assert parse_ranking("1. attack_attack\n2. pursue_withdraw\n3. mixed transition", COUPLE_P).prediction == [
            "attack_attack",
            "pursue_withdraw",
            "mixed_transition",
        ]
        assert parse_ranking("track, join", COUPLE_S).prediction == ["track", "join"]
        assert parse_ranking("track", COUPLE_S).prediction == ["track"]

    def test_prose_is_not_mined(self):
        parsed = parse_ranking("I believe it is pursue_withdraw, mostly.", COUPLE_P)
        assert parsed.prediction is None and not parsed.valid

    @pytest.mark.parametrize(
        "raw",
        ["", None, "garbage", '{"ranking": 3}', '{"ranking": null}', '{"other": ["track"]}', "{", '{"ranking": [1, 2]}'],
    )
    def test_invalid(self, raw):
        parsed = parse_ranking(raw, COUPLE_S)
        assert parsed.prediction is None and not parsed.valid and parsed.error

    def test_no_candidates(self):
        assert not parse_ranking('{"ranking": ["a"]}', []).valid

    def test_trailing_comma(self):
        assert parse_ranking('{"ranking": ["track", "join",]}', COUPLE_S).prediction == ["track", "join"]


# --------------------------------------------------------------------------------------------------
# ER
# --------------------------------------------------------------------------------------------------


class TestER:
    @pytest.mark.parametrize(
        "raw, expected",
        [
            ('{"emotion": "hurt and angry", "intensity": 7}', {"emotion": "hurt and angry", "intensity": 7}),
            ('{"emotion": "  sad ", "intensity": "7"}', {"emotion": "sad", "intensity": 7}),
            ('{"emotion": "sad", "intensity": 6.5}', {"emotion": "sad", "intensity": 6}),  # round half even
            ('{"emotion": "sad", "intensity": 7.5}', {"emotion": "sad", "intensity": 8}),
            ('{"emotion": "sad", "intensity": 0}', {"emotion": "sad", "intensity": 0}),
            ('{"emotion": "sad", "intensity": 10}', {"emotion": "sad", "intensity": 10}),
            ('{"emotion": "sad", "intensity": "8/10"}', {"emotion": "sad", "intensity": 8}),
            ('{"Emotion": "sad", "Intensity": 3}', {"emotion": "sad", "intensity": 3}),
            ('{"emotion": ["sad", "tired"], "intensity": 3}', {"emotion": "sad, tired", "intensity": 3}),
            ('{"emotion_description": "fear", "intensity": 9}', {"emotion": "fear", "intensity": 9}),
            (fence({"emotion": "shame", "intensity": 4}), {"emotion": "shame", "intensity": 4}),
        ],
    )
    def test_valid(self, raw, expected):
        assert parse_er(raw) == ParsedAnswer(expected, True, None)

    @pytest.mark.parametrize(
        "raw",
        [
            '{"emotion": "sad", "intensity": 11}',
            '{"emotion": "sad", "intensity": -1}',
            '{"emotion": "sad", "intensity": 10.4}',
            '{"emotion": "sad", "intensity": "high"}',
            '{"emotion": "sad", "intensity": true}',
            '{"emotion": "sad", "intensity": null}',
            '{"emotion": "sad", "intensity": "8/5"}',
            '{"emotion": "sad"}',
            '{"intensity": 5}',
            '{"emotion": "", "intensity": 5}',
            '{"emotion": "   ", "intensity": 5}',
            '{"emotion": 5, "intensity": 5}',
            '{"emotion": "sad", "intensity": NaN}',
            '{"emotion": "sad", "intensity": Infinity}',
            "sad, 7",
            "",
            None,
            '["sad", 7]',
        ],
    )
    def test_invalid(self, raw):
        parsed = parse_er(raw)
        assert parsed.prediction is None and not parsed.valid and parsed.error


# --------------------------------------------------------------------------------------------------
# VP
# --------------------------------------------------------------------------------------------------


class TestVP:
    def test_contract(self):
        raw = '{"viewpoints": [{"target": "evelyn", "viewpoint": "She never listens."}]}'
        assert parse_vp(raw, COUPLE_T) == ParsedAnswer(
            [{"target": "Evelyn", "viewpoint": "She never listens."}], True, None
        )

    def test_unknown_target_kept(self):
        raw = '{"viewpoints": [{"target": "his mother", "viewpoint": "meddling"}]}'
        assert parse_vp(raw, COUPLE_T).prediction == [{"target": "his mother", "viewpoint": "meddling"}]

    def test_group_target_alias(self):
        raw = '{"viewpoints": [{"target": "both", "viewpoint": "we are stuck"}]}'
        assert parse_vp(raw, COUPLE_T).prediction == [{"target": "Couple", "viewpoint": "we are stuck"}]

    def test_items_without_viewpoint_dropped(self):
        raw = json.dumps(
            {
                "viewpoints": [
                    {"target": "Tom", "viewpoint": "controlling"},
                    {"target": "Lucy"},
                    {"target": "Lucy", "viewpoint": "  "},
                    {"target": "Lucy", "viewpoint": 3},
                    "free text",
                    {"viewpoint": "no target given"},
                ]
            }
        )
        assert parse_vp(raw, FAMILY_T).prediction == [
            {"target": "Tom", "viewpoint": "controlling"},
            {"target": "", "viewpoint": "no target given"},
        ]

    def test_list_target(self):
        raw = '{"viewpoints": [{"target": ["tom", "lucy"], "viewpoint": "they gang up"}]}'
        assert parse_vp(raw, FAMILY_T).prediction == [{"target": "Tom, Lucy", "viewpoint": "they gang up"}]

    def test_top_level_list_and_single_object(self):
        assert parse_vp('[{"target": "Alan", "viewpoint": "kind"}]', COUPLE_T).prediction == [
            {"target": "Alan", "viewpoint": "kind"}
        ]
        assert parse_vp('{"target": "Alan", "viewpoint": "kind"}', COUPLE_T).prediction == [
            {"target": "Alan", "viewpoint": "kind"}
        ]

    def test_extra_keys_not_kept(self):
        raw = '{"viewpoints": [{"target": "Alan", "viewpoint": "kind", "attitude": "positive"}]}'
        assert parse_vp(raw, COUPLE_T).prediction == [{"target": "Alan", "viewpoint": "kind"}]

    @pytest.mark.parametrize(
        "raw",
        [
            '{"viewpoints": []}',
            '{"viewpoints": [{"target": "Alan"}]}',
            '{"viewpoints": "Alan is kind"}',
            '{"views": [{"target": "Alan", "viewpoint": "kind"}]}',
            "Alan thinks Evelyn is cold.",
            "",
            None,
        ],
    )
    def test_invalid(self, raw):
        parsed = parse_vp(raw, COUPLE_T)
        assert parsed.prediction is None and not parsed.valid and parsed.error


# --------------------------------------------------------------------------------------------------
# Judge
# --------------------------------------------------------------------------------------------------


class TestJudge:
    @pytest.mark.parametrize(
        "raw, expected",
        [
            ('{"score": 4}', 4),
            ('{"score": 1}', 1),
            ('{"score": 5}', 5),
            ('{"score": 4.0}', 4),
            ('{"score": "4"}', 4),
            ('{"score": " 3 "}', 3),
            ('{"score": "4/5"}', 4),
            ('{"Score": 2, "reason": "partly right"}', 2),
            ('{"rating": 2}', 2),
            ("4", 4),
            ("The description matches well.\n" + fence({"score": 5}), 5),
        ],
    )
    def test_valid(self, raw, expected):
        parsed = parse_judge(raw)
        assert parsed == ParsedAnswer(expected, True, None)
        assert type(parsed.prediction) is int

    @pytest.mark.parametrize(
        "raw",
        [
            '{"score": 4.5}',
            '{"score": "4.5"}',
            '{"score": 0}',
            '{"score": 6}',
            '{"score": -1}',
            '{"score": true}',
            '{"score": null}',
            '{"score": "four"}',
            '{"score": "4/10"}',
            '{"score": 1e400}',
            '{"reason": "good"}',
            "Score: 4",
            "",
            None,
        ],
    )
    def test_invalid(self, raw):
        parsed = parse_judge(raw)
        assert parsed.prediction is None and not parsed.valid and parsed.error

    def test_other_range(self):
        assert parse_judge('{"score": 0}', lo=0, hi=2).prediction == 0
        assert not parse_judge('{"score": 3}', lo=0, hi=2).valid
        assert parse_judge('{"score": 4}', lo=0, hi=4).prediction == 4


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


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(list(COUPLE_S) + ["bogus", "Track", "goal alignment", ""]), max_size=8), st.integers(1, 4))
def test_ranking_invariants(items, k):
    parsed = parse_ranking(json.dumps({"ranking": items}), COUPLE_S, k=k)
    if parsed.valid:
        assert 1 <= len(parsed.prediction) <= k
        assert len(set(parsed.prediction)) == len(parsed.prediction)
        assert set(parsed.prediction) <= set(COUPLE_S)
    else:
        assert not any(match_label(i, COUPLE_S) for i in items)


@settings(max_examples=100, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-5, 15))
def test_er_intensity_rule(x):
    parsed = parse_er(json.dumps({"emotion": "sad", "intensity": x}))
    if isinstance(x, float) and x != x:  # NaN
        assert not parsed.valid
    elif 0 <= x <= 10:
        assert parsed.prediction == {"emotion": "sad", "intensity": round(x)}
    else:
        assert not parsed.valid


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


def test_huge_valid_viewpoints_still_parse():
    raw = '{"viewpoints": [' + ",".join(['{"target": "alan", "viewpoint": "b"}'] * 5000) + "]}"
    parsed = parse_vp(raw, COUPLE_T)
    assert parsed.valid and len(parsed.prediction) == 5000 and parsed.prediction[0]["target"] == "Alan"


def test_primary_key_preferred_over_later_synonym():
    text = '{"ranking": ["track", "join"]} {"answer": "I am not sure"}'
    assert extract_json(text, ["ranking", "answer"]) == {"ranking": ["track", "join"]}
    assert parse_ranking(text, COUPLE_S).prediction == ["track", "join"]
