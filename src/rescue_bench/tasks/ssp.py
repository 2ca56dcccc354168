"""SSP, support strategy prediction: with which strategy should the therapist address the target?

An instance is an STP row whose first strategy's ``strategy_type`` is in the scenario's strategy
set (another strategy is a :class:`~rescue_bench.tasks.instance.LeftOut`). The model is told the
(gold) target, as in the paper, and never sees the therapist row.
"""

from __future__ import annotations

from rescue_bench.data.models import Clip
from rescue_bench.data.validate import label_problem
from rescue_bench.labels import strategies
from rescue_bench.tasks.instance import Instance, LeftOut, make_instance
from rescue_bench.tasks.options import BuildOptions
from rescue_bench.tasks.stp import strategy_type, support_rows


def build_ssp(clip: Clip, options: BuildOptions, left_out: list[LeftOut] | None = None) -> list[Instance]:
    labels = strategies(clip.scenario)
    window = options.window("ssp")
    out = []
    for i, target in support_rows(clip):
        gold = strategy_type(clip.rows[i])
        if gold not in labels:
            if left_out is not None:
                reason = label_problem(gold, "strategy_type", clip.scenario) or ""
                left_out.append(LeftOut("ssp", clip.sample_id, clip.scenario, i + 1, "support_strategy[0].strategy_type", reason))
            continue
        out.append(
            make_instance(clip, "ssp", i, gold, window, options.mode, candidates=list(labels), support_target=target)
        )
    return out
