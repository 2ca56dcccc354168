"""The plan of one ``rescue eval`` run, made once before any call: what is evaluated, and by how many processes.

:func:`plan_run` loads the clips once, builds each task's instances once with the run's build
options, takes the ``--limit`` part once, checks the video mode against those instances, and
chooses the workers from the instance count. Everything after it reads the :class:`RunPlan`: the
evaluation in this process, each worker process (the parent hands the plan over as it is, and each
worker takes its static shard of it), and the output's counts. No inspect_ai here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from rescue_bench.engine.settings import EvalSettings, WorkerPlan, available_cpus, plan_workers
from rescue_bench.tasks.instance import Instance, LeftOut
from rescue_bench.tasks.options import BuildOptions

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.data.load import Problem
    from rescue_bench.engine.video_mode import VideoPlan
    from rescue_bench.labels import TaskName

T = TypeVar("T")


def limited(items: Sequence[T], limit: int | None) -> list[T]:
    """The first ``limit`` of ``items`` (all of them without a limit): what ``--limit N`` keeps of
    each task's instances (of the agent's decision points, of the sim's episodes), in their order."""
    return list(items[:limit] if limit else items)


@dataclass(frozen=True)
class TaskPlan:
    """One task of a run: its whole instance set and the part of it that is evaluated."""

    name: TaskName
    instances: tuple[Instance, ...]
    """Every instance of the task: the pool the offline baselines cross-validate over, so a run of
    part of the set (``--limit``) answers as a run over all."""
    chosen: tuple[Instance, ...]
    """The instances evaluated, in the task's canonical order: the ``--limit`` part, without (in the
    video mode) those whose clips are missing."""


@dataclass(frozen=True)
class RunPlan:
    """A run, planned (:func:`plan_run`): read by the evaluation in every process and by the output."""

    settings: EvalSettings
    clips: int
    """Clips loaded (``run.json``'s ``clips``)."""
    options: BuildOptions
    tasks: tuple[TaskPlan, ...]
    """The tasks with something to evaluate, in the order of ``--tasks``."""
    video: VideoPlan | None
    """The video mode's clips and the instances without them (``None`` outside the video mode)."""
    workers: WorkerPlan
    left_out: dict[str, tuple[LeftOut, ...]] = field(default_factory=dict)
    """``--lenient``: per task of ``--tasks`` (empty too), the would-be instances left out because
    their gold is outside its closed set or range."""
    let_through: tuple[Problem, ...] = ()
    """``--lenient``: the data's content errors that no left-out instance accounts for (warned about)."""

    @property
    def total(self) -> int:
        """Instances evaluated over all tasks."""
        return sum(len(t.chosen) for t in self.tasks)

    def sampler(self) -> Callable[[Instance], Any]:
        """How this run makes an instance's inspect sample (the video mode adds each shown row's clip)."""
        if self.video is not None:
            return self.video.sample
        from rescue_bench.engine.inspect_tasks import instance_sample

        return instance_sample


def worker_plan(settings: EvalSettings, instances: int) -> WorkerPlan:
    """The processes ``settings`` use on this machine for ``instances`` (:func:`~rescue_bench.engine.settings.plan_workers`)."""
    return plan_workers(
        settings.workers,
        cpus=available_cpus(),
        max_connections=settings.max_connections,
        baseline=settings.is_baseline,
        instances=instances,
    )


def plan_run(settings: EvalSettings) -> RunPlan:
    """Plan ``settings``: load, build, limit, check the video mode, choose the workers; no call is made.

    Raises :class:`rescue_bench.data.DataError` for bad data (content errors too, unless
    ``settings.lenient``: then the instances whose gold is invalid are left out, named) and
    :class:`~rescue_bench.engine.video_mode.VideoModeError` when the video mode cannot run (checked
    before the data is read when the model or the assets folder is the cause).
    """
    from rescue_bench.data.validate import load_checked
    from rescue_bench.engine.video_mode import plan_video, video_assets
    from rescue_bench.tasks import build_checked

    assets = video_assets(settings)
    loaded = load_checked(settings.data, repair_mojibake=settings.repair_mojibake, lenient=settings.lenient)
    clips = loaded.clips
    options = BuildOptions.for_run(settings.mode, settings.context)
    built = [(name, build_checked(clips, name, options)) for name in settings.tasks]
    limited_sets = [(name, b, limited(b.instances, settings.limit)) for name, b in built]
    video = plan_video(assets, [chosen for _, _, chosen in limited_sets]) if assets is not None else None
    tasks = []
    for name, b, chosen in limited_sets:
        if video is not None:  # instances with a missing clip are listed (missing_clips.jsonl), not run
            chosen = video.complete(chosen)
        if chosen:
            tasks.append(TaskPlan(name, tuple(b.instances), tuple(chosen)))
    named = {(item.sample_id, item.row, item.field) for _, b in built for item in b.left_out}
    let_through = tuple(p for p in loaded.problems if (p.sample_id, p.row_index, p.field) not in named)
    total = sum(len(t.chosen) for t in tasks)
    left_out: dict[str, tuple[LeftOut, ...]] = {name: tuple(b.left_out) for name, b in built}
    return RunPlan(settings, len(clips), options, tuple(tasks), video, worker_plan(settings, total), left_out, let_through)
