"""The offline ``fitted`` simulator: small fitted models that nest their floors, and stated assumptions.

A fitted model (:class:`FittedModel`, a typed, versioned JSON file written by ``rescue sim fit``;
fitted by :mod:`rescue_bench.sim.fitting` on the sessions' own steps, :mod:`rescue_bench.sim.units`)
plays one step of the clients from the state before it and what they heard
(:class:`rescue_bench.sim.hearing.Heard`). Each part is a **component** (:class:`Component`): a small
model from scikit-learn whose floor is one of its special cases, or that floor itself when the model
did not beat it on sessions it was not fitted on:

* **intensity**: each client's expected change, a ridge regression on the level, how the step reached
  them (:data:`rescue_bench.sim.hearing.REACHES`, silence the baseline) and the pattern's value; the
  floor is **no change** (every coefficient 0, what the penalty shrinks toward);
* **valence**: each client's next valence, an ordinal model (two logistic regressions: above
  negative, and positive) on the valence before, the reach and the pattern's value; the floor is
  **no change**; used only when it keeps order (a client who starts more negative never ends more
  positive on average: both weights of the valence before are positive);
* **pattern** (per scenario): the next pattern, a multinomial logistic regression on the pattern
  before and the move (silence, one client, several); the floor is **no change**;
* **next speaker**: a linear score over each client's :data:`rescue_bench.sim.units.SPEAKER_FEATURES`
  (a pairwise logistic regression); the floors are the same score with fixed weights ("the last
  client keeps the floor", "addressed alone, else the last client", "the least recent speaker").

What session data cannot identify is an **assumption** (:class:`Assumption`), declared with its value
and its reason and stored in the file: what the words' affect (warm, neutral, hostile: the reader of
:mod:`rescue_bench.sim.reader`) does to a client they are said to. Therapists in real sessions do not
insult anyone, and how warm their words are goes with how upset the clients are, so no fit on
sessions can tell what the words themselves do. The assumed effects make warmth monotone for every
reach: warm >= neutral >= hostile, by construction (:class:`Assumption` refuses a sign that breaks
it). ``rescue sim eval`` states how its ranking moves when they move
(:mod:`rescue_bench.sim.sensitivity`).

**Expected states.** The simulator plays the expected state: a client's intensity is their expected
intensity (a real number), their valence and the pattern are probabilities
(:class:`rescue_bench.sim.state.HiddenState`), and J is computed from them; nothing is rounded
between steps. Every step is a function on arrays (:meth:`FittedModel.step_arrays`), so the floors
and the optimum (:mod:`rescue_bench.sim.floors`) play many moves at once through the very same code.

The hidden state's stances are kept as they are: the release annotates too few viewpoint pairs in a
row to estimate how they move.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from rescue_bench.labels import patterns
from rescue_bench.sim.hearing import ADDRESSED, REACHES, move_of, reach
from rescue_bench.sim.options import FITTED
from rescue_bench.sim.reader import AFFECTS, Inference, LinearReader, marker_affect
from rescue_bench.sim.record import Heard
from rescue_bench.sim.state import PATTERN_VALUE, VALENCE_WEIGHT, VALENCES, ClientState, HiddenState
from rescue_bench.sim.units import SPEAKER_FEATURES, choose_speaker, speaker_features
from rescue_bench.summary import FloorCheck

MODEL_KIND: Literal["rescue-sim-model"] = "rescue-sim-model"
MODEL_VERSION: Literal[2] = 2
DEFAULT_MODEL = "models/demo.json"
"""The bundled default, fitted on the bundled synthetic demo only."""

INTENSITY_FEATURES: tuple[str, ...] = ("intercept", "level", "alone", "subgroup", "group", "left_out", "pattern")
"""The intensity change's features: 1; (intensity - 5) / 5; the reach (silence is the baseline); the
pattern's expected value (-1..1)."""
VALENCE_FEATURES: tuple[str, ...] = ("valence", "alone", "subgroup", "group", "left_out", "pattern")
"""The next valence's features: the valence before (0 negative, 1 neutral, 2 positive); the reach;
the pattern's expected value."""
VALENCE_STEPS: tuple[str, ...] = ("not_negative", "positive")
"""The valence component's two logistic regressions (an ordinal model: each of the K - 1 steps up
the scale, Frank and Hall 2001): the chance the next valence is above negative, and that it is positive."""
PATTERN_MOVES: tuple[str, ...] = ("one", "several")
"""The next pattern's move features beside the pattern before (silence is the baseline)."""
SPEAKER_FLOORS: dict[str, tuple[float, ...]] = {
    "the last client keeps the floor": (1, 0, 0, 0, 0, 0, 0),
    "the client addressed alone, else the last client": (1, 0, 2, 0, 0, 0, 0),
    "the least recent speaker": (0, 1, 0, 0, 0, 0, 0),
}
"""The next speaker's floors as weights of :data:`rescue_bench.sim.units.SPEAKER_FEATURES` (ties: the
least recent speaker, then client order)."""
NO_CHANGE = "no change"

