"""What defines a run, and the plain pieces the run driver and the workers share.

No inspect_ai here: the parent of a ``--workers`` run and ``rescue eval``'s checks import this module
without paying inspect_ai's import time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.errors import RescueError, RunInterrupted
from rescue_bench.labels import TASKS, EvalMode, Rubric, TaskName, is_baseline

__all__ = [
    "EvalSettings",
    "Evaluated",
    "RunInterrupted",
    "WorkerFailed",
    "effective_workers",
    "merge_usage",
    "shard_connections",
    "shard_of",
]

T = TypeVar("T")


class EvalSettings(BaseModel):
    """Everything that defines a run; written to ``run.json`` (no secrets in here)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "baseline/majority"
    judge: str | None = None
    vp_rubric: Rubric = "default"
    data: list[str] | None = None
    tasks: list[TaskName] = Field(default_factory=lambda: list(TASKS))
    mode: EvalMode = "dialogue"
    """A cue mode, or ``video`` (the dialogue cues plus each shown row's clip from ``assets``)."""
    context: int | None = Field(default=None, ge=-1)
    """Rows of context for every task (-1 = all previous rows); ``None`` keeps the per-task defaults."""
    limit: int | None = Field(default=None, ge=1)
    max_connections: int | None = Field(default=None, ge=1)
    max_retries: int | None = Field(default=None, ge=0)
    timeout: int | None = Field(default=None, ge=1)
    """Seconds one attempt of a model or judge call may take before it is abandoned and retried."""
    temperature: float | None = 0.0
    repair_mojibake: bool = False
    bertscore: bool = True
    bertscore_model: str | None = None
    cache: bool = True
    seed: int = 0
    log_samples: bool = True
    """Write every sample (messages, events) to the inspect logs; off saves about a third of the run time."""
    workers: int = Field(default=1, ge=1)
    """Processes the instances are split over (``--workers``); ``max_connections`` is shared among them."""
    out: str = "rescue_runs/latest"
    assets: str | None = None
    """``--mode video``: the assets folder holding each row's clip (``rescue annotate clips``)."""

    @property
    def is_baseline(self) -> bool:
        """The model is an offline baseline (no calls, no cache, no workers)."""
        return is_baseline(self.model)


class WorkerFailed(RescueError):
    """A worker process of a ``--workers N`` run failed; the message is its one-line error."""


@dataclass
class Evaluated:
    """What evaluating a settings' instances (or one shard of them) gives back, before any output."""

    records: list[dict[str, Any]]
    """One record per evaluated instance (the scorer's, or an invalid "no answer" record)."""
    usage: dict[str, Any]
    """Token usage per model (see ``merge_usage``)."""
    statuses: list[str | None]
    """Status of every inspect_ai log written."""


def merge_usage(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Token usage per model summed over several parts (tasks' logs, workers)."""
    usage: dict[str, Any] = {}
    for part in parts:
        for model, u in part.items():
            acc = usage.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
            for key, value in u.items():
                acc[key] = acc.get(key, 0) + value
    return usage


def shard_connections(max_connections: int | None, workers: int) -> int | None:
    """Each worker's part of ``--max-connections``: the total over all workers never exceeds it."""
    return None if max_connections is None else max(1, max_connections // workers)


def shard_of(items: Sequence[T], index: int, count: int) -> list[T]:
    """Worker ``index`` of ``count``'s part of ``items``: every count-th item from the index-th on.

    Interleaved rather than in blocks, so every worker gets the same mix of clips, rows and context
    lengths and the workers finish together; the parts are disjoint and together are ``items``.
    """
    if not 0 <= index < count:
        raise ValueError(f"shard {index} of {count} does not exist")
    return list(items[index::count])


def effective_workers(settings: EvalSettings) -> int:
    """Worker processes a run uses: 1 for the offline baselines (no calls to spread), and never more
    than ``--max-connections`` (every worker keeps at least one connection)."""
    if settings.is_baseline:
        return 1
    workers = max(1, settings.workers)
    if settings.max_connections is not None:
        workers = min(workers, max(1, settings.max_connections))
    return workers
