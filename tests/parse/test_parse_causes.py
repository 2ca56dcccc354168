"""Why an answer is invalid: each parser names the cause (rescue_bench.records.InvalidCause) of the
answers it cannot use, so a summary can say why a model scores low. Hand-written replies of each
kind, the shapes a small model really sends among them (prose for JSON, a bulleted label, a list of
numbers); the properties over any input are in test_parse_robustness (a cause iff invalid)."""

from __future__ import annotations

import pytest

from rescue_bench.parse import parse_er, parse_itp, parse_judge, parse_ranking, parse_vp, parse_vp_rubric
from rescue_bench.records import InvalidCause as C
from tests.parse.cases import COUPLE_P, COUPLE_S, COUPLE_T

PARSERS = {
    "itp": parse_itp,
    "rpp": lambda raw: parse_ranking(raw, COUPLE_P, keep_positions=True),
    "ssp": lambda raw: parse_ranking(raw, COUPLE_S, keep_positions=True),
    "er": parse_er,
    "vp": lambda raw: parse_vp(raw, COUPLE_T),
    "judge": parse_judge,
    "vp_rubric": parse_vp_rubric,
}

CASES = [
    # no answer: nothing, or only white space
    ("itp", None, C.NO_ANSWER),
    ("itp", "  \n ", C.NO_ANSWER),
    ("rpp", "", C.NO_ANSWER),
    ("er", "", C.NO_ANSWER),
    ("vp", "\t", C.NO_ANSWER),
    ("judge", "", C.NO_ANSWER),
    ("vp_rubric", " ", C.NO_ANSWER),
    # no JSON: prose instead of the contract's object (and no bare answer the parser accepts)
    ("itp", "The therapist should probably intervene here.", C.NO_JSON),
    ("itp", "No idea", C.NO_JSON),
    ("itp", "{", C.NO_JSON),
    ("rpp", "I believe it is pursue_withdraw, mostly.", C.NO_JSON),
    ("ssp", "The therapist should track the partner's feelings before anything else.", C.NO_JSON),
    ("er", "sad, 7", C.NO_JSON),
    ("vp", "Alan thinks Evelyn is cold.", C.NO_JSON),
    ("judge", "Score: 4", C.NO_JSON),
    ("vp_rubric", "target 2, viewpoint 3", C.NO_JSON),
    # JSON without the key (or a null / empty value under it)
    ("itp", '{"reply": "yes"}', C.MISSING_KEY),
    ("itp", '{"answer": null}', C.MISSING_KEY),
    ("rpp", '{"pattern": "attack_attack"}', C.MISSING_KEY),
    ("ssp", '{"ranking": []}', C.MISSING_KEY),
    ("ssp", '{"ranking": null}', C.MISSING_KEY),
    ("er", '{"intensity": 5}', C.MISSING_KEY),
    ("er", '{"emotion": "sad"}', C.MISSING_KEY),
    ("er", '{"emotion": "  ", "intensity": 5}', C.MISSING_KEY),
    ("er", '["sad", 7]', C.MISSING_KEY),
    ("vp", '{"views": [{"target": "Alan", "viewpoint": "kind"}]}', C.MISSING_KEY),
    ("vp", '{"viewpoints": [{"target": "Alan"}]}', C.MISSING_KEY),
    ("vp", '{"viewpoints": "Alan is kind"}', C.MISSING_KEY),
    ("judge", '{"reason": "close"}', C.MISSING_KEY),
    ("judge", '{"score": null}', C.MISSING_KEY),
    ("vp_rubric", '{"target_score": 1}', C.MISSING_KEY),
    # an unknown label: the key is there, its value names nothing of the closed set
    ("itp", '{"answer": "maybe"}', C.UNKNOWN_LABEL),
    ("itp", '{"answer": 1}', C.UNKNOWN_LABEL),
    ("rpp", '{"ranking": ["blame_game", "stonewalling"]}', C.UNKNOWN_LABEL),
    ("rpp", "[1, 2, 3]", C.UNKNOWN_LABEL),  # a list of numbers
    ("ssp", '{"ranking": [1, 2]}', C.UNKNOWN_LABEL),
    ("ssp", '{"ranking": 3}', C.UNKNOWN_LABEL),
    ("ssp", '{"ranking": ["- **Reassure**"]}', C.UNKNOWN_LABEL),  # a bulleted label that is no strategy
    # an out-of-range value: no number, off the scale, not whole where the scale asks for it
    ("er", '{"emotion": "sad", "intensity": 11}', C.OUT_OF_RANGE),
    ("er", '{"emotion": "sad", "intensity": "high"}', C.OUT_OF_RANGE),
    ("er", '{"emotion": "sad", "intensity": "7/5"}', C.OUT_OF_RANGE),
    ("judge", '{"score": 6}', C.OUT_OF_RANGE),
    ("judge", '{"score": 4.5}', C.OUT_OF_RANGE),
    ("judge", '{"score": "four"}', C.OUT_OF_RANGE),
    ("vp_rubric", '{"target_score": 3, "viewpoint_score": 1}', C.OUT_OF_RANGE),
    # an echo: the prompt's answer template (its alternatives side by side, or its <placeholders>) sent back
    ("itp", '{"answer": "yes"} or {"answer": "no"}', C.ECHO),
    ("itp", 'Answer (JSON only): {"answer": "yes"} or {"answer": "no"}', C.ECHO),
    ("itp", 'I would wait.\n{"answer":"yes"}  OR {"answer":"no"}', C.ECHO),
    ("rpp", '{"ranking": ["<label>", "<label>", "<label>"]}  (three labels, most likely first)', C.ECHO),
    ("ssp", '{"ranking": ["<strategy>", "<strategy>"]}', C.ECHO),
    ("er", '{"emotion": "<short description of what the client feels>", "intensity": <integer 0-10>}', C.ECHO),
    ("er", '{"emotion": "<short description of what the client feels>", "intensity": 6}', C.ECHO),
    ("er", '{"emotion": "sad", "intensity": "<integer 0-10>"}', C.ECHO),
    ("vp", '{"viewpoints": [{"target": "<participant>", "viewpoint": "<what the client thinks of them>"}]}', C.ECHO),
    ("vp", '{"viewpoints": [{"target": "Alan", "viewpoint": "<what the client thinks of them>"}]}', C.ECHO),
    ("judge", '{"score": <integer 1-5>}', C.ECHO),
    ("vp_rubric", '{"target_score": <0-2>, "viewpoint_score": <0-4>}', C.ECHO),
    # a transcript row sent back: its row number ("[6] Dana -> ...") is text, not a JSON answer
    ("er", "[6] CURRENT Evelyn -> Therapist: I am tired.\n[7] Alan -> Evelyn: So am I.", C.NO_JSON),
    ("ssp", "Therapist:\n[12] The next step is to talk about money.", C.NO_JSON),
    ("itp", "[3] Alan -> Evelyn: You never listen.", C.NO_JSON),
    ("vp", "[4] Evelyn -> Alan: I miss you.", C.NO_JSON),
]