_REACH = {r: i for i, r in enumerate(REACHES)}
_ADDRESSED = np.array([r in ADDRESSED for r in REACHES])
_AFFECT = {a: i for i, a in enumerate(AFFECTS)}
NO_AFFECT = -1
"""The affect index of silence (no words)."""
_WEIGHTS = np.array([VALENCE_WEIGHT[v] for v in VALENCES])


# --------------------------------------------------------------------------------------------------
# the model file
# --------------------------------------------------------------------------------------------------


class CrossValidation(BaseModel):
    """How a component and its floor did on the units of sessions left out of the fit (leave one
    group out: a couple or family; one clip when the data holds a single group)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    measure: str
    """``mae`` (intensity change, lower is better) or ``accuracy`` (higher is better)."""
    folds: str
    """What was left out: ``group`` or ``clip``; ``none`` when the data holds one of each (no check)."""
    n_folds: int
    units: int
    scores: dict[str, float | None]
    """Each candidate (the floors by name, a learned model by its penalty) and its score."""


class Component(BaseModel):
    """One part of the simulator: a learned linear model, or its floor (``source``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["learned", "floor"]
    floor: str
    """The floor this component is or would fall back to (the best floor by the cross-validation)."""
    penalty: float | None = None
    """The regularisation chosen (ridge alpha, or logistic C); ``None`` for a floor."""
    features: list[str]
    classes: list[str] = Field(default_factory=list)
    """The classes of a multinomial component, in the order of ``coef``'s rows (none for a regression or a score)."""
    coef: list[list[float]]
    """One row of weights per class (one row for a regression or a score), one weight per feature."""
    intercept: list[float] = Field(default_factory=list)
    cv: CrossValidation | None = None
    note: str = ""

    @property
    def learned(self) -> bool:
        return self.source == "learned"


class Assumption(BaseModel):
    """An effect the data cannot identify, declared: its value and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    component: Literal["intensity", "valence"]
    affect: Literal["warm", "hostile"]
    value: float
    """Intensity points per step (intensity); the share of a client's valence moved one step, toward
    positive for warm words and toward negative for hostile ones (valence, 0-0.5)."""
    why: str

    @model_validator(mode="after")
    def _monotone(self) -> Assumption:
        sign = -1 if self.affect == "warm" else 1
        if self.component == "intensity" and sign * self.value < 0:
            raise ValueError(f"{self.name}: {self.affect} words must not move intensity {'up' if sign < 0 else 'down'} (warm >= neutral >= hostile)")
        if self.component == "valence" and not 0 <= self.value <= 0.5:
            raise ValueError(f"{self.name}: a share of valence moved per step is 0-0.5 (got {self.value})")
        return self


ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption(
        name="warm words calm", component="intensity", affect="warm", value=-0.4,
        why="validation and empathy lower arousal a little (the project's assumption); sessions cannot show it: "
        "therapists' warmth rises with the clients' distress",
    ),
    Assumption(
        name="hostile words inflame", component="intensity", affect="hostile", value=1.0,
        why="blame and contempt raise arousal more than warmth lowers it (the project's assumption); "
        "no therapist in the sessions insults anyone",
    ),
    Assumption(
        name="warm words soften", component="valence", affect="warm", value=0.15,
        why="a validated client turns a little more positive (the project's assumption)",
    ),
    Assumption(
        name="hostile words sour", component="valence", affect="hostile", value=0.3,
        why="a blamed client turns more negative (the project's assumption); no session shows it",
    ),
)
"""The default assumptions: the words' effects on a client they are said to."""


class EffectEstimate(BaseModel):
    """One effect of the simulator as ``rescue sim fit`` and the report show it: learned with its
    interval, a component at its floor, or assumed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    component: str
    status: Literal["learned", "floor", "assumed"]
    value: float | None
    ci: tuple[float, float] | None = None
    """95% percentile interval over clips (bootstrap; none from fewer than 3 clips)."""
    units: int | None = None
    note: str = ""


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """What the model was fitted on, as given (``demo``, or the data paths)."""
    sha256: str
    """Of the clips' JSON, in order."""
    clips: list[str]
    """Sample ids (a fidelity run on these clips refits without each one's group)."""
    groups: int
    """Couples and families (:func:`rescue_bench.sim.units.group_of`)."""
    rows: int


class FittedModel(BaseModel):
    """A fitted simulator (see the module doc). ``kind`` and ``version`` name the file format."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["rescue-sim-model"] = MODEL_KIND
    version: Literal[2] = MODEL_VERSION
    source: Source
    reader: LinearReader
    readings: list[Inference]
    affect_used: bool
    """The learned reader reads the words (on held-out sessions it beat chance and the marker lists);
    otherwise the project's marker lists do (:func:`rescue_bench.sim.reader.marker_affect`), the reader's floor."""
    intensity: Component
    valence: Component
    patterns: dict[str, Component]
    speaker: Component
    assumptions: list[Assumption] = Field(default_factory=lambda: list(ASSUMPTIONS))
    effects: list[EffectEstimate] = Field(default_factory=list)
    validation: list[FloorCheck] = Field(default_factory=list)
    """The simulator against its best floor on sessions it was not fitted on (the fit's leave-one-group-out)."""
    variant: str = ""
    """Empty for the model as fitted; a sensitivity variant's name (:mod:`rescue_bench.sim.sensitivity`)."""
    _read: dict[str, str] = PrivateAttr(default_factory=dict)

    def sha256(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    @property
    def monotone(self) -> bool:
        """A calmer client never ends a step less calm than a more upset one under the same move: the
        intensity rises with the intensity before (its level weight is above -5 points per 5) and the
        valence component keeps order (a learned one is checked when fitted). With the assumptions'
        signs, warm words are then never worse than neutral ones, nor neutral than hostile ones, over
        any number of steps."""
        return not self.intensity.learned or self.intensity.coef[0][INTENSITY_FEATURES.index("level")] > -5.0

    # -- reading ---------------------------------------------------------------------------------
    def read(self, words: str) -> str:
        """The affect of ``words``: the learned reader's when it is used, else the marker lists'."""
        if words not in self._read:
            self._read[words] = self.reader.predict([words])[0] if self.affect_used else marker_affect(words)
        return self._read[words]

    def assumed(self, component: str, affect: str) -> float:
        return sum(a.value for a in self.assumptions if a.component == component and a.affect == affect)

    # -- the step on arrays ----------------------------------------------------------------------
    def _array(self, name: str) -> np.ndarray:
        """The step's weights as arrays (made afresh: a variant, :func:`rescue_bench.sim.sensitivity.variants`, is a copy with other weights)."""
        if name == "intensity":
            return np.array(self.intensity.coef[0]) if self.intensity.learned else np.zeros(len(INTENSITY_FEATURES))
        if name == "words":
            return words_change(self.assumptions)
        if name == "shift":
            return valence_shifts(self.assumptions)
        raise KeyError(name)

    def intensity_step(self, x: np.ndarray, reach: np.ndarray, affect: np.ndarray, pv: np.ndarray) -> np.ndarray:
        """Next expected intensities ``[..., clients]`` from ``x`` (same shape), each client's reach
        index ``reach`` (same shape), the words' affect index per state ``affect`` (``[...]``,
        :data:`NO_AFFECT` for silence) and the pattern's expected value ``pv`` (``[...]``)."""
        change = intensity_change(self._array("intensity"), x, reach, pv) + addressed(reach, affect, self._array("words"))
        return np.clip(x + change, 0.0, 10.0)

    def valence_step(self, p: np.ndarray, reach: np.ndarray, affect: np.ndarray, pv: np.ndarray) -> np.ndarray:
        """Next valence probabilities ``[..., clients, 3]`` (:data:`VALENCES` order) from ``p``."""
        out = np.einsum("...v,...vk->...k", p, valence_matrix(self.valence, reach, pv)) if self.valence.learned else p
        return shift_valence(out, addressed(reach, affect, self._array("shift")))

    def pattern_step(self, q: np.ndarray, scenario: str, move: np.ndarray) -> np.ndarray:
        """Next pattern probabilities ``[..., patterns]`` (the scenario's order) from ``q``; ``move``:
        0 silence, 1 one client, 2 several (``[...]``)."""
        c = self.patterns.get(scenario)
        if c is None or not c.learned:
            return q
        return np.einsum("...k,...kj->...j", q, pattern_matrix(c, patterns(scenario), move))

    def step_arrays(
        self, x: np.ndarray, p: np.ndarray, q: np.ndarray, reach: np.ndarray, affect: np.ndarray, move: np.ndarray, scenario: str
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step of many states at once: ``x`` ``[N, clients]`` intensities, ``p`` ``[N, clients, 3]``
        valences, ``q`` ``[N, patterns]``; ``reach`` ``[N, clients]``, ``affect`` and ``move`` ``[N]``."""
        pv = q @ pattern_values(scenario)
        return self.intensity_step(x, reach, affect, pv), self.valence_step(p, reach, affect, pv), self.pattern_step(q, scenario, move)

    # -- the step on a state ---------------------------------------------------------------------
    def transition(self, state: HiddenState, heard: Heard, clients: Sequence[str], scenario: str) -> HiddenState:
        """The expected state after a step heard as ``heard``."""
        x, p, q = state_arrays(state, clients, scenario)
        reach, affect, move = heard_arrays(heard, clients)
        x2, p2, q2 = self.step_arrays(x[None], p[None], q[None], reach[None], affect[None], move[None], scenario)
        return array_state(x2[0], p2[0], q2[0], state, clients, scenario)

    def next_speaker(self, heard: Heard, clients: Sequence[str], spoken: Sequence[str], real: Sequence[str]) -> str:
        """The client with the highest speaker score (ties: the least recent speaker, then client order)."""
        weights = np.array(self.speaker.coef[0])
        scores = [float(np.dot(weights, f)) for f in speaker_features(heard, clients, spoken, real)]
        return choose_speaker(scores, clients, spoken)


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def intensity_change(w: np.ndarray, x: np.ndarray, reach: np.ndarray, pv: np.ndarray) -> np.ndarray:
    """The learned part of the intensity change (weights ``w`` of :data:`INTENSITY_FEATURES`)."""
    onehot = np.eye(len(REACHES))[reach][..., 1:]  # the reach, silence the baseline
    return w[0] + w[1] * (x - 5.0) / 5.0 + onehot @ w[2:6] + w[6] * pv[..., None]


def addressed(reach: np.ndarray, affect: np.ndarray, by_affect: np.ndarray, shared: np.ndarray | None = None) -> np.ndarray:
    """The words' assumed effect on each client they were said to: ``by_affect[affect]`` shared among
    the ``shared`` clients who heard it (by default, those ``reach`` [..., clients] marks addressed),
    0 for the others and after silence. Attention is shared, as the balance of attention counts it:
    words to k clients move each of them by 1/k of what they move one client addressed alone."""
    hit = _ADDRESSED[reach]
    k = hit.sum(axis=-1, keepdims=True) if shared is None else shared
    return np.where(hit & (affect[..., None] >= 0), by_affect[np.maximum(affect, 0)][..., None] / np.maximum(k, 1), 0.0)


def words_change(assumptions: Sequence[Assumption]) -> np.ndarray:
    """The assumed intensity change of a client the words were said to, by affect (:data:`AFFECTS` order)."""
    return np.array([sum(a.value for a in assumptions if a.component == "intensity" and a.affect == affect) for affect in AFFECTS])


def valence_shifts(assumptions: Sequence[Assumption]) -> np.ndarray:
    """The assumed share of valence moved one step by the words, by affect: up for warm, down (negative) for hostile."""
    warm = sum(a.value for a in assumptions if a.component == "valence" and a.affect == "warm")
    hostile = sum(a.value for a in assumptions if a.component == "valence" and a.affect == "hostile")
    return np.array([warm if affect == "warm" else -hostile if affect == "hostile" else 0.0 for affect in AFFECTS])


def shift_valence(p: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``p`` ``[..., 3]`` with the share ``shift`` (``[...]``) of each valence moved one step toward
    positive (``shift > 0``) or toward negative (``< 0``); the end a share cannot pass keeps it."""
    up = np.clip(shift, 0, None)[..., None] * p
    down = np.clip(-shift, 0, None)[..., None] * p
    out = p - up - down
    out[..., 1:] += up[..., :-1]
    out[..., -1] += up[..., -1]
    out[..., :-1] += down[..., 1:]
    out[..., 0] += down[..., 0]
    return out


def _class_probs(component: Component, labels: Sequence[str], feats: np.ndarray) -> np.ndarray:
    """The component's probability of each of ``labels`` (0 for a label it was never fitted on)."""
    probs = _softmax(feats @ np.array(component.coef).T + np.array(component.intercept))
    idx = [component.classes.index(v) if v in component.classes else -1 for v in labels]
    return np.stack([probs[..., i] if i >= 0 else np.zeros(probs.shape[:-1]) for i in idx], axis=-1)


def valence_features(before: np.ndarray, reach: np.ndarray, pv: np.ndarray) -> np.ndarray:
    """:data:`VALENCE_FEATURES` of clients (``before``: valence index, broadcast with ``reach`` and ``pv``)."""
    shape = np.broadcast_shapes(np.shape(before), reach.shape, np.shape(pv))
    return np.concatenate(
        [np.broadcast_to(np.asarray(before, dtype=float), shape)[..., None], np.eye(len(REACHES))[np.broadcast_to(reach, shape)][..., 1:],
         np.broadcast_to(np.asarray(pv, dtype=float), shape)[..., None]],
        axis=-1,
    )


def valence_matrix(component: Component, reach: np.ndarray, pv: np.ndarray) -> np.ndarray:
    """``[..., clients, from, to]``: the learned valence component's transition from each valence
    before (``pv`` per state, ``[...]``): above negative with one regression's chance, positive with
    the other's (never more than the first)."""
    coef, icpt = np.array(component.coef), np.array(component.intercept)
    rows = []
    for v in range(len(VALENCES)):
        logits = valence_features(np.full(reach.shape, v), reach, pv[..., None]) @ coef.T + icpt  # [..., n, 2]
        above = 1 / (1 + np.exp(-logits[..., 0]))
        positive = np.minimum(above, 1 / (1 + np.exp(-logits[..., 1])))
        rows.append(np.stack([1 - above, above - positive, positive], axis=-1))
    return np.stack(rows, axis=-2)


def pattern_features(before: np.ndarray, move: np.ndarray, n: int) -> np.ndarray:
    """The pattern component's features: the pattern before (index) and the move (one, several)."""
    return np.concatenate([np.eye(n)[before], np.eye(3)[move][..., 1:]], axis=-1)


def pattern_matrix(component: Component, labels: Sequence[str], move: np.ndarray) -> np.ndarray:
    """``[..., from, to]``: the learned pattern component's transition for each pattern before."""
    rows = [_class_probs(component, labels, pattern_features(np.full(move.shape, k), move, len(labels))) for k in range(len(labels))]
    return np.stack(rows, axis=-2)


@cache
def pattern_values(scenario: str) -> np.ndarray:
    return np.array([PATTERN_VALUE.get(k, 0.0) for k in patterns(scenario)])


def state_arrays(state: HiddenState, clients: Sequence[str], scenario: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, p, q)`` of one state: intensities, valence probabilities, pattern probabilities."""
    x = np.array([float(state.emotions[c].intensity) for c in clients])
    p = np.array([[(e.valence_p or {e.valence: 1.0}).get(v, 0.0) for v in VALENCES] for e in (state.emotions[c] for c in clients)])
    labels = patterns(scenario)
    q = np.array([(state.pattern_p or {state.pattern: 1.0}).get(k, 0.0) for k in labels])
    if q.sum() == 0:  # a pattern outside the scenario's set (a model simulator's): no pattern moves it
        q = np.zeros(len(labels))
    return x, p, q


def heard_arrays(heard: Heard, clients: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(reach, affect, move)`` of a step: each client's reach index, the affect index, the move index."""
    reaches = np.array([_REACH[reach(heard, c, clients)] for c in clients])
    affect = np.array(NO_AFFECT if heard["silent"] or heard["affect"] is None else _AFFECT[heard["affect"]])
    move = np.array(("silence", "one", "several").index(move_of(heard)))
    return reaches, affect, move


def _certain(probs: dict[str, float]) -> str | None:
    """The label that holds all the probability, if one does."""
    top = max(probs, key=lambda k: probs[k])
    return top if probs[top] >= 1 - 1e-12 else None


def array_state(x: np.ndarray, p: np.ndarray, q: np.ndarray, before: HiddenState, clients: Sequence[str], scenario: str) -> HiddenState:
    """The :class:`HiddenState` of arrays (the stances of ``before``; a certain valence or pattern is kept as a label)."""
    emotions = {}
    for i, c in enumerate(clients):
        probs = {v: float(p[i, j]) for j, v in enumerate(VALENCES)}
        label = max(VALENCES, key=lambda v: (probs[v], -VALENCES.index(v)))
        certain = _certain(probs)
        intensity = float(x[i])
        s = before.emotions[c]
        unchanged = certain == s.valence and abs(intensity - s.intensity) < 1e-12 and s.valence_p is None
        # built without validation: every value comes from a validated state or the model's own arrays
        emotions[c] = ClientState.model_construct(
            emotion=s.emotion if unchanged else emotion_word(label, intensity), valence=label, intensity=intensity,
            valence_p=None if certain is not None else {v: round(probs[v], 12) for v in VALENCES},
        )
    labels = patterns(scenario)
    if q.sum() == 0:
        pattern, pattern_p = before.pattern, None
    else:
        probs = {k: float(q[j]) for j, k in enumerate(labels)}
        pattern = max(labels, key=lambda k: (probs[k], k == before.pattern))
        pattern_p = None if _certain(probs) is not None else {k: round(v, 12) for k, v in probs.items() if v > 0}
    return HiddenState.model_construct(emotions=emotions, stances=dict(before.stances), pattern=pattern, pattern_p=pattern_p)


def rewards(x: np.ndarray, p: np.ndarray, q: np.ndarray, scenario: str, stances: float, lam: float) -> np.ndarray:
    """The reward ``U - lambda max_i d_i`` of many expected states at once (``stances``: the stance
    half of U, :func:`rescue_bench.sim.state.stance_term`, which the ``fitted`` simulator never moves)."""
    distress = x / 10.0 * (p @ _WEIGHTS)
    top = distress.max(axis=-1) if distress.shape[-1] else np.zeros(distress.shape[:-1])
    return stances + 0.5 * (q @ pattern_values(scenario)) - lam * top


def emotion_word(vale: str, intensity: float) -> str:
    """A plain word for a valence and intensity (the state's ``emotion`` after a step)."""
    if vale == "negative":
        return "very upset" if intensity >= 7 else "upset" if intensity >= 4 else "uneasy"
    return "at ease" if vale == "positive" else "calmer"


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


def band(intensity: float) -> str:
    """``low`` (0-3), ``mid`` (4-6) or ``high`` (7-10) of an intensity, rounded half up."""
    level = math.floor(intensity + 0.5)
    return "low" if level <= 3 else "mid" if level <= 6 else "high"


def _opened(opener: str, line: str) -> str:
    return opener + (line if not opener or line.startswith("I ") or line.startswith("I'") else line[0].lower() + line[1:])


def client_turn(speaker: str, state: HiddenState, clients: Sequence[str], said: Sequence[str], salt: str) -> str:
    """A fixed-phrase turn of ``speaker`` in ``state`` (their most likely valence and intensity band,
    and their stance toward the coldest other client) that is none of ``said`` (what was said so far)
    while a combination is left; ``salt`` picks among the phrases (the episode and step, so runs repeat)."""
    from rescue_bench.sim.state import STANCES, pair_key

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
    "ASSUMPTIONS",
    "FITTED",
    "INTENSITY_FEATURES",
    "SPEAKER_FEATURES",
    "Assumption",
    "Component",
    "FittedModel",
    "client_turn",
    "default_model_path",
    "load_model",
    "write_model",
]
