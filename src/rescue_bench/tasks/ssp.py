"""SSP, support strategy prediction: with which strategy should the therapist address the target?

An instance is an STP row whose first strategy's ``strategy_type`` is in the scenario's strategy
set. The model is told the (gold) target, as in the paper, and never sees the therapist row.
"""

from __future__ import annotations

from rescue_bench.data.models import Clip
from rescue_bench.labels import strategies
from rescue_bench.tasks.instance import Instance, make_instance
from rescue_bench.tasks.options import BuildOptions
from rescue_bench.tasks.stp import strategy_type, support_rows


def build_ssp(clip: Clip, options: BuildOptions) -> list[Instance]:
    labels = strategies(clip.scenario)
    window = options.window("ssp")
    out = []
    for i, target in support_rows(clip):
        gold = strategy_type(clip.rows[i])
        if gold not in labels:
            continue
        out.append(
            make_instance(clip, "ssp", i, gold, window, options.mode, candidates=list(labels), support_target=target)
        )
    return out
