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

A draft run has the lifecycle of every run command (:mod:`rescue_bench.engine.runfolder`): the
assets, the drafts file and the segments to draft are read and their media cut first, then the
run folder (``--run-dir``, default ``ASSETS/.draft-run/<model>``: ``run.json`` and the inspect logs) is
claimed; a run with segments whose calls failed is failed (exit 2, ``run.json`` names them) and the
same command resumes it.

A run merges into its drafts file by segment and never loses a clip: it drafts the segments that
need a draft (none yet, one older than its manifest, or one made with another model, media mode
or window size), or exactly those given with ``--segment``; ``--limit N`` takes the first N of
them. The clips of every other segment, and the earlier clip of a segment whose calls failed, are
written back byte for byte; a run that drafted nothing leaves the file untouched. A failed
segment is reported with the HTTP status and the server's message.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, overload

from pydantic import Field

from rescue_bench.annotate.draft import MediaItem, SegmentDraft
from rescue_bench.annotate.freshness import HASH_KEY, draft_provenance, is_stale
from rescue_bench.annotate.manifest import Manifest, load_assets, manifest_sha256
from rescue_bench.annotate.prompt import MEDIA_MODES, prompt_sha, reask_prompt
from rescue_bench.annotate.windows import DEFAULT_WINDOW_CUES
from rescue_bench.engine.dryrun import DryRun, draft_estimate
from rescue_bench.engine.evaluate import log_usage, role_usage
from rescue_bench.engine.runfolder import RunStatus, cause_of, finish_run, start_run
from rescue_bench.engine.settings import DRAFTER_MAX_TOKENS, RunSettings, eval_args, generate_config
from rescue_bench.errors import RescueError
from rescue_bench.fileio import atomic_open, dumps, loads
from rescue_bench.runinfo import DraftCalls, DraftRunInfo, DraftSegments

DEFAULT_OUT = "drafts.jsonl"
"""``ASSETS/drafts.jsonl``: where ``draft`` writes and ``clips`` reads by default."""
DEFAULT_RUN_DIR = ".draft-run"
"""``ASSETS/.draft-run/<model>``: a draft run's folder (``run.json``, ``logs/``) by default, one per
drafting model; a folder whose name starts with a dot is no segment
(:func:`~rescue_bench.annotate.manifest.load_assets`)."""


class DraftSettings(RunSettings):
    """Everything that defines a draft run (no secrets): the engine's run settings (the model, the
    call limits, ``--limit`` counting segments, the temperature, the cache) and the draft's own.

    The run settings no draft reads (``judge``, ``data``, BERTScore, ``repair_mojibake``) keep
    their defaults; the temperature, the seed and ``max_tokens`` are sent with every call."""

    assets: str
    model: str  # no default: drafting needs a language model
    max_tokens: int | None = Field(default=DRAFTER_MAX_TOKENS, ge=1, description="Most tokens per drafter answer (sent with every call).")
    media: str = "none"
    out: str | None = None  # type: ignore[assignment]  # the drafts file; None: ASSETS/drafts.jsonl
    window_cues: int = Field(default=DEFAULT_WINDOW_CUES, ge=1)
    segments: list[str] | None = None
    """Draft exactly these segments (even when their draft is current); default: those needing one."""
    run_dir: str | None = None
    """The run's folder (``run.json``, ``logs/``); ``None``: ``ASSETS/.draft-run/<model>``."""

    @property
    def out_path(self) -> Path:
        return Path(self.out) if self.out else Path(self.assets) / DEFAULT_OUT

    @property
    def run_path(self) -> Path:
        """``--run-dir``, else ``ASSETS/.draft-run/<model>``: one run folder per drafting model."""
        if self.run_dir:
            return Path(self.run_dir)
        return Path(self.assets) / DEFAULT_RUN_DIR / re.sub(r"[^A-Za-z0-9._-]+", "_", self.model)


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
    """Segments this run drafted (or tried to)."""
    written: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Segments with a current draft that this run left as it was."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Why each drafted segment needed a draft (see :func:`needs_draft`)."""
    earlier: list[str] = field(default_factory=list)
    """Failed segments whose earlier clip is kept in the file."""
    windows: int = 0
    calls: int = 0
    reasked: int = 0
    rows: int = 0
    problems: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    info: DraftRunInfo | None = None
    """The run's ``run.json``, once written."""


