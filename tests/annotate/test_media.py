"""Media with PyAV: the synthetic generator, probing, frame-accurate browser-playable cuts, keyframes."""

from __future__ import annotations

import pytest
from PIL import Image

from rescue_bench.annotate.media import MediaError, cut, extract_audio, frames_at, keyframe, probe
from rescue_bench.testing.media import COUPLE, make_video, write_srt, write_vtt

SMALL = (160, 120)


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("v") / "pattern.mp4", 12.0, size=SMALL)


def test_generator_makes_what_it_says(tmp_path, video):
    info = probe(video)
    assert info.duration == pytest.approx(12.0, abs=0.05)
    assert (info.width, info.height, info.fps) == (160, 120, 25.0)
    assert (info.video_codec, info.audio_codec) == ("h264", "aac")
    silent = probe(make_video(tmp_path / "silent.mov", 2.0, size=SMALL, audio=False))
    assert silent.has_video and not silent.has_audio


def test_subtitle_writers_round_trip(tmp_path):
    from rescue_bench.annotate.subtitles import read_subtitles

    for path in (write_srt(tmp_path / "a.srt", COUPLE.lines, dash=True), write_vtt(tmp_path / "a.vtt", COUPLE.lines)):
        cues = read_subtitles(path)
        assert [(c.start, c.end, c.speaker, c.text) for c in cues] == [(x.start, x.end, x.speaker, x.text) for x in COUPLE.lines]


@pytest.mark.parametrize(("start", "end"), [(0.0, 1.0), (2.37, 5.91), (3.0, 3.3), (10.5, 12.0), (0.04, 11.96)])
def test_cut_is_within_a_frame_of_the_span(tmp_path, video, start, end):
    out = cut(video, start, end, tmp_path / "clip.mp4")
    info = probe(out)
    assert abs(info.duration - (end - start)) <= 0.1
    assert abs(info.video_duration - (end - start)) <= 0.05
    assert abs(info.audio_duration - (end - start)) <= 0.05
    assert (info.video_codec, info.audio_codec) == ("h264", "aac")


def test_cut_is_browser_playable(tmp_path, video):
    import av

    out = cut(video, 1.0, 3.0, tmp_path / "clip.mp4")
    data = out.read_bytes()
    assert data[4:8] == b"ftyp"
    assert 0 < data.find(b"moov") < data.find(b"mdat")  # faststart: the index comes first
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.pix_fmt == "yuv420p"
        assert container.streams.audio[0].codec_context.name == "aac"


def test_cut_from_other_containers_and_without_sound(tmp_path):
    for suffix in (".mkv", ".webm"):
        src = make_video(tmp_path / f"src{suffix}", 4.0, size=SMALL)
        info = probe(cut(src, 1.2, 3.4, tmp_path / f"out{suffix}.mp4"))
        assert abs(info.duration - 2.2) <= 0.1 and info.has_audio
    silent = make_video(tmp_path / "silent.mp4", 3.0, size=SMALL, audio=False)
    info = probe(cut(silent, 0.5, 2.5, tmp_path / "silent_out.mp4"))
    assert abs(info.duration - 2.0) <= 0.1 and not info.has_audio


def test_cut_lowers_frame_rate_and_size_for_models(tmp_path, video):
    info = probe(cut(video, 0.0, 10.0, tmp_path / "small.mp4", fps=2, max_height=60, audio=False))
    assert info.fps == 2.0 and info.height == 60 and info.width == 80
    assert abs(info.duration - 10.0) <= 0.5  # one frame at 2 fps


def test_keyframe_frames_and_sound(tmp_path, video):
    path = keyframe(video, 6.0, tmp_path / "k.jpg")
    with Image.open(path) as image:
        assert image.format == "JPEG" and image.size == SMALL
    # the test pattern's box moves left to right, so later frames differ from earlier ones
    early, late = frames_at(video, [1.0, 11.0], max_height=120)
    assert early.tobytes() != late.tobytes()
    sound = probe(extract_audio(video, 2.0, 4.5, tmp_path / "s.mp3"))
    assert sound.audio_codec.startswith("mp3") and abs(sound.duration - 2.5) <= 0.1


def test_errors_name_the_file(tmp_path, video):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42 this is not a video")
    with pytest.raises(MediaError, match="broken.mp4: unreadable video"):
        probe(bad)
    with pytest.raises(MediaError, match="empty or reversed span"):
        cut(video, 3.0, 2.0, tmp_path / "x.mp4")
    assert not (tmp_path / "x.mp4").exists()


def test_interrupted_cut_leaves_nothing(tmp_path, video, monkeypatch):
    import rescue_bench.annotate.media as media

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(media, "_transcode", boom)
    with pytest.raises(KeyboardInterrupt):
        cut(video, 1.0, 2.0, tmp_path / "rows" / "1.mp4")
    assert list((tmp_path / "rows").iterdir()) == []
