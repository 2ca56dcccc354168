"""Pieces every baseline shares: clip-grouped splits, training pools, seeded draws, STP roles,
ranking top-up and the answer-contract builders.

A baseline is a function ``(pool, tests, seed) -> {id: Guess}``: it learns from the *pool* (gold
answers of instances from other clips only) and guesses for the *tests*. :func:`run` cuts the
instances into folds by clip, so no test clip ever contributes a gold to its own guesses, and turns
every guess into the exact JSON a model is asked for (SPEC section 4, :mod:`rescue_bench.contract`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from rescue_bench import contract
from rescue_bench.labels import GROUP_LABELS
from rescue_bench.task_table import TASK_TABLE
from rescue_bench.tasks.instance import Instance

H = TypeVar("H", bound=Hashable)

LABEL_TASKS = frozenset(t for t, r in TASK_TABLE.items() if r.answer in ("yes_no", "ranking"))
"""Tasks answered with labels: ITP by its first preference, the others by a top-3 ranking."""
RANK_SIZE = contract.RANK_SIZE

NEUTRAL_EMOTION = "neutral, no strong feeling"
"""ER description used when there is nothing to learn from (no other clip in the input)."""
NEUTRAL_INTENSITY = (contract.INTENSITY_SCALE.lo + contract.INTENSITY_SCALE.hi) // 2
"""ER intensity used when there is nothing to learn from: the middle of the 0-10 scale."""
NEUTRAL_VIEWPOINT = "no clear stance toward them"
"""VP viewpoint used when there is nothing to learn from."""
FALLBACK_VP_TARGET = "Therapist"
"""VP target when the client has no other client in the session (the prompt lists the therapist)."""

STP_ROLES: tuple[str, ...] = ("group", "last_speaker", "other_client")
"""Clip-independent STP classes: the group label, the client who spoke last, any other client."""

Guess = Any
"""What a method returns per instance. Label tasks: labels in order of preference (non-candidates
allowed, :func:`top_up` filters them); ER: ``(emotion, intensity)``; VP: viewpoint texts, handed out
to the other participants in order (cycling)."""
Method = Callable[[list[Instance], list[Instance], int], dict[str, Guess]]
"""``(pool, tests, seed) -> {test id: guess}``; ``pool`` holds instances of other clips only."""


# -- determinism -----------------------------------------------------------------------------------


def sort_key(inst: Instance) -> tuple[str, int, str]:
    """The canonical instance order: clip, row, id. Every baseline works in this order."""
    return (inst.sample_id, inst.row, inst.id)


def rng_for(seed: int, instance_id: str) -> np.random.Generator:
    """A generator for one instance: depends on ``seed`` and the id only, never on input order."""
    digest = int(hashlib.sha256(instance_id.encode()).hexdigest()[:8], 16)
    return np.random.default_rng((seed % 2**64) ^ digest)


def ranked(counts: Counter[H], order: Sequence[H] = ()) -> list[H]:
    """Keys of ``counts`` by decreasing count; ties by position in ``order``, then by value."""
    pos = {k: i for i, k in enumerate(order)}
    return sorted(counts, key=lambda k: (-counts[k], pos.get(k, len(pos)), str(k)))


# -- folds -----------------------------------------------------------------------------------------


def clip_splits(items: list[Instance], folds: int | None) -> list[tuple[list[Instance], list[Instance]]]:
    """(train, test) pairs over ``items`` (already in :func:`sort_key` order), grouped by clip.

    ``folds=None`` is leave-one-clip-out. Otherwise ``GroupKFold(min(folds, clips))``. A one-clip
    input gives a single split with an empty training side (the baselines then fall back).
    """
    clips = sorted({i.sample_id for i in items})
    if len(clips) < 2:
        return [([], list(items))]
    if folds is None:
        return [([i for i in items if i.sample_id != c], [i for i in items if i.sample_id == c]) for c in clips]
    # imported here, not at the top: every inspect_ai run imports this package (the ``baseline`` model
    # provider is registered through it), and scikit-learn would add ~1 s to each run's start-up
    from sklearn.model_selection import GroupKFold

    splitter = GroupKFold(n_splits=min(folds, len(clips)))
    groups = [i.sample_id for i in items]
    return [
        ([items[j] for j in train], [items[j] for j in test])
        for train, test in splitter.split(np.zeros(len(items)), groups=groups)
    ]


def pool_for(train: list[Instance], scenario: str) -> list[Instance]:
    """Training instances of the same scenario (label sets differ), else all training instances."""
    same = [i for i in train if i.scenario == scenario]
    return same or train


def run(items: list[Instance], method: Method, folds: int | None, seed: int) -> dict[str, Guess]:
    """Guesses of ``method`` for every instance, trained per fold and scenario on other clips only."""
    guesses: dict[str, Guess] = {}
    for train, test in clip_splits(items, folds):
        for scenario in sorted({i.scenario for i in test}):
            tests = [i for i in test if i.scenario == scenario]
            guesses.update(method(pool_for(train, scenario), tests, seed))
    return guesses


# -- STP roles -------------------------------------------------------------------------------------


def group_of(inst: Instance) -> str:
    """The group label (``Couple`` / ``Family``) of the instance's scenario."""
    return GROUP_LABELS[inst.scenario]


