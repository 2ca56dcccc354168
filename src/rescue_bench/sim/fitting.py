"""Fitting the ``fitted`` simulator (:mod:`rescue_bench.sim.fitted`) on annotated sessions, and checking
it on sessions it was not fitted on.

Every component is chosen by **leaving one group out** (a couple or a family,
:func:`rescue_bench.sim.units.group_of`; one clip at a time when the data holds a single group): each
candidate (the floor, and the learned model at each penalty of a small grid) is fitted without the
group and scored on its units, and the best score over all groups wins, the floor on a tie. So a
component falls back to its floor whenever its model does not beat that floor out of sample, and
says so. The intensity's learned weights get 95% intervals from a bootstrap over clips (at the chosen
penalty; none from fewer than 3 clips).

Then the whole simulator is checked: a model is fitted without each group (the very same procedure,
penalties chosen again without it), every decision point of the group is played by that model
(:mod:`rescue_bench.sim.fidelity`: the real therapist's move, one step), and each measure is set
against its best floor on those points (:func:`rescue_bench.sim.fidelity.validation`). The model
carries the result (``validation``), so every run that plays it shows whether it is better, no
different or worse than its floors on sessions it never saw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rescue_bench.data.models import Clip
from rescue_bench.labels import SCENARIOS, patterns
from rescue_bench.sim.fidelity import validate_folds
from rescue_bench.sim.fitted import (
    ASSUMPTIONS,
    INTENSITY_FEATURES,
    NO_CHANGE,
    PATTERN_MOVES,
    SPEAKER_FLOORS,
    VALENCE_FEATURES,
    VALENCE_STEPS,
    Assumption,
    Component,
    CrossValidation,
    EffectEstimate,
    FittedModel,
    Source,
    addressed,
    intensity_change,
    load_model,
    pattern_features,
    pattern_matrix,
    shift_valence,
    valence_features,
    valence_matrix,
    valence_shifts,
    words_change,
)
from rescue_bench.sim.hearing import REACHES
from rescue_bench.sim.offline import Fitted, OfflineSimulator, offline_simulator
from rescue_bench.sim.options import FITTED
from rescue_bench.sim.reader import (
    AFFECTS,
    LinearReader,
    ReadRow,
    affect_rows,
    crossfit,
    fit_linear,
    marker_affect,
    measure,
    measure_names,
    strategy_rows,
)
from rescue_bench.sim.state import VALENCES
from rescue_bench.sim.units import (
    SPEAKER_FEATURES,
    ChangeUnit,
    PatternUnit,
    SpeakerUnit,
    Units,
    data_digest,
    group_of,
    pick,
    units_of,
)

ALPHAS: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
"""Ridge penalties the intensity component is chosen among (its weights shrink toward no change)."""
CS: tuple[float, ...] = (0.1, 1.0, 10.0)
"""Inverse penalties the logistic components are chosen among."""
SOLVER = "newton-cholesky"
"""scikit-learn's solver for the logistic components: exact Newton steps, fast on these few features."""
BOOTSTRAP = 200
"""Resamples of clips behind the intensity weights' intervals."""
MIN_CLIPS_CI = 3
"""Fewest clips an interval is computed from."""
PV_GRID = (-1.0, -0.5, 0.0, 0.5, 1.0)
"""Pattern values the valence component's order is checked at."""

EFFECT_NAMES: dict[str, str] = {
    "intercept": "change a step after silence, at 5",
    "level": "change per 5 points above 5 (mean reversion)",
    "alone": "addressed alone (vs silence)",
    "subgroup": "addressed in a subgroup (vs silence)",
    "group": "addressed with the whole group (vs silence)",
    "left_out": "left out while others were addressed (vs silence)",
    "pattern": "per unit of the pattern's value",
}
"""How the report names each intensity weight (points per step)."""


# --------------------------------------------------------------------------------------------------
# leaving groups out
# --------------------------------------------------------------------------------------------------


def _folds(groups: Sequence[str], clips: Sequence[str]) -> tuple[str, list[str]]:
    """The fold of each unit: its group when the units hold two groups or more, else its clip (or
    ``none`` when they hold one clip)."""
    if len(set(groups)) >= 2:
        return "group", list(groups)
    if len(set(clips)) >= 2:
        return "clip", list(clips)
    return "none", []


