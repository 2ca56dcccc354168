"""The offline ``fitted`` simulator: transitions estimated from annotated sessions, by counting.

A fitted model (:class:`FittedModel`, a typed, versioned JSON file written by ``rescue sim fit``)
holds, with the counts behind every number:

* the **reader** of the words (:mod:`rescue_bench.sim.reader`) and how well each reading holds on
  held-out clips; the affect reading is used only when it beats chance there;
* **intensity**: a client's expected change given their level band before (:data:`BANDS`) and how the
  step reached them (:meth:`rescue_bench.sim.hearing.Heard.exposure`: addressed alone, in a group,
  left out while others were addressed, or silence), plus, when addressed, the effect of the words'
  affect;
* **valence**: the next valence given the current one, the exposure and the affect;
* **pattern**: the next relation pattern given the current one and the move (silence, one client,
  several);
* **next speaker**: per role of a client at the step (their exposure, and whether they spoke last,
  usually follow the last speaker in the session so far, or neither), the share of times a client in
  that role spoke next; the simulator lets the client with the highest share speak.

**The units** are the sessions' own steps. At every boundary after a client row, the therapist's
next row is the move (or silence when a client speaks next); a client's change is their latest
annotated intensity up to the boundary against their first annotation in the :data:`WINDOW` rows
after it. The release has no hostile therapist turn, so what words addressed to a client do is also
learned from the clients' own turns to each other (a turn addressed to someone is a turn, whoever
speaks it). Each turn's affect is read by a reader fitted on the other clips only.

**Smoothing** (:data:`PSEUDO`): each cell is shrunk toward its parent with that many pseudo-units:
``band|exposure`` toward ``band|addressed`` (alone or in a group) or ``band|not_addressed`` (left
out or silence), toward ``band``, toward all units, toward no change. The words' effect is one
number per affect, added to the cell of an addressed client: the mean change of addressed units with
that affect beyond their cell, shrunk toward none (pooled over levels and exposures: the sessions
hold too few units of each affect to split them). A next valence is counted per current valence and
exposure, and per current valence and affect for an addressed client, each shrunk toward its parent's
counts, the last toward staying; a next pattern likewise per current pattern and move. A cell with no
unit is its parent. Intensities stay integers (as annotated; and the exact optimum can search the
states): a client's expected change is added and rounded down after a fixed offset that varies with
the step and the client (:func:`dithered`), so small effects move clients as often as their size
says instead of never.

The hidden state's stances are kept as they are: the release annotates too few viewpoint pairs in a
row to estimate how they move.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from rescue_bench.data.models import Clip
from rescue_bench.labels import patterns
from rescue_bench.sim.cards import initial_state, role_cards
from rescue_bench.sim.hearing import Heard
from rescue_bench.sim.lexicon import valence as valence_of
from rescue_bench.sim.options import FITTED
from rescue_bench.sim.reader import (
    AFFECTS,
    Inference,
    LinearReader,
    affect_rows,
    crossfit,
    fit_linear,
    measure,
    measure_names,
    named_clients,
    strategy_rows,
)
from rescue_bench.sim.state import ClientState, HiddenState, pair_key
from rescue_bench.tasks.er import integer_intensity

MODEL_KIND: Literal["rescue-sim-model"] = "rescue-sim-model"
MODEL_VERSION: Literal[1] = 1
BANDS: tuple[tuple[str, int, int], ...] = (("low", 0, 3), ("mid", 4, 6), ("high", 7, 10))
EXPOSURES: tuple[str, ...] = ("alone", "group", "left_out", "silence")
MOVES: tuple[str, ...] = ("silence", "one", "several")
RELATIONS: tuple[str, ...] = ("last", "follower", "other")
WINDOW = 6
"""Rows after a move in which a client's next annotation counts as their state after the step (and
never past the therapist's next move)."""
PSEUDO = 5.0
"""Pseudo-units each cell is shrunk toward its parent with."""
DEFAULT_MODEL = "models/demo.json"
"""The bundled default, fitted on the bundled synthetic demo only."""


