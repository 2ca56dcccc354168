"""Shortcut baselines: one surface cue of the transcript, no understanding of the conversation.

They expose annotation artefacts: a model's score means little where a single cue it can see
already earns it. ITP: a client row addressed to the therapist (the row's ``target``, shown to the
model in every cue mode) is usually followed by the therapist's turn, so ``shortcut`` answers
``yes`` exactly when the last client row shown is addressed to the therapist. On the real release
a boundary after such a row was a therapist turn 61 times in 109, after any other row 6 times in 25.

Tasks without a known artefact answer as ``majority`` (leave-one-clip-out), so a ``baseline/shortcut``
run is complete and its other columns read as the majority's.
"""

from __future__ import annotations

from rescue_bench.baselines.common import Guess
from rescue_bench.baselines.counting import majority
from rescue_bench.labels import THERAPIST
from rescue_bench.task_table import TASK_TABLE
from rescue_bench.tasks.instance import Instance


def addressed_to_therapist(inst: Instance) -> bool:
    """Whether the last client row of ``inst``'s context names the therapist among its targets."""
    clients = [r for r in inst.context if r.speaker != THERAPIST]
    return bool(clients) and THERAPIST in clients[-1].target


def shortcut(pool: list[Instance], tests: list[Instance], seed: int) -> dict[str, Guess]:
    """ITP: ``yes`` iff :func:`addressed_to_therapist`; every other task: :func:`majority`."""
    if tests and TASK_TABLE[tests[0].task].binary:
        return {t.id: ["yes", "no"] if addressed_to_therapist(t) else ["no", "yes"] for t in tests}
    return majority(pool, tests, seed)
