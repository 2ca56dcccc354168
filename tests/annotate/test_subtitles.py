"""Subtitles to cues: timing from srt / webvtt-py, speakers from the usual conventions, bad files named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rescue_bench.annotate.subtitles import (
    OVERLAP_TOLERANCE,
    SubtitleError,
    infer_names,
    read_subtitle_file,
    read_subtitles,
    resolve_name,
    split_speaker,
)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


SRT = """1
00:00:01,250 --> 00:00:03,500
Robin: I keep asking
and nothing changes.

2
00:00:03,600 --> 00:00:05,010
- CASEY: <i>That's not</i> fair.

3
00:00:05,100 --> 00:00:06,000
and you know it.

4
00:01:02,000 --> 00:01:04,500
- Robin: Fine.
- Casey: Fine then.
"""

VTT = """WEBVTT

intro
00:00:00.500 --> 00:00:02.750
<v Dana>Where were you?</v>

00:02.800 --> 00:04.000
<v.loud Jordan>Out. Leave it.

00:00:04.100 --> 00:00:05.000
- Therapist: Let's pause here.

00:00:05.100 --> 00:00:06.000 align:start
At 5:30 we were still waiting.
"""


def test_srt_times_speakers_and_markup(tmp_path):
    cues = read_subtitles(_write(tmp_path, "a.srt", SRT))
    assert [c.cue for c in cues] == [1, 2, 3, 4, 5]
    assert (cues[0].start, cues[0].end) == (1.25, 3.5)
    assert cues[1].end == 5.01  # milliseconds kept
    assert cues[0].speaker == "Robin" and cues[0].text == "I keep asking and nothing changes."
    assert cues[1].speaker == "CASEY" and cues[1].text == "That's not fair."  # dash and <i> removed
    assert cues[2].speaker is None and cues[2].text == "and you know it."
    # two speakers in one cue: one cue each, the cue's time divided by the length of their text
    assert [(c.cue, c.speaker, c.text) for c in cues[3:]] == [(4, "Robin", "Fine."), (5, "Casey", "Fine then.")]
    assert (cues[3].start, cues[3].end, cues[4].start, cues[4].end) == (62.0, 62.833, 62.833, 64.5)
    assert cues[3].line == cues[4].line == 15  # both name the file's timing line


def test_vtt_voices_prefixes_and_plain_text(tmp_path):
    cues = read_subtitles(_write(tmp_path, "a.vtt", VTT))
    assert [(c.speaker, c.text) for c in cues] == [
        ("Dana", "Where were you?"),
        ("Jordan", "Out. Leave it."),
        ("Therapist", "Let's pause here."),
        (None, "At 5:30 we were still waiting."),
    ]
    assert (cues[0].start, cues[0].end) == (0.5, 2.75)
    assert (cues[1].start, cues[1].end) == (2.8, 4.0)  # short mm:ss.ttt form


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Robin: hi", ("Robin", "hi")),
        ("- Dr Ana Lima: go on", ("Dr Ana Lima", "go on")),
        ("\u2013 Casey: sure", ("Casey", "sure")),
        ("At 5:30 we left", (None, "At 5:30 we left")),
        ("Well, here's the thing: no", (None, "Well, here's the thing: no")),
        ("This is a very long head of a sentence: then", (None, "This is a very long head of a sentence: then")),
        ("- just a dash", (None, "just a dash")),
        ("no colon at all", (None, "no colon at all")),
        # a head is a speaker only when it is a short capitalised name, never a common word
        ("I mean: stop acting like I'm the problem.", (None, "I mean: stop acting like I'm the problem.")),
        ("Look: we can't keep doing this.", (None, "Look: we can't keep doing this.")),
        ("Note: I wrote it down.", (None, "Note: I wrote it down.")),
        ("the thing is: no", (None, "the thing is: no")),
        ("TOM: I feel", ("TOM", "I feel")),
        ("Mary-Ann O'Neil: hello", ("Mary-Ann O'Neil", "hello")),
        ("Dr. Lima: go on", ("Dr. Lima", "go on")),
        # SDH: a parenthetical description after the name stays in the text
        ("Robin (crying): I tried so hard.", ("Robin", "(crying) I tried so hard.")),
        ("- CASEY (whispering): fine", ("CASEY", "(whispering) fine")),
        # [NAME] without a known name stays text
        ("[CASEY] You never said so.", (None, "[CASEY] You never said so.")),
        ("[door slams]", (None, "[door slams]")),
    ],
)
def test_split_speaker(line, expected):
    assert split_speaker(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[CASEY] You never said so.", ("CASEY", "You never said so.")),
        ("[Casey]: You never said so.", ("Casey", "You never said so.")),
        ("- [THERAPIST] Go on.", ("THERAPIST", "Go on.")),
        ("[LAUGHS] You never said so.", (None, "[LAUGHS] You never said so.")),
        ("Note: Casey", (None, "Note: Casey")),
        ("mum: stop", ("mum", "stop")),  # a known name in any case, even lower case
    ],
)
def test_split_speaker_with_known_names(line, expected):
    assert split_speaker(line, known=("Casey", "Therapist", "Mum")) == expected


def test_resolve_name_ignores_case_and_knows_the_group():
    assert resolve_name("CASEY", ["Robin", "Casey"], "couple") == "Casey"
    assert resolve_name("therapist", ["Robin"], "couple") == "Therapist"
    assert resolve_name("couple", ["Robin"], "couple") == "Couple"
    assert resolve_name("Family", ["Robin"], "couple") is None
    assert resolve_name("Mom", ["Robin"], "couple") is None


@pytest.mark.parametrize(
    ("name", "text", "line", "fragment"),
    [
        ("rev.srt", "1\n00:00:05,000 --> 00:00:01,000\nA: x\n", 2, "reversed cue times"),
        ("empty.srt", "1\n00:00:05,000 --> 00:00:05,000\nA: x\n", 2, "empty cue"),
        ("over.srt", "1\n00:00:01,000 --> 00:00:04,000\nA: x\n\n2\n00:00:03,000 --> 00:00:05,000\nB: y\n", 6, "overlapping cue times"),
        ("badtime.srt", "1\n00:00:01,000 --> 00:00:0x,000\nA: x\n", 2, "unreadable cue timing"),
        ("badtime.vtt", "WEBVTT\n\n00:00:01.000 --> 00:00:0x.000\nhello\n", 3, "unreadable cue timing"),
        ("rev.vtt", "WEBVTT\n\n00:00:02.000 --> 00:00:01.000\nhello\n", 3, "reversed cue times"),
        ("nocue.srt", "", None, "no cues"),
        ("garbage.srt", "this is not a subtitle file\n\nat all\n", 1, "not a valid SRT file"),
        ("garbage.vtt", "this is not a subtitle file\n", 1, "not a valid WebVTT file"),
    ],
)
def test_bad_subtitles_name_file_and_line(tmp_path, name, text, line, fragment):
    path = _write(tmp_path, name, text)
    with pytest.raises(SubtitleError) as info:
        read_subtitles(path)
    err = info.value
    assert err.file == str(path)
    assert err.line == line
    assert fragment in str(err)
    assert "\n" not in str(err)


def test_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin.srt"
    path.write_bytes(b"1\n00:00:01,000 --> 00:00:02,000\nA: caf\xe9\n")
    with pytest.raises(SubtitleError) as info:
        read_subtitles(path)
    assert info.value.line == 3 and "not UTF-8" in str(info.value)


# -- the subtitle forms real sources use (files written for this project, in subtitle_forms/) --------

FORMS = Path(__file__).parent / "subtitle_forms"


def test_webvtt_voices_split_and_styling_stripped():
    read = read_subtitle_file(FORMS / "voices_styled.vtt", scenario="couple")
    assert [(c.cue, c.speaker, c.text) for c in read.cues] == [
        (1, "Robin", "I waited."),
        (2, "Casey", "I know."),
        (3, "Robin", "Every single night."),
        (4, "Casey", "I was driving, & my phone died."),
        (5, "Therapist", "What did you feel, Robin?"),
        (6, "Robin", "Alone."),
        (7, None, "I mean: stop acting like I'm the problem."),
    ]
    # a split cue's time is divided by the length of each voice's text; the parts touch, never overlap
    assert [(c.start, c.end) for c in read.cues[:2]] == [(1.0, 2.125), (2.125, 3.0)]
    assert (read.cues[4].end, read.cues[5].start, read.cues[5].end) == (9.113, 9.113, 9.5)
    assert read.cues[0].line == read.cues[1].line
    assert read.cues[0].speakers == ("Robin",)
    notes = " | ".join(read.notes)
    assert "split" in notes and "line(s) 10, 22 " in notes
    assert "'I mean:'" in notes and "kept as text" in notes


def test_sdh_forms_without_participants():
    read = read_subtitle_file(FORMS / "sdh.srt", scenario="couple")
    assert [(c.speaker, c.text) for c in read.cues] == [
        ("TOM", "I feel like nobody hears me."),  # the ASS position tag is gone
        ("Robin", "(crying) I tried so hard."),
        ("CASEY", "You never said so."),  # [NAME] read: CASEY names a speaker elsewhere in the file
        ("ROBIN", "I did."),
        ("CASEY", "When?"),
        (None, "[door slams] Look: we can't keep doing this."),
        (None, "Note: I wrote it all down."),
        (None, "I mean: stop acting like I'm the problem."),
    ]
    notes = " | ".join(read.notes)
    for head in ("'Look:'", "'Note:'", "'I mean:'"):
        assert head in notes
    assert "[door slams]" not in notes  # a sound description is not a name
    # inferred participants: one spelling per person, a mixed-case one where the file has it
    assert infer_names(read.cues, "couple") == ["Tom", "Robin", "Casey"]


def test_sdh_forms_with_participants():
    read = read_subtitle_file(FORMS / "sdh.srt", participants=["Robin", "Casey"], scenario="couple")
    speakers = [c.speaker for c in read.cues]
    assert speakers[:5] == ["TOM", "Robin", "CASEY", "ROBIN", "CASEY"]  # the caller maps case
    assert resolve_name(speakers[0], ["Robin", "Casey"], "couple") is None  # TOM: reported by prepare


def test_overlaps_up_to_the_tolerance_are_trimmed_and_reported():
    read = read_subtitle_file(FORMS / "overlap.srt", scenario="couple")
    assert [(c.start, c.end) for c in read.cues] == [(1.0, 3.0), (3.0, 5.0), (5.0, 7.0)]
    assert any("cue 1" in n and "trimmed" in n and "0.020" in n for n in read.notes)
    assert OVERLAP_TOLERANCE == 0.04
    with pytest.raises(SubtitleError) as info:
        read_subtitle_file(FORMS / "overlap.srt", overlap_tolerance=0.01)
    assert "overlapping cue times" in str(info.value) and info.value.line == 6


def test_a_trim_that_would_empty_a_cue_is_still_an_error(tmp_path):
    path = _write(tmp_path, "tiny.srt", "1\n00:00:01,000 --> 00:00:01,010\nA\n\n2\n00:00:01,000 --> 00:00:02,000\nB\n")
    with pytest.raises(SubtitleError) as info:
        read_subtitles(path)
    assert "overlapping" in str(info.value)


def test_dialogue_dashes_without_names_split_turns(tmp_path):
    path = _write(tmp_path, "dash.srt", "1\n00:00:01,000 --> 00:00:03,000\nDid you call?\n- Twice.\n")
    read = read_subtitle_file(path)
    assert [(c.speaker, c.text) for c in read.cues] == [(None, "Did you call?"), (None, "Twice.")]
    assert read.cues[0].end == read.cues[1].start


def test_prepare_reports_every_guess(tmp_path):
    from rescue_bench.annotate.prepare import prepare

    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(FORMS / "sdh.srt", src / "seg.srt")
    result = prepare(src, tmp_path / "assets", scenario="couple", participants=["Robin", "Casey"])
    (seg,) = result.segments
    assert [c.speaker for c in seg.manifest.cues][:5] == ["TOM", "Robin", "Casey", "Robin", "Casey"]
    notes = " | ".join(result.notes)
    assert "'TOM'" in notes and "'I mean:'" in notes and "split" in notes
    texts = " ".join(c.text for c in seg.manifest.cues)
    assert "stop acting like I'm the problem." in texts and "\\an8" not in texts
    inferred = prepare(src, tmp_path / "assets2", scenario="couple")
    assert inferred.segments[0].manifest.participants == ["Tom", "Robin", "Casey"]


def test_prepare_cli_overlap_tolerance(tmp_path):
    from typer.testing import CliRunner

    from rescue_bench.cli import app

    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(FORMS / "overlap.srt", src / "seg.srt")
    runner = CliRunner()
    ok = runner.invoke(app, ["annotate", "prepare", str(src), "--out", str(tmp_path / "a"), "--scenario", "couple"])
    assert ok.exit_code == 0, ok.output
    assert "trimmed" in ok.output
    strict = runner.invoke(app, ["annotate", "prepare", str(src), "--out", str(tmp_path / "b"), "--scenario", "couple",
                                 "--overlap-tolerance", "0"])
    assert strict.exit_code == 2 and "overlapping cue times" in strict.output and "Traceback" not in strict.output


def test_infer_names_leaves_out_the_therapist_and_group_labels(tmp_path):
    path = _write(tmp_path, "g.srt", "1\n00:00:01,000 --> 00:00:02,000\nFAMILY: hi\n\n2\n00:00:02,000 --> 00:00:03,000\n"
                  "THERAPIST: go on\n\n3\n00:00:03,000 --> 00:00:04,000\nCOUPLE: yes\n\n4\n00:00:04,000 --> 00:00:05,000\nJo: ok\n")
    cues = read_subtitles(path, scenario="couple")
    assert [c.speaker for c in cues] == ["FAMILY", "THERAPIST", "COUPLE", "Jo"]
    assert infer_names(cues, "couple") == ["Jo"]