def band(intensity: int) -> str:
    return next(name for name, low, high in BANDS if low <= intensity <= high)


STEP_DITHER = 0.6180339887498949
CLIENT_DITHER = 0.41421356237309503


def dithered(x: float, t: int, i: int) -> int:
    """``x`` rounded down after adding a fixed offset in [0, 1) that varies with the step ``t`` and
    the client's place ``i`` (an additive low-discrepancy sequence): over steps a client moves as
    far as the expected changes add up to, where rounding each step half up would never move them
    by a change under half a point."""
    return math.floor(x + (t * STEP_DITHER + i * CLIENT_DITHER) % 1.0)


# --------------------------------------------------------------------------------------------------
# the model file
# --------------------------------------------------------------------------------------------------


class Cell(BaseModel):
    """Units in a cell, the sum of their changes, and the smoothed expected change."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    total: float
    value: float


class Rate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    chosen: int
    available: int
    rate: float
    """(chosen + 1) / (available + 2)."""


class Effect(BaseModel):
    """One effect of the dynamics (a contrast of two arms of units), on held-out clips."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arms: tuple[str, str]
    n: tuple[int, int]
    observed: float | None
    """Mean change of the first arm's units minus the second's, as annotated."""
    fitted: float | None
    """The same contrast of the changes the model predicts for those units, each from a model fitted
    without the unit's clip."""
    scripted: float | None
    """The same contrast of the ``scripted`` rules' changes for those units."""


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """What the model was fitted on, as given (``demo``, or the data paths)."""
    sha256: str
    """Of the clips' JSON, in order."""
    clips: list[str]
    """Sample ids (a fidelity run on these clips refits without each one)."""
    rows: int