@dataclass(frozen=True)
class DraftedSegment:
    """One drafted segment: its clip as the drafts file's line, and what drafting it took."""

    line: str
    windows: int
    rows: int
    problems: int
    calls: int
    reasked: int
    input_tokens: int
    output_tokens: int


class DraftChannel:
    """What one ``rescue annotate draft`` run shares with its solver: the job of each segment, and
    the drafted clips handed back as they are made.

    Passed to the solver as an argument (inspect_ai logs it by class name only), like the eval's
    :class:`~rescue_bench.engine.channel.RunChannel`, so two runs in one process never share state.
    """

    def __init__(self, jobs: dict[str, SegmentJob], max_calls: int | None = None) -> None:
        from rescue_bench.engine.channel import RunChannel

        self.jobs = jobs
        self.run = RunChannel[Mapping[str, object]](max_calls=max_calls)  # it keeps no records
        """The run's call slots and circuit (every drafting call holds a slot)."""
        self.results: dict[str, DraftedSegment] = {}
        self.errors: dict[str, str] = {}
        """Why a segment's model call failed, one line (HTTP status and the server's message)."""


def _count_tokens(output: Any, stats: dict[str, int]) -> None:
    usage = getattr(output, "usage", None)
    if usage is not None:
        stats["input_tokens"] += usage.input_tokens or 0
        stats["output_tokens"] += usage.output_tokens or 0


def draft_solver(channel: DraftChannel, model_name: str, cache: bool = True, window_cues: int = DEFAULT_WINDOW_CUES) -> Any:
    """The solver drafting one segment (its sample id) with the active model."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, ContentText, ModelOutput, get_model
    from inspect_ai.solver import Generate, TaskState, solver

    from rescue_bench.engine.channel import call_error, call_slot, request_key
    from rescue_bench.engine.judge import CACHE
    from rescue_bench.engine.media import media_content

    @solver
    def draft_segment() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            try:
                return await drafted(state)
            except Exception as exc:
                channel.errors[str(state.sample_id)] = call_error(exc)
                raise

        async def drafted(state: TaskState) -> TaskState:
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
                async with call_slot(channel.run, request_key(str(model), messages)):
                    output = await model.generate(messages, cache=policy)
                stats["calls"] += 1
                _count_tokens(output, stats)
                first = draft.check(window, output.completion)
                second = None
                if first.problems:
                    messages += [ChatMessageAssistant(content=output.completion or "(no answer)"),
                                 ChatMessageUser(content=reask_prompt(first.problems))]
                    async with call_slot(channel.run, request_key(str(model), messages)):
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
                    HASH_KEY: manifest_sha256(m),
                    "window_cues": window_cues,
                    "prompt_sha": prompt_sha(m.scenario, draft.media_mode),
                    "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "tool": f"rescue-bench {_version()}",
                    **stats,
                }
            )
            data = clip.to_json()
            channel.results[m.segment_id] = DraftedSegment(
                line=dumps(data) + "\n", windows=len(data["draft"]["windows"]), rows=len(data["rows"]), problems=draft.problem_count,
                calls=stats["calls"], reasked=stats["reasked"], input_tokens=stats["input_tokens"], output_tokens=stats["output_tokens"],
            )
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
    from rescue_bench.labels import is_baseline

    if settings.media not in MEDIA_MODES:
        raise DraftInputError(f"--media must be one of {', '.join(MEDIA_MODES)} (got {settings.media!r})")
    if is_baseline(settings.model):
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


@dataclass
class DraftsFile:
    """The clips already in a drafts file, each kept as its exact line (so it is written back byte
    for byte), by segment id in file order."""

    lines: dict[str, str] = field(default_factory=dict)
    drafts: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """Each clip's ``draft`` provenance (``None`` for a clip without: a reviewed clip)."""


def read_drafts(path: Path) -> DraftsFile:
    """The clips in ``path`` (none when it does not exist). :class:`DraftInputError` naming the file
    and line when a line is not a clip with a ``sample_id``, or a segment appears twice: a run never
    merges into (and so rewrites) a file it cannot read whole."""
    out = DraftsFile()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return out
    except OSError as exc:
        raise DraftInputError(f"{path}: cannot read the drafts file to merge into: {exc.strerror or exc}") from None
    first_line: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
            record = loads(text)
        except ValueError as exc:
            raise DraftInputError(f"{path}:{number}: cannot merge into this drafts file: not valid JSON ({exc})") from None
        sid = record.get("sample_id") if isinstance(record, dict) else None
        if not isinstance(sid, str) or not sid:
            raise DraftInputError(f"{path}:{number}: cannot merge into this drafts file: a clip without a sample_id")
        if sid in first_line:
            raise DraftInputError(f"{path}:{number}: cannot merge into this drafts file: segment {sid} is also on line {first_line[sid]}")
        first_line[sid] = number
        out.lines[sid] = text.rstrip("\r") + "\n"
        out.drafts[sid] = draft_provenance(record)
    return out


