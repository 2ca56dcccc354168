"""Subtitles (SRT, WebVTT) to cues: timing from maintained parsers, speakers from the usual conventions.

The files are parsed by ``srt`` and ``webvtt-py``; this module only adds what neither does:

- **Speakers.** WebVTT voice spans (``<v NAME>text``) come from ``webvtt-py``. In both formats a
  line may start with a speaker prefix, ``NAME: text`` or the dialogue dash ``- NAME: text``
  (:func:`split_speaker`). A cue whose lines name two different speakers keeps the first as its
  speaker and the others' lines (with their prefixes) in its text, and is reported: subtitles give no
  times for the second voice, so inventing them would be worse.
- **Nothing read silently wrong.** ``webvtt-py`` skips a cue whose timing line it cannot read, and
  ``srt`` reads some broken timestamps as zero; every timing line (``-->``) is therefore checked with
  the same library's timestamp parser, and a line that does not parse is an error naming its line.
  Reversed, empty and overlapping cue times are errors too (:func:`check_cues`).

Cue text is the caption text with markup removed (``webvtt-py`` strips tags such as ``<i>`` in both
formats) and lines joined by a space.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rescue_bench.errors import RescueError
from rescue_bench.labels import GROUP_LABELS, THERAPIST

SUBTITLE_SUFFIXES: tuple[str, ...] = (".srt", ".vtt")

MAX_NAME_WORDS = 4
"""A speaker prefix has at most this many words (``Dr Ana Lima:``); longer heads are text."""
MAX_NAME_CHARS = 40


class SubtitleError(RescueError, ValueError):
    """A subtitle file that cannot be used; ``line`` is its 1-based line when known."""

    def __init__(self, file: str, message: str, line: int | None = None, cue: int | None = None):
        self.file = file
        self.line = line
        self.cue = cue
        self.reason = message
        where = file + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: " + (f"cue {cue}: " if cue is not None else "") + message)


@dataclass(frozen=True)
class Cue:
    """One subtitle cue: 1-based number in file order, times in seconds, speaker (or ``None``), text."""

    cue: int
    start: float
    end: float
    speaker: str | None
    text: str
    line: int | None = None
    """Line of the cue's timing line in its file (for messages; not written to manifests)."""
    speakers: tuple[str, ...] = ()
    """Every speaker the cue's lines name, in order (more than one: a mixed cue)."""


def split_speaker(line: str) -> tuple[str | None, str]:
    """``(speaker, text)`` of one subtitle line under the ``NAME: text`` / ``- NAME: text`` conventions.

    A head counts as a name when it has 1 to :data:`MAX_NAME_WORDS` words, no digits and no sentence
    punctuation, and starts with a letter; anything else (``At 5:30 we left``) stays text. A head
    that passes but names nobody in the session (``So: what now``) is kept as a speaker; the caller
    reports such unknown names. A leading dialogue dash without a name gives ``(None, text)`` with
    the dash removed.

    >>> split_speaker("- ALEX: I asked twice.")
    ('ALEX', 'I asked twice.')
    >>> split_speaker("At 5:30 we left.")
    (None, 'At 5:30 we left.')
    """
    text = line.strip()
    if text.startswith(("- ", "\u2013 ", "\u2014 ")):
        text = text[2:].lstrip()
    head, colon, rest = text.partition(":")
    if not colon:
        return None, text
    name = head.strip()
    words = name.split()
    if (
        not name
        or len(name) > MAX_NAME_CHARS
        or len(words) > MAX_NAME_WORDS
        or not name[0].isalpha()
        or any(ch.isdigit() for ch in name)
        or any(ch in name for ch in ".,;!?\"()[]{}<>/\\")
    ):
        return None, text
    return name, rest.strip()


def resolve_name(name: str | None, participants: list[str], scenario: str | None = None) -> str | None:
    """The canonical spelling of ``name`` among the participants, ``Therapist`` and the group label.

    Comparison ignores case and surrounding space; ``None`` when ``name`` is none of them.
    """
    if not name:
        return None
    known = [*participants, THERAPIST]
    if scenario in GROUP_LABELS:
        known.append(GROUP_LABELS[scenario])
    key = name.strip().casefold()
    for candidate in known:
        if candidate.casefold() == key:
            return candidate
    return None


def _seconds(ts: object) -> float:
    """Seconds of a ``webvtt-py`` Timestamp (its ``*_in_seconds`` properties truncate to whole seconds)."""
    return round(ts.hours * 3600 + ts.minutes * 60 + ts.seconds + ts.milliseconds / 1000, 3)  # type: ignore[attr-defined]


def _timing_lines(text: str) -> list[tuple[int, str]]:
    return [(i, line) for i, line in enumerate(text.splitlines(), 1) if "-->" in line]


def _check_timing_lines(file: str, text: str, parse_one) -> list[int]:  # noqa: ANN001
    """Line numbers of the timing lines; an error for the first whose timestamps do not parse."""
    lines = []
    for lineno, line in _timing_lines(text):
        left, _, right = line.partition("-->")
        start = left.strip()
        end = right.strip().split()[0] if right.strip() else ""
        try:
            parse_one(start)
            parse_one(end)
        except Exception:  # noqa: BLE001 - any parser complaint is the same finding for the user
            raise SubtitleError(file, f"unreadable cue timing {line.strip()!r}", lineno) from None
        lines.append(lineno)
    return lines