class FittedModel(BaseModel):
    """A fitted simulator (see the module doc). ``kind`` and ``version`` name the file format."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["rescue-sim-model"] = MODEL_KIND
    version: Literal[1] = MODEL_VERSION
    source: Source
    pseudo: float = PSEUDO
    window: int = WINDOW
    reader: LinearReader
    readings: list[Inference]
    affect_used: bool
    intensity: dict[str, Cell]
    valence: dict[str, dict[str, int]]
    pattern: dict[str, dict[str, int]]
    speaker: dict[str, Rate]
    units: dict[str, int] = Field(default_factory=dict)
    """How many units each table is fitted on."""
    effects: list[Effect] = Field(default_factory=list)
    heldout: dict[str, float | int | None] = Field(default_factory=dict)
    """Intensity change predicted for held-out clips: mean absolute error of the model and of no change."""
    _read: dict[str, str] = PrivateAttr(default_factory=dict)
    _valence: dict[tuple[str, str, str | None], str] = PrivateAttr(default_factory=dict)
    _client: dict[tuple[Any, ...], tuple[str, int]] = PrivateAttr(default_factory=dict)
    _pattern: dict[tuple[str, str], str] = PrivateAttr(default_factory=dict)

    def sha256(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    # -- reading ---------------------------------------------------------------------------------
    def read(self, words: str) -> str:
        """The affect of ``words`` (``neutral`` for every turn when the affect reading is not used)."""
        if not self.affect_used:
            return "neutral"
        if words not in self._read:
            self._read[words] = self.reader.predict([words])[0]
        return self._read[words]

    # -- the transition --------------------------------------------------------------------------
    def delta(self, level: str, exposure: str, affect: str | None) -> float:
        """The expected change of a client at ``level`` reached by the step as ``exposure`` with words of
        ``affect``: the cell of level and exposure (or its nearest parent), plus the words' effect when
        addressed and the affect is read."""
        base = next((self.intensity[k].value for k in _keys(level, exposure) if k in self.intensity), 0.0)
        words = self.intensity.get(f"affect|{affect}") if affect and self.affect_used and exposure in ("alone", "group") else None
        return base + (words.value if words else 0.0)

    def next_valence(self, valence: str, exposure: str, affect: str | None) -> str:
        key = (valence, exposure, affect)
        if key not in self._valence:
            keys = [f"{valence}|addressed|{affect}"] if affect and self.affect_used and exposure in ("alone", "group") else []
            self._valence[key] = _argmax_smoothed([self.valence.get(k, {}) for k in [*keys, f"{valence}|{exposure}"]], valence, self.pseudo)
        return self._valence[key]

    def next_pattern(self, pattern: str, move: str) -> str:
        if (pattern, move) not in self._pattern:
            chain = [self.pattern.get(f"{pattern}|{move}", {}), self.pattern.get(pattern, {})]
            self._pattern[(pattern, move)] = _argmax_smoothed(chain, pattern, self.pseudo)
        return self._pattern[(pattern, move)]

    def client_step(self, valence: str, intensity: int, exposure: str, affect: str | None, t: int, i: int) -> tuple[str, int]:
        """The next valence and intensity of the ``i``-th client at step ``t``."""
        key = (valence, intensity, exposure, affect, t, i)
        if key not in self._client:
            level = min(10, max(0, dithered(intensity + self.delta(band(intensity), exposure, affect), t, i)))
            self._client[key] = (self.next_valence(valence, exposure, affect), level)
        return self._client[key]

    def transition(self, state: HiddenState, heard: Heard, clients: Sequence[str], t: int) -> HiddenState:
        """The state after step ``t`` (1-based) heard as ``heard``."""
        emotions = {}
        for i, c in enumerate(clients):
            s = state.emotions[c]
            exposure = heard.exposure(c)
            vale, intensity = self.client_step(s.valence, s.intensity, exposure, heard.affect if exposure in ("alone", "group") else None, t, i)
            emotion = s.emotion if (vale, intensity) == (s.valence, s.intensity) else _emotion_word(vale, intensity)
            # built without validation: every value comes from a validated state or the model's own tables
            emotions[c] = ClientState.model_construct(emotion=emotion, valence=vale, intensity=intensity)
        return HiddenState.model_construct(emotions=emotions, stances=dict(state.stances), pattern=self.next_pattern(state.pattern, move_of(heard)))

    def next_speaker(self, heard: Heard, clients: Sequence[str], spoken: Sequence[str], real: Sequence[str]) -> str:
        """The client whose role at this step most often spoke next (ties: the least recent speaker,
        then client order)."""
        roles = speaker_roles(heard, clients, spoken, real)
        last_turn = {c: max((i for i, s in enumerate(spoken) if s == c), default=-1) for c in clients}

        def rate(c: str) -> float:
            r = self.speaker.get(roles[c])
            return r.rate if r else 0.5

        return max(clients, key=lambda c: (rate(c), -last_turn[c], -list(clients).index(c)))


def _keys(level: str, exposure: str) -> list[str]:
    """A cell and its parents: the exposure, whether the client was addressed at all, the level band, all."""
    reached = "addressed" if exposure in ("alone", "group") else "not_addressed"
    return [f"{level}|{exposure}", f"{level}|{reached}", level, "all"]


def _argmax_smoothed(chain: list[dict[str, int]], stay: str, pseudo: float) -> str:
    """The most likely next label: the first table's counts shrunk toward the next's, the last toward
    staying (``stay``); ties keep ``stay``, then alphabetical."""
    prior: dict[str, float] = {stay: 1.0}
    for counts in reversed(chain):
        total = sum(counts.values())
        labels = set(prior) | set(counts)
        prior = {v: (counts.get(v, 0) + pseudo * prior.get(v, 0.0)) / (total + pseudo) for v in labels}
    return min(prior, key=lambda v: (-round(prior[v], 12), v != stay, v))


def _emotion_word(vale: str, intensity: int) -> str:
    if vale == "negative":
        return "very upset" if intensity >= 7 else "upset" if intensity >= 4 else "uneasy"
    return "at ease" if vale == "positive" else "calmer"


def move_of(heard: Heard) -> str:
    return "silence" if heard.silent else "one" if len(heard.recipients) == 1 else "several"


def speaker_roles(heard: Heard, clients: Sequence[str], spoken: Sequence[str], real: Sequence[str]) -> dict[str, str]:
    """Each client's role at a step: ``<exposure>|<last|follower|other>`` (``follower``: among the
    clients who most often spoke right after the last client speaker in ``real``)."""
    from rescue_bench.sim.scripted import habitual_follower

    last = next((s for s in reversed(spoken) if s in clients), None)
    followers = set(habitual_follower(last, real, clients)) if last else set()
    return {c: f"{heard.exposure(c)}|{'last' if c == last else 'follower' if c in followers else 'other'}" for c in clients}


# --------------------------------------------------------------------------------------------------
# units: the sessions' own steps
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChangeUnit:
    sample_id: str
    k: int
    client: str
    exposure: str
    affect: str | None
    before: int
    after: int
    valence_before: str
    valence_after: str
    fits: bool
    """The move's annotated strategy fits the pattern (for the scripted rules' comparison)."""
    top: bool
    """The client was the most distressed before the move."""


@dataclass(frozen=True)
class SpeakerUnit:
    sample_id: str
    roles: tuple[tuple[str, str], ...]
    chosen: str


@dataclass(frozen=True)
class PatternUnit:
    sample_id: str
    before: str
    move: str
    after: str


def _annotation(row: Any, client: str) -> tuple[str, int] | None:
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


def _window_end(rows: Sequence[Any], move: int) -> int:
    """The end (exclusive) of the rows whose annotations count as after the move at 0-based row
    ``move``: at most :data:`WINDOW` rows, and never past the therapist's next move (a change after
    it is not this move's)."""
    end = min(len(rows), move + 1 + WINDOW)
    return next((j for j in range(move + 1, end) if rows[j].is_therapist), end)


