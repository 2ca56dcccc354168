"""``predict_answers``: offline baselines that answer benchmark instances like a model would."""

from __future__ import annotations

from rescue_bench.baselines.common import Method, answer_text, run, sort_key
from rescue_bench.baselines.counting import counting_method
from rescue_bench.baselines.shortcut import shortcut
from rescue_bench.baselines.supervised import supervised_method
from rescue_bench.prompts.render import render
from rescue_bench.tasks.instance import Instance

BASELINES: tuple[str, ...] = ("majority", "random", "prior", "supervised", "shortcut")
"""Baseline methods, from the weakest reference point to the strongest; then ``shortcut``, one
surface cue per task (:mod:`rescue_bench.baselines.shortcut`), which exposes annotation artefacts."""

LEAVE_ONE_CLIP_OUT = ("majority", "random", "shortcut")
"""Methods trained on all other clips (leave-one-clip-out); the others use a clip-grouped k-fold."""


def predict_answers(
    instances: list[Instance],
    method: str,
    *,
    seed: int = 0,
    folds: int = 5,
    stp_roles: bool = False,
) -> dict[str, str]:
    """Raw answer text (contract JSON) of baseline ``method`` for each instance, by instance id.

    All ``instances`` must be of one task. ``majority`` and ``random`` learn from all other clips
    (leave-one-clip-out); ``prior`` and ``supervised`` from the training folds of
    ``GroupKFold(min(folds, clips))`` over clips. An instance's own clip never contributes a gold, and
    training uses the instance's scenario when the training side has it (label sets differ by
    scenario). The answers depend on ``seed`` and the set of instances, not on their order.
    ``stp_roles`` makes ``majority`` and ``prior`` count STP golds as roles (group / last speaker /
    other client) instead of names; ``supervised`` always does.
    """
    if method not in BASELINES:
        raise ValueError(f"unknown baseline {method!r}; expected one of {', '.join(BASELINES)}")
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}")
    if not instances:
        return {}
    tasks = sorted({i.task for i in instances})
    if len(tasks) > 1:
        raise ValueError(f"baselines answer one task at a time; got {', '.join(tasks)}")
    items = sorted(instances, key=sort_key)
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate instance ids")
    fn: Method
    if method == "supervised":
        fn = supervised_method({i.id: render(i).user for i in items})
    elif method == "shortcut":
        fn = shortcut
    else:
        fn = counting_method(method, stp_roles)
    guesses = run(items, fn, None if method in LEAVE_ONE_CLIP_OUT else folds, seed)
    return {i.id: answer_text(i, guesses[i.id]) for i in items}
