"""Fewer garbage-collector passes for whole-release work (loading, building, running).

Loading a release, building its instances and running an evaluation allocate millions of small,
long-lived objects (clips, rows, row views, instances, inspect_ai samples and events) and almost no
reference cycles. With Python's default thresholds (700, 10, 10) the cyclic collector re-scans them
over and over: about three quarters of building the instances of 10x the release and a fifth of a
run's CPU time (docs/benchmarks.md). Nothing here changes what is computed, only how often the
collector looks for cycles; reference counting still frees everything else at once.

``rescue`` sets these thresholds for every command (``rescue_bench.cli.main``) and ``run_eval`` for a
run; library users building large releases can wrap their own code in :func:`fewer_gc_passes`.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

GC_THRESHOLD = (50_000, 20, 100)
"""Collector thresholds for whole-release work (Python's default is 700, 10, 10)."""


@contextlib.contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """Raise the collector thresholds to at least :data:`GC_THRESHOLD`; restore them afterwards."""
    old = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(GC_THRESHOLD, old)))
    try:
        yield
    finally:
        gc.set_threshold(*old)