def clip_units(
    clip: Clip, affect_of: dict[int, str]
) -> tuple[list[ChangeUnit], list[SpeakerUnit], list[PatternUnit]]:
    """The units of one clip (see the module doc); ``affect_of``: 0-based row -> the affect its words
    are read as (by a reader that did not see this clip)."""
    from rescue_bench.sim.scripted import fits as fits_rule
    from rescue_bench.sim.state import most_distressed

    rows = clip.rows
    clients = list(clip.clients)
    labels = patterns(clip.scenario)
    notes = [{c: a for c in clients if (a := _annotation(r, c)) is not None} for r in rows]
    changes: list[ChangeUnit] = []
    speakers: list[SpeakerUnit] = []
    pats: list[PatternUnit] = []
    spoken_all = [r.speaker for r in rows]
    for k in range(len(rows) - 1):
        if not rows[k].is_client:
            continue
        recipients, words, strategy, at = real_move(clip, k)
        heard = Heard(recipients=recipients, words=words or None, affect=affect_of.get(at) if at is not None else None)
        cards = role_cards(clip, k)
        state = initial_state(cards, clients)
        top = most_distressed(state, clients)
        fit = fits_rule(strategy, state.pattern, clip.scenario)
        end = _window_end(rows, k + 1 if at is not None else k)
        for c in clients:
            before = next((notes[j][c] for j in range(k, -1, -1) if c in notes[j]), None)
            after = next((notes[j][c] for j in range(k + 1, end) if c in notes[j]), None)
            if before is None or after is None:
                continue
            exposure = heard.exposure(c)
            changes.append(
                ChangeUnit(clip.sample_id, k, c, exposure, heard.affect if exposure in ("alone", "group") else None,
                           before[1], after[1], before[0], after[0], fit, c == top)
            )
        nxt = next((j for j in range(k + 1, len(rows)) if rows[j].speaker in clients), None)
        if nxt is not None:
            roles = speaker_roles(heard, clients, spoken_all[: k + 1], spoken_all[: k + 1])
            speakers.append(SpeakerUnit(clip.sample_id, tuple(roles.items()), rows[nxt].speaker))
            after_pattern = next((v for r in rows[k + 1 : nxt + 1] for v in (r.cycle_state, r.pattern) if v in labels), None)
            if after_pattern is not None:
                pats.append(PatternUnit(clip.sample_id, state.pattern, move_of(heard), after_pattern))
    # the clients' own turns to each other: what words addressed to a client do
    for t, r in enumerate(rows):
        if not r.is_client or t not in affect_of:
            continue
        addressed = [c for c in clients if c != r.speaker and (c in r.targets or clip.group_label in r.targets)]
        end = _window_end(rows, t)
        for c in addressed:
            before = next((notes[j][c] for j in range(t, -1, -1) if c in notes[j]), None)
            after = next((notes[j][c] for j in range(t + 1, end) if c in notes[j]), None)
            if before is None or after is None:
                continue
            exposure = "alone" if len(addressed) == 1 else "group"
            changes.append(ChangeUnit(clip.sample_id, t, c, exposure, affect_of[t], before[1], after[1], before[0], after[0], False, False))
    return changes, speakers, pats


