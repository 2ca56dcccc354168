"""``rescue eval --mode video --assets ASSETS``: the paper's raw-video setting.

Each instance is rendered exactly as in the ``dialogue`` cue mode, and each row it shows (the
context rows, and the current row of ER/VP) is followed by that row's clip,
``ASSETS/<sample_id>/rows/<row_index>.mp4`` (``rescue annotate clips``), as video content. The
clips go as file references that inspect_ai reads into the request when the sample starts, so the
clip bytes are part of the request's cache key.

Before any call: a model whose provider cannot carry video, or a clip that cannot be sent (not an
MP4, larger than :data:`MAX_CLIP_BYTES`), is a one-line error. Instances with a missing clip are
not evaluated; they are counted and listed (``DIR/missing_clips.jsonl`` and ``run.json``'s
``video`` entry), never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rescue_bench.annotate.manifest import row_clip
from rescue_bench.errors import RescueError
from rescue_bench.labels import VIDEO_MODE, is_baseline
from rescue_bench.runinfo import VideoReport
from rescue_bench.tasks.instance import Instance

MAX_CLIP_BYTES = 20 * 1024 * 1024
"""Largest clip sent inline: Gemini's limit for an inline request part (larger needs its Files API,
which inspect_ai uses on its own only above this size)."""

VIDEO_NOTE = (
    "Video: each transcript row below is followed by its video clip (the picture and sound of that row). "
    "Use the clips as evidence together with the words."
)
MISSING_FILE = "missing_clips.jsonl"


class VideoModeError(RescueError):
    """The video mode cannot run: a model that takes no video, a clip that cannot be sent, no clips."""


def shown_rows(instance: Instance) -> list[int]:
    """Row indices whose clips the instance shows: its context rows, then its current row (ER/VP)."""
    rows = [view.row_index for view in instance.context]
    if instance.current is not None:
        rows.append(instance.current.row_index)
    return rows


def missing_rows(assets: Path, instance: Instance) -> list[int]:
    """Shown rows of ``instance`` whose clip file does not exist."""
    return [r for r in shown_rows(instance) if not row_clip(assets, instance.sample_id, r).is_file()]


def clip_problem(path: Path) -> str | None:
    """Why the clip at ``path`` cannot be sent, or ``None``."""
    size = path.stat().st_size
    if size > MAX_CLIP_BYTES:
        return f"{path}: clip is {size / 1e6:.1f} MB, above the {MAX_CLIP_BYTES / 1e6:.0f} MB a request can carry"
    with path.open("rb") as fh:
        head = fh.read(12)
    if len(head) < 12 or head[4:8] != b"ftyp":
        return f"{path}: not an MP4 clip (cut it again with rescue annotate clips)"
    return None


@dataclass
class VideoPlan:
    """The video mode of one run: where the clips are, and which instances lack some."""

    assets: Path
    instances: int = 0
    missing: list[dict[str, Any]] = field(default_factory=list)

    def complete(self, instances: Sequence[Instance]) -> list[Instance]:
        """The instances whose every shown row has its clip (the others are in ``missing``)."""
        gone = {m["id"] for m in self.missing}
        return [i for i in instances if i.id not in gone]

    def sample(self, instance: Instance) -> Any:
        """The inspect sample of ``instance``: its dialogue prompt with each row's clip after the row."""
        from inspect_ai.model import ContentText, ContentVideo

        from rescue_bench.engine.inspect_tasks import instance_sample
        from rescue_bench.prompts.render import render, render_row

        base = instance_sample(instance)
        user = render(instance).user
        parts: list[Any] = [ContentText(text=VIDEO_NOTE)]
        cursor = 0
        views = [(v, "") for v in instance.context] + ([(instance.current, " CURRENT")] if instance.current else [])
        for view, marker in views:
            text = render_row(view, marker)
            at = user.find(text, cursor)
            if at < 0:  # the prompt layout changed: fail loudly rather than send clips out of place
                raise RuntimeError(f"row {view.row_index} not found in the prompt of {instance.id}")
            end = at + len(text)
            parts.append(ContentText(text=user[cursor:end]))
            clip = row_clip(self.assets, instance.sample_id, view.row_index).resolve()
            parts.append(ContentVideo(video=str(clip), format="mp4"))
            cursor = end
        parts.append(ContentText(text=user[cursor:]))
        system, message = base.input[0], base.input[1]
        assert not isinstance(system, str) and not isinstance(message, str)  # instance_sample makes chat messages
        base.input = [system, message.model_copy(update={"content": parts})]
        return base

    def report(self) -> VideoReport:
        """The ``video`` entry of ``run.json``."""
        return VideoReport(
            assets=str(self.assets),
            instances=self.instances,
            evaluated=self.instances - len(self.missing),
            missing_clips=len(self.missing),
            missing_file=MISSING_FILE if self.missing else None,
        )


def video_assets(settings: Any) -> Path | None:
    """The assets folder of ``settings`` (an ``EvalSettings``) in the video mode, checked before any
    data is read; ``None`` outside the video mode.

    Raises :class:`VideoModeError` without ``--assets``, for a missing folder, or for a model that
    cannot take video.
    """
    if settings.mode != VIDEO_MODE:
        return None
    from rescue_bench.engine.media import media_problem

    if not settings.assets:
        raise VideoModeError("--mode video needs --assets ASSETS (the folder with the row clips)")
    assets = Path(settings.assets)
    if not assets.is_dir():
        raise VideoModeError(f"{assets}: no such assets folder")
    if not is_baseline(settings.model):  # baselines read no input: they run on the same instances
        problem = media_problem(settings.model, "video")
        if problem:
            raise VideoModeError(problem)
    return assets


def plan_video(assets: Path, chosen: Sequence[Sequence[Instance]]) -> VideoPlan:
    """The video plan of a run's instances (``chosen``: each task's ``--limit`` part), checked.

    Raises :class:`VideoModeError` for a clip that cannot be sent, or when no instance has its clips.
    """
    plan = VideoPlan(assets)
    checked: set[Path] = set()
    with_rows = 0  # instances that show at least one row (the others need no clip)
    for instances in chosen:
        plan.instances += len(instances)
        for instance in instances:
            with_rows += bool(shown_rows(instance))
            gone = missing_rows(assets, instance)
            if gone:
                plan.missing.append({"id": instance.id, "task": instance.task, "sample_id": instance.sample_id,
                                     "row": instance.row, "missing_rows": gone})
                continue
            for row in shown_rows(instance):
                path = row_clip(assets, instance.sample_id, row)
                if path not in checked:
                    checked.add(path)
                    problem = clip_problem(path)
                    if problem:
                        raise VideoModeError(problem)
    if with_rows and len(plan.missing) == with_rows:
        raise VideoModeError(
            f"none of the {with_rows} instances that show rows has its row clips in {assets} "
            "(cut them with: rescue annotate clips ASSETS --data DATA)"
        )
    return plan


def write_missing(out: str | Path, plan: VideoPlan | None) -> None:
    """``DIR/missing_clips.jsonl``: one line per instance not evaluated for a missing clip."""
    path = Path(out) / MISSING_FILE
    if plan is None or not plan.missing:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(m) + "\n" for m in plan.missing), encoding="utf-8")
