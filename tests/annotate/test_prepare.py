"""``rescue annotate prepare``: manifests in the shared layout; every bad input one line, exit 2, nothing written."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from rescue_bench.annotate import load_assets, probe
from rescue_bench.cli import app
from rescue_bench.testing.media import COUPLE, FAMILY, Line, Script, make_segment, make_video, write_srt
from tests.annotate.helpers import SMALL, tree

runner = CliRunner()


def _prepare(src, out, *extra):
    return runner.invoke(app, ["annotate", "prepare", str(src), "--out", str(out), *extra])


def test_manifests_follow_the_shared_layout(src, tmp_path):
    out = tmp_path / "assets"
    result = _prepare(src, out)
    assert result.exit_code == 0, result.output
    manifests = {m.segment_id: m for m in load_assets(out)}
    assert set(manifests) == {"couple/s01_seg01", "couple/s01_seg02_textonly", "family/f01_seg01"}

    raw = json.loads((out / "couple/s01_seg01/manifest.json").read_text())
    assert list(raw) == ["segment_id", "scenario", "participants", "video", "video_sha256", "subtitles_sha256", "duration", "cues"]
    assert raw["video"] == "couple/s01_seg01/video.mp4" and (out / raw["video"]).is_file()
    assert raw["participants"] == ["Robin", "Casey"] and raw["scenario"] == "couple"
    assert raw["duration"] == pytest.approx(probe(out / raw["video"]).duration)
    first = raw["cues"][0]
    assert list(first) == ["cue", "start", "end", "speaker", "text"]
    assert first == {"cue": 1, "start": 0.5, "end": 2.8, "speaker": "Therapist", "text": COUPLE.lines[0].text}
    assert raw["cues"][7]["speaker"] is None  # a cue without a speaker prefix

    family = manifests["family/f01_seg01"]
    assert family.video == "family/f01_seg01/video.mkv" and family.scenario == "family"
    assert [c.speaker for c in family.cues][:3] == ["Therapist", "Dana", "Jordan"]  # <v NAME> voices

    text_only = manifests["couple/s01_seg02_textonly"]
    assert text_only.video is None and text_only.duration == COUPLE.lines[-1].end
    assert "subtitles only" in result.output


def test_flags_metadata_inference_and_unknown_speakers(tmp_path):
    src = tmp_path / "src"
    script = Script("couple", ("Robin", "Casey"), COUPLE.lines[:4] + (Line(10.0, 11.0, "Mum", "Dinner is ready."),))
    make_segment(src, "a", script, video=None, metadata=False)
    make_segment(src, "b", FAMILY, video=None)  # its .json says family, overriding --scenario
    out = tmp_path / "assets"
    result = _prepare(src, out, "--scenario", "couple", "--participants", "Robin, Casey")
    assert result.exit_code == 0, result.output
    by_id = {m.segment_id: m for m in load_assets(out)}
    assert by_id["a"].participants == ["Robin", "Casey"] and by_id["a"].scenario == "couple"
    assert by_id["b"].scenario == "family" and by_id["b"].participants == ["Dana", "Lee", "Jordan"]
    assert "unknown speaker 'Mum' in cue(s) 5" in result.output
    assert by_id["a"].cues[4].speaker == "Mum"  # kept as written

    inferred = tmp_path / "assets2"
    result = _prepare(src, inferred, "--scenario", "couple")
    assert result.exit_code == 0, result.output
    assert next(m for m in load_assets(inferred) if m.segment_id == "a").participants == ["Robin", "Casey", "Mum"]
    assert "participants inferred" in result.output


def test_running_again_changes_nothing_and_a_change_replaces(src, tmp_path):
    out = tmp_path / "assets"
    assert _prepare(src, out).exit_code == 0
    before = tree(out)
    again = _prepare(src, out)
    assert again.exit_code == 0 and "3 segments: 0 new, 0 replaced, 3 unchanged" in again.output
    assert tree(out) == before
    (out / "couple/s01_seg01/rows").mkdir()
    (out / "couple/s01_seg01/rows/1.mp4").write_bytes(b"stale")
    write_srt(src / "couple/s01_seg01.srt", COUPLE.lines[:5])
    changed = _prepare(src, out)
    assert changed.exit_code == 0 and "1 replaced, 2 unchanged" in changed.output
    assert len(load_assets(out)[0].cues) == 5
    # the same video: only the manifest is rewritten; row clips stay ('clips' re-cuts what changed)
    assert (out / "couple/s01_seg01/rows/1.mp4").read_bytes() == b"stale"
    shutil.copyfile(src / "family/f01_seg01.mkv", src / "couple/s01_seg01.mp4")  # another video
    swapped = _prepare(src, out)
    assert swapped.exit_code == 0 and "1 replaced, 2 unchanged" in swapped.output
    assert not (out / "couple/s01_seg01/rows").exists()  # clips of the old video go with it
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no staging left


def _break(src, case):
    """Damage the copied source folder as ``case`` says; returns the file the error must name."""
    seg = src / "couple" / "s01_seg01"
    if case == "no subtitles":
        seg.with_suffix(".srt").unlink()
        return seg.with_suffix(".mp4")
    if case == "unreadable video":
        seg.with_suffix(".mp4").write_bytes(b"\x00\x00\x00\x18ftypisom not really a video")
        return seg.with_suffix(".mp4")
    if case == "overlapping cues":
        write_srt(seg.with_suffix(".srt"), [Line(0.5, 3.0, "Robin", "a"), Line(2.0, 4.0, "Casey", "b")])
        return seg.with_suffix(".srt")
    if case == "reversed cues":
        write_srt(seg.with_suffix(".srt"), [Line(0.5, 3.0, "Robin", "a"), Line(6.0, 4.0, "Casey", "b")])
        return seg.with_suffix(".srt")
    if case == "video shorter than subtitles":
        make_video(seg.with_suffix(".mp4"), 10.0, size=SMALL)
        return seg.with_suffix(".mp4")
    if case == "bad metadata":
        seg.with_suffix(".json").write_text('{"scenario": "couples"}')
        return seg.with_suffix(".json")
    if case == "metadata not json":
        seg.with_suffix(".json").write_text("{scenario: couple")
        return seg.with_suffix(".json")
    if case == "two subtitle files":
        shutil.copy(seg.with_suffix(".srt"), seg.with_suffix(".vtt"))
        return seg.with_suffix(".srt")
    if case == "unreadable subtitle timing":
        seg.with_suffix(".srt").write_text("1\n00:00:01,000 --> 00:00:0x,000\nRobin: hi\n")
        return seg.with_suffix(".srt")
    raise AssertionError(case)


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("no subtitles", "no subtitles"),
        ("unreadable video", "unreadable video"),
        ("overlapping cues", "overlapping cue times"),
        ("reversed cues", "reversed cue times"),
        ("video shorter than subtitles", "video is shorter"),
        ("bad metadata", "scenario must be couple or family"),
        ("metadata not json", "not valid JSON"),
        ("two subtitle files", "several subtitle files"),
        ("unreadable subtitle timing", "unreadable cue timing"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(src, tmp_path, case, fragment):
    out = tmp_path / "assets"
    assert _prepare(src, out).exit_code == 0  # a good run first: a bad one must leave it untouched
    before = tree(out)
    named = _break(src, case)
    result = _prepare(src, out)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert str(named.name) in lines[0] and fragment in lines[0] and "Traceback" not in result.output
    assert "couple/s01_seg01" in lines[0]
    assert tree(out) == before


def test_every_bad_segment_is_reported_and_nothing_is_written(src, tmp_path):
    _break(src, "overlapping cues")
    (src / "family" / "f01_seg01.vtt").unlink()
    out = tmp_path / "fresh"
    result = _prepare(src, out)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and "overlapping" in lines[0] and "no subtitles" in lines[1]
    assert not out.exists() or tree(out) == {}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--scenario", "group"], "--scenario must be couple or family"),
        (["--scenario", "couple", "--participants", "Robin,Therapist"], "is the therapist or a group label"),
        (["--scenario", "couple", "--participants", "Robin,robin"], "listed twice"),
    ],
)
def test_bad_flags(tmp_path, args, fragment):
    src = tmp_path / "src"
    make_segment(src, "a", COUPLE, video=None, metadata=False)
    result = _prepare(src, tmp_path / "assets", *args)
    assert result.exit_code == 2 and fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_empty_or_missing_source_and_no_scenario(tmp_path):
    (tmp_path / "empty").mkdir()
    result = _prepare(tmp_path / "empty", tmp_path / "a")
    assert result.exit_code == 2 and "no segments" in result.stderr
    result = _prepare(tmp_path / "nowhere", tmp_path / "a")
    assert result.exit_code == 2 and "no such folder" in result.stderr
    make_segment(tmp_path / "src", "a", COUPLE, video=None, metadata=False)
    result = _prepare(tmp_path / "src", tmp_path / "a")
    assert result.exit_code == 2 and "no scenario" in result.stderr and "a.json" in result.stderr


def test_assets_inside_the_source_folder_are_not_read_as_segments(src):
    out = src / "assets"
    assert _prepare(src, out).exit_code == 0
    again = _prepare(src, out)
    assert again.exit_code == 0, again.output
    assert len(load_assets(out)) == 3


def test_link_and_nested_segment_conflict(tmp_path):
    import os

    src = tmp_path / "src"
    seg = make_segment(src, "a", COUPLE, size=SMALL)
    out = tmp_path / "assets"
    assert _prepare(src, out, "--link").exit_code == 0
    assert os.path.samefile(out / "a" / "video.mp4", seg.video)  # a hard link, not a copy
    make_segment(src, "a/b", COUPLE, video=None)
    result = _prepare(src, tmp_path / "other")
    assert result.exit_code == 2 and "lies inside the folder of segment 'a'" in result.stderr


def test_a_swap_that_fails_half_way_puts_the_old_segment_back(src, tmp_path, monkeypatch):
    """The attack: the new segment folder cannot be moved in (a full disk, a lost mount) after the old
    one was moved aside. The old folder, its row clips and drafted media included, must be where it was."""
    import os

    out = tmp_path / "assets"
    assert _prepare(src, out).exit_code == 0
    (out / "couple/s01_seg01/rows").mkdir()
    (out / "couple/s01_seg01/rows/1.mp4").write_bytes(b"cut before")
    before = tree(out)
    shutil.copyfile(src / "family/f01_seg01.mkv", src / "couple/s01_seg01.mp4")  # another video: a swap
    real = os.replace

    def failing(a, b, *args, **kwargs):
        if "/new/" in str(a) and str(b).endswith("couple/s01_seg01"):
            raise OSError(28, "No space left on device")
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(os, "replace", failing)
    result = _prepare(src, out)
    monkeypatch.setattr(os, "replace", real)
    assert result.exit_code == 2, result.output
    assert "No space left on device" in result.output
    assert tree(out) == before
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no staging left