def unit_readings(clips: Sequence[Clip], readers: dict[str, LinearReader]) -> dict[str, dict[int, str]]:
    """Every row's words read by the reader of its clip (fitted without that clip)."""
    out: dict[str, dict[int, str]] = {}
    for clip in clips:
        reader = readers.get(clip.sample_id)
        rows = [(i, r.text) for i, r in enumerate(clip.rows) if r.text]
        out[clip.sample_id] = dict(zip([i for i, _ in rows], reader.predict([t for _, t in rows]))) if reader and rows else {}
    return out


# --------------------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------------------


def _cells(units: Sequence[ChangeUnit], pseudo: float) -> dict[str, Cell]:
    """The intensity cells (``band|exposure``, ``band``, ``all``, each shrunk toward its parent) and
    the words' effects (``affect|<affect>``: the mean of addressed units' changes beyond their cell,
    shrunk toward none)."""
    sums: dict[str, list[float]] = {}
    for u in units:
        for key in _keys(band(u.before), u.exposure):
            sums.setdefault(key, []).append(u.after - u.before)
    out: dict[str, Cell] = {}
    parent_of = {k: ks[i + 1] if i + 1 < len(ks) else None for u in units for ks in [_keys(band(u.before), u.exposure)] for i, k in enumerate(ks)}
    for key in sorted(sums, key=lambda k: (k != "all", k.count("|"), k.endswith(EXPOSURES))):  # parents first
        values = sums[key]
        parent = out[p].value if (p := parent_of[key]) is not None else 0.0
        out[key] = Cell(n=len(values), total=float(sum(values)), value=(sum(values) + pseudo * parent) / (len(values) + pseudo))
    beyond: dict[str, list[float]] = {}
    for u in units:
        if u.affect and u.exposure in ("alone", "group"):
            beyond.setdefault(u.affect, []).append(u.after - u.before - out[f"{band(u.before)}|{u.exposure}"].value)
    for affect in sorted(beyond):
        values = beyond[affect]
        out[f"affect|{affect}"] = Cell(n=len(values), total=float(sum(values)), value=sum(values) / (len(values) + pseudo))
    return out


def _counts(pairs: Sequence[tuple[str, str]]) -> dict[str, dict[str, int]]:
    out: dict[str, Counter[str]] = {}
    for key, label in pairs:
        out.setdefault(key, Counter())[label] += 1
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


class Tables(TypedDict):
    """A fitted model's tables (:class:`FittedModel`'s fields of the same names)."""

    intensity: dict[str, Cell]
    valence: dict[str, dict[str, int]]
    pattern: dict[str, dict[str, int]]
    speaker: dict[str, Rate]
    units: dict[str, int]


HeldOut = dict[str, float | int | None]
"""Intensity change predicted for held-out clips: the units and the mean absolute error of each predictor."""


