"""The words' reader: learned on annotated rows, measured on held-out clips, used only above chance."""

from __future__ import annotations

from dataclasses import replace

from rescue_bench.data.load import load_clips
from rescue_bench.sim.reader import ReadRow, affect_label, affect_rows, crossfit, fit_linear, measure, named_clients
from tests.factories import clip, row


def test_a_clips_rows_are_read_by_a_reader_that_never_saw_them():
    """Each clip's rows are read by a reader fitted on the other clips: a word only one clip uses,
    with a label only that clip gives it, tells the reader nothing about that clip."""
    clips = load_clips(None)
    marked = clips[0].model_copy(deep=True)
    for r in marked.rows:
        if affect_label(r) is not None:
            r.dialogue_cleaned = f"zqxword {r.dialogue_cleaned}"
            r.utterance_type = "accusation"
    readers, records = crossfit([marked, *clips[1:]], affect_rows)
    assert [r for r in records if r.sample_id == marked.sample_id]
    whole = fit_linear([t for c in [marked, *clips[1:]] for _, t, _ in affect_rows(c)],
                       [y for c in [marked, *clips[1:]] for _, _, y in affect_rows(c)])
    held_out = readers[marked.sample_id]
    assert whole.predict(["zqxword"]) == ["hostile"]  # seen: the planted word reads hostile
    assert all(int(col) >= 0 for col in held_out.weights)
    assert held_out.scores(["zqxword"]).tolist() == held_out.scores([""]).tolist()  # never seen: no weight at all


def test_a_reading_is_used_only_when_it_beats_chance_and_the_majority_on_held_out_clips():
    good = [ReadRow(sample_id=f"c{i % 4}", row=i, gold=g, prediction=g) for i, g in enumerate(["warm", "neutral", "hostile"] * 8)]
    assert measure("affect", good, used=True).used
    constant = [replace(r, prediction="neutral") for r in good]
    m = measure("affect", constant, used=True)
    assert not m.used and m.balanced_accuracy == m.chance == round(1 / 3, 4)
    two_clips = [replace(r, sample_id=f"c{i % 2}") for i, r in enumerate(good)]
    m = measure("affect", two_clips, used=True)
    assert not m.used and m.balanced_accuracy_ci is None and "fewer than 3" in m.note


def test_affect_labels_come_from_the_client_rows_utterance_type():
    c = clip([
        row("Ann", "You never listen", target=["Bob"], utterance_type="accusation"),
        row("Bob", "I hear you", target=["Ann"], utterance_type="validation"),
        row("Ann", "We went to the lake", target=["Bob"], utterance_type="recollection"),
        row("Therapist", "Say more", target=["Couple"], utterance_type="question"),
        row("Bob", "Okay", target=["Ann"]),
    ], sample_id="x/1", source_file="x.mp4")
    assert [affect_label(r) for r in c.rows] == ["hostile", "warm", "neutral", None, None]


def test_names_are_read_whole_words_and_group_phrases_reach_everyone():
    clients = ["Ann", "Annabel", "Bob"]
    assert named_clients("Annabel, go on", clients) == ["Annabel"]
    assert named_clients("bob and ann, both of you", clients) == clients
    assert named_clients("Let us pause.", clients) == []
