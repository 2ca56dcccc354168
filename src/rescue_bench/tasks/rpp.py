"""RPP, relation pattern prediction: which pattern organises the interaction at this therapist turn?

An instance is a therapist row whose ``relation_cycle_state`` is non-empty and in the scenario's
pattern set (an empty state means the annotators saw no clear pattern). The model sees all previous
rows, never the therapist row itself. ``rpp_include_client_patterns`` also turns client rows'
annotated ``relation_pattern`` into instances (an extension; off by default, as in the paper).
"""

from __future__ import annotations

from rescue_bench.data.models import Clip
from rescue_bench.labels import patterns
from rescue_bench.tasks.instance import Instance, make_instance
from rescue_bench.tasks.options import BuildOptions


def build_rpp(clip: Clip, options: BuildOptions) -> list[Instance]:
    labels = patterns(clip.scenario)
    window = options.window("rpp")
    out = []
    for i, row in enumerate(clip.rows):
        if row.is_therapist:
            gold = row.cycle_state
        elif options.rpp_include_client_patterns and row.is_client:
            gold = row.pattern
        else:
            continue
        if gold in labels:
            out.append(make_instance(clip, "rpp", i, gold, window, options.mode, candidates=list(labels)))
    return out
