"""ITP, intervention time prediction: should the therapist take the next turn?

An instance is the boundary after row k. Positive: row k is not the therapist and row k+1 is.
Negative: neither row k nor row k+1 is the therapist. Each clip keeps ``n = min(#pos, #neg)`` of each
class, picked evenly; clips with ``n = 0`` give nothing. The model sees the rows up to k.
"""

from __future__ import annotations

from rescue_bench.data.models import Clip
from rescue_bench.labels import ITP_LABELS
from rescue_bench.tasks.instance import Instance, LeftOut, make_instance, pick_evenly
from rescue_bench.tasks.options import BuildOptions


def boundaries(clip: Clip) -> tuple[list[int], list[int]]:
    """0-based positions k of positive and negative boundaries (the boundary after row k)."""
    rows = clip.rows
    pos: list[int] = []
    neg: list[int] = []
    for k in range(len(rows) - 1):
        if rows[k].is_therapist:
            continue
        (pos if rows[k + 1].is_therapist else neg).append(k)
    return pos, neg


def build_itp(clip: Clip, options: BuildOptions, left_out: list[LeftOut] | None = None) -> list[Instance]:
    pos, neg = boundaries(clip)
    n = min(len(pos), len(neg))
    picked = sorted([(k, "yes") for k in pick_evenly(pos, n)] + [(k, "no") for k in pick_evenly(neg, n)])
    window = options.window("itp")
    # the instance is about row k, and the model sees the rows up to and including k
    return [
        make_instance(clip, "itp", k, gold, window, options.mode, context_end=k + 1, candidates=list(ITP_LABELS))
        for k, gold in picked
    ]