def _speaker_of_lines(lines: list[str], voice: str | None) -> tuple[str | None, str, tuple[str, ...]]:
    speakers: list[str] = [voice] if voice else []
    parts: list[str] = []
    for raw in lines:
        if not raw.strip():
            continue
        name, rest = split_speaker(raw)
        if name is None:
            if raw.strip().startswith(("- ", "\u2013 ", "\u2014 ")):
                rest = raw.strip()[2:].strip()
            parts.append(rest)
            continue
        if not speakers:
            speakers.append(name)
            parts.append(rest)
        elif name.casefold() == speakers[0].casefold():
            parts.append(rest)
        else:
            if name not in speakers:
                speakers.append(name)
            parts.append(f"{name}: {rest}")
    return (speakers[0] if speakers else None), " ".join(p for p in parts if p), tuple(speakers)


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SubtitleError(str(path), f"cannot read file: {exc.strerror or exc}") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SubtitleError(str(path), f"not UTF-8 text: {exc.reason}", line) from None


def read_srt(path: str | Path) -> list[Cue]:
    """Cues of an SRT file, parsed by ``srt``; markup removed and speakers read as in the module doc."""
    import srt
    import webvtt

    path = Path(path)
    file = str(path)
    text = _read_text(path)
    lines = _check_timing_lines(file, text, srt.srt_timestamp_to_timedelta)
    try:
        subs = list(srt.parse(text))
    except srt.SRTParseError as exc:
        line = text[: getattr(exc, "expected_start", 0)].count("\n") + 1
        raise SubtitleError(file, "not a valid SRT file (unexpected text where a cue should start)", line) from None
    if len(subs) != len(lines):
        raise SubtitleError(file, f"{len(lines)} cue timing lines but {len(subs)} cues could be read")
    cues = []
    for number, (sub, lineno) in enumerate(zip(subs, lines), 1):
        # webvtt-py's caption text strips markup (<i>, <b>, <font ...>) the same way for SRT content
        caption = webvtt.Caption("00:00:00.000", "00:00:00.000", sub.content)
        clean = caption.text.splitlines()
        speaker, body, speakers = _speaker_of_lines(clean, None)
        cues.append(
            Cue(number, round(sub.start.total_seconds(), 3), round(sub.end.total_seconds(), 3), speaker, body, lineno, speakers)
        )
    return cues


def read_vtt(path: str | Path) -> list[Cue]:
    """Cues of a WebVTT file, parsed by ``webvtt-py``; ``<v NAME>`` voices and prefixes give speakers."""
    import webvtt
    from webvtt.models import Timestamp

    path = Path(path)
    file = str(path)
    text = _read_text(path)
    lines = _check_timing_lines(file, text, Timestamp.from_string)
    try:
        captions = list(webvtt.from_string(text).captions)
    except Exception as exc:  # noqa: BLE001 - webvtt-py raises its own MalformedFileError and others
        raise SubtitleError(file, f"not a valid WebVTT file ({exc})", 1) from None
    if len(captions) != len(lines):
        raise SubtitleError(file, f"{len(lines)} cue timing lines but {len(captions)} cues could be read")
    cues = []
    for number, (cap, lineno) in enumerate(zip(captions, lines), 1):
        speaker, body, speakers = _speaker_of_lines(cap.text.splitlines(), cap.voice)
        cues.append(Cue(number, _seconds(cap.start_time), _seconds(cap.end_time), speaker, body, lineno, speakers))
    return cues


def read_subtitles(path: str | Path) -> list[Cue]:
    """Cues of an ``.srt`` or ``.vtt`` file, checked with :func:`check_cues`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".srt":
        cues = read_srt(path)
    elif suffix == ".vtt":
        cues = read_vtt(path)
    else:
        raise SubtitleError(str(path), f"unknown subtitle format {suffix!r}; expected .srt or .vtt")
    check_cues(str(path), cues)
    return cues


def check_cues(file: str, cues: list[Cue]) -> None:
    """Raise :class:`SubtitleError` for no cues, reversed or empty cue times, or cues that overlap.

    Overlap means a cue starting before the previous one ends (file order is time order).
    """
    if not cues:
        raise SubtitleError(file, "no cues in the subtitle file")
    previous: Cue | None = None
    for cue in cues:
        if cue.end < cue.start:
            raise SubtitleError(file, f"reversed cue times: ends at {cue.end:.3f} s before it starts at {cue.start:.3f} s", cue.line, cue.cue)
        if cue.end == cue.start:
            raise SubtitleError(file, f"empty cue: starts and ends at {cue.start:.3f} s", cue.line, cue.cue)
        if previous is not None and cue.start < previous.end:
            raise SubtitleError(
                file,
                f"overlapping cue times: starts at {cue.start:.3f} s before cue {previous.cue} ends at {previous.end:.3f} s",
                cue.line,
                cue.cue,
            )
        previous = cue
