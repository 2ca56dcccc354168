"""The six task builders (SPEC section 3): deterministic, leak-free instance sets.

One module per task (``itp``, ``rpp``, ``stp``, ``ssp``, ``er``, ``vp``), each a pure function
``build_<task>(clip, options) -> list[Instance]``; ``build_all`` runs them over many clips.
"""

from rescue_bench.tasks.build import (
    BUILDERS,
    Built,
    CountRow,
    LeftOutError,
    UnknownTask,
    build_all,
    build_checked,
    build_instances,
    instance_counts,
    is_full_release,
    parse_tasks,
    task_name,
)
from rescue_bench.tasks.instance import (
    DEFAULT_CONTEXT,
    Instance,
    LeftOut,
    ModelInput,
    RowView,
    context_rows,
    instance_id,
    pick_evenly,
    project_row,
    word_count,
)
from rescue_bench.tasks.options import BuildOptions

__all__ = [
    "BUILDERS",
    "DEFAULT_CONTEXT",
    "BuildOptions",
    "Built",
    "CountRow",
    "Instance",
    "LeftOut",
    "LeftOutError",
    "ModelInput",
    "RowView",
    "UnknownTask",
    "build_all",
    "build_checked",
    "build_instances",
    "context_rows",
    "instance_counts",
    "instance_id",
    "is_full_release",
    "pick_evenly",
    "project_row",
    "parse_tasks",
    "task_name",
    "word_count",
]
