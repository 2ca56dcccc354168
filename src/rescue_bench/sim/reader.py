"""What the offline simulator hears in a turn's words, and how well each reading holds on real rows.

The offline ``fitted`` simulator never sees the strategy label an agent declares: it reads the words.
Two readings, each measured on held-out annotated rows (cross-fitted by clip: a clip's rows are read
by a reader fitted on the other clips only) and reported beside every run that uses them:

* **affect** (:data:`AFFECTS`): ``warm`` (validating, empathic), ``hostile`` (blaming, hostile,
  dismissive) or ``neutral``. Learned from the client rows' annotated ``utterance_type``
  (:data:`AFFECT_OF_TYPE`: accusation and defense are hostile, validation and repair warm, every other
  annotated type neutral): a logistic regression (scikit-learn, classes balanced) on the turn's
  hashed words and word pairs (``HashingVectorizer``: stateless, so the fitted model is its weights
  alone) plus two counts of a small marker list (:data:`HOSTILE_MARKERS`, :data:`WARM_MARKERS`),
  which carry insults and validations the sessions never use to the words the model weighs.
* **whom it names** (:func:`named_clients`): the clients named in the words, or every client when
  the words address the group ("both of you", "everyone", ...). A rule: measured on the therapist
  rows against their annotated target.

A third reading is measured and not used: the **strategy** of a therapist turn from its own words
(the same features, a logistic regression over the scenario's strategies). A turn-to-strategy
mapping is not assumed; the report shows whether it beats the majority class on held-out clips.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import strategies

AFFECTS: tuple[str, ...] = ("warm", "neutral", "hostile")
AFFECT_OF_TYPE: dict[str, str] = {"accusation": "hostile", "defense": "hostile", "validation": "warm", "repair": "warm"}
"""The affect an annotated client ``utterance_type`` carries; every other annotated type is neutral."""

HOSTILE_MARKERS = frozenset(
    """
    stupid idiot pathetic lazy selfish useless ridiculous crazy liar dramatic childish hysterical worthless
    disgusting incompetent immature whining nagging overreacting nonsense whatever blame fault enough
    shut_up get_over grow_up so_what who_cares sick_of tired_of your_problem your_fault
    you_never you_always you_don't you_won't you_didn't you_can't you_just
    """.split()
)
"""Words and word pairs of blame, contempt and dismissal (the project's own list)."""
WARM_MARKERS = frozenset(
    """
    painful sorry thank thanks appreciate fair matters care love together understandable
    i_hear i_understand makes_sense sounds_like must_be hear_you with_you see_how i_know i_get
    you're_trying you're_right feel_heard i_can_see that's_hard
    """.split()
)
"""Words and word pairs of validation and empathy (the project's own list)."""

GROUP_WORDS: tuple[str, ...] = (
    "both of you", "you both", "you two", "the two of you", "each of you", "all of you", "you all", "everyone", "everybody",
    "all three of you", "all four of you", "the whole family", "as a family",
)
"""Phrases by which a turn addresses the whole group."""

N_FEATURES = 2**14
NGRAMS = (1, 2)
C = 1.0
"""Inverse strength of the logistic regression's L2 penalty (scikit-learn's default)."""
MIN_CLIPS = 3
"""Fewest clips a reading is fitted or measured on (cross-fitting leaves one out)."""

_TOKEN = re.compile(r"[a-z']+")


def _tokens(text: str) -> list[str]:
    words = _TOKEN.findall(text.lower().replace("\u2019", "'"))
    return words + [f"{a}_{b}" for a, b in zip(words, words[1:])]


def marker_counts(text: str) -> tuple[int, int]:
    """(hostile, warm) markers in ``text``."""
    tokens = _tokens(text)
    return sum(t in HOSTILE_MARKERS for t in tokens), sum(t in WARM_MARKERS for t in tokens)


def marker_affect(text: str) -> str:
    """The affect the marker lists alone read in ``text``: ``warm`` with more warm markers than hostile
    ones, ``hostile`` with more hostile ones, else ``neutral`` (the declared reader the simulator falls
    back on when the learned one does not beat chance on held-out sessions)."""
    hostile, warm = marker_counts(text)
    return "warm" if warm > hostile else "hostile" if hostile > warm else "neutral"


def _markers(texts: Sequence[str]) -> np.ndarray:
    return np.array([[math.log1p(c) for c in marker_counts(t)] for t in texts], dtype=float).reshape(-1, 2)


def features(texts: Sequence[str]) -> Any:
    """The reader's features of ``texts``: hashed words and word pairs, then log(1 + count) of the
    hostile and of the warm markers (a sparse matrix, one row per text). Both parts are stateless,
    so the same texts always give the same features."""
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.pipeline import FeatureUnion
    from sklearn.preprocessing import FunctionTransformer

    union = FeatureUnion(
        [
            ("words", HashingVectorizer(n_features=N_FEATURES, ngram_range=NGRAMS, alternate_sign=False, norm="l2")),
            ("markers", FunctionTransformer(_markers, accept_sparse=True)),
        ]
    )
    return union.fit_transform(list(texts)).tocsr()


class LinearReader(BaseModel):
    """A fitted logistic regression over :func:`features`, stored as its non-zero weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    classes: list[str]
    intercept: list[float]
    weights: dict[int, list[float]]
    """Feature column -> one weight per class (columns with no weight are left out)."""

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        x = features(texts)
        w = np.zeros((x.shape[1], len(self.classes)))
        for col, values in self.weights.items():
            w[col] = values
        return np.asarray(x @ w) + np.array(self.intercept)

    def predict(self, texts: Sequence[str]) -> list[str]:
        if not texts:
            return []
        return [self.classes[i] for i in np.argmax(self.scores(texts), axis=1)]


def fit_linear(texts: Sequence[str], labels: Sequence[str]) -> LinearReader:
    """Fit the reader on ``texts`` with their ``labels`` (classes balanced)."""
    from sklearn.linear_model import LogisticRegression

    classes = sorted(set(labels))
    if len(classes) == 1:  # nothing to tell apart: always that class
        return LinearReader(classes=classes, intercept=[0.0], weights={})
    x = features(texts)
    used = np.unique(x.indices)  # a column no training text has gets no weight: fit on the others only
    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=5000).fit(x[:, used], list(labels))
    coef = clf.coef_ if len(classes) > 2 else np.vstack([-clf.coef_[0], clf.coef_[0]])
    intercept = clf.intercept_ if len(classes) > 2 else np.array([-clf.intercept_[0], clf.intercept_[0]])
    return LinearReader(
        classes=[str(c) for c in clf.classes_],
        intercept=[round(float(v), 5) for v in intercept],
        weights={int(j): [round(float(v), 5) for v in coef[:, k]] for k, j in enumerate(used) if np.any(coef[:, k] != 0)},
    )


# --------------------------------------------------------------------------------------------------
# the annotated rows a reading is learned and measured on
# --------------------------------------------------------------------------------------------------


def affect_label(row: Row) -> str | None:
    """The affect a client row's annotated ``utterance_type`` carries (``None``: not a client row, no
    words or no annotated type)."""
    kind = (row.utterance_type or "").strip().lower()
    if not row.is_client or not kind or not row.text:
        return None
    return AFFECT_OF_TYPE.get(kind, "neutral")


def affect_rows(clip: Clip) -> list[tuple[int, str, str]]:
    """``(0-based row, words, affect)`` of the clip's annotated client rows."""
    return [(i, r.text, a) for i, r in enumerate(clip.rows) if (a := affect_label(r)) is not None]