def needs_draft(draft: dict[str, Any] | None, manifest: Manifest, settings: DraftSettings, present: bool) -> str | None:
    """Why a segment needs a draft from this run, or ``None`` when its draft is current.

    Current means: made from this very manifest (its hash), with the run's model, media mode (as used:
    ``none`` for a segment without video) and window size. A clip without draft provenance (a reviewed
    clip in the file) is never replaced unless asked for with ``--segment``.
    """
    if not present:
        return "no draft yet"
    if draft is None:
        return None
    if is_stale(draft, manifest):
        return "older than its manifest"
    media = settings.media if manifest.video else "none"
    if draft.get("model") != settings.model or draft.get("media") != media or draft.get("window_cues", DEFAULT_WINDOW_CUES) != settings.window_cues:
        return "made with another model, media or window size"
    return None


@overload
def run_draft(settings: DraftSettings, *, display: str = ..., overwrite: bool = ..., dry_run: Literal[False] = ...) -> DraftReport: ...
@overload
def run_draft(settings: DraftSettings, *, display: str = ..., overwrite: bool = ..., dry_run: Literal[True]) -> DryRun: ...
def run_draft(settings: DraftSettings, *, display: str = "full", overwrite: bool = False, dry_run: bool = False) -> DraftReport | DryRun:
    """Draft the segments of ``settings.assets`` that need it and merge them into the drafts file;
    returns what was drafted, with the ``run.json`` written (:attr:`DraftReport.info`).

    Raises :class:`DraftInputError` (nothing sent) for a model that cannot take the media, an
    unknown ``--segment`` or a drafts file that cannot be read, :class:`rescue_bench.annotate.AssetsError`
    for a bad assets folder and :class:`rescue_bench.annotate.MediaError` for media that cannot be
    cut, all before the run folder is claimed. Segments whose calls failed after their retries fail
    the run (:class:`~rescue_bench.engine.runfolder.RunFailed`, once ``run.json`` names them); their
    earlier clip (if any) stays in the drafts file as it was.
    """
    from rescue_bench.annotate.manifest import MANIFEST
    from rescue_bench.engine.plan import limited
    from rescue_bench.engine.providers import use_cache_dir
    from rescue_bench.engine.run import drop_stale_logs

    audio = check_model(settings)
    every = load_assets(settings.assets)
    existing = read_drafts(settings.out_path)
    by_id = {m.segment_id: m for m in every}
    reasons: dict[str, str] = {}
    if settings.segments:
        for sid in settings.segments:
            if sid not in by_id:
                raise DraftInputError(f"--segment {sid}: no such segment in {settings.assets}")
            reasons[sid] = "asked for with --segment"
    else:
        for m in every:
            why = needs_draft(existing.drafts.get(m.segment_id), m, settings, m.segment_id in existing.lines)
            if why is not None:
                reasons[m.segment_id] = why
    manifests = [m for m in every if m.segment_id in reasons]
    manifests = limited(manifests, settings.limit)
    report = DraftReport(settings.out_path, segments=len(manifests))
    report.reasons = {m.segment_id: reasons[m.segment_id] for m in manifests}
    report.kept = [m.segment_id for m in every if m.segment_id not in reasons and m.segment_id in existing.lines]
    use_cache_dir()
    jobs = plan_jobs(manifests, settings, audio)
    windows = [job.draft.request(w, job.media.get(w.index, [])) for job in jobs.values() for w in job.draft.windows]
    estimate = draft_estimate(windows, len(manifests), settings.max_tokens, settings.media)
    if dry_run:
        return estimate
    files = [{"path": str(Path(settings.assets).resolve() / m.segment_id / MANIFEST), "sha256": manifest_sha256(m)} for m in every]
    with start_run(settings.run_path, "draft", settings, overwrite=overwrite, files=files, estimate=estimate.record()) as start:
        logs: list[Any] = []
        cancelled = False
        results: dict[str, DraftedSegment] = {}
        errors: dict[str, str] = {}
        if manifests:
            results, errors, logs, cancelled = _draft_segments(manifests, jobs, settings, display)
            drop_stale_logs(settings.run_path, [str(log.location) for log in logs])
        new_lines: dict[str, str] = {}
        for m in manifests:
            result = results.get(m.segment_id)
            if result is None:
                report.failed.append((m.segment_id, errors.get(m.segment_id, "no draft (the run stopped before this segment)")))
                if m.segment_id in existing.lines:
                    report.earlier.append(m.segment_id)
                continue
            new_lines[m.segment_id] = result.line
            report.written.append(m.segment_id)
            report.windows += result.windows
            report.rows += result.rows
            report.calls += result.calls
            report.reasked += result.reasked
            report.problems += result.problems
            report.input_tokens += result.input_tokens
            report.output_tokens += result.output_tokens
        if new_lines:
            merged = {**existing.lines, **new_lines}
            with atomic_open(settings.out_path) as fh:
                for sid in sorted(merged):
                    fh.write(merged[sid])
        if cancelled:  # after keeping what was finished
            raise KeyboardInterrupt
        info = finish_run(
            start,
            draft_status(report),
            DraftRunInfo,
            judge=None,
            assets=settings.assets,
            drafts=str(settings.out_path),
            media=settings.media,
            segments=DraftSegments(
                written=report.written, failed=dict(report.failed), kept=report.kept, reasons=report.reasons, earlier=report.earlier,
            ),
            calls=DraftCalls(calls=report.calls, reasked=report.reasked, windows=report.windows, rows=report.rows, problems=report.problems),
            usage=log_usage(logs),
            usage_by_role=role_usage(logs, main="drafter"),
            log_statuses=[getattr(log, "status", None) for log in logs],
        )
        report.info = info
        return report


