"""Baselines that look only at label frequencies, never at the conversation.

- ``majority`` answers what is most common in the other clips. It is the number the paper's
  reviewers asked for: RPP accuracy of the best model (45.6%) is close to the majority share
  (couple ``pursue_withdraw`` 38.7%, family ``cooperative_family_alliance`` 41.9%), so a model's
  score only means something next to it.
- ``random`` guesses uniformly: the chance level of each metric (e.g. recall@3 = 3 / #candidates).
- ``prior`` samples from the training folds' gold distribution: chance that knows the label shares,
  the expected score of a model that learned only the base rates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from functools import partial
from typing import TypeVar

import numpy as np

from rescue_bench.baselines.common import (
    LABEL_TASKS,
    NEUTRAL_EMOTION,
    NEUTRAL_VIEWPOINT,
    Guess,
    Method,
    answers_emotion,
    class_order,
    fallback_guess,
    gold_class,
    other_participants,
    ranked,
    rng_for,
    to_labels,
    viewpoint_texts,
)
from rescue_bench.task_table import TASK_TABLE
from rescue_bench.tasks.instance import Instance

H = TypeVar("H", bound=Hashable)

INTENSITIES = tuple(range(11))


def _emotions(pool: list[Instance]) -> Counter[str]:
    return Counter(i.gold["emotion"] for i in pool)


def _intensities(pool: list[Instance]) -> Counter[int]:
    return Counter(int(i.gold["intensity"]) for i in pool)


def majority(pool: list[Instance], tests: list[Instance], seed: int, *, stp_roles: bool = False) -> dict[str, Guess]:
    """The most frequent gold of the pool (other clips), the same for every test instance.

    Label tasks rank classes by frequency, ties by candidate order (so an ITP tie answers ``yes``);
    classes that are not candidates are skipped and the ranking is topped up in candidate order.
    ER: the most frequent intensity (ties: the lower) and description (ties: alphabetical).
    VP: the most frequent viewpoint text for every other participant. Empty pool: fallback.
    """
    if not pool:
        return {t.id: fallback_guess(t) for t in tests}
    task = tests[0].task
    if task in LABEL_TASKS:
        counts = Counter(gold_class(i, stp_roles) for i in pool)
        return {t.id: to_labels(t, ranked(counts, class_order(t, stp_roles)), stp_roles) for t in tests}
    if answers_emotion(task):
        guess: Guess = (ranked(_emotions(pool))[0], ranked(_intensities(pool), INTENSITIES)[0])
    else:
        guess = [ranked(Counter(viewpoint_texts(pool)))[0]]
    return {t.id: guess for t in tests}


def random_guess(pool: list[Instance], tests: list[Instance], seed: int) -> dict[str, Guess]:
    """Uniform guesses: a random permutation of the candidates (ITP: yes/no at even odds).

    ER: intensity uniform on 0-10 and a description drawn uniformly from the distinct training
    descriptions (neutral phrase when there are none). VP: per other participant a viewpoint drawn
    uniformly from the distinct training viewpoints.
    """
    task = tests[0].task if tests else ""
    descriptions = (sorted(_emotions(pool)) if task and answers_emotion(task) else []) or [NEUTRAL_EMOTION]
    views = sorted(set(viewpoint_texts(pool))) if task and TASK_TABLE[task].answer == "viewpoints" else []
    out: dict[str, Guess] = {}
    for t in tests:
        rng = rng_for(seed, t.id)
        if task in LABEL_TASKS:
            out[t.id] = [t.candidates[j] for j in rng.permutation(len(t.candidates))]
        elif answers_emotion(task):
            out[t.id] = (descriptions[rng.integers(len(descriptions))], int(rng.integers(0, 11)))
        else:
            texts = views or [NEUTRAL_VIEWPOINT]
            out[t.id] = [texts[rng.integers(len(texts))] for _ in other_participants(t)]
    return out


def draw(rng: np.random.Generator, counts: Counter[H], k: int, order: Sequence[H] = ()) -> list[H]:
    """``k`` distinct keys of ``counts`` drawn without replacement, weighted by count.

    Keys are laid out in a fixed order (``order`` first, then by value) so draws are reproducible.
    """
    pos = {key: j for j, key in enumerate(order)}
    keys = sorted((key for key in counts if counts[key] > 0), key=lambda key: (pos.get(key, len(pos)), str(key)))
    if not keys:
        return []
    weights = np.array([counts[key] for key in keys], dtype=float)
    picked = rng.choice(len(keys), size=min(k, len(keys)), replace=False, p=weights / weights.sum())
    return [keys[j] for j in picked]


def prior(pool: list[Instance], tests: list[Instance], seed: int, *, stp_roles: bool = False) -> dict[str, Guess]:
    """Draws from the pool's gold distribution (the training folds of a clip-grouped k-fold).

    Label tasks: three classes drawn without replacement, weighted by training frequency and
    restricted to the instance's candidates, topped up in candidate order. ER: intensity and
    description each drawn by training frequency. VP: a viewpoint per other participant, drawn by
    frequency. Empty pool: fallback.
    """
    if not pool:
        return {t.id: fallback_guess(t) for t in tests}
    task = tests[0].task
    out: dict[str, Guess] = {}
    if task in LABEL_TASKS:
        counts = Counter(gold_class(i, stp_roles) for i in pool)
        for t in tests:
            usable = Counter({c: n for c, n in counts.items() if to_labels(t, [c], stp_roles)})
            picked = draw(rng_for(seed, t.id), usable, 3, class_order(t, stp_roles))
            out[t.id] = to_labels(t, picked, stp_roles)
        return out
    if answers_emotion(task):
        emotions, intensities = _emotions(pool), _intensities(pool)
        for t in tests:
            rng = rng_for(seed, t.id)
            out[t.id] = (draw(rng, emotions, 1)[0], draw(rng, intensities, 1, INTENSITIES)[0])
        return out
    views = Counter(viewpoint_texts(pool))
    for t in tests:
        rng = rng_for(seed, t.id)
        out[t.id] = [draw(rng, views, 1)[0] for _ in other_participants(t)]
    return out


def counting_method(name: str, stp_roles: bool) -> Method:
    """The counting baseline ``name`` as a :data:`~rescue_bench.baselines.common.Method`."""
    if name == "majority":
        return partial(majority, stp_roles=stp_roles)
    if name == "prior":
        return partial(prior, stp_roles=stp_roles)
    return random_guess