def _tables(
    changes: Sequence[ChangeUnit], speakers: Sequence[SpeakerUnit], pats: Sequence[PatternUnit], pseudo: float, affect_used: bool
) -> Tables:
    val_pairs: list[tuple[str, str]] = []
    for u in changes:
        val_pairs.append((f"{u.valence_before}|{u.exposure}", u.valence_after))
        if u.affect and affect_used and u.exposure in ("alone", "group"):
            val_pairs.append((f"{u.valence_before}|addressed|{u.affect}", u.valence_after))
    chosen: Counter[str] = Counter()
    available: Counter[str] = Counter()
    for s in speakers:
        for c, role in s.roles:
            available[role] += 1
            chosen[role] += c == s.chosen
    pat_pairs = [(f"{p.before}|{p.move}", p.after) for p in pats] + [(p.before, p.after) for p in pats]
    return {
        "intensity": _cells(changes, pseudo),
        "valence": _counts(val_pairs),
        "pattern": _counts(pat_pairs),
        "speaker": {r: Rate(chosen=chosen[r], available=available[r], rate=(chosen[r] + 1) / (available[r] + 2)) for r in sorted(available)},
        "units": {"intensity": len(changes), "speaker": len(speakers), "pattern": len(pats)},
    }


def data_digest(clips: Sequence[Clip]) -> str:
    h = hashlib.sha256()
    for clip in clips:
        h.update(json.dumps(clip.to_json(), sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()


@dataclass
class Fit:
    """A model with what it was built from: its units and a model per held-out clip."""

    model: FittedModel
    changes: list[ChangeUnit]
    folds: dict[str, FittedModel]


def fit(clips: Sequence[Clip], name: str, *, pseudo: float = PSEUDO, seed: int = 0) -> Fit:
    """Fit the simulator on ``clips`` (see the module doc), with a model per held-out clip for the
    held-out effects (``Fit.folds``)."""
    if len(clips) < 2:
        raise ValueError(f"a simulator is fitted on two clips or more (cross-fitted by clip); got {len(clips)}")
    readers, affect_records = crossfit(clips, affect_rows)
    readings = [measure("affect", affect_records, used=True, seed=seed), measure_names(clips)]
    for scenario in ("couple", "family"):
        chosen = [c for c in clips if c.scenario == scenario]
        if len(chosen) >= 2:
            readings.append(measure(f"strategy ({scenario})", crossfit(chosen, strategy_rows)[1], used=False, seed=seed))
    affect_used = readings[0].used
    texts = [(t, y) for c in clips for _, t, y in affect_rows(c)]
    reader = fit_linear([t for t, _ in texts], [y for _, y in texts])
    read = unit_readings(clips, readers)
    per_clip = {c.sample_id: clip_units(c, read[c.sample_id]) for c in clips}
    changes = [u for v in per_clip.values() for u in v[0]]
    source = Source(name=name, sha256=data_digest(clips), clips=[c.sample_id for c in clips], rows=sum(len(c.rows) for c in clips))

    def build(keep: Sequence[str], words: LinearReader, effects: list[Effect], heldout: HeldOut) -> FittedModel:
        ch = [u for s in keep for u in per_clip[s][0]]
        sp = [u for s in keep for u in per_clip[s][1]]
        pa = [u for s in keep for u in per_clip[s][2]]
        return FittedModel(source=source, pseudo=pseudo, reader=words, readings=readings, affect_used=affect_used,
                           effects=effects, heldout=heldout, **_tables(ch, sp, pa, pseudo, affect_used))

    ids = [c.sample_id for c in clips]
    # a held-out clip's model: its tables and its reader fitted on the other clips only
    folds = {s: build([o for o in ids if o != s], readers.get(s, reader), [], {}) for s in ids}
    effects, heldout = held_out_effects(changes, folds, clips)
    return Fit(build(ids, reader, effects, heldout), changes, folds)


# --------------------------------------------------------------------------------------------------
# effects on held-out clips
# --------------------------------------------------------------------------------------------------


def _scripted_change(u: ChangeUnit) -> int:
    """The change the ``scripted`` rules give this unit's client (rules 2-3 of that module)."""
    if u.exposure == "alone":
        drop = 2 if u.fits else 1
    elif u.exposure == "group":
        drop = 1 if u.fits else 0
    else:
        return 1 if u.top and u.before < 10 else 0
    return -min(drop, u.before)


def _predicted(model: FittedModel, u: ChangeUnit) -> float:
    """The change the model expects for the unit's client (before the simulator rounds it)."""
    return min(10.0, max(0.0, u.before + model.delta(band(u.before), u.exposure, u.affect))) - u.before


EFFECT_ARMS: tuple[tuple[str, tuple[str, str], Any, Any], ...] = (
    ("high band: addressed alone vs left out", ("alone", "left out"),
     lambda u: u.before >= 7 and u.exposure == "alone", lambda u: u.before >= 7 and u.exposure == "left_out"),
    ("high band: in a group vs left out", ("group", "left out"),
     lambda u: u.before >= 7 and u.exposure == "group", lambda u: u.before >= 7 and u.exposure == "left_out"),
    ("mid band: addressed alone vs left out", ("alone", "left out"),
     lambda u: 4 <= u.before <= 6 and u.exposure == "alone", lambda u: 4 <= u.before <= 6 and u.exposure == "left_out"),
    ("most distressed: addressed vs left out (silence too)", ("addressed", "left out"),
     lambda u: u.top and u.exposure in ("alone", "group"), lambda u: u.top and u.exposure in ("left_out", "silence")),
    ("words to them: hostile vs neutral", ("hostile", "neutral"),
     lambda u: u.affect == "hostile", lambda u: u.affect == "neutral"),
    ("words to them: warm vs neutral", ("warm", "neutral"),
     lambda u: u.affect == "warm", lambda u: u.affect == "neutral"),
)
"""The effects the report shows: name, arm labels, and which units are in each arm."""


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def held_out_effects(
    changes: Sequence[ChangeUnit], folds: dict[str, FittedModel], clips: Sequence[Clip]
) -> tuple[list[Effect], HeldOut]:
    """Each effect of :data:`EFFECT_ARMS` as annotated, as predicted for held-out clips, and as the
    scripted rules have it; and the held-out mean absolute error of the change (model and no change)."""
    pred = [_predicted(folds[u.sample_id], u) for u in changes]
    effects = []
    for name, labels, a, b in EFFECT_ARMS:
        arm_a = [i for i, u in enumerate(changes) if a(u)]
        arm_b = [i for i, u in enumerate(changes) if b(u)]

        def contrast(values: Sequence[float], ia: list[int] = arm_a, ib: list[int] = arm_b) -> float | None:
            ma, mb = _mean([values[i] for i in ia]), _mean([values[i] for i in ib])
            return None if ma is None or mb is None else round(ma - mb, 4)

        effects.append(
            Effect(
                name=name, arms=labels, n=(len(arm_a), len(arm_b)),
                observed=contrast([u.after - u.before for u in changes]), fitted=contrast(pred),
                scripted=contrast([_scripted_change(u) for u in changes]),
            )
        )
    truth = [u.after - u.before for u in changes]
    heldout: HeldOut = {
        "units": len(changes),
        "mae_fitted": round(sum(abs(p - t) for p, t in zip(pred, truth)) / len(truth), 4) if truth else None,
        "mae_no_change": round(sum(abs(t) for t in truth) / len(truth), 4) if truth else None,
        "mae_scripted": round(sum(abs(_scripted_change(u) - t) for u, t in zip(changes, truth)) / len(truth), 4) if truth else None,
    }
    return effects, heldout


# --------------------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------------------


def default_model_path() -> Path:
    return Path(str(resources.files("rescue_bench.sim").joinpath(DEFAULT_MODEL)))


@cache
def _load(path: str, mtime: float) -> FittedModel:
    return FittedModel.model_validate_json(Path(path).read_text(encoding="utf-8"))


def load_model(path: str | Path | None = None) -> FittedModel:
    """The fitted model at ``path`` (the bundled default when ``None``); raises ``ValueError`` naming
    the file when it is not a model of this version."""
    p = Path(path) if path is not None else default_model_path()
    try:
        return _load(str(p.resolve()), p.stat().st_mtime)
    except OSError as exc:
        raise ValueError(f"{p}: cannot read the simulator model ({exc.strerror or exc})") from None
    except ValueError as exc:
        first = str(exc).splitlines()
        raise ValueError(f"{p}: not a {MODEL_KIND} file of version {MODEL_VERSION} ({first[0] if first else exc})") from None


def write_model(model: FittedModel, path: str | Path) -> None:
    from rescue_bench.fileio import atomic_write_json

    atomic_write_json(Path(path), model.model_dump(mode="json"))


# --------------------------------------------------------------------------------------------------
# the clients' words
# --------------------------------------------------------------------------------------------------


LINES: dict[str, tuple[str, ...]] = {
    "high": (
        "I can't keep doing this. I'm really hurt, and I feel so alone in this.",
        "I'm exhausted. Every time we get here it ends the same way.",
        "Honestly, I don't know why I'm even still trying.",
        "It's too much. Nobody here seems to get how bad it is for me.",
        "I'm so angry right now I can barely think.",
    ),
    "mid": (
        "I'm frustrated and worried about where this is going.",
        "I don't like how this keeps going round in circles.",
        "It still bothers me, more than I usually let on.",
        "I want this to change, I just don't see how yet.",
    ),
    "low": (
        "I'm a little tense about this.",
        "It's a bit uncomfortable, but I can talk about it.",
        "Something still nags at me, if I'm honest.",
    ),
    "neutral": (
        "Okay. I think I can hear that.",
        "Maybe. I'd need to think about it.",
        "Alright, go on.",
        "I suppose that's fair.",
    ),
    "positive": (
        "That actually helps. I feel heard.",
        "Thank you. That makes it easier to say.",
        "I think I'm a bit calmer now.",
        "Yes, that's what I meant.",
    ),
}
TOWARD_OTHER: dict[str, tuple[str, ...]] = {
    "hostile": ("{other}, you never listen to me.", "{other}, this is on you.", "{other}, you always do this."),
    "guarded": ("{other}, I don't know if I can believe you.", "{other}, I've heard that before.", "I'm not sure {other} means it."),
    "neutral": ("",),
    "warm": ("{other}, I know you're trying.", "{other}, I do want us to get through this.", "I can see {other} cares."),
}


OPENERS: tuple[str, ...] = ("", "Well... ", "I mean, ", "Look, ", "Honestly, ")
"""Ways a turn may start: with the lines and tails, enough combinations for an episode without a repeat."""


def _opened(opener: str, line: str) -> str:
    return opener + (line if not opener or line.startswith("I ") or line.startswith("I'") else line[0].lower() + line[1:])


def client_turn(speaker: str, state: HiddenState, clients: Sequence[str], said: Sequence[str], salt: str) -> str:
    """A fixed-phrase turn of ``speaker`` in ``state`` (their valence and intensity band, and their
    stance toward the coldest other client) that is none of ``said`` (what was said so far) while a
    combination is left; ``salt`` picks among the phrases (the episode and step, so runs repeat)."""
    from rescue_bench.sim.state import STANCES

    s = state.emotions[speaker]
    key = band(s.intensity) if s.valence == "negative" else s.valence
    others = [c for c in clients if c != speaker]
    tails: tuple[str, ...] = ("",)
    coldest = None
    if others:
        coldest = min(others, key=lambda o: (STANCES.index(state.stances[pair_key(speaker, o)]), list(clients).index(o)))
        tails = TOWARD_OTHER[state.stances[pair_key(speaker, coldest)]]
    options = [
        f"{_opened(opener, base)} {tail.format(other=coldest)}".strip() for opener in OPENERS for tail in tails for base in LINES[key]
    ]
    start = int(hashlib.sha256(f"{salt}|{speaker}".encode()).hexdigest()[:8], 16) % len(options)
    seen = set(said)
    for i in range(len(options)):
        candidate = options[(start + i) % len(options)]
        if candidate not in seen:
            return candidate
    return options[start]


__all__ = [
    "AFFECTS",
    "EXPOSURES",
    "FITTED",
    "FittedModel",
    "client_turn",
    "default_model_path",
    "fit",
    "load_model",
    "write_model",
]

