"""Subtitles to cues: timing from srt / webvtt-py, speakers from the usual conventions, bad files named."""

from __future__ import annotations

import pytest

from rescue_bench.annotate.subtitles import SubtitleError, read_subtitles, resolve_name, split_speaker


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
    assert [c.cue for c in cues] == [1, 2, 3, 4]
    assert (cues[0].start, cues[0].end) == (1.25, 3.5)
    assert cues[1].end == 5.01  # milliseconds kept
    assert cues[0].speaker == "Robin" and cues[0].text == "I keep asking and nothing changes."
    assert cues[1].speaker == "CASEY" and cues[1].text == "That's not fair."  # dash and <i> removed
    assert cues[2].speaker is None and cues[2].text == "and you know it."
    # two speakers in one cue: the first is the speaker, the other keeps its prefix in the text
    assert cues[3].speaker == "Robin" and cues[3].speakers == ("Robin", "Casey")
    assert cues[3].text == "Fine. Casey: Fine then."
    assert cues[3].start == 62.0


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
    ],
)
def test_split_speaker(line, expected):
    assert split_speaker(line) == expected


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