def draft_status(report: DraftReport) -> RunStatus:
    """``status``, ``counts`` and ``failure`` of a draft run: failed when a segment got no draft."""
    numbers = {"segments": report.segments, "written": len(report.written), "failed": len(report.failed), "kept": len(report.kept)}
    if not report.failed:
        return RunStatus("success", numbers)
    first = Counter(why for _, why in report.failed).most_common(1)[0][0]
    earlier = f"; the earlier drafts of {len(report.earlier)} of them are kept" if report.earlier else ""
    line = f"{cause_of(first)}: {len(report.failed)} of {report.segments} segments have no draft{earlier} ({first})"
    return RunStatus("failed", numbers, line)


def _draft_segments(
    manifests: list[Manifest], jobs: dict[str, SegmentJob], settings: DraftSettings, display: str
) -> tuple[dict[str, DraftedSegment], dict[str, str], list[Any], bool]:
    """Run the drafting task over ``manifests``: each drafted segment's result, why the others
    failed, the logs, and whether the run was cancelled (interrupted)."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample

    import rescue_bench.engine.video_api  # noqa: F401  (registers openai-video/)
    from rescue_bench.engine.providers import endpoint, provider_args, provider_setup, route

    channel = DraftChannel(jobs, settings.max_connections)
    samples = [
        Sample(id=m.segment_id, input=f"draft segment {m.segment_id}", metadata={"segment_id": m.segment_id, "scenario": m.scenario})
        for m in manifests
    ]
    task = Task(
        dataset=MemoryDataset(samples, name="rescue_annotate_draft"),
        solver=draft_solver(channel, settings.model, settings.cache, settings.window_cues),
        config=generate_config(settings),
        name="rescue_annotate_draft",
        metadata={"media": settings.media, "window_cues": settings.window_cues},
    )
    with provider_setup():  # a missing API key, a missing package: one line
        logs = inspect_eval(
            task,
            model=route(settings.model),  # an OpenAI-compatible server gets a system role and the temperature
            model_base_url=endpoint(route(settings.model)),
            model_args=provider_args(route(settings.model)),
            log_dir=str(settings.run_path / "logs"),
            display=display,  # type: ignore[arg-type]
            fail_on_error=False,
            score=False,
            log_level="error",
            log_realtime=False,
            **eval_args(settings),
        )
    errors: dict[str, str] = {}
    cancelled = False
    for log in logs:
        cancelled = cancelled or getattr(log, "status", None) == "cancelled"
        for sample in log.samples or []:
            if sample.error is not None:
                sid = str(sample.id)
                errors[sid] = channel.errors.get(sid) or " ".join(sample.error.message.split())[:300]
    for sid, reason in channel.errors.items():
        errors.setdefault(sid, reason)
    return channel.results, errors, list(logs), cancelled
