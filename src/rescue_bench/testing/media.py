"""Synthetic therapy segments for tests: a test-pattern video with a tone, and subtitles with speakers.

Everything here is written by this project (no text from the real data). The annotation tests and
the review app's tests build their segments with it at test time, so nothing binary is committed.

API::

    from rescue_bench.testing.media import make_segment, COUPLE, FAMILY

    seg = make_segment(tmp_path / "src", "couple/s01_seg01", COUPLE)            # .mp4 + .srt + .json
    seg = make_segment(tmp_path / "src", "family/f01_seg02", FAMILY, subtitles="vtt", video="webm")
    seg = make_segment(tmp_path / "src", "text_only", COUPLE, video=None)         # subtitles only

    make_video(path, duration=12.0)   # any length, mp4 / mkv / webm / mov by suffix
    write_srt(path, lines); write_vtt(path, lines)

A :class:`Script` is the participants and the lines of one synthetic session; its ``duration`` is
a little past the last line, so a video made for it is never shorter than its subtitles.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path


@dataclass(frozen=True)
class Line:
    """One subtitle line of a script: times in seconds, the speaker (``None``: no prefix), the words."""

    start: float
    end: float
    speaker: str | None
    text: str


@dataclass(frozen=True)
class Script:
    """A synthetic session: scenario, client names and subtitle lines in time order."""

    scenario: str
    participants: tuple[str, ...]
    lines: tuple[Line, ...]
    tail: float = 1.5
    """Seconds of video after the last line."""

    @property
    def duration(self) -> float:
        return round(self.lines[-1].end + self.tail, 3)


COUPLE = Script(
    "couple",
    ("Robin", "Casey"),
    (
        Line(0.5, 2.8, "Therapist", "What happened after the phone call last night?"),
        Line(3.0, 5.6, "Robin", "I waited up again and Casey never texted back."),
        Line(5.8, 7.4, "Casey", "I was driving. I told you that already."),
        Line(7.5, 9.6, "Robin", "There is always a reason, and I end up alone."),
        Line(9.8, 11.0, "Casey", "I don't know what to say anymore."),
        Line(11.2, 13.8, "Therapist", "Robin, when the phone stays quiet, what happens inside you?"),
        Line(14.0, 16.4, "Robin", "I get scared. Like I stopped mattering to you."),
        Line(16.6, 17.8, None, "Like I'm a chore on your list."),
        Line(18.0, 20.2, "Casey", "You do matter. I just go quiet when you're upset."),
    ),
)
"""A couple segment (about 22 s): a pursue-withdraw exchange that starts to soften."""

FAMILY = Script(
    "family",
    ("Dana", "Lee", "Jordan"),
    (
        Line(0.4, 2.6, "Therapist", "Let's hear from everyone about the curfew fight."),
        Line(2.8, 5.2, "Dana", "Jordan came home at two and didn't answer a single call."),
        Line(5.4, 7.0, "Jordan", "Because you'd just yell at me. You always do."),
        Line(7.2, 9.4, "Lee", "Your mother was terrified, and honestly so was I."),
        Line(9.6, 11.0, "Jordan", "Whatever. Dad always takes her side."),
        Line(11.2, 13.9, "Therapist", "Jordan, it sounds like you feel outnumbered here."),
        Line(14.1, 15.8, "Jordan", "Yeah. It's two against one every time."),
        Line(16.0, 18.6, "Dana", "I don't want it to feel like that. I just want you safe."),
        Line(18.8, 21.2, "Therapist", "Can the three of you agree on one thing to try this week?"),
    ),
)
"""A family segment (about 23 s): a curfew conflict with a felt parental coalition."""


def make_video(
    path: str | Path,
    duration: float = 12.0,
    *,
    size: tuple[int, int] = (320, 240),
    fps: int = 25,
    tone_hz: float = 440.0,
    audio: bool = True,
) -> Path:
    """Write a colour-bar test pattern with a moving box and a tone that steps every second.

    The container follows the suffix: ``.mp4`` / ``.mov`` / ``.mkv`` (H.264 + AAC) or ``.webm``
    (VP8 + Opus). ``audio=False`` writes video only. Returns ``path``.
    """
    import av
    import numpy as np

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    webm = path.suffix.lower() == ".webm"
    width, height = size
    bars = np.array(
        [[192, 192, 192], [192, 192, 0], [0, 192, 192], [0, 192, 0], [192, 0, 192], [192, 0, 0], [0, 0, 192]],
        dtype=np.uint8,
    )
    base = np.repeat(bars, -(-width // len(bars)), axis=0)[:width][None, :, :].repeat(height, axis=0)
    box = max(4, height // 12)
    with av.open(str(path), "w") as out:
        video = out.add_stream("libvpx" if webm else "libx264", rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        # the fastest settings of each encoder: test media only has to decode correctly
        video.options = {"deadline": "realtime", "cpu-used": "8"} if webm else {"preset": "ultrafast"}
        rate = 48_000
        sound = None
        if audio:  # every stream must exist before the first packet is written
            sound = out.add_stream("libopus" if webm else "aac", rate=rate)
            sound.layout = "mono"
        frames = int(round(duration * fps))
        for i in range(frames):
            image = base.copy()
            x = int(i / max(1, frames - 1) * (width - box))
            image[height // 2 - box // 2 : height // 2 + box // 2, x : x + box] = 255
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            for packet in video.encode(frame):
                out.mux(packet)
        for packet in video.encode():
            out.mux(packet)
        if sound is not None:
            total = int(round(duration * rate))
            for start in range(0, total, 960):
                t = np.arange(start, min(total, start + 960)) / rate
                pitch = tone_hz * (1 + 0.25 * (np.floor(t) % 3))
                samples = (0.2 * np.sin(2 * np.pi * pitch * t)).astype(np.float32)[None, :]
                chunk = av.AudioFrame.from_ndarray(samples, format="fltp", layout="mono")
                chunk.sample_rate = rate
                chunk.pts = start
                chunk.time_base = Fraction(1, rate)
                for packet in sound.encode(chunk):
                    out.mux(packet)
            for packet in sound.encode():
                out.mux(packet)
    return path


def _stamp(seconds: float, sep: str) -> str:
    ms = int(round(seconds * 1000))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def write_srt(path: str | Path, lines: tuple[Line, ...] | list[Line], *, dash: bool = False) -> Path:
    """An SRT file with ``NAME: text`` speaker prefixes (``- NAME: text`` with ``dash``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = []
    for i, line in enumerate(lines, 1):
        text = f"{line.speaker}: {line.text}" if line.speaker else line.text
        if dash and line.speaker:
            text = "- " + text
        blocks.append(f"{i}\n{_stamp(line.start, ',')} --> {_stamp(line.end, ',')}\n{text}\n")
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def write_vtt(path: str | Path, lines: tuple[Line, ...] | list[Line], *, voices: bool = True) -> Path:
    """A WebVTT file; speakers as ``<v NAME>`` voice spans, or ``NAME: text`` prefixes when not ``voices``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = ["WEBVTT\n"]
    for line in lines:
        if line.speaker and voices:
            text = f"<v {line.speaker}>{line.text}</v>"
        elif line.speaker:
            text = f"{line.speaker}: {line.text}"
        else:
            text = line.text
        blocks.append(f"{_stamp(line.start, '.')} --> {_stamp(line.end, '.')}\n{text}\n")
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


@dataclass
class Segment:
    """The files :func:`make_segment` wrote (``video`` / ``metadata`` are ``None`` when not asked for)."""

    segment_id: str
    subtitles: Path
    video: Path | None
    metadata: Path | None
    script: Script
    files: list[Path] = field(default_factory=list)


def make_segment(
    folder: str | Path,
    segment_id: str,
    script: Script = COUPLE,
    *,
    subtitles: str = "srt",
    video: str | None = "mp4",
    metadata: bool = True,
    duration: float | None = None,
    size: tuple[int, int] = (320, 240),
) -> Segment:
    """Write one segment of ``script`` under ``folder`` as ``<segment_id>.<video>`` + ``.srt``/``.vtt``.

    ``metadata`` writes ``<segment_id>.json`` with the scenario and participants; ``video=None``
    makes a subtitles-only segment; ``duration`` overrides the video length (shorter than the
    script makes the "video shorter than its subtitles" case).
    """
    folder = Path(folder)
    stem = folder / segment_id
    subs = (write_srt if subtitles == "srt" else write_vtt)(stem.with_suffix(f".{subtitles}"), script.lines)
    video_path = None
    if video is not None:
        video_path = make_video(stem.with_suffix(f".{video}"), duration or script.duration, size=size)
    meta_path = None
    if metadata:
        meta_path = stem.with_suffix(".json")
        meta_path.write_text(
            json.dumps({"scenario": script.scenario, "participants": list(script.participants)}), encoding="utf-8"
        )
    files = [p for p in (video_path, subs, meta_path) if p is not None]
    return Segment(segment_id, subs, video_path, meta_path, script, files)
