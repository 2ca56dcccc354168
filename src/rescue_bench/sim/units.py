"""The annotated sessions' own steps, as the units the ``fitted`` simulator is fitted and checked on.

At every boundary after a client row (0-based row ``k``), the therapist's next row is the **move**
(:func:`real_move`: its annotated target, every client its words name, its words), or silence when a
client speaks next. What the move did is read from the annotations that follow it:

* a **change unit** per client with an annotated feeling before the boundary and after it, within
  :data:`WINDOW` rows and before the therapist's next move (:func:`window_end`): the intensity and
  valence before and after, how the move reached the client (:data:`rescue_bench.sim.hearing.REACHES`),
  the affect of its words (read by a reader that did not see the unit's session) and the pattern's
  value at the boundary;
* a **speaker unit**: the client who spoke next, and each client's speaker features
  (:func:`speaker_features`) at the boundary;
* a **pattern unit**: the pattern at the boundary, the move (silence, one client, several) and the
  first pattern annotated after it, up to the next client row.

Units carry their clip and their **group**: the couple or family (:func:`group_of`, the same people
in several clips are one group), which the fit leaves out whole when it checks itself out of sample.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import patterns
from rescue_bench.sim.cards import active_pattern
from rescue_bench.sim.hearing import heard_as, move_of, reach
from rescue_bench.sim.lexicon import valence as valence_of
from rescue_bench.sim.reader import named_clients
from rescue_bench.sim.record import Heard
from rescue_bench.sim.state import PATTERN_VALUE
from rescue_bench.tasks.er import integer_intensity

WINDOW = 6
"""Rows after a move in which a client's next annotation counts as their state after the step (and
never past the therapist's next move)."""

SPEAKER_FEATURES: tuple[str, ...] = ("last", "least_recent", "alone", "reached", "named", "follower", "keeps")
"""A client's features as the next speaker (:func:`speaker_features`): the last client speaker; the
client who spoke least recently; addressed alone; reached by the words; named in them; among the
clients who most often followed the last speaker in the real session so far; ``keeps``: for the last
speaker, how often the session's client turns so far stayed with the same speaker (-1 always
alternating, +1 always keeping; 0 for the others), so the same rule can read a keeping session and an
alternating one."""


def group_of(clip: Clip) -> str:
    """The couple or family of ``clip``: its scenario and its participants (a group may have many clips)."""
    return f"{clip.scenario}:{'|'.join(sorted(clip.clients))}"


