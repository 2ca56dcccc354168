"""``rescue annotate draft`` on inspect_ai: one sample per segment, its windows drafted in order.

The domain (windows, prompts, validation, the clip) is :class:`rescue_bench.annotate.SegmentDraft`;
this module makes the model calls. Each window gets one request; an answer with problems gets one
re-ask listing them (the conversation continues, so the model sees its own answer); then the
draft commits what is valid. Segments run concurrently (``--max-connections``), windows of a
segment one after the other (each carries the summary of the ones before).

Every call goes through inspect_ai's response cache with the engine's never-expiring policy (in
``RESCUE_CACHE_DIR`` when set), so running the same command again repeats no finished call and
an interrupted draft resumes where it stopped. Media are sent as data URIs: their bytes are part
of the cache key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from rescue_bench.annotate.draft import MediaItem, SegmentDraft
from rescue_bench.annotate.manifest import Manifest, load_assets
from rescue_bench.annotate.prompt import MEDIA_MODES, prompt_sha, reask_prompt
from rescue_bench.annotate.windows import DEFAULT_WINDOW_CUES
from rescue_bench.errors import RescueError

DEFAULT_OUT = "drafts.jsonl"
"""``ASSETS/drafts.jsonl``: where ``draft`` writes and ``clips`` reads by default."""


class DraftSettings(BaseModel):
    """Everything that defines a draft run (no secrets)."""

    model_config = ConfigDict(extra="forbid")

    assets: str
    model: str
    media: str = "none"
    out: str | None = None
    window_cues: int = DEFAULT_WINDOW_CUES
    limit: int | None = None
    max_connections: int | None = None
    max_retries: int | None = None
    timeout: int | None = None
    temperature: float | None = 0.0
    cache: bool = True
    log_dir: str | None = None

    @property
    def out_path(self) -> Path:
        return Path(self.out) if self.out else Path(self.assets) / DEFAULT_OUT


class DraftInputError(RescueError):
    """Bad input or a model that cannot take the requested media: one line, exit 2."""


@dataclass
class SegmentJob:
    draft: SegmentDraft
    media: dict[int, list[MediaItem]] = field(default_factory=dict)


@dataclass
class DraftReport:
    """What a draft run did (printed by the CLI, and used by the cost measurements)."""

    out: Path
    segments: int = 0
    written: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    windows: int = 0
    calls: int = 0
    reasked: int = 0
    rows: int = 0
    problems: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class DraftChannel:
    """What one ``rescue annotate draft`` run shares with its solver: the job of each segment, and
    the drafted clips handed back as they are made.

    Passed to the solver as an argument (inspect_ai logs it by class name only), like the eval's
    :class:`~rescue_bench.engine.channel.RunChannel`, so two runs in one process never share state.
    """

    def __init__(self, jobs: dict[str, SegmentJob]) -> None:
        self.jobs = jobs
        self.results: dict[str, dict[str, Any]] = {}


def _count_tokens(output: Any, stats: dict[str, int]) -> None:
    usage = getattr(output, "usage", None)
    if usage is not None:
        stats["input_tokens"] += usage.input_tokens or 0
        stats["output_tokens"] += usage.output_tokens or 0


def draft_solver(channel: DraftChannel, model_name: str, cache: bool = True) -> Any:
    """The solver drafting one segment (its sample id) with the active model."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, ContentText, ModelOutput, get_model
    from inspect_ai.solver import Generate, TaskState, solver

    from rescue_bench.engine.judge import CACHE
    from rescue_bench.engine.media import media_content

    @solver
    def draft_segment() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            job = channel.jobs[str(state.sample_id)]
            draft = job.draft
            model = get_model()
            policy: Any = CACHE if cache else False
            stats = {"calls": 0, "reasked": 0, "input_tokens": 0, "output_tokens": 0}
            for window in draft.windows:
                items = job.media.get(window.index, [])
                system, user = draft.request(window, items)
                media = [await media_content(i.kind, str(i.path), i.format) for i in items]
                messages: list[Any] = [
                    ChatMessageSystem(content=system),
                    ChatMessageUser(content=[*media, ContentText(text=user)] if media else user),
                ]
                output = await model.generate(messages, cache=policy)
                stats["calls"] += 1
                _count_tokens(output, stats)
                first = draft.check(window, output.completion)
                second = None
                if first.problems:
                    messages += [ChatMessageAssistant(content=output.completion or "(no answer)"),
                                 ChatMessageUser(content=reask_prompt(first.problems))]
                    output = await model.generate(messages, cache=policy)
                    stats["calls"] += 1
                    stats["reasked"] += 1
                    _count_tokens(output, stats)
                    second = draft.check(window, output.completion)
                draft.commit(window, first, second)
            m = draft.manifest
            clip = draft.clip(
                {
                    "model": model_name,
                    "prompt_sha": prompt_sha(m.scenario, draft.media_mode),
                    "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "tool": f"rescue-bench {_version()}",
                    **stats,
                }
            )
            channel.results[m.segment_id] = {"clip": clip.to_json(), "problems": draft.problem_count, **stats}
            state.output = ModelOutput.from_content(model_name, f"{len(clip.rows)} rows drafted")
            return state

        return solve

    return draft_segment()


