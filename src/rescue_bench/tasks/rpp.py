"""RPP, relation pattern prediction: which pattern organises the interaction at this therapist turn?

An instance is a therapist row whose ``relation_cycle_state`` is non-empty and in the scenario's
pattern set (an empty state means the annotators saw no clear pattern); a non-empty state outside the
set is a :class:`~rescue_bench.tasks.instance.LeftOut`. The model sees all previous
rows, never the therapist row itself. ``rpp_include_client_patterns`` also turns client rows'
annotated ``relation_pattern`` into instances (an extension; off by default, as in the paper).
"""

from __future__ import annotations

from rescue_bench.data.models import Clip
from rescue_bench.data.validate import label_problem
from rescue_bench.labels import patterns
from rescue_bench.tasks.instance import Instance, LeftOut, make_instance
from rescue_bench.tasks.options import BuildOptions


def build_rpp(clip: Clip, options: BuildOptions, left_out: list[LeftOut] | None = None) -> list[Instance]:
    labels = patterns(clip.scenario)
    window = options.window("rpp")
    out = []
    for i, row in enumerate(clip.rows):
        if row.is_therapist:
            field, gold = "relation_cycle_state", row.cycle_state
        elif options.rpp_include_client_patterns and row.is_client:
            field, gold = "relation_pattern", row.pattern
        else:
            continue
        if gold in labels:
            out.append(make_instance(clip, "rpp", i, gold, window, options.mode, candidates=list(labels)))
        elif gold and left_out is not None:
            left_out.append(LeftOut("rpp", clip.sample_id, clip.scenario, i + 1, field, label_problem(gold, field, clip.scenario) or ""))
    return out
