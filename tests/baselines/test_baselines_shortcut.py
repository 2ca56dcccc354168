"""The shortcut baseline: an annotation artefact answered without reading the conversation.

ITP: "yes" exactly when the last client row shown is addressed to the therapist. Its score is the
reference that says how much of a model's ITP number a single cue of the transcript explains.
"""

from __future__ import annotations

import json
from pathlib import Path

from rescue_bench.baselines import BASELINES, predict_answers
from rescue_bench.labels import THERAPIST
from rescue_bench.tasks import build_all
from tests.factories import clip, row

T = THERAPIST


def _clip():
    # ITP boundaries by hand (1-based last row shown -> gold): 1 yes, 3 no, 4 yes, 6 no
    return clip(
        [
            row("Ann", "are you listening", target=[T]),
            row(T, "I am."),
            row("Bob", "can I say something", target=[T]),
            row("Ann", "you always do this", target=["Bob"]),
            row(T, "Let us slow down."),
            row("Bob", "fine", target=["Ann"]),
            row("Ann", "ok", target=["Bob"]),
        ],
        sample_id="short/a",
        source_file="x.mp4",
    )


def test_shortcut_is_a_registered_baseline():
    assert "shortcut" in BASELINES


def test_itp_answers_yes_when_the_last_row_is_addressed_to_the_therapist():
    items = build_all([_clip()])["itp"]
    answers = predict_answers(items, "shortcut")
    by_row = {i.row: (i.gold, json.loads(answers[i.id])["answer"]) for i in items}
    # the shortcut is right at rows 1 (yes) and 6 (no), wrong at 3 (said yes) and 4 (said no)
    assert by_row == {1: ("yes", "yes"), 3: ("no", "yes"), 4: ("yes", "no"), 6: ("no", "no")}


def test_other_tasks_answer_as_the_majority_baseline():
    items = build_all([_clip(), _clip().model_copy(update={"sample_id": "short/b"})])
    for task in ("rpp", "stp", "ssp", "er", "vp"):
        if items[task]:
            assert predict_answers(items[task], "shortcut") == predict_answers(items[task], "majority"), task


def test_on_the_real_clips_the_cue_predicts_the_gold(real_data: Path):
    """On the real release the cue separates the classes: a boundary after a row addressed to the
    therapist is a "yes" far more often than one after any other row (61 of 109 vs 6 of 25 on the
    clips measured when this baseline was added)."""
    from rescue_bench.data.load import load_clips

    clips = load_clips(sorted(real_data.glob("*.jsonl")))
    items = build_all(clips)["itp"]
    answers = predict_answers(items, "shortcut")
    cue = [i for i in items if json.loads(answers[i.id])["answer"] == "yes"]
    other = [i for i in items if json.loads(answers[i.id])["answer"] == "no"]
    assert cue and other
    yes_after_cue = sum(i.gold == "yes" for i in cue) / len(cue)
    yes_otherwise = sum(i.gold == "yes" for i in other) / len(other)
    print(f"yes after the cue {yes_after_cue:.1%} ({len(cue)}), otherwise {yes_otherwise:.1%} ({len(other)})")
    assert yes_after_cue > yes_otherwise
