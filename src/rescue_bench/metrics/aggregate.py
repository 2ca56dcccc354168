"""Aggregation of per-instance scores (SPEC section 5: micro means per scenario and pooled)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from rescue_bench.labels import POOLED, SCENARIOS
from rescue_bench.metrics._util import Key, key_fn

__all__ = ["POOLED", "mean_by", "mean_by_scenario"]

# POOLED (the key of the pooled mean) is the one spelling of the pooled scenario, from labels.


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def mean_by(records: Iterable[Any], value_fn: Callable[[Any], float], key: Key) -> dict[Any, float]:
    """Mean of ``value_fn(record)`` per value of ``key`` (e.g. per clip), in first-seen order.

    ``value_fn`` must return a number for every record: invalid answers are scored as wrong before
    aggregation, never skipped (a ``None`` raises ``TypeError``).
    """
    read = key_fn(key)
    groups: dict[Any, list[float]] = {}
    for r in records:
        groups.setdefault(read(r), []).append(float(value_fn(r)))
    return {k: _mean(v) for k, v in groups.items()}


def mean_by_scenario(
    records: Iterable[Any],
    value_fn: Callable[[Any], float],
    scenario_key: Key = "scenario",
) -> dict[str, float]:
    """Micro mean (over instances) of ``value_fn`` for ``couple``, ``family`` and both pooled.

    Returns ``{"couple": ..., "family": ..., "both": ...}`` (:data:`~rescue_bench.labels.POOLED`); a scenario without records gives NaN.
    The pooled mean weights every instance equally (so it is dominated by the larger couple set, as
    in the paper's "Both" column), not the mean of the two scenario means. A scenario value other
    than ``couple``/``family`` is kept under its own key and counted in the pooled mean.
    """
    read = key_fn(scenario_key)
    groups: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    pooled: list[float] = []
    for r in records:
        v = float(value_fn(r))
        groups.setdefault(read(r), []).append(v)
        pooled.append(v)
    out = {s: _mean(v) for s, v in groups.items()}
    out[POOLED] = _mean(pooled)
    return out
