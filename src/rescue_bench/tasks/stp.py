"""STP, support target prediction: whom should the therapist's next turn address?

An instance is a therapist row whose first ``support_strategy`` item has a non-empty
``strategy_type`` and a resolvable target: the item's ``target``, else the row's ``target``, minus
empty names and ``Therapist``; one name is the target, two or more distinct names become the group
label (``Couple`` / ``Family``). The candidates are the clip's clients, the group label and any other
target the clip's therapist rows resolve to (clip-level, so they say nothing about one instance).
"""

from __future__ import annotations

from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import THERAPIST
from rescue_bench.tasks.instance import Instance, LeftOut, make_instance
from rescue_bench.tasks.options import BuildOptions


def _clean(names: list[str] | None) -> list[str]:
    out: list[str] = []
    for name in names or []:
        name = name.strip() if isinstance(name, str) else ""
        if name and name != THERAPIST and name not in out:
            out.append(name)
    return out


def resolve_target(row: Row, group_label: str) -> str | None:
    """The support target of a therapist row (see module doc), or ``None`` when unresolvable."""
    strategies = row.support_strategy or []
    if not strategies:
        return None
    names = _clean(strategies[0].target) or _clean(row.target)
    if not names:
        return None
    return names[0] if len(names) == 1 else group_label


def strategy_type(row: Row) -> str:
    """The first support strategy's type, stripped ("" when absent)."""
    strategies = row.support_strategy or []
    return (strategies[0].strategy_type or "").strip() if strategies else ""


def support_rows(clip: Clip) -> list[tuple[int, str]]:
    """0-based positions of STP rows with their resolved target."""
    out = []
    for i, row in enumerate(clip.rows):
        if not row.is_therapist or not strategy_type(row):
            continue
        target = resolve_target(row, clip.group_label)
        if target is not None:
            out.append((i, target))
    return out


def target_candidates(clip: Clip) -> list[str]:
    """The clip's target candidates: clients, the group label, then other resolved targets."""
    names = [*clip.clients, clip.group_label, *(t for _, t in support_rows(clip))]
    return list(dict.fromkeys(names))


def build_stp(clip: Clip, options: BuildOptions, left_out: list[LeftOut] | None = None) -> list[Instance]:
    window = options.window("stp")
    candidates = target_candidates(clip)
    return [
        make_instance(clip, "stp", i, target, window, options.mode, candidates=candidates)
        for i, target in support_rows(clip)
    ]