@pytest.mark.parametrize(("parser", "raw", "cause"), CASES, ids=[f"{p}-{c.value}-{i}" for i, (p, _, c) in enumerate(CASES)])
def test_each_invalid_answer_names_its_cause(parser, raw, cause):
    parsed = PARSERS[parser](raw)
    assert not parsed.valid and parsed.prediction is None
    assert parsed.cause is cause, (raw, parsed)
    assert parsed.error  # and says it in words


@pytest.mark.parametrize(
    ("parser", "raw"),
    [
        ("itp", '{"answer": "yes"}'),
        ("itp", "No."),
        ("rpp", '{"ranking": ["attack_attack"]}'),
        ("ssp", "track, join"),
        ("er", '{"emotion": "sad", "intensity": 7}'),
        ("vp", '[{"target": "Alan", "viewpoint": "kind"}]'),
        ("judge", "4"),
        ("vp_rubric", '{"target_score": 2, "viewpoint_score": 4}'),
        # the template restated, then an answer: the answer counts
        ("itp", 'The format is {"answer": "yes"} or {"answer": "no"}. My answer: {"answer": "no"}'),
        ("er", 'Format: {"emotion": "<short description of what the client feels>", "intensity": <integer 0-10>}\n'
               '{"emotion": "tired", "intensity": 4}'),
        # a placeholder beside a real label keeps its rank as a miss; the label counts
        ("ssp", '{"ranking": ["track", "<strategy>", "<strategy>"]}'),
        ("vp", '{"viewpoints": [{"target": "Alan", "viewpoint": "kind"}, {"target": "<participant>", "viewpoint": "<what the client thinks of them>"}]}'),
        # a row number after the answer, and a bracketed number inside JSON, are no transcript to drop
        ("er", '{"emotion": "tired", "intensity": 4}\n[7] Alan -> Evelyn: So am I.'),
        ("rpp", '{"ranking": ["attack_attack"]} [2]'),
    ],
)
def test_a_valid_answer_has_no_cause(parser, raw):
    parsed = PARSERS[parser](raw)
    assert parsed.valid and parsed.cause is None


def test_every_parse_cause_is_named_by_some_case():
    """The causes the parsers own (all but the engine's and the judge's) each have a case above."""
    engine_owned = {C.CONTEXT_OVERFLOW, C.JUDGE_FAILED}
    assert {c for _, _, c in CASES} == set(C) - engine_owned


@pytest.mark.parametrize("noun", ["<target>", "<strategy>", "<label>"])
def test_an_echoed_placeholder_is_named_as_written(noun):
    """The error names the template's placeholder as the model wrote it (it read "<target>" as a list
    split at ">", and said ["<target", ""])."""
    parsed = parse_ranking(f'{{"ranking": ["{noun}", "{noun}"]}}', [*COUPLE_T, *COUPLE_S, *COUPLE_P], keep_positions=True)
    assert parsed.cause is C.ECHO and noun in (parsed.error or "") and f'"{noun[:-1]}"' not in (parsed.error or "")
