"""A draft cannot invent or drop words, nor invent speakers: each row's dialogue_cleaned is a cleaning of
its cues' text, every speaker is a participant, Therapist or the group label."""

from __future__ import annotations

import json

import pytest

from rescue_bench.annotate import Manifest, ManifestCue, SegmentDraft
from rescue_bench.annotate.cleaning import MAX_ADDED, MAX_DROPPED, cleaning_check

CUE_TEXT = "Um, I I waited up again and, uh, Casey never texted back."


def _manifest(text=CUE_TEXT, speaker="Robin"):
    cues = [ManifestCue(cue=1, start=0.5, end=2.8, speaker="Therapist", text="What happened after the call?"),
            ManifestCue(cue=2, start=3.0, end=5.6, speaker=speaker, text=text)]
    return Manifest(segment_id="seg/a", scenario="couple", participants=["Robin", "Casey"], video=None,
                    duration=5.6, cues=cues)


def _answer(cleaned, speaker="Robin"):
    return json.dumps({"rows": [
        {"cues": [1], "primary_speaker": "Therapist", "target": ["Couple"], "dialogue_cleaned": "What happened after the call?"},
        {"cues": [2], "primary_speaker": speaker, "target": ["Casey"], "dialogue_cleaned": cleaned},
    ]})


def _drafted(answer, manifest=None):
    draft = SegmentDraft(manifest or _manifest())
    (window,) = draft.windows
    first = draft.check(window, answer)
    draft.commit(window, first, draft.check(window, answer) if first.problems else None)
    return draft.rows, first


@pytest.mark.parametrize("cleaned", [
    "I waited up again and Casey never texted back.",          # fillers and a repeated word removed
    "i waited up again, and Casey never texted back",          # case and punctuation
    "I waited up again and Casey never texted back.",
    "I, I waited up again and, uh, Casey never texted back.",  # kept as is
])
def test_a_cleaning_is_kept(cleaned):
    rows, first = _drafted(_answer(cleaned))
    assert rows[1]["dialogue_cleaned"] == cleaned
    assert not any(p.field == "dialogue_cleaned" for p in first.problems)
    assert "draft_problems" not in rows[1]


@pytest.mark.parametrize(("cleaned", "what"), [
    ("I waited up again and Casey never texted back because he does not care.", "adds"),  # invented words
    ("Casey never texted.", "drops"),                                                      # most words gone
    ("I feel abandoned by my partner.", "adds"),                                           # a paraphrase
])
def test_invented_or_dropped_words_keep_the_cue_text_and_name_the_field(cleaned, what):
    rows, first = _drafted(_answer(cleaned))
    assert rows[1]["dialogue_cleaned"] == CUE_TEXT  # the subtitles' words, not the model's
    (problem,) = [p for p in rows[1]["draft_problems"] if p["field"] == "dialogue_cleaned"]
    assert what in problem["problem"] and "the cues' text was kept" in problem["problem"]
    assert problem["value"] == cleaned
    assert any(p.field == "dialogue_cleaned" for p in first.problems)  # so the re-ask names it


def test_the_measure_and_its_thresholds():
    assert cleaning_check("I waited up again and Casey never texted", CUE_TEXT).faithful  # 1 of 9 words gone
    check = cleaning_check("I waited up again and Casey never texted back, which hurt me", CUE_TEXT)
    assert not check.faithful and check.added == ["which", "hurt", "me"]
    assert 0 < MAX_ADDED < MAX_DROPPED < 1
    # curly and straight apostrophes are one word
    assert cleaning_check("I don\u2019t know", "I don't know.").faithful


def test_an_unknown_subtitle_name_never_becomes_a_speaker():
    manifest = _manifest(text="stop acting like I'm the problem.", speaker="I mean")
    rows, _ = _drafted("no JSON here at all", manifest)  # garbage: every row from the subtitles alone
    speakers = [r["primary_speaker"] for r in rows]
    assert "I mean" not in speakers and set(speakers) <= {"Robin", "Casey", "Therapist", "Couple"}
    assert any(p["field"] == "primary_speaker" for p in rows[1]["draft_problems"])


def _validate_strict(path):
    from typer.testing import CliRunner

    from rescue_bench.cli import app

    return CliRunner().invoke(app, ["data", "validate", "--strict", str(path)])


@pytest.mark.parametrize("behaviour", ["valid", "invalid", "garbage"])
def test_our_drafts_pass_strict_validation_but_for_their_reported_problems(isolated_env, assets, behaviour):
    from typer.testing import CliRunner

    from rescue_bench.cli import app
    from rescue_bench.testing import DraftResponder, FakeOpenAI

    with FakeOpenAI(DraftResponder(behaviour)) as server:
        drafted = CliRunner().invoke(app, ["annotate", "draft", str(assets), "--model", "openai-video/fake/drafter",
                                           "--display", "none"], env={"FAKE_BASE_URL": server.base_url})
        assert drafted.exit_code == 0, drafted.output
    result = _validate_strict(assets / "drafts.jsonl")
    errors = [line for line in (result.output + (result.stderr or "")).splitlines() if line.startswith("error")]
    if behaviour == "valid":
        assert result.exit_code == 0 and not errors, result.output
    else:
        assert errors and all("field draft_problems" in line for line in errors), errors


def test_a_draft_with_a_strict_finding_keeps_it_out_of_the_row():
    """What the answer checks let through but the release's strict rules refuse is dropped and named."""
    manifest = _manifest()
    draft = SegmentDraft(manifest)
    (window,) = draft.windows
    draft.commit(window, draft.check(window, _answer("I waited up again and Casey never texted back.")))
    row = draft.rows[1]
    row["target"] = ["Casey", "Couple"]  # as a later edit might leave it: a group label beside a name
    problems = draft._strict(row)
    assert "target" not in row and [p.field for p in problems] == ["target"]