def strategy_rows(clip: Clip) -> list[tuple[int, str, str]]:
    """``(0-based row, words, strategy)`` of the clip's therapist rows with an annotated strategy of the set."""
    from rescue_bench.tasks.stp import strategy_type

    allowed = strategies(clip.scenario)
    return [(i, r.text, s) for i, r in enumerate(clip.rows) if r.is_therapist and r.text and (s := strategy_type(r)) in allowed]


@dataclass(frozen=True)
class ReadRow:
    """One labelled row of a held-out clip and how its clip's reader read it."""

    sample_id: str
    row: int
    gold: str
    prediction: str


def crossfit(
    clips: Sequence[Clip], rows_of: Callable[[Clip], list[tuple[int, str, str]]], fold: Callable[[Clip], str] | None = None
) -> tuple[dict[str, LinearReader], list[ReadRow]]:
    """A reader per fold fitted on the *other* folds' labelled rows (``{fold: reader}``; none when
    the others have no labelled row), and every labelled row read by its fold's reader, which a
    reading is measured on. ``fold``: a clip's fold (default: the clip itself; the simulator's fit
    leaves out a whole couple or family, :func:`rescue_bench.sim.units.group_of`)."""
    fold_of = fold or (lambda c: c.sample_id)
    rows_by_clip = {c.sample_id: rows_of(c) for c in clips}
    folds: dict[str, list[Clip]] = {}
    for c in clips:
        folds.setdefault(fold_of(c), []).append(c)
    readers: dict[str, LinearReader] = {}
    records: list[ReadRow] = []
    for key, members in folds.items():
        train = [(t, y) for c in clips if fold_of(c) != key for _, t, y in rows_by_clip[c.sample_id]]
        if not train:
            continue
        readers[key] = reader = fit_linear([t for t, _ in train], [y for _, y in train])
        for c in members:
            rows = rows_by_clip[c.sample_id]
            for (i, _, gold), pred in zip(rows, reader.predict([t for _, t, _ in rows])):
                records.append(ReadRow(sample_id=c.sample_id, row=i, gold=gold, prediction=pred))
    return readers, records