def _version() -> str:
    from rescue_bench import __version__

    return __version__


def check_model(settings: DraftSettings) -> bool:
    """Raise :class:`DraftInputError` when the model cannot take the media; whether to send audio."""
    from rescue_bench.engine.media import accepts, media_problem

    if settings.media not in MEDIA_MODES:
        raise DraftInputError(f"--media must be one of {', '.join(MEDIA_MODES)} (got {settings.media!r})")
    if settings.model.startswith("baseline/"):
        raise DraftInputError(f"{settings.model} is an offline baseline; drafting needs a language model")
    kind = {"video": "video", "frames": "image"}.get(settings.media)
    if kind is not None:
        problem = media_problem(settings.model, kind)
        if problem:
            raise DraftInputError(problem + ("; use --media frames or --media none" if kind == "video" else ""))
    return settings.media == "frames" and accepts(settings.model, "audio")


def plan_jobs(manifests: list[Manifest], settings: DraftSettings, audio: bool) -> dict[str, SegmentJob]:
    """A :class:`SegmentJob` per segment, with its windows' media made (once; reused after)."""
    jobs = {}
    for manifest in manifests:
        draft = SegmentDraft(manifest, media=settings.media, window_cues=settings.window_cues)
        job = SegmentJob(draft)
        for window in draft.windows:
            job.media[window.index] = draft.media(window, settings.assets, audio=audio)
        jobs[manifest.segment_id] = job
    return jobs


def run_draft(settings: DraftSettings, *, display: str = "full") -> DraftReport:
    """Draft every segment of ``settings.assets`` and write one release-format clip per segment.

    Raises :class:`DraftInputError` (nothing sent) for a model that cannot take the media,
    :class:`rescue_bench.annotate.AssetsError` for a bad assets folder and
    :class:`rescue_bench.annotate.MediaError` for media that cannot be cut. Segments whose calls
    failed after their retries are listed in the report and not written.
    """
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import GenerateConfig

    import rescue_bench.engine.video_api  # noqa: F401  (registers openai-video/)
    from rescue_bench.engine.providers import endpoint, provider_args, route, use_cache_dir

    audio = check_model(settings)
    if settings.window_cues < 1:
        raise DraftInputError("--window-cues must be at least 1")
    manifests = load_assets(settings.assets)
    if settings.limit:
        manifests = manifests[: settings.limit]
    use_cache_dir()
    channel = DraftChannel(plan_jobs(manifests, settings, audio))
    report = DraftReport(settings.out_path, segments=len(manifests))
    samples = [
        Sample(id=m.segment_id, input=f"draft segment {m.segment_id}", metadata={"segment_id": m.segment_id, "scenario": m.scenario})
        for m in manifests
    ]
    task = Task(
        dataset=MemoryDataset(samples, name="rescue_annotate_draft"),
        solver=draft_solver(channel, settings.model, settings.cache),
        config=GenerateConfig(temperature=settings.temperature),
        name="rescue_annotate_draft",
        metadata={"media": settings.media, "window_cues": settings.window_cues},
    )
    gen_args: dict[str, Any] = {}
    if settings.max_connections is not None:
        gen_args["max_connections"] = settings.max_connections
    if settings.max_retries is not None:
        gen_args["max_retries"] = settings.max_retries
    if settings.timeout is not None:
        gen_args["attempt_timeout"] = settings.timeout
    log_dir = settings.log_dir or str(Path(settings.assets) / ".draft-logs")
    logs = inspect_eval(
        task,
        model=route(settings.model),  # an OpenAI-compatible server gets a system role and the temperature
        model_base_url=endpoint(route(settings.model)),
        model_args=provider_args(route(settings.model)),
        log_dir=log_dir,
        display=display,  # type: ignore[arg-type]
        fail_on_error=False,
        score=False,
        log_level="error",
        log_realtime=False,
        **gen_args,
    )
    results = channel.results
    errors: dict[str, str] = {}
    for log in logs:
        if getattr(log, "status", None) == "cancelled":
            raise KeyboardInterrupt
        for sample in log.samples or []:
            if sample.error is not None:
                errors[str(sample.id)] = " ".join(sample.error.message.split())[:300]
    clips = []
    for m in manifests:
        result = results.get(m.segment_id)
        if result is None:
            report.failed.append((m.segment_id, errors.get(m.segment_id, "no draft (the run stopped before this segment)")))
            continue
        clips.append(result["clip"])
        report.written.append(m.segment_id)
        report.windows += len(result["clip"]["draft"]["windows"])
        report.rows += len(result["clip"]["rows"])
        report.calls += result["calls"]
        report.reasked += result["reasked"]
        report.problems += result["problems"]
        report.input_tokens += result["input_tokens"]
        report.output_tokens += result["output_tokens"]
    _write_jsonl(settings.out_path, clips)
    return report


def _write_jsonl(path: Path, clips: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for clip in clips:
            fh.write(json.dumps(clip, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