def data_digest(clips: Sequence[Clip]) -> str:
    h = hashlib.sha256()
    for clip in clips:
        h.update(json.dumps(clip.to_json(), sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------------------------------
# reading the sessions
# --------------------------------------------------------------------------------------------------


def annotation(row: Row, client: str) -> tuple[str, int] | None:
    """``(valence, intensity)`` of the client's first usable emotion annotation in ``row``."""
    for item in row.internal_emotion or []:
        if (item.person or "").strip() != client:
            continue
        description = (item.emotion_description or "").strip()
        intensity = integer_intensity(item.intensity)
        if description and intensity is not None:
            return valence_of(description), intensity
    return None


def real_move(clip: Clip, k: int) -> tuple[tuple[str, ...], str, str | None, int | None]:
    """The move after 0-based row ``k``: ``(recipients, words, strategy, 0-based row of the move)``;
    no recipients and no row when a client speaks next (silence)."""
    from rescue_bench.tasks.stp import resolve_target, strategy_type

    nxt = clip.rows[k + 1] if k + 1 < len(clip.rows) else None
    if nxt is None or not nxt.is_therapist:
        return (), "", None, None
    targets = resolve_target(nxt, clip.group_label)
    names = [targets] if targets and targets != clip.group_label else nxt.targets
    group = targets == clip.group_label or clip.group_label in nxt.targets
    recipients = list(clip.clients) if group else [c for c in clip.clients if c in names]
    said = named_clients(nxt.text, clip.clients)
    recipients = [c for c in clip.clients if c in recipients or c in said] or list(clip.clients)
    return tuple(recipients), nxt.text, strategy_type(nxt) or None, k + 1


def window_end(rows: Sequence[Row], move: int) -> int:
    """The end (exclusive) of the rows whose annotations count as after the move at 0-based row
    ``move``: at most :data:`WINDOW` rows, and never past the therapist's next move (a change after
    it is not this move's)."""
    end = min(len(rows), move + 1 + WINDOW)
    return next((j for j in range(move + 1, end) if rows[j].is_therapist), end)


def boundaries(clip: Clip) -> list[int]:
    """0-based rows ``k`` after which the session has a move to replay (a client row that is not the last)."""
    return [k for k in range(len(clip.rows) - 1) if clip.rows[k].is_client]


# --------------------------------------------------------------------------------------------------
# the next speaker's features
# --------------------------------------------------------------------------------------------------


def habitual_follower(last: str | None, real: Sequence[str], clients: Sequence[str]) -> list[str]:
    """The clients who most often spoke in the row right after a row of ``last`` in ``real`` (the
    speakers of the clip's real rows, oldest first; a therapist row in between breaks the pair), all
    of them when tied; empty when ``last`` was never followed by a client."""
    counts = dict.fromkeys(clients, 0)
    for a, b in zip(real, real[1:]):
        if a == last and b in counts:
            counts[b] += 1
    best = max(counts.values(), default=0)
    return [c for c in clients if best and counts[c] == best]


def keep_rate(real: Sequence[str], clients: Sequence[str]) -> float:
    """How often, in the real session so far, the next client turn was the same client's: the share of
    consecutive client turns (other rows skipped) with one speaker, smoothed toward one half
    (``(same + 1) / (pairs + 2)``)."""
    turns = [s for s in real if s in clients]
    same = sum(a == b for a, b in zip(turns, turns[1:]))
    return (same + 1) / (max(len(turns) - 1, 0) + 2)


def last_turns(spoken: Sequence[str], clients: Sequence[str]) -> dict[str, int]:
    """Each client's latest position in ``spoken`` (-1: never spoke)."""
    return {c: max((i for i, s in enumerate(spoken) if s == c), default=-1) for c in clients}


def speaker_features(heard: Heard, clients: Sequence[str], spoken: Sequence[str], real: Sequence[str]) -> list[tuple[float, ...]]:
    """Each client's :data:`SPEAKER_FEATURES` at a step (``spoken``: the speakers of the transcript so
    far, real and simulated, oldest first; ``real``: the speakers of the clip's real rows up to the start)."""
    turns = last_turns(spoken, clients)
    last = max((c for c in clients if turns[c] >= 0), key=lambda c: turns[c], default=None)
    least = min(clients, key=lambda c: (turns[c], list(clients).index(c)))
    followers = set(habitual_follower(last, real, clients)) if last else set()
    keeps = 2 * keep_rate(real, clients) - 1
    out: list[tuple[float, ...]] = []
    for c in clients:
        how = reach(heard, c, clients)
        out.append(
            (
                float(c == last),
                float(c == least),
                float(how == "alone"),
                float(how in ("alone", "subgroup", "group")),
                float(c in heard["named"]),
                float(c in followers),
                keeps if c == last else 0.0,
            )
        )
    return out


def tie_order(clients: Sequence[str], spoken: Sequence[str]) -> list[int]:
    """Each client's place in the order speaker ties go by: the least recent speaker first, then client order."""
    turns = last_turns(spoken, clients)
    ranked = sorted(range(len(clients)), key=lambda i: (turns[clients[i]], i))
    return [ranked.index(i) for i in range(len(clients))]


def pick(scores: Sequence[float], tiebreak: Sequence[int]) -> int:
    """The index of the highest score; ties (within 1e-9) go to the lowest ``tiebreak``."""
    best = max(scores)
    return min((i for i, s in enumerate(scores) if s >= best - 1e-9), key=lambda i: tiebreak[i])


def choose_speaker(scores: Sequence[float], clients: Sequence[str], spoken: Sequence[str]) -> str:
    """The client with the highest score; ties (within 1e-9) go to the least recent speaker, then client order."""
    return clients[pick(scores, tie_order(clients, spoken))]


# --------------------------------------------------------------------------------------------------
# the units
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChangeUnit:
    """One client's annotated change across one move."""

    sample_id: str
    group: str
    k: int
    client: str
    reach: str
    affect: str | None
    """The affect of the words said to the client (``None``: not addressed, or silence)."""
    recipients: int
    """How many clients the move's words were said to (0: silence)."""
    before: int
    after: int
    valence_before: str
    valence_after: str
    pattern_value: float
    """The value of the pattern active at the boundary (:data:`rescue_bench.sim.state.PATTERN_VALUE`)."""


@dataclass(frozen=True)
class SpeakerUnit:
    sample_id: str
    group: str
    features: tuple[tuple[float, ...], ...]
    """Per client, in client order: their :data:`SPEAKER_FEATURES`."""
    chosen: int
    """The index of the client who spoke next."""
    tiebreak: tuple[int, ...]
    """Per client, its place in the order ties go by (:func:`choose_speaker`: least recent first)."""


@dataclass(frozen=True)
class PatternUnit:
    sample_id: str
    group: str
    scenario: str
    before: str
    move: str
    after: str


@dataclass(frozen=True)
class Units:
    changes: list[ChangeUnit]
    speakers: list[SpeakerUnit]
    patterns: list[PatternUnit]

    def keep(self, test: Callable[[str], bool]) -> Units:
        """The units whose clip (``sample_id``) passes ``test``."""
        return Units([u for u in self.changes if test(u.sample_id)], [u for u in self.speakers if test(u.sample_id)],
                     [u for u in self.patterns if test(u.sample_id)])


def clip_units(clip: Clip, read: Callable[[str], str]) -> Units:
    """The units of one clip (see the module doc); ``read`` gives the affect of a move's words."""
    rows = clip.rows
    clients = list(clip.clients)
    labels = patterns(clip.scenario)
    group = group_of(clip)
    notes = [{c: a for c in clients if (a := annotation(r, c)) is not None} for r in rows]
    speakers_so_far = [r.speaker for r in rows]
    changes: list[ChangeUnit] = []
    speakers: list[SpeakerUnit] = []
    pats: list[PatternUnit] = []
    for k in boundaries(clip):
        recipients, words, _, at = real_move(clip, k)
        heard = heard_as(recipients, words=words or None, affect=read(words) if at is not None and words else None,
                         named=named_clients(words, clients) if at is not None else ())
        pattern = active_pattern(clip, k)
        end = window_end(rows, at if at is not None else k)
        for c in clients:
            before = next((notes[j][c] for j in range(k, -1, -1) if c in notes[j]), None)
            after = next((notes[j][c] for j in range(k + 1, end) if c in notes[j]), None)
            if before is None or after is None:
                continue
            how = reach(heard, c, clients)
            changes.append(
                ChangeUnit(clip.sample_id, group, k, c, how, heard["affect"] if how in ("alone", "subgroup", "group") else None,
                           len(heard["recipients"]), before[1], after[1], before[0], after[0], PATTERN_VALUE.get(pattern, 0.0))
            )
        nxt = next((j for j in range(k + 1, len(rows)) if rows[j].speaker in clients), None)
        if nxt is None:
            continue
        spoken = speakers_so_far[: k + 1]
        features = speaker_features(heard, clients, spoken, spoken)
        speakers.append(SpeakerUnit(clip.sample_id, group, tuple(features), clients.index(rows[nxt].speaker), tuple(tie_order(clients, spoken))))
        after_pattern = next((v for r in rows[k + 1 : nxt + 1] for v in (r.cycle_state, r.pattern) if v in labels), None)
        if after_pattern is not None:
            pats.append(PatternUnit(clip.sample_id, group, clip.scenario, pattern, move_of(heard), after_pattern))
    return Units(changes, speakers, pats)


def units_of(clips: Sequence[Clip], readers: dict[str, Callable[[str], str]]) -> Units:
    """The units of ``clips``; ``readers``: per clip, the reader of its words (one that did not see its session)."""
    parts = [clip_units(c, readers[c.sample_id]) for c in clips]
    return Units([u for p in parts for u in p.changes], [u for p in parts for u in p.speakers], [u for p in parts for u in p.patterns])
