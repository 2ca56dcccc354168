"""The paper's published numbers (Tables 3, 5, 6, 11, 12), shipped with the package.

One loader for every consumer (statistics, Table 6 comparison, reports), so the numbers are read
from a single file: ``rescue_bench/data/reference/paper_reference.json``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

FULL_RELEASE_CLIPS = 191
"""Clips in the full public release; inputs of this size are compared with the paper."""


@lru_cache(maxsize=1)
def paper_reference() -> dict[str, Any]:
    """The parsed reference file (cached; treat as read-only)."""
    text = resources.files("rescue_bench.data").joinpath("reference/paper_reference.json").read_text("utf-8")
    return json.loads(text)


def table3() -> dict[str, dict[str, float]]:
    """Table 3 (dataset statistics) per scenario and ``all``."""
    return paper_reference()["table3_dataset"]


def table6() -> dict[str, dict[str, int]]:
    """Table 6 (instances per task): ``{task: {couple, family, couple_samples, family_samples}}``."""
    return paper_reference()["table6_instances"]


def table5() -> dict[str, dict[str, float]]:
    """Table 5 (both scenarios): ``{model: {metric: value}}`` as printed (percent, judge /5)."""
    return paper_reference()["table5_both"]


def table11() -> dict[str, dict[str, dict[str, float]]]:
    """Table 11: ``{model: {scenario: {metric: value}}}`` as printed."""
    return paper_reference()["table11_by_scenario"]