Score = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""A candidate's score of each held-out unit (``test``) when fitted on the ``train`` units."""
PerUnit = dict[str, np.ndarray | None]


def _cross_validate(folds: list[str], candidates: dict[str, Score], perfect: float | None = None) -> PerUnit:
    """Each candidate's score of every unit, each scored by the candidate fitted without the unit's
    fold. With ``perfect`` (the best score a unit can have), once the first candidate (the floor)
    scores it on every unit no other is fitted: nothing can beat it."""
    index = np.array(folds)
    out: PerUnit = {}
    for name, score in candidates.items():
        first = next(iter(out.values()), None) if out else None
        if perfect is not None and first is not None and np.all(first == perfect):
            out[name] = None
            continue
        values = np.full(len(folds), np.nan)
        for f in sorted(set(folds)):
            test = np.flatnonzero(index == f)
            train = np.flatnonzero(index != f)
            if len(train) and len(test):
                values[test] = score(train, test)
        out[name] = values if len(folds) and not np.isnan(values).all() else None
    return out


def _unscored(candidates: dict[str, Score]) -> PerUnit:
    """Every candidate without a score (nothing to leave out: one clip)."""
    return dict.fromkeys(candidates)


def _choose(per_unit: PerUnit, floors: Sequence[str], learned: Sequence[str], higher: bool) -> str:
    """The best learned candidate when it beats the best floor by more than one standard error of
    their difference over the units (paired: each unit scored by both), else that floor: a learned
    model earns its place out of sample, or the simulator falls back to its floor."""
    sign = 1.0 if higher else -1.0

    def best(names: Sequence[str]) -> str | None:
        usable = [k for k in names if per_unit.get(k) is not None]
        return max(usable, key=lambda k: sign * float(np.nanmean(per_unit[k]))) if usable else None  # type: ignore[arg-type]

    floor, model = best(floors), best(learned)
    if floor is None or model is None:
        return floor or floors[0]
    a, b = per_unit[model], per_unit[floor]
    assert a is not None and b is not None
    diff = sign * (a - b)
    diff = diff[~np.isnan(diff)]
    se = float(np.std(diff, ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else 0.0
    return model if len(diff) and float(diff.mean()) > se + 1e-12 else floor


def _cv(measure_: str, kind: str, folds: list[str], units: int, per_unit: PerUnit) -> CrossValidation:
    means = {k: None if v is None else round(float(np.nanmean(v)), 6) for k, v in per_unit.items()}
    return CrossValidation(measure=measure_, folds=kind, n_folds=len(set(folds)), units=units, scores=means)


# --------------------------------------------------------------------------------------------------
# intensity: a ridge regression shrunk toward no change
# --------------------------------------------------------------------------------------------------


def _reach_index(units: Sequence[ChangeUnit]) -> np.ndarray:
    return np.array([REACHES.index(u.reach) for u in units])


def _shared(units: Sequence[ChangeUnit]) -> np.ndarray:
    """``[units, 1]``: how many clients heard each unit's move."""
    return np.array([[max(u.recipients, 1)] for u in units])


def _affect_index(units: Sequence[ChangeUnit]) -> np.ndarray:
    return np.array([AFFECTS.index(u.affect) if u.affect else -1 for u in units])


def intensity_design(units: Sequence[ChangeUnit]) -> np.ndarray:
    """The units' :data:`rescue_bench.sim.fitted.INTENSITY_FEATURES` (the same the step computes)."""
    x = np.array([float(u.before) for u in units])
    pv = np.array([u.pattern_value for u in units])
    reach = _reach_index(units)
    eye = np.eye(len(INTENSITY_FEATURES))
    return np.stack([intensity_change(eye[j], x[:, None], reach[:, None], pv)[:, 0] for j in range(len(INTENSITY_FEATURES))], axis=1)


def _ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    from sklearn.linear_model import Ridge

    return np.asarray(Ridge(alpha=alpha, fit_intercept=False).fit(x, y).coef_, dtype=float)


def fit_intensity(units: Sequence[ChangeUnit], assumptions: Sequence[Assumption], *, seed: int = 0) -> tuple[Component, list[EffectEstimate]]:
    """The intensity component and its effects (see the module doc). The assumed words' effects are
    an offset: the regression learns the rest, and every candidate is scored with them."""
    x = np.array([float(u.before) for u in units])
    y = np.array([float(u.after - u.before) for u in units])
    design = intensity_design(units)
    offset = addressed(_reach_index(units)[:, None], _affect_index(units), words_change(assumptions), _shared(units))[:, 0] if len(units) else np.zeros(0)

    def predicted(w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return np.clip(x[idx] + design[idx] @ w + offset[idx], 0, 10) - x[idx]

    def score_of(alpha: float | None) -> Score:
        def score(train: np.ndarray, test: np.ndarray) -> np.ndarray:
            w = np.zeros(design.shape[1]) if alpha is None else _ridge(design[train], y[train] - offset[train], alpha)
            return np.abs(predicted(w, test) - y[test])

        return score

    kind, folds = _folds([u.group for u in units], [u.sample_id for u in units])
    candidates: dict[str, Score] = {NO_CHANGE: lambda train, test: np.abs(y[test])}
    candidates["floor"] = score_of(None)
    for a in ALPHAS:
        candidates[f"alpha={a:g}"] = score_of(a)
    scores = _cross_validate(folds, candidates) if kind != "none" else _unscored(candidates)
    chosen = _choose(scores, ["floor"], [f"alpha={a:g}" for a in ALPHAS], higher=False)
    cv = _cv("mae", kind, folds, len(units), scores)
    names = list(INTENSITY_FEATURES)
    if chosen == "floor" or not len(units):
        note = "no learned weight beat no change on sessions left out" if kind != "none" else "one clip: nothing to check a fit on"
        component = Component(source="floor", floor=NO_CHANGE, features=names, coef=[[0.0] * len(names)], cv=cv, note=note)
        effects = [EffectEstimate(name=EFFECT_NAMES[f], component="intensity", status="floor", value=0.0, units=len(units)) for f in names]
        return component, effects
    alpha = float(chosen.split("=")[1])
    w = _ridge(design, y - offset, alpha)
    component = Component(source="learned", floor=NO_CHANGE, penalty=alpha, features=names, coef=[[round(float(v), 6) for v in w]], cv=cv)
    intervals = _intensity_intervals(units, design, y - offset, alpha, seed)
    effects = [
        EffectEstimate(name=EFFECT_NAMES[f], component="intensity", status="learned", value=round(float(w[j]), 4),
                       ci=intervals[j] if intervals else None, units=len(units),
                       note="" if intervals else f"no interval: fewer than {MIN_CLIPS_CI} clips")
        for j, f in enumerate(names)
    ]
    return component, effects


def _intensity_intervals(units: Sequence[ChangeUnit], design: np.ndarray, target: np.ndarray, alpha: float, seed: int) -> list[tuple[float, float]] | None:
    clips = sorted({u.sample_id for u in units})
    if len(clips) < MIN_CLIPS_CI:
        return None
    by_clip = {c: np.flatnonzero(np.array([u.sample_id == c for u in units])) for c in clips}
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(BOOTSTRAP):
        idx = np.concatenate([by_clip[clips[i]] for i in rng.integers(0, len(clips), len(clips))])
        draws.append(_ridge(design[idx], target[idx], alpha))
    low, high = np.percentile(np.array(draws), [2.5, 97.5], axis=0)
    return [(round(float(a), 4), round(float(b), 4)) for a, b in zip(low, high)]


# --------------------------------------------------------------------------------------------------
# valence and pattern: multinomial logistic regressions, or no change
# --------------------------------------------------------------------------------------------------


def _logistic(x: np.ndarray, y: Sequence[str], c: float) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """A multinomial logistic regression (classes, coef, intercept); ``None`` with fewer than two classes."""
    from sklearn.linear_model import LogisticRegression

    if len(set(y)) < 2:
        return None
    clf = LogisticRegression(C=c, solver=SOLVER, max_iter=500).fit(x, list(y))
    classes = [str(k) for k in clf.classes_]
    coef, icpt = np.asarray(clf.coef_, dtype=float), np.asarray(clf.intercept_, dtype=float)
    if len(classes) == 2:  # scikit-learn keeps one row for two classes: the second class's logit
        coef, icpt = np.vstack([np.zeros(coef.shape[1]), coef[0]]), np.array([0.0, icpt[0]])
    return classes, coef, icpt


def _component(features: Sequence[str], fitted: tuple[list[str], np.ndarray, np.ndarray], c: float, floor: str, cv: CrossValidation) -> Component:
    classes, coef, icpt = fitted
    return Component(source="learned", floor=floor, penalty=c, features=list(features), classes=classes,
                     coef=[[round(float(v), 6) for v in row] for row in coef], intercept=[round(float(v), 6) for v in icpt], cv=cv)


def _floor(features: Sequence[str], cv: CrossValidation | None, note: str) -> Component:
    return Component(source="floor", floor=NO_CHANGE, features=list(features), coef=[], cv=cv, note=note)


def keeps_order(component: Component) -> bool:
    """Whether the learned valence component keeps order: a client who starts more negative is, on
    average, never more positive after the step (both regressions weigh the valence before positively)."""
    j = VALENCE_FEATURES.index("valence")
    return all(row[j] >= 0 for row in component.coef)


def _binary(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    """A logistic regression's weights and intercept; a constant answer's (a large intercept) when ``y`` is one class."""
    from sklearn.linear_model import LogisticRegression

    if len(set(y.tolist())) < 2:
        return np.zeros(x.shape[1]), 20.0 if y.size and y[0] else -20.0
    clf = LogisticRegression(C=c, solver=SOLVER, max_iter=500).fit(x, y)
    return np.asarray(clf.coef_[0], dtype=float), float(clf.intercept_[0])


def _ordinal(x: np.ndarray, after: np.ndarray, c: float) -> Component:
    """The valence component's two regressions (:data:`rescue_bench.sim.fitted.VALENCE_STEPS`) at penalty ``c``."""
    rows = [_binary(x, after >= k, c) for k in (1, 2)]
    return Component(source="learned", floor=NO_CHANGE, penalty=c, features=list(VALENCE_FEATURES), classes=list(VALENCE_STEPS),
                     coef=[[round(float(v), 6) for v in w] for w, _ in rows], intercept=[round(b, 6) for _, b in rows])


def fit_valence(units: Sequence[ChangeUnit], assumptions: Sequence[Assumption]) -> Component:
    """The valence component (see the module doc); every candidate is scored with the assumed words' shift."""
    before = np.array([VALENCES.index(u.valence_before) for u in units], dtype=int)
    reach = _reach_index(units)
    pv = np.array([u.pattern_value for u in units])
    truth = np.array([VALENCES.index(u.valence_after) for u in units], dtype=int)
    feats = valence_features(before, reach, pv) if len(units) else np.zeros((0, len(VALENCE_FEATURES)))
    shift = addressed(reach[:, None], _affect_index(units), valence_shifts(assumptions), _shared(units))[:, 0] if len(units) else np.zeros(0)

    def accuracy(probs: np.ndarray, test: np.ndarray) -> np.ndarray:
        return (np.argmax(shift_valence(probs, shift[test]), axis=-1) == truth[test]).astype(float)

    def floor_score(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        return accuracy(np.eye(3)[before[test]], test)

    def learned(c: float) -> Score:
        def score(train: np.ndarray, test: np.ndarray) -> np.ndarray:
            comp = _ordinal(feats[train], truth[train], c)
            m = valence_matrix(comp, reach[test][:, None], pv[test])[:, 0]  # [units, from, to]
            return accuracy(m[np.arange(len(test)), before[test]], test)

        return score

    kind, folds = _folds([u.group for u in units], [u.sample_id for u in units])
    candidates: dict[str, Score] = {NO_CHANGE: floor_score, **{f"C={c:g}": learned(c) for c in CS}}
    scores = _cross_validate(folds, candidates) if kind != "none" else _unscored(candidates)
    cv = _cv("accuracy", kind, folds, len(units), scores)
    chosen = _choose(scores, [NO_CHANGE], [f"C={c:g}" for c in CS], higher=True)
    if chosen == NO_CHANGE:
        return _floor(VALENCE_FEATURES, cv, "no learned model beat no change on sessions left out" if kind != "none" else "one clip: nothing to check a fit on")
    component = _ordinal(feats, truth, float(chosen.split("=")[1])).model_copy(update={"cv": cv})
    if not keeps_order(component):
        return _floor(VALENCE_FEATURES, cv, "the learned model does not keep order (a more negative client could end more positive): no change")
    return component


def fit_pattern(units: Sequence[PatternUnit], scenario: str) -> Component:
    """The pattern component of ``scenario`` (see the module doc)."""
    labels = list(patterns(scenario))
    features = [f"was_{k}" for k in labels] + list(PATTERN_MOVES)
    units = [u for u in units if u.before in labels and u.after in labels]
    before = np.array([labels.index(u.before) for u in units], dtype=int)
    move = np.array([("silence", *PATTERN_MOVES).index(u.move) for u in units], dtype=int)
    y = [u.after for u in units]
    feats = pattern_features(before, move, len(labels)) if units else np.zeros((0, len(features)))

    def floor_score(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        return np.array([float(units[i].after == units[i].before) for i in test])

    def learned(c: float) -> Score:
        def score(train: np.ndarray, test: np.ndarray) -> np.ndarray:
            fitted = _logistic(feats[train], [y[i] for i in train], c)
            if fitted is None:
                return floor_score(train, test)
            comp = Component(source="learned", floor=NO_CHANGE, features=features, classes=fitted[0], coef=fitted[1].tolist(),
                             intercept=fitted[2].tolist())
            m = pattern_matrix(comp, labels, move[test])  # [units, from, to]
            pred = np.argmax(m[np.arange(len(test)), before[test]], axis=-1)
            return np.array([float(labels[p] == units[i].after) for p, i in zip(pred, test)])

        return score

    kind, folds = _folds([u.group for u in units], [u.sample_id for u in units])
    candidates: dict[str, Score] = {NO_CHANGE: floor_score, **{f"C={c:g}": learned(c) for c in CS}}
    scores = _cross_validate(folds, candidates, perfect=1.0) if kind != "none" else _unscored(candidates)
    cv = _cv("accuracy", kind, folds, len(units), scores)
    chosen = _choose(scores, [NO_CHANGE], [f"C={c:g}" for c in CS], higher=True)
    if chosen == NO_CHANGE:
        why = "no learned model beat no change on sessions left out" if kind != "none" else (
            "no units" if not units else "one clip: nothing to check a fit on")
        return _floor(features, cv, why)
    c = float(chosen.split("=")[1])
    fitted = _logistic(feats, y, c)
    assert fitted is not None
    return _component(features, fitted, c, NO_CHANGE, cv)


# --------------------------------------------------------------------------------------------------
# the next speaker: a pairwise logistic regression whose special cases are the floors
# --------------------------------------------------------------------------------------------------


def _speaker_hits(units: Sequence[SpeakerUnit], weights: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.array([float(pick([float(np.dot(weights, f)) for f in units[i].features], units[i].tiebreak) == units[i].chosen) for i in idx])


def _pairwise(units: Sequence[SpeakerUnit], idx: np.ndarray, c: float) -> np.ndarray:
    """Weights of a logistic regression on the chosen client's features minus each other client's."""
    from sklearn.linear_model import LogisticRegression

    diffs = [np.subtract(units[i].features[units[i].chosen], f) for i in idx for j, f in enumerate(units[i].features) if j != units[i].chosen]
    if not diffs:
        return np.zeros(len(SPEAKER_FEATURES))
    x = np.vstack([np.array(diffs), -np.array(diffs)])
    y = np.r_[np.ones(len(diffs)), np.zeros(len(diffs))]
    return np.asarray(LogisticRegression(C=c, fit_intercept=False, solver=SOLVER, max_iter=500).fit(x, y).coef_[0], dtype=float)


def fit_speaker(units: Sequence[SpeakerUnit]) -> Component:
    """The next speaker (see the module doc): the floors and the learned score compete out of sample."""
    floors = {name: np.array(w, dtype=float) for name, w in SPEAKER_FLOORS.items()}

    def fixed(w: np.ndarray) -> Score:
        return lambda train, test: _speaker_hits(units, w, test)

    def learned(c: float) -> Score:
        return lambda train, test: _speaker_hits(units, _pairwise(units, train, c), test)

    candidates: dict[str, Score] = {name: fixed(w) for name, w in floors.items()}
    candidates.update({f"C={c:g}": learned(c) for c in CS})
    kind, folds = _folds([u.group for u in units], [u.sample_id for u in units])
    scores = _cross_validate(folds, candidates) if kind != "none" else _unscored(candidates)
    cv = _cv("accuracy", kind, folds, len(units), scores)
    means = {k: float(np.nanmean(v)) for k, v in scores.items() if v is not None}
    best_floor = max(floors, key=lambda k: means.get(k, -1.0))
    chosen = _choose(scores, list(floors), [f"C={c:g}" for c in CS], higher=True)
    features = list(SPEAKER_FEATURES)
    if chosen in floors:
        note = "the learned score did not beat this floor on sessions left out" if kind != "none" else "one clip: nothing to check a fit on"
        return Component(source="floor", floor=chosen, features=features, coef=[floors[chosen].tolist()], cv=cv, note=note)
    c = float(chosen.split("=")[1])
    w = _pairwise(units, np.arange(len(units)), c)
    return Component(source="learned", floor=best_floor, penalty=c, features=features, coef=[[round(float(v), 6) for v in w]], cv=cv)


# --------------------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------------------


@dataclass
class Fit:
    """A model with what it was built from: its units and a model fitted without each group."""

    model: FittedModel
    units: Units
    folds: dict[str, FittedModel]
    """Per fold (:func:`fold_function`: a group, or a clip when the data holds one group): the model fitted without it."""


def _status(component: Component, name: str, what: str) -> EffectEstimate:
    """A component as an effect: learned or at its floor, with its out-of-sample score against the floor's."""
    cv = component.cv
    scores = cv.scores if cv else {}
    chosen = component.floor if not component.learned else next((k for k in scores if k.endswith(f"={component.penalty:g}")), None)
    value = scores.get(chosen) if chosen else None
    floor_value = scores.get(component.floor)
    note = component.note
    if not note and value is not None and floor_value is not None:
        note = f"out of sample {value:.3f} against {floor_value:.3f} for {component.floor}"
    return EffectEstimate(name=name, component=what, status="learned" if component.learned else "floor", value=value,
                          units=cv.units if cv else None, note=note)


def build_model(
    units: Units, *, source: Source, reader: LinearReader, readings: list, affect_used: bool,
    assumptions: Sequence[Assumption] = ASSUMPTIONS, seed: int = 0,
) -> FittedModel:
    """The model of ``units`` (each component chosen by leaving groups out)."""
    intensity, effects = fit_intensity(units.changes, assumptions, seed=seed)
    valence = fit_valence(units.changes, assumptions)
    pats: dict[str, Component] = {s: fit_pattern(units.patterns, s) for s in SCENARIOS}
    speaker = fit_speaker(units.speakers)
    effects += [_status(valence, "next valence (an ordinal logistic model)", "valence")]
    effects += [_status(c, f"next pattern, {s} (a multinomial logistic regression)", "pattern") for s, c in pats.items()]
    effects += [_status(speaker, "next speaker (a pairwise logistic score)", "speaker")]
    effects += [EffectEstimate(name=a.name, component=a.component, status="assumed", value=a.value, note=a.why) for a in assumptions]
    return FittedModel(source=source, reader=reader, readings=readings, affect_used=affect_used, intensity=intensity, valence=valence,
                       patterns=pats, speaker=speaker, assumptions=list(assumptions), effects=effects)


def fit(clips: Sequence[Clip], name: str, *, seed: int = 0, validate: bool = True) -> Fit:
    """Fit the simulator on ``clips`` (see the module doc), with a model fitted without each group
    (``Fit.folds``) and, with ``validate``, the model's check against its floors on them."""
    if len(clips) < 2:
        raise ValueError(f"a simulator is fitted on two clips or more (checked on sessions left out); got {len(clips)}")
    fold_of = fold_function(clips)
    readers, affect_records = crossfit(clips, affect_rows, fold=fold_of)
    learned = measure("affect", affect_records, used=True, seed=seed)
    markers = measure(
        "affect (marker lists)", [ReadRow(c.sample_id, i, y, marker_affect(t)) for c in clips for i, t, y in affect_rows(c)], used=True, seed=seed
    )
    # the marker lists are the reader's floor: the learned reader reads the words only when it beats them on held-out sessions
    ci = learned.balanced_accuracy_ci
    affect_used = learned.used and ci is not None and markers.balanced_accuracy is not None and ci[0] > markers.balanced_accuracy
    learned = learned.model_copy(update={"used": affect_used})
    markers = markers.model_copy(update={"used": not affect_used, "note": "the project's marker lists (nothing fitted: every row is held out)"})
    readings = [learned, markers, measure_names(clips)]
    for scenario in SCENARIOS:
        chosen = [c for c in clips if c.scenario == scenario]
        if len(chosen) >= 2:
            readings.append(measure(f"strategy ({scenario})", crossfit(chosen, strategy_rows)[1], used=False, seed=seed))
    texts = [(t, y) for c in clips for _, t, y in affect_rows(c)]
    reader = fit_linear([t for t, _ in texts], [y for _, y in texts])
    keys = sorted({fold_of(c) for c in clips})

    def reading_of(key: str) -> Callable[[str], str]:
        r = readers.get(key)
        return (lambda words: r.predict([words])[0]) if affect_used and r is not None else marker_affect

    units = units_of(clips, {c.sample_id: reading_of(fold_of(c)) for c in clips})
    source = Source(name=name, sha256=data_digest(clips), clips=[c.sample_id for c in clips], groups=len({group_of(c) for c in clips}),
                    rows=sum(len(c.rows) for c in clips))
    clip_fold = {c.sample_id: fold_of(c) for c in clips}

    def build(kept: Units, words: LinearReader) -> FittedModel:
        return build_model(kept, source=source, reader=words, readings=readings, affect_used=affect_used, seed=seed)

    model = build(units, reader)
    def without(key: str) -> Units:
        return units.keep(lambda sid: clip_fold[sid] != key)

    folds = {key: build(without(key), readers.get(key, reader)) for key in keys}
    if validate:
        model = model.model_copy(update={"validation": validate_folds(clips, {c.sample_id: folds[clip_fold[c.sample_id]] for c in clips}, seed=seed)})
    return Fit(model, units, folds)


def simulators_for(clips: Sequence[Clip], simulator: str, model: str | None) -> dict[str, OfflineSimulator] | None:
    """The offline simulator each clip's cases are played by (``None`` for a model simulator). A
    ``fitted`` model fitted on these very clips is refitted without each clip's couple or family
    (:func:`rescue_bench.sim.fitting.fold_function`) for that clip's cases; on other clips it plays as
    it is. Raises ``ValueError`` when the data shares clips with the model's but is not its data (it
    could not be refitted without them)."""
    sim = offline_simulator(simulator, model)
    if sim is None:
        return None
    if simulator != FITTED:
        return {c.sample_id: sim for c in clips}
    fitted = load_model(model)
    shared = {c.sample_id for c in clips} & set(fitted.source.clips)
    if not shared:
        return {c.sample_id: sim for c in clips}
    if data_digest(clips) != fitted.source.sha256:
        raise ValueError(
            f"the simulator model was fitted on {len(shared)} of these clips but on other data; fidelity on them needs "
            "that same data (to refit without each clip's couple or family) or clips the model has not seen"
        )
    folds = fit(clips, fitted.source.name, validate=False).folds
    fold_of = fold_function(clips)
    return {c.sample_id: Fitted(folds[fold_of(c)], model, held_out=fold_of(c)) for c in clips}


def fold_function(clips: Sequence[Clip]) -> Callable[[Clip], str]:
    """What the fit leaves out at a time: a couple or family when ``clips`` hold two or more, else a clip."""
    return group_of if len({group_of(c) for c in clips}) >= 2 else (lambda c: c.sample_id)


__all__ = ["ALPHAS", "CS", "Fit", "build_model", "fit", "simulators_for", "fit_intensity", "fit_pattern", "fit_speaker", "fit_valence", "keeps_order"]
