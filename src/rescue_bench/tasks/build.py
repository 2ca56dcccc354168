"""Building instance sets for all tasks, and comparing their sizes with the paper's Table 6."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from rescue_bench.data.models import Clip
from rescue_bench.errors import RescueError
from rescue_bench.labels import SCENARIOS, TASKS, TaskName
from rescue_bench.reference import FULL_RELEASE_CLIPS, table6
from rescue_bench.tasks.er import build_er
from rescue_bench.tasks.instance import Instance, LeftOut, shared_row_views
from rescue_bench.tasks.itp import build_itp
from rescue_bench.tasks.options import BuildOptions
from rescue_bench.tasks.rpp import build_rpp
from rescue_bench.tasks.ssp import build_ssp
from rescue_bench.tasks.stp import build_stp
from rescue_bench.tasks.vp import build_vp

Builder = Callable[[Clip, BuildOptions, "list[LeftOut] | None"], list[Instance]]
"""``(clip, options, left_out) -> instances``; a would-be instance whose gold is outside its closed set
or range is appended to ``left_out`` (when given) instead."""

BUILDERS: dict[TaskName, Builder] = {
    "itp": build_itp,
    "rpp": build_rpp,
    "stp": build_stp,
    "ssp": build_ssp,
    "er": build_er,
    "vp": build_vp,
}


class UnknownTask(RescueError, ValueError):
    """A task name that is none of the six (the message names them)."""


def task_name(task: str) -> TaskName:
    """``task`` as one of the six names, in any case (``"ITP"`` -> ``"itp"``); :class:`UnknownTask`
    naming the six otherwise."""
    name = task.strip().lower() if isinstance(task, str) else task
    if name not in BUILDERS:
        raise UnknownTask(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    return name


def parse_tasks(spec: str | Iterable[str] | None) -> list[TaskName]:
    """Task names from ``"itp,rpp"`` or a list (``None`` or ``"all"`` = all six), in canonical order,
    in any case.

    Raises :class:`UnknownTask` (a ``ValueError``) naming the unknown task.
    """
    if spec is None:
        return list(TASKS)
    names = [s.strip().lower() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not names or names == ["all"]:
        return list(TASKS)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        raise UnknownTask(f"unknown task {unknown[0]!r}; expected some of {', '.join(TASKS)}")
    return [t for t in TASKS if t in names]


class LeftOutError(RescueError, ValueError):
    """Instances whose gold is outside its closed set or range: ``problems`` names every one (task,
    clip, row, field), one line each. ``rescue data validate`` names them with file and line."""

    def __init__(self, left_out: Sequence[LeftOut]):
        self.problems = list(left_out)
        more = f" (+{len(left_out) - 1} more)" if len(left_out) > 1 else ""
        super().__init__(f"{left_out[0]}{more}")


class Built(NamedTuple):
    """A task's instances, and the would-be instances left out because their gold is invalid."""

    instances: list[Instance]
    left_out: list[LeftOut]


def build_checked(clips: Sequence[Clip], task: str, options: BuildOptions | None = None) -> Built:
    """:func:`build_instances`, keeping the instances whose gold is outside its closed set or range
    apart, named (:class:`~rescue_bench.tasks.instance.LeftOut`), instead of refusing them."""
    name = task_name(task)
    options = options or BuildOptions()
    builder = BUILDERS[name]
    left_out: list[LeftOut] = []
    with shared_row_views():
        instances = [inst for clip in clips for inst in builder(clip, options, left_out)]
    return Built(instances, left_out)


def build_instances(clips: Sequence[Clip], task: str, options: BuildOptions | None = None) -> list[Instance]:
    """All instances of ``task`` over ``clips``: the benchmark's decisions, with their gold.

    Parameters
    ----------
    clips
        The clips (:func:`rescue_bench.data.load.load_clips`).
    task
        ``itp``, ``rpp``, ``stp``, ``ssp``, ``er`` or ``vp``, in any case.
    options
        Cue mode, context window and the other construction knobs; the default reproduces the paper
        (SPEC sections 3-4).

    Returns
    -------
    list of Instance
        Clip by clip in input order, rows in order. Each has a stable neutral ``id`` (the key of an
        answer), the ``gold``, the ``candidates`` offered and what the model may see.

    Raises
    ------
    LeftOutError
        A gold outside its closed set or range (a relation pattern or strategy the scenario does not
        have, an intensity that is not a whole number 0-10): nothing is dropped silently; each
        instance is named. :func:`build_checked` returns them apart instead.
    UnknownTask
        ``task`` is none of the six.

    Examples
    --------
    >>> from rescue_bench.data.load import load_clips
    >>> instances = build_instances(load_clips(), "stp")
    >>> len(instances), instances[0].id, instances[0].candidates, instances[0].gold
    (46, 'stp-be862f2790ca', ['Dana', 'Marcus', 'Couple'], 'Couple')
    >>> audio = build_instances(load_clips(), "stp", BuildOptions.for_run("audio", context=-1))
    >>> len(audio[0].context), audio[0].context[-1].tone
    (5, 'flat, barely audible')
    """
    built = build_checked(clips, task, options)
    if built.left_out:
        raise LeftOutError(built.left_out)
    return built.instances


def build_all(
    clips: Sequence[Clip], tasks: Iterable[str] | None = None, options: BuildOptions | None = None
) -> dict[str, list[Instance]]:
    """Instances per task for ``tasks`` (default all six): :func:`build_instances` of each.

    ``tasks`` is a list of names or ``"itp,rpp"`` (``None`` or ``"all"``: all six, in canonical order).

    >>> from rescue_bench.data.load import load_clips
    >>> {task: len(items) for task, items in build_all(load_clips(), "itp,er").items()}
    {'itp': 94, 'er': 45}
    """
    return {task: build_instances(clips, task, options) for task in parse_tasks(tasks)}


@dataclass(frozen=True)
class CountRow:
    """Instances and clips of one task and scenario, with the paper's values beside them."""

    task: str
    scenario: str
    instances: int
    clips: int
    paper_instances: int | None
    paper_clips: int | None

    @property
    def matches(self) -> bool:
        return self.instances == self.paper_instances and self.clips == self.paper_clips


def instance_counts(instances: dict[str, list[Instance]]) -> list[CountRow]:
    """Per task and scenario: instance and clip counts next to Table 6."""
    ref = table6()
    rows = []
    for task, items in instances.items():
        for scenario in SCENARIOS:
            mine = [i for i in items if i.scenario == scenario]
            paper = ref.get(task, {})
            rows.append(
                CountRow(
                    task,
                    scenario,
                    len(mine),
                    len({i.sample_id for i in mine}),
                    paper.get(scenario),
                    paper.get(f"{scenario}_samples"),
                )
            )
    return rows


def is_full_release(clips: Sequence[Clip]) -> bool:
    """Whether ``clips`` look like the full public release (191 clips), so Table 6 must be met."""
    return len(clips) == FULL_RELEASE_CLIPS