def last_speaker(inst: Instance) -> str | None:
    """The speaker of the newest context row, if any."""
    return inst.context[-1].speaker if inst.context else None


def stp_role(inst: Instance, label: str) -> str:
    """The role of STP target ``label`` in ``inst``: transferable across clips with other names."""
    if label == group_of(inst):
        return "group"
    if label == last_speaker(inst):
        return "last_speaker"
    return "other_client"


def roles_to_labels(inst: Instance, roles: Iterable[str]) -> list[str]:
    """Candidates of ``inst`` in the order of ``roles`` (each role expands to its candidates)."""
    out: list[str] = []
    for role in roles:
        out += [c for c in inst.candidates if stp_role(inst, c) == role]
    return out


def gold_class(inst: Instance, stp_roles: bool) -> str:
    """The class a label baseline learns: the gold label, or its STP role when ``stp_roles``."""
    return stp_role(inst, inst.gold) if stp_roles and TASK_TABLE[inst.task].target_roles else inst.gold


def class_order(inst: Instance, stp_roles: bool) -> Sequence[str]:
    """Tie-break order of classes: candidate order (or role order for STP roles)."""
    return STP_ROLES if stp_roles and TASK_TABLE[inst.task].target_roles else inst.candidates


def to_labels(inst: Instance, classes: Iterable[str], stp_roles: bool) -> list[str]:
    """Preferred classes as labels of ``inst`` (expanding STP roles)."""
    return roles_to_labels(inst, classes) if stp_roles and TASK_TABLE[inst.task].target_roles else list(classes)


# -- answers ---------------------------------------------------------------------------------------


def top_up(inst: Instance, preferred: Iterable[str], size: int = RANK_SIZE) -> list[str]:
    """``preferred`` restricted to the candidates, deduplicated, topped up in candidate order."""
    allowed = set(inst.candidates)
    out = list(dict.fromkeys(p for p in preferred if p in allowed))
    out += [c for c in inst.candidates if c not in out]
    return out[:size]


def other_participants(inst: Instance) -> list[str]:
    """Whom a VP answer is about: the other clients, else the therapist."""
    return [p for p in inst.participants if p != inst.client] or [FALLBACK_VP_TARGET]


def prediction_of(inst: Instance, guess: Guess) -> Any:
    """A method's guess as the prediction a parser would return for ``inst``: labels kept to the
    candidates (ITP its first choice), the intensity clamped to its scale, a viewpoint per other
    participant."""
    if TASK_TABLE[inst.task].binary:
        return top_up(inst, guess, 1)[0]
    if inst.task in LABEL_TASKS:
        return top_up(inst, guess)
    if answers_emotion(inst.task):
        emotion, intensity = guess
        scale = contract.INTENSITY_SCALE
        return {contract.EMOTION.name: emotion, contract.INTENSITY.name: int(min(scale.hi, max(scale.lo, intensity)))}
    texts = list(guess) or [NEUTRAL_VIEWPOINT]
    others = other_participants(inst)
    return [{contract.VP_TARGET.name: p, contract.VIEWPOINT.name: texts[k % len(texts)]} for k, p in enumerate(others)]


def answer_text(inst: Instance, guess: Guess) -> str:
    """The raw answer text of a method's guess: the contract's JSON, as a model would write it."""
    return contract.answer_text(inst.task, prediction_of(inst, guess))


def answers_emotion(task: str) -> bool:
    """The task's answer is an emotion with its intensity (ER: the task table's answer kind)."""
    return TASK_TABLE[task].answer == "emotion"


def fallback_guess(inst: Instance) -> Guess:
    """The answer when nothing can be learned: candidate order, or the neutral ER/VP answer."""
    if inst.task in LABEL_TASKS:
        return list(inst.candidates)
    if answers_emotion(inst.task):
        return (NEUTRAL_EMOTION, NEUTRAL_INTENSITY)
    return [NEUTRAL_VIEWPOINT]


def viewpoint_texts(pool: Iterable[Instance]) -> list[str]:
    """All gold viewpoint texts of ``pool`` (VP), one per gold item."""
    return [v["viewpoint"] for i in pool for v in i.gold]