# --------------------------------------------------------------------------------------------------
# measuring a reading
# --------------------------------------------------------------------------------------------------


class Inference(BaseModel):
    """How well one reading holds on held-out annotated rows."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reading: str
    rows: int
    clips: int
    classes: dict[str, int]
    """Gold labels and their counts."""
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    balanced_accuracy_ci: tuple[float, float] | None = None
    """95% percentile cluster-bootstrap interval over clips (none with fewer than 3 clips)."""
    macro_f1: float | None = None
    majority: str | None = None
    majority_accuracy: float | None = None
    chance: float | None = None
    """Balanced accuracy of any constant answer: 1 / the number of gold classes."""
    better_than_chance: bool = False
    """The balanced accuracy's interval lies above chance and the accuracy above the majority class's."""
    used: bool = False
    note: str = ""


def _balanced(records: Sequence[ReadRow]) -> float:
    """Balanced accuracy: the mean over gold classes of the share read right (NaN without records)."""
    hits: dict[str, list[bool]] = {}
    for r in records:
        hits.setdefault(r.gold, []).append(r.gold == r.prediction)
    return float(np.mean([np.mean(v) for v in hits.values()])) if hits else math.nan


def measure(reading: str, records: Sequence[ReadRow], *, used: bool, seed: int = 0) -> Inference:
    """Accuracy, balanced accuracy (with its interval over clips), macro-F1 and the majority class of
    held-out ``records``."""
    from sklearn.metrics import f1_score

    from rescue_bench.metrics import bootstrap_ci

    counts = Counter(r.gold for r in records)
    clips = len({r.sample_id for r in records})
    if not records:
        return Inference(reading=reading, rows=0, clips=0, classes={}, used=False, note="no annotated rows")
    gold = [r.gold for r in records]
    pred = [r.prediction for r in records]
    majority = min(counts, key=lambda k: (-counts[k], k))
    balanced = _balanced(records)
    ci = None
    if clips >= MIN_CLIPS:
        low, high = bootstrap_ci(list(records), _balanced, "sample_id", n_resamples=1000, seed=seed)
        ci = (round(low, 4), round(high, 4))
    chance = 1 / len(counts)
    accuracy = sum(g == p for g, p in zip(gold, pred)) / len(gold)
    better = ci is not None and ci[0] > chance and accuracy > counts[majority] / len(gold)
    return Inference(
        reading=reading,
        rows=len(records),
        clips=clips,
        classes=dict(sorted(counts.items())),
        accuracy=round(accuracy, 4),
        balanced_accuracy=round(balanced, 4),
        balanced_accuracy_ci=ci,
        macro_f1=round(float(f1_score(gold, pred, average="macro", zero_division=0)), 4),
        majority=majority,
        majority_accuracy=round(counts[majority] / len(gold), 4),
        chance=round(chance, 4),
        better_than_chance=better,
        used=used and better,
        note="" if ci is not None else f"no interval: {clips} clip(s), fewer than {MIN_CLIPS}",
    )


# --------------------------------------------------------------------------------------------------
# whom the words name
# --------------------------------------------------------------------------------------------------


def named_clients(text: str | None, clients: Sequence[str]) -> list[str]:
    """The clients ``text`` names (whole words, any case), in client order; every client when it
    addresses the group (:data:`GROUP_WORDS`)."""
    low = f" {(text or '').lower()} "
    if any(re.search(rf"\b{re.escape(p)}\b", low) for p in GROUP_WORDS):
        return list(clients)
    return [c for c in clients if re.search(rf"\b{re.escape(c.lower())}\b", low)]


def measure_names(clips: Sequence[Clip]) -> Inference:
    """The name reading on the therapist rows whose target is annotated: how often the words name
    anyone (``classes``: named / not named) and, where they do, how often the named clients are the
    annotated target's (``accuracy``). A rule: every row is held out."""
    named = agree = rows = 0
    for clip in clips:
        for r in clip.rows:
            targets = r.targets
            if not r.is_therapist or not r.text or not targets:
                continue
            gold = list(clip.clients) if clip.group_label in targets else [c for c in clip.clients if c in targets]
            if not gold:
                continue
            rows += 1
            said = named_clients(r.text, clip.clients)
            if said:
                named += 1
                agree += set(said) == set(gold)
    return Inference(
        reading="named clients",
        rows=rows,
        clips=len(clips),
        classes={"named": named, "not named": rows - named},
        accuracy=round(agree / named, 4) if named else None,
        used=True,
        note="a rule (nothing fitted): accuracy = the named clients are the annotated target, over the rows that name anyone",
    )
