"""SSP, support strategy prediction: with which strategy should the therapist address the target?

An instance is an STP row whose first strategy's ``strategy_type`` is in the scenario's strategy
set. The model is told the (gold) target, as in the paper, and never sees the therapist row.
"""

from __future__ import annotations

from rescue_bench.data.models import Clip
from rescue_bench.labels import strategies
from rescue_bench.tasks.instance import Instance, context_rows, instance_id
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
            Instance(
                id=instance_id("ssp", clip.sample_id, i + 1),
                task="ssp",
                sample_id=clip.sample_id,
                scenario=clip.scenario,
                row=i + 1,
                n_rows=len(clip.rows),
                gold=gold,
                candidates=list(labels),
                participants=clip.clients,
                mode=options.mode,
                context=context_rows(clip.rows, i, window, options.mode),
                support_target=target,
            )
        )
    return out
