"""VP, viewpoint prediction: what does this client think of each other participant?

An instance is a client row with at least one ``viewpoints_attitudes`` item whose source is the
speaker and whose target and viewpoint are non-empty; all such items are the gold. At most
``vp_max_per_clip`` per clip, picked evenly. The model sees the previous rows and the current row.
"""

from __future__ import annotations

from rescue_bench.data.models import Clip, Row
from rescue_bench.tasks.instance import Instance, LeftOut, make_instance, pick_evenly, project_row
from rescue_bench.tasks.options import BuildOptions


def speaker_viewpoints(row: Row) -> list[dict[str, str]]:
    """The speaker's own viewpoints with a target and a viewpoint, as gold dicts."""
    out = []
    for item in row.viewpoints_attitudes or []:
        source, target, viewpoint = ((v or "").strip() for v in (item.source, item.target, item.viewpoint))
        if source == row.speaker and target and viewpoint:
            out.append({"source": source, "target": target, "viewpoint": viewpoint})
    return out


def build_vp(clip: Clip, options: BuildOptions, left_out: list[LeftOut] | None = None) -> list[Instance]:
    eligible = []
    for i, row in enumerate(clip.rows):
        if not row.is_client:
            continue
        gold = speaker_viewpoints(row)
        if gold:
            eligible.append((i, gold))
    window = options.window("vp")
    return [
        make_instance(
            clip,
            "vp",
            i,
            gold,
            window,
            options.mode,
            current=project_row(clip.rows[i], i + 1, options.mode),
            client=clip.rows[i].speaker,
        )
        for i, gold in pick_evenly(eligible, options.vp_max_per_clip)
    ]
