"""What defines a run, and the plain pieces the run driver and the workers share.

No inspect_ai here: the parent of a ``--workers`` run and ``rescue eval``'s checks import this module
without paying inspect_ai's import time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.errors import RescueError, RunInterrupted
from rescue_bench.labels import TASKS, EvalMode, Rubric, TaskName, is_baseline

__all__ = [
    "EvalSettings",
    "Evaluated",
    "RunInterrupted",
    "WorkerFailed",
    "WorkerPlan",
    "available_cpus",
    "merge_usage",
    "plan_workers",
    "scale_workers",
    "share_connections",
]

JUDGE_TEMPERATURE = 0.0
"""The judge is sent temperature 0 (and the run's seed) whatever the model under evaluation gets:
a judge score should not depend on a draw."""

Workers = Annotated[int, Field(ge=1)] | Literal["auto"]
"""``--workers``: a number of processes, or ``"auto"`` (see :func:`plan_workers`)."""


class RunSettings(BaseModel):
    """What every run of the engine takes (``rescue eval`` and ``rescue agent``); written to ``run.json``
    (no secrets in here). The command-specific settings extend it."""

    model_config = ConfigDict(extra="forbid")

    model: str = "baseline/majority"
    judge: str | None = None
    data: list[str] | None = None
    limit: int | None = Field(default=None, ge=1)
    max_connections: int | None = Field(default=None, ge=1)
    max_retries: int | None = Field(default=None, ge=0)
    timeout: int | None = Field(default=None, ge=1)
    """Seconds one attempt of a model or judge call may take before it is abandoned and retried."""
    temperature: float | None = 0.0
    max_tokens: int | None = Field(default=None, ge=1)
    """Most tokens a model answer may have (``None``: the provider's default; not sent)."""
    repair_mojibake: bool = False
    bertscore: bool = True
    bertscore_model: str | None = None
    cache: bool = True
    seed: int = 0
    log_samples: bool = True
    """Write every sample (messages, events) to the inspect logs; off saves about a third of the run time."""
    out: str = "rescue_runs/latest"

    @property
    def is_baseline(self) -> bool:
        """The model is an offline baseline (no calls, no cache, no workers)."""
        return is_baseline(self.model)


class EvalSettings(RunSettings):
    """Everything that defines a ``rescue eval`` run."""

    vp_rubric: Rubric = "default"
    tasks: list[TaskName] = Field(default_factory=lambda: list(TASKS))
    mode: EvalMode = "dialogue"
    """A cue mode, or ``video`` (the dialogue cues plus each shown row's clip from ``assets``)."""
    context: int | None = Field(default=None, ge=-1)
    """Rows of context for every task (-1 = all previous rows); ``None`` keeps the per-task defaults."""
    workers: Workers = "auto"
    """Processes the instances are split over (``--workers``), or ``"auto"``; ``max_connections`` is
    shared among them."""
    assets: str | None = None
    """``--mode video``: the assets folder holding each row's clip (``rescue annotate clips``)."""


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
    unanswered: dict[str, str] = field(default_factory=dict)
    """Instances whose call never returned a reply (after retries), by id: the error that stopped each."""
    logs: list[str] = field(default_factory=list)
    """The inspect_ai logs this run wrote (their paths)."""
    requests: dict[str, Any] = field(default_factory=dict)
    """The first model (``"model"``) and judge (``"judge"``) request as sent (see ``RunChannel.note_request``)."""


def merge_usage(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Token usage per model summed over several parts (tasks' logs, workers)."""
    usage: dict[str, Any] = {}
    for part in parts:
        for model, u in part.items():
            acc = usage.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
            for key, value in u.items():
                acc[key] = acc.get(key, 0) + value
    return usage


MIN_CALLS_PER_WORKER = 200
"""Fewer instances than this per process and ``auto`` does not start another: a worker's start-up
(imports, building the instances: about 3 s of CPU) would outweigh its share of the calls."""
SATURATED = 0.8
"""``auto`` adds processes when the first was busy (on a CPU or waiting for one) this share of the time."""


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class WorkerPlan:
    """How many worker processes a run starts, and why (recorded in ``run.json``)."""

    requested: int | Literal["auto"]
    cap: int
    """Processes at most (1: the run is evaluated in the ``rescue`` process itself)."""
    start: int
    """Processes calling from the start; with ``auto`` one, the others wait for the choice."""
    reason: str
    cpus: int
    max_connections: int | None

    @property
    def auto(self) -> bool:
        return self.requested == "auto" and self.cap > 1


def plan_workers(
    requested: int | Literal["auto"],
    *,
    cpus: int,
    max_connections: int | None,
    baseline: bool = False,
    instances: int | None = None,
) -> WorkerPlan:
    """How many processes a run may use (pure; ``rescue eval`` passes :func:`available_cpus`).

    A number is taken as asked, but never more than ``max_connections`` (every worker keeps at least
    one connection). ``"auto"`` allows one process per CPU, never more than ``max_connections``, nor
    more than one per :data:`MIN_CALLS_PER_WORKER` ``instances`` when that bound is known (``--limit``);
    the run starts with one calling process and :func:`scale_workers` decides from what it achieves.
    Without ``max_connections`` (inspect_ai's own per-model limit, 10 for most providers, which one
    process keeps busy) and for the offline baselines (no calls) one process.
    """
    def plan(cap: int, start: int, reason: str) -> WorkerPlan:
        return WorkerPlan(requested, cap, start, reason, cpus, max_connections)

    if baseline:
        return plan(1, 1, "an offline baseline makes no calls")
    if requested != "auto":
        n = min(requested, max_connections) if max_connections is not None else requested
        capped = f" (at most --max-connections {max_connections})" if n < requested else ""
        return plan(n, n, f"--workers {requested}{capped}")
    if max_connections is None:
        return plan(1, 1, "no --max-connections: inspect_ai's per-model limit, which one process keeps busy")
    bounds = {"CPUs": cpus, "--max-connections": max_connections}
    if instances is not None:
        bounds[f"{instances} instances / {MIN_CALLS_PER_WORKER} per worker"] = max(1, instances // MIN_CALLS_PER_WORKER)
    cap = max(1, min(bounds.values()))
    binding = min(bounds, key=lambda k: bounds[k])
    if cap == 1:
        return plan(1, 1, f"one process: capped by {binding} ({bounds[binding]})")
    return plan(cap, 1, f"up to {cap} processes (capped by {binding})")


def scale_workers(*, cap: int, busy: float, remaining: int) -> int:
    """Processes to run, from how busy the first process was once its calls were flowing (pure).

    ``busy``: the share of a short window the first process spent on a CPU or waiting for one (its
    calls had come back and it was still working through them). A process that keeps up with its
    endpoint waits for answers most of the time; one that cannot is busy all the time, and then up to
    ``cap`` processes share the work (fewer when the ``remaining`` instances would give a process
    less than :data:`MIN_CALLS_PER_WORKER`).
    """
    if cap <= 1 or busy < SATURATED:
        return 1
    return max(1, min(cap, remaining // MIN_CALLS_PER_WORKER))


def share_connections(max_connections: int | None, workers: int) -> list[int | None]:
    """Each worker's part of ``--max-connections``: they add up to it (the first ones take the rest)."""
    if max_connections is None:
        return [None] * workers  # inspect_ai's default, per worker
    base, rest = divmod(max_connections, workers)
    return [max(1, base + (1 if k < rest else 0)) for k in range(workers)]
