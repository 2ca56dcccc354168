"""Subtitles (SRT, WebVTT) to cues: timing from maintained parsers, every word kept, speakers read
from the forms real subtitle files use, every guess reported.

The files are parsed by ``srt`` and ``webvtt-py`` (timing, cue blocks); this module reads each
cue's raw text itself:

- **Markup is removed, words are not.** ASS/SSA override blocks (``{\\an8}``, ``{\\i1}``), the
  ASS line break ``\\N``, WebVTT and SRT tags (``<i>``, ``<b>``, ``<u>``, ``<c.x>``, ``<lang>``,
  ``<ruby>``, ``<font ...>``) and WebVTT timestamp tags (``<00:01.000>``) are stripped; WebVTT
  character references (``&amp;``) are decoded. Lines are joined by one space.
- **Speakers.** A WebVTT voice span ``<v NAME>``, or a line prefix in one of the SDH forms
  ``NAME: text``, ``- NAME: text``, ``NAME (crying): text`` (the description stays in the text as
  ``(crying) text``), ``[NAME] text``. A head is a speaker only by :func:`is_speaker_name`: a
  participant, ``Therapist`` or a group label (any case, ``TOM`` for ``Tom``), or a short
  capitalised name; anything else stays text (``I mean: stop`` keeps all its words), and a
  capitalised head kept as text is reported. ``[NAME]`` needs a known name, or a name the file
  uses as a ``NAME:`` prefix elsewhere, because brackets also hold sound descriptions.
- **One speaker per cue.** A cue whose voices or lines name different speakers, or whose lines
  start with dialogue dashes, is split into one cue per turn; the cue's time is divided between
  them in proportion to the length of their text (the subtitles give no times, so the split is
  an estimate, and it is reported). Cues are numbered in the order they come out.
- **Nothing read silently wrong.** ``webvtt-py`` skips a cue whose timing line it cannot read, and
  ``srt`` reads some broken timestamps as zero; every timing line (``-->``) is therefore checked with
  the same library's timestamp parser, and a line that does not parse is an error naming its line.
  Reversed and empty cue times are errors; an overlap of at most ``overlap_tolerance``
  (:data:`OVERLAP_TOLERANCE`, one frame at 25 fps) is trimmed and reported, a larger one is an
  error (:func:`trim_overlaps`, :func:`check_cues`).

:func:`read_subtitle_file` returns the cues and the notes; :func:`read_subtitles` only the cues.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rescue_bench.labels import GROUP_LABELS, THERAPIST

SUBTITLE_SUFFIXES: tuple[str, ...] = (".srt", ".vtt")

OVERLAP_TOLERANCE = 0.04
"""Seconds a cue may run into the next one and be trimmed (with a note) instead of refused: one
frame at 25 fps. Subtitle tools snap cue ends to frames, so ends a frame late are common; at 24 fps
a frame is 0.042 s (pass ``--overlap-tolerance 0.042``). Larger overlaps are two people talking at
once, which a cue list cannot say: an error."""

MAX_NAME_WORDS = 2
"""An unknown name is 1 or 2 capitalised words (``Robin``, ``Mary-Ann O'Neil``), after an optional
title from :data:`NAME_TITLES` (``Dr Ana Lima``). Longer names must be given as participants."""
MAX_NAME_CHARS = 40
NAME_TITLES = frozenset({"dr", "mr", "mrs", "ms", "mx", "prof", "miss"})
"""Titles that may come before a name's words (with or without a full stop)."""

COMMON_WORDS = frozenset(
    """
    i me my mine you your yours he him his she her hers we us our ours they them their it its one
    this that these those there here what why how when where who which whatever whoever
    a an the and but or so if then because well look listen note okay ok yes yeah no nope now
    wait remember like honestly seriously basically anyway anyways fine sure right please
    question answer example rule step also just really actually sorry thanks hey oh um uh hmm
    mean see said says say think thought know point problem thing reason result truth fact
    update warning translation summary meaning story bottom line first second last next finally
    again never always maybe everyone everybody nobody someone somebody all both
    laughs laughing laughter sighs sighing crying cries sobs sobbing music applause silence pause
    inaudible indistinct chuckles groans whispers whispering shouting yelling knock knocking door
    phone ringing crosstalk overlapping
    """.split()
)
"""Words that begin sentences and titles but are never a speaker's name (``I mean:``, ``Note:``,
``Look:``, ``[LAUGHS]``): a head holding one of them is text."""

_DASHES = ("- ", "\u2013 ", "\u2014 ")
_ASS_BLOCK = re.compile(r"\{\\[^{}]*\}")
_ASS_BREAK = re.compile(r"\\N")
_ASS_SPACE = re.compile(r"\\h")
_VOICE = re.compile(r"<v(?:\.[^\s>]*)?(?:\s+(?P<name>[^>]*))?>|</v\s*>")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<\d{1,2}(?::\d{2}){1,2}\.\d{3}>")
_SDH_HEAD = re.compile(r"^(?P<name>[^():\[\]]+?)\s*\((?P<desc>[^()]*)\)$")
_BRACKET = re.compile(r"^\[(?P<name>[^\[\]]+)\]\s*:?\s*(?P<rest>.*)$", re.S)
_NAME_CHARS = frozenset("'\u2019-")


class SubtitleError(ValueError):
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


def _known_keys(known: Iterable[str]) -> frozenset[str]:
    return frozenset(k.strip().casefold() for k in known if k and k.strip())


def _looks_like_a_name(head: str) -> bool:
    """1-:data:`MAX_NAME_WORDS` capitalised words, none of them a common word, after an optional title."""
    words = head.split()
    if len(words) > 1 and words[0].rstrip(".").casefold() in NAME_TITLES:
        words = words[1:]
    if not words or len(words) > MAX_NAME_WORDS or len(head) > MAX_NAME_CHARS:
        return False
    for word in words:
        if not word[0].isupper() or not all(ch.isalpha() or ch in _NAME_CHARS for ch in word):
            return False
        if word.casefold() in COMMON_WORDS:
            return False
    return True


def is_speaker_name(head: str, known: Iterable[str] = ()) -> bool:
    """True when ``head`` (the text before a ``:``) is taken as a speaker's name.

    It is when it matches one of ``known`` ignoring case (participants, ``Therapist``, the group
    label), or when it is a short capitalised name: 1 to :data:`MAX_NAME_WORDS` words, each starting
    with a capital letter and made of letters, apostrophes and hyphens (``TOM``, ``Mary-Ann O'Neil``),
    none of them in :data:`COMMON_WORDS`, after an optional title (``Dr``, ``Mrs.``). So ``I mean``,
    ``Note``, ``Look``, ``the thing is`` and ``At 5`` are not names.

    >>> is_speaker_name("TOM"), is_speaker_name("I mean"), is_speaker_name("mum", ["Mum"])
    (True, False, True)
    """
    name = head.strip()
    if not name:
        return False
    if name.casefold() in _known_keys(known):
        return True
    return _looks_like_a_name(name)


@dataclass(frozen=True)
class _Line:
    """What one line says about its speaker: the name (or ``None``), the text, a leading dialogue
    dash, and a capitalised head that was kept as text (for the report)."""

    speaker: str | None
    text: str
    dash: bool = False
    kept_head: str | None = None


def _read_line(line: str, keys: frozenset[str]) -> _Line:
    text = line.strip()
    dash = text.startswith(_DASHES)
    if dash:
        text = text[2:].lstrip()
    bracket = _BRACKET.match(text)
    if bracket:
        name = bracket.group("name").strip()
        if name.casefold() in keys:
            return _Line(name, bracket.group("rest").strip(), dash)
        kept = f"[{name}]" if _looks_like_a_name(name) else None
        return _Line(None, text, dash, kept)
    head, colon, rest = text.partition(":")
    if not colon or not head.strip():
        return _Line(None, text, dash)
    sdh = _SDH_HEAD.match(head.strip())
    if sdh and is_speaker_name(sdh.group("name"), keys):
        described = f"({sdh.group('desc').strip()}) {rest.strip()}".strip()
        return _Line(sdh.group("name").strip(), described, dash)
    if is_speaker_name(head, keys):
        return _Line(head.strip(), rest.strip(), dash)
    name = head.strip()
    plain = sdh.group("name").strip() if sdh else name
    kept = f"{name}:" if plain[:1].isupper() and len(name) <= MAX_NAME_CHARS and _head_shape(plain) else None
    return _Line(None, text, dash, kept)


def _head_shape(head: str) -> bool:
    """A head shaped like a name (1-4 words of letters) that the name rule refused: worth a note."""
    words = head.split()
    return 0 < len(words) <= 4 and all(all(ch.isalpha() or ch in _NAME_CHARS or ch == "." for ch in w) for w in words)


def split_speaker(line: str, known: Iterable[str] = ()) -> tuple[str | None, str]:
    """``(speaker, text)`` of one subtitle line under the SDH conventions of the module doc.

    ``NAME: text``, ``- NAME: text`` and ``NAME (crying): text`` give a speaker when the head passes
    :func:`is_speaker_name`; ``[NAME] text`` only when ``NAME`` is one of ``known`` (any case). A
    leading dialogue dash is removed. Everything else is ``(None, text)`` with every word kept.

    >>> split_speaker("- ALEX: I asked twice.")
    ('ALEX', 'I asked twice.')
    >>> split_speaker("I mean: stop.")
    (None, 'I mean: stop.')
    """
    read = _read_line(line, _known_keys(known))
    return read.speaker, read.text


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


def _clean(text: str, *, vtt: bool) -> str:
    """Cue text without tags (and, in WebVTT, with character references decoded)."""
    text = _TAG.sub("", text)
    return html.unescape(text) if vtt else text


def _pieces(raw: str, *, vtt: bool) -> list[tuple[str | None, str]]:
    """(voice, line) pieces of a cue's raw text: ASS blocks removed, each WebVTT voice span and
    each line its own piece, markup stripped."""
    raw = _ASS_SPACE.sub(" ", _ASS_BREAK.sub("\n", _ASS_BLOCK.sub("", raw)))
    spans: list[tuple[str | None, str]] = []
    voice: str | None = None
    pos = 0
    if vtt:
        for match in _VOICE.finditer(raw):
            spans.append((voice, raw[pos : match.start()]))
            voice = None if match.group(0).startswith("</") else ((match.group("name") or "").strip() or None)
            pos = match.end()
    spans.append((voice, raw[pos:]))
    out = []
    for voice, span in spans:
        for line in span.split("\n"):
            text = " ".join(_clean(line, vtt=vtt).split())
            if text:
                out.append((voice, text))
    return out


@dataclass
class _Turn:
    speaker: str | None
    texts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(t for t in self.texts if t)


def _turns(pieces: list[tuple[str | None, str]], keys: frozenset[str], kept: list[str]) -> list[_Turn]:
    """The turns of one cue: a new turn at a voice or name that differs from the current speaker, or
    at a dialogue dash; an unprefixed line continues the current turn. Heads kept as text go to ``kept``."""
    turns: list[_Turn] = []
    for voice, line in pieces:
        read = _read_line(line, keys)
        speaker, text = read.speaker, read.text
        if voice is not None:
            if speaker is not None and speaker.casefold() != voice.casefold():
                text = line.strip()[2:].lstrip() if read.dash else line.strip()  # the voice decides
            speaker = voice
        elif read.kept_head:
            kept.append(read.kept_head)
        current = turns[-1] if turns else None
        if current is None:
            turns.append(_Turn(speaker, [text]))
        elif speaker is not None and current.speaker is not None and speaker.casefold() == current.speaker.casefold():
            current.texts.append(text)
        elif speaker is None and not read.dash:
            current.texts.append(text)
        else:
            turns.append(_Turn(speaker, [text]))
    return turns or [_Turn(None, [])]


def _split_times(start: float, end: float, turns: list[_Turn]) -> list[tuple[float, float]] | None:
    """The cue's time divided between its turns by the length of their text (ms precision);
    ``None`` when the cue is too short to give each turn a millisecond."""
    if round((end - start) * 1000) < len(turns):
        return None
    weights = [max(len(t.text), 1) for t in turns]
    total = sum(weights)
    bounds = [start]
    acc = 0
    for w in weights[:-1]:
        acc += w
        bounds.append(round(start + (end - start) * acc / total, 3))
    bounds.append(end)
    for i in range(1, len(bounds) - 1):  # rounding may squeeze a short turn to nothing
        bounds[i] = max(bounds[i], round(bounds[i - 1] + 0.001, 3))
    if any(b >= e for b, e in zip(bounds, bounds[1:])):
        return None
    return list(zip(bounds, bounds[1:]))


@dataclass
class SubtitleRead:
    """What :func:`read_subtitle_file` found: the cues, and notes on every guess it made."""

    cues: list[Cue]
    notes: list[str] = field(default_factory=list)
    """One line each, without the file name: cues split per speaker, heads kept as text, overlaps
    trimmed. The caller reports them (``rescue annotate prepare`` prints them as notes)."""


@dataclass
class _RawCue:
    start: float
    end: float
    text: str
    line: int


def _cue_numbers(numbers: Sequence[int | str], limit: int = 8) -> str:
    shown = ", ".join(map(str, numbers[:limit]))
    return shown + (" ..." if len(numbers) > limit else "")


def _to_cues(raw_cues: list[_RawCue], keys: frozenset[str], *, vtt: bool) -> SubtitleRead:
    cues: list[Cue] = []
    kept: dict[str, list[int]] = {}
    split_lines: list[int] = []
    unsplit_lines: list[int] = []
    for raw in raw_cues:
        heads: list[str] = []
        turns = _turns(_pieces(raw.text, vtt=vtt), keys, heads)
        times = _split_times(raw.start, raw.end, turns) if len(turns) > 1 else [(raw.start, raw.end)]
        if times is None:  # too short to divide: one cue, the other turns keep their names in the text
            unsplit_lines.append(raw.line)
            first = turns[0]
            rest = [f"{t.speaker}: {t.text}" if t.speaker else t.text for t in turns[1:]]
            names = tuple(dict.fromkeys(t.speaker for t in turns if t.speaker))
            turns, times = [_Turn(first.speaker, [first.text, *rest])], [(raw.start, raw.end)]
        else:
            names = ()
        if len(turns) > 1:
            split_lines.append(raw.line)
        for turn, (start, end) in zip(turns, times):
            number = len(cues) + 1
            for head in heads:
                kept.setdefault(head, []).append(number)
            heads = []
            speakers = names or ((turn.speaker,) if turn.speaker else ())
            cues.append(Cue(number, start, end, turn.speaker, turn.text, raw.line, speakers))
    notes = []
    if split_lines:
        notes.append(
            f"the cue(s) at line(s) {_cue_numbers(split_lines)} hold several speakers (voices, names or "
            "dialogue dashes): split into one cue each, the cue's time divided by the length of their text"
        )
    if unsplit_lines:
        notes.append(
            f"the cue(s) at line(s) {_cue_numbers(unsplit_lines)} hold several speakers but are too short to "
            "split: the first is the cue's speaker, the others' names stay in the text"
        )
    for head, numbers in kept.items():
        notes.append(
            f"{head!r} kept as text in cue(s) {_cue_numbers(numbers)}: not a participant, {THERAPIST}, a group "
            "label or a short capitalised name (give it with --participants if it is a speaker)"
        )
    return SubtitleRead(cues, notes)


def _read_cues(raw_cues: list[_RawCue], participants: Sequence[str] | None, scenario: str | None, *, vtt: bool) -> SubtitleRead:
    """Two passes: the names the file itself uses as ``NAME:`` prefixes or voices join the known
    names, so that ``[NAME]`` is read as a speaker in a file that also writes ``NAME:``."""
    groups = [GROUP_LABELS[scenario]] if scenario in GROUP_LABELS else list(GROUP_LABELS.values())
    base = [*(participants or []), THERAPIST, *groups]
    first = _to_cues(raw_cues, _known_keys(base), vtt=vtt)
    named = [c.speaker for c in first.cues if c.speaker]
    keys = _known_keys([*base, *named])
    return first if keys == _known_keys(base) else _to_cues(raw_cues, keys, vtt=vtt)


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


def infer_names(cues: Iterable[Cue], scenario: str | None = None) -> list[str]:
    """The clients the cues name as speakers, in order of first appearance, one spelling each.

    Names that are ``Therapist`` or a group label are left out. Spellings that differ only in case
    are one person, written as the first spelling that is not all capitals (``Robin`` for ``ROBIN``
    and ``Robin``), else title-cased (``TOM`` -> ``Tom``): SDH files write names in capitals.
    """
    spellings: dict[str, list[str]] = {}
    for cue in cues:
        if cue.speaker and resolve_name(cue.speaker, [], scenario) is None:
            if cue.speaker.casefold() in {g.casefold() for g in GROUP_LABELS.values()}:
                continue  # the other scenario's group is no client (prepare reports it as unknown)
            spellings.setdefault(cue.speaker.casefold(), []).append(cue.speaker)
    out = []
    for names in spellings.values():
        mixed = next((n for n in names if not n.isupper()), None)
        out.append(mixed if mixed is not None else names[0].title())
    return out


def read_srt(path: str | Path, participants: Sequence[str] | None = None, scenario: str | None = None) -> SubtitleRead:
    """Cues of an SRT file, parsed by ``srt``; markup removed and speakers read as in the module doc."""
    import srt

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
    raw = [
        _RawCue(round(sub.start.total_seconds(), 3), round(sub.end.total_seconds(), 3), sub.content, lineno)
        for sub, lineno in zip(subs, lines)
    ]
    return _read_cues(raw, participants, scenario, vtt=False)


def read_vtt(path: str | Path, participants: Sequence[str] | None = None, scenario: str | None = None) -> SubtitleRead:
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
    raw = [
        _RawCue(_seconds(cap.start_time), _seconds(cap.end_time), cap.raw_text, lineno)
        for cap, lineno in zip(captions, lines)
    ]
    return _read_cues(raw, participants, scenario, vtt=True)


def read_subtitle_file(
    path: str | Path,
    *,
    participants: Sequence[str] | None = None,
    scenario: str | None = None,
    overlap_tolerance: float = OVERLAP_TOLERANCE,
) -> SubtitleRead:
    """Cues of an ``.srt`` or ``.vtt`` file and notes on every guess, checked with :func:`check_cues`.

    ``participants`` and ``scenario`` are the names known to be speakers (with ``Therapist`` and the
    group label); speakers are returned as written, the caller maps them (:func:`resolve_name`).
    Overlaps of at most ``overlap_tolerance`` seconds are trimmed (:func:`trim_overlaps`).
    """
    if overlap_tolerance < 0:
        raise ValueError(f"overlap_tolerance must be 0 or more seconds (got {overlap_tolerance})")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".srt":
        read = read_srt(path, participants, scenario)
    elif suffix == ".vtt":
        read = read_vtt(path, participants, scenario)
    else:
        raise SubtitleError(str(path), f"unknown subtitle format {suffix!r}; expected .srt or .vtt")
    cues, trimmed = trim_overlaps(read.cues, overlap_tolerance)
    check_cues(str(path), cues)
    return SubtitleRead(cues, [*read.notes, *trimmed])


def read_subtitles(
    path: str | Path,
    *,
    participants: Sequence[str] | None = None,
    scenario: str | None = None,
    overlap_tolerance: float = OVERLAP_TOLERANCE,
) -> list[Cue]:
    """The cues of :func:`read_subtitle_file` (use that to report its notes)."""
    return read_subtitle_file(path, participants=participants, scenario=scenario, overlap_tolerance=overlap_tolerance).cues


def trim_overlaps(cues: list[Cue], tolerance: float = OVERLAP_TOLERANCE) -> tuple[list[Cue], list[str]]:
    """Cues where each cue that runs at most ``tolerance`` seconds into the next ends where the next
    starts, and a note naming them. Larger overlaps, and trims that would leave a cue empty, are
    left for :func:`check_cues` to refuse."""
    out = list(cues)
    trimmed: list[str] = []
    for i in range(len(out) - 1):
        cue, nxt = out[i], out[i + 1]
        overlap = round(cue.end - nxt.start, 3)
        if 0 < overlap <= tolerance + 1e-9 and nxt.start > cue.start:
            out[i] = replace(cue, end=nxt.start)
            trimmed.append(f"cue {cue.cue} (by {overlap:.3f} s)")
    if not trimmed:
        return out, []
    return out, [
        f"trimmed the end of {_cue_numbers(trimmed)} to the next cue's start: they overlapped it by at most "
        f"the overlap tolerance ({tolerance:g} s)"
    ]


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
