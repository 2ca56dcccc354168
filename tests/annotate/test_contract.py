"""The draft answer contract: validation rules, field-by-field drops, fallback rows, windows (no model)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rescue_bench.annotate import Manifest, ManifestCue, SegmentDraft, check_answer, split_windows
from rescue_bench.annotate.contract import Context
from rescue_bench.annotate.prompt import reask_prompt, system_prompt
from rescue_bench.data.load import iter_jsonl_lines, read_jsonl
from rescue_bench.data.validate import clip_findings
from rescue_bench.labels import BOUNDARY_RULES, PATTERNS, STRATEGIES


def _cues(speakers):
    return [ManifestCue(cue=i, start=2.0 * i, end=2.0 * i + 1.5, speaker=s, text=f"words of cue {i} here") for i, s in enumerate(speakers, 1)]


def _manifest(speakers=("Therapist", "Robin", "Casey", "Robin"), scenario="couple", participants=("Robin", "Casey")):
    cues = _cues(speakers)
    return Manifest(segment_id="seg/a", scenario=scenario, participants=list(participants), video=None,
                    duration=cues[-1].end, cues=cues)


def _ctx(manifest, first_row=1):
    return Context(manifest.scenario, tuple(manifest.participants), tuple(manifest.cues), first_row)


def _therapist(cues, **extra):
    row = {"cues": cues, "primary_speaker": "Therapist", "target": ["Couple"],
           "support_strategy": [{"provider": "Therapist", "target": ["Couple"], "strategy_type": "track", "strategy_content": "names it"}],
           "relation_cycle_state": "pursue_withdraw"}
    return {**row, **extra}


def _client(cues, speaker, **extra):
    row = {"cues": cues, "primary_speaker": speaker, "target": ["Casey" if speaker == "Robin" else "Robin"],
           "utterance_type": "accusation",
           "internal_emotion": [{"person": speaker, "emotion_description": "hurt", "intensity": 7}],
           "viewpoints_attitudes": [{"source": speaker, "target": "Casey" if speaker == "Robin" else "Robin", "viewpoint": "is distant", "attitude": "hurt"}]}
    return {**row, **extra}


VALID = [_therapist([1]), _client([2], "Robin"), _client([3], "Casey"), _client([4], "Robin")]


def test_a_valid_answer_passes_and_is_normalised():
    m = _manifest()
    answer = json.loads(json.dumps(VALID))
    answer[1]["primary_speaker"] = "robin"
    answer[1]["utterance_type"] = "Accusation"
    answer[0]["relation_cycle_state"] = "Pursue-Withdraw"
    check = check_answer("Here you go:\n```json\n" + json.dumps({"rows": answer}) + "\n```", _ctx(m))
    assert check.valid, [p.line() for p in check.problems]
    assert [r.cues for r in check.rows] == [[1], [2], [3], [4]]
    assert check.rows[1].fields["primary_speaker"] == "Robin"
    assert check.rows[1].fields["utterance_type"] == "accusation"
    assert check.rows[0].fields["relation_cycle_state"] == "pursue_withdraw"


@pytest.mark.parametrize(
    ("mutate", "field", "fragment"),
    [
        (lambda rows: rows[1].update(cues=[3]), "cues", "is not the next unused cues"),
        (lambda rows: rows.__setitem__(1, {**rows[1], "cues": [2, 2]}), "cues", "is not the next unused cues"),
        (lambda rows: rows.pop(), "cues", "are in no row"),
        (lambda rows: rows[1].update(utterance_type="complaint"), "utterance_type", "is not an utterance type"),
        (lambda rows: rows[0].update(relation_cycle_state="escalation_conflict"), "relation_cycle_state", "is not a couple relation pattern"),
        (lambda rows: rows[0]["support_strategy"][0].update(strategy_type="boundary"), "support_strategy[0].strategy_type", "is not a couple strategy"),
        (lambda rows: rows[1].update(target=["Jordan"]), "target[0]", "is not one of Robin, Casey, Therapist, Couple"),
        (lambda rows: rows[1]["internal_emotion"][0].update(intensity=11), "internal_emotion[0].intensity", "is not an integer 0-10"),
        (lambda rows: rows[1]["internal_emotion"][0].update(intensity=6.5), "internal_emotion[0].intensity", "is not an integer 0-10"),
        (lambda rows: rows[1].update(relation_cycle_state="pursue_withdraw"), "relation_cycle_state", "only therapist rows"),
        (lambda rows: rows[1].update(support_strategy=[{"strategy_type": "track"}]), "support_strategy", "only therapist rows"),
        (lambda rows: rows[0].update(utterance_type="request"), "utterance_type", "therapist rows have no"),
        (lambda rows: rows[1].update(target=["Casey", "Couple"]), "target", "stands alone"),
        (lambda rows: rows[1].update(target=["Robin"]), "target", "cannot address themselves"),
        (lambda rows: rows[1].update(primary_speaker="Casey"), "primary_speaker", "disagrees with the subtitles"),
        (lambda rows: rows[1].update(relation_pattern_evidence_rows=[5]), "relation_pattern_evidence_rows[0]", "is not a row number from 1 to this row (2)"),
        (lambda rows: rows[1].update(mood="sad"), "mood", "unknown field"),
        (lambda rows: rows[0]["support_strategy"][0].update(target=["Therapist"]), "support_strategy[0].target[0]", "is not one of Robin, Casey, Couple"),
        (lambda rows: rows[1]["viewpoints_attitudes"][0].update(target="Robin"), "viewpoints_attitudes[0].target", "about themselves"),
        (lambda rows: rows.__setitem__(1, {**rows[1], "cues": [2, 3]}), "cues", "different speakers"),
        (lambda rows: rows[1].pop("primary_speaker"), "primary_speaker", "missing"),
    ],
)
def test_each_rule_is_a_named_problem(mutate, field, fragment):
    rows = json.loads(json.dumps(VALID))
    mutate(rows)
    if field == "cues" and fragment == "different speakers":
        rows.pop(2)
    check = check_answer(json.dumps({"rows": rows}), _ctx(_manifest()))
    assert not check.valid
    hits = [p for p in check.problems if p.field == field and fragment in p.message]
    assert hits, [p.line() for p in check.problems]


def test_garbage_is_unusable():
    for raw in ("I think they are both upset.", "", None, '{"answer": "yes"}', '{"rows": "none"}'):
        check = check_answer(raw, _ctx(_manifest()))
        assert not check.usable and check.problems[0].field == "rows"


def test_commit_drops_field_by_field_and_records_it():
    m = _manifest()
    draft = SegmentDraft(m)
    (window,) = draft.windows
    rows = json.loads(json.dumps(VALID))
    rows[1]["internal_emotion"][0]["intensity"] = 14
    rows[1]["utterance_type"] = "complaint"
    rows[1]["relation_cycle_state"] = "pursue_withdraw"
    rows[2].pop("dialogue_cleaned", None)
    check = draft.check(window, json.dumps({"rows": rows}))
    draft.commit(window, check, check)
    robin = draft.rows[1]
    assert robin["internal_emotion"] == [{"person": "Robin", "emotion_description": "hurt"}]  # only the intensity went
    assert "utterance_type" not in robin and "relation_cycle_state" not in robin
    assert {p["field"] for p in robin["draft_problems"]} == {"internal_emotion[0].intensity", "utterance_type", "relation_cycle_state"}
    assert next(p for p in robin["draft_problems"] if p["field"] == "utterance_type")["value"] == "complaint"
    assert robin["viewpoints_attitudes"][0]["viewpoint"] == "is distant"  # the rest of the row is kept
    # the tool sets index, times and (when missing) the words
    assert [r["row_index"] for r in draft.rows] == [1, 2, 3, 4]
    assert (draft.rows[2]["start_time"], draft.rows[2]["end_time"]) == (6.0, 7.5)
    assert draft.rows[2]["dialogue_cleaned"] == "words of cue 3 here"
    assert "draft_problems" not in draft.rows[0]


def test_commit_keeps_the_reask_and_falls_back_to_subtitle_rows():
    m = _manifest()
    draft = SegmentDraft(m)
    (window,) = draft.windows
    first = draft.check(window, "no json here")
    second = draft.check(window, json.dumps({"rows": [VALID[0], {**VALID[1], "cues": [2, 3]}]}))
    draft.commit(window, first, second)
    # row 1 kept; cues 2-3 mix speakers (kept, recorded); cue 4 was in no row: a subtitles-only row
    assert [r["row_index"] for r in draft.rows] == [1, 2, 3]
    assert draft.rows[2]["primary_speaker"] == "Robin" and draft.rows[2]["dialogue_cleaned"] == "words of cue 4 here"
    assert "subtitles only" in draft.rows[2]["draft_problems"][0]["problem"]
    assert draft.records[0].answer == "reask" and draft.records[0].reasked
    assert any("in no row" in p for p in draft.records[0].problems)


def test_commit_keeps_the_first_answer_when_the_reask_is_garbage():
    m = _manifest()
    draft = SegmentDraft(m)
    (window,) = draft.windows
    rows = json.loads(json.dumps(VALID))
    rows[1]["internal_emotion"][0]["intensity"] = 12
    draft.commit(window, draft.check(window, json.dumps({"rows": rows})), draft.check(window, "sorry, I cannot"))
    assert len(draft.rows) == 4 and draft.records[0].answer == "first"
    assert draft.rows[1]["draft_problems"][0]["field"] == "internal_emotion[0].intensity"


def test_all_garbage_gives_one_subtitle_row_per_cue_that_validates():
    m = _manifest()
    draft = SegmentDraft(m)
    (window,) = draft.windows
    draft.commit(window, draft.check(window, "nope"), draft.check(window, "still nope"))
    assert [r["primary_speaker"] for r in draft.rows] == ["Therapist", "Robin", "Casey", "Robin"]
    assert all(r["draft_problems"] for r in draft.rows)
    clip = draft.clip({"model": "test/model"})
    line = next(iter_jsonl_lines([clip]))
    assert json.loads(line)["draft"]["model"] == "test/model"


def test_a_drafted_clip_round_trips_through_the_loader(tmp_path):
    m = _manifest()
    draft = SegmentDraft(m)
    (window,) = draft.windows
    draft.commit(window, draft.check(window, json.dumps({"rows": VALID})))
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(iter_jsonl_lines([draft.clip({"model": "m", "prompt_sha": "x"})])) + "\n")
    loaded = read_jsonl(path)
    assert not loaded.problems
    (clip,) = loaded.clips
    assert clip.to_json()["draft"]["prompt_sha"] == "x" and clip.sample_id == "seg/a"
    assert clip_findings(clip, str(path)) == []


def test_windows_and_the_carried_summary():
    speakers = ["Therapist", "Robin", "Robin", "Casey", "Casey", "Therapist", "Robin", "Casey", "Casey", "Robin"]
    m = _manifest(tuple(speakers))
    draft = SegmentDraft(m, window_cues=4)
    assert [w.numbers for w in draft.windows] == [[1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    first, second, _ = draft.windows
    _, user = draft.request(first)
    assert "part 1 of 3" in user and 'Also give "summary"' in user and "row 1." in user
    rows = [_therapist([1]), _client([2, 3], "Robin")]
    draft.commit(first, draft.check(first, json.dumps({"rows": rows, "summary": "Robin presses, Casey is quiet."})))
    _, user = draft.request(second)
    assert "Summary of the session so far: Robin presses, Casey is quiet." in user
    assert "The first row you write is row 3; rows 1-2 came before." in user
    assert '"row": 2, "primary_speaker": "Robin"' in user
    cues = json.loads(user.split("Cues (")[1].split(":\n", 1)[1].split("\n\n")[0])
    assert [c["cue"] for c in cues] == [4, 5, 6, 7] and list(cues[0]) == ["cue", "start", "end", "speaker", "text"]


@given(st.lists(st.sampled_from(["A", "B", None]), min_size=1, max_size=120), st.integers(1, 50))
def test_windows_cover_every_cue_once_within_the_limit(speakers, size):
    cues = _cues(speakers)
    windows = split_windows(cues, size)
    assert [c for w in windows for c in w.cues] == cues
    assert all(1 <= len(w.cues) <= size for w in windows)
    assert len(windows) == -(-len(cues) // size)


def test_the_prompt_takes_labels_and_rules_from_labels_py():
    for scenario in ("couple", "family"):
        for media in ("video", "frames", "none"):
            text = system_prompt(scenario, media)
            assert all(f"- {name}: {definition}" in text for name, definition in PATTERNS[scenario].items())
            assert all(f"- {name}: {definition}" in text for name, definition in STRATEGIES[scenario].items())
            assert all(rule in text for rule in BOUNDARY_RULES)
    assert "couple session" in system_prompt("couple", "none") and "family session" in system_prompt("family", "none")
    assert system_prompt("couple", "none") != system_prompt("couple", "video")
    check = check_answer('{"rows": []}', _ctx(_manifest()))
    assert "cue(s) 1, 2, 3, 4 are in no row" in reask_prompt(check.problems)


def test_the_draft_contract_names_exactly_the_release_row_fields():
    """The drafting prompt's field list (``ROW_FIELDS`` plus the tool-set ``TOOL_FIELDS``) is the
    release row schema of :class:`rescue_bench.data.models.Row`, neither more nor less: a field
    added to the data model and forgotten here would never be drafted, one added here only would be
    a key the release does not have."""
    from rescue_bench.annotate.contract import ROW_FIELDS, TOOL_FIELDS
    from rescue_bench.data.models import Row

    assert set(ROW_FIELDS) | set(TOOL_FIELDS) == set(Row.model_fields)
    assert not set(ROW_FIELDS) & set(TOOL_FIELDS)
