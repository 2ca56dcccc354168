"""The run lifecycle every run command shares: one folder, one run; a run that got no answers is failed.

Every run command (``rescue eval``, ``rescue agent eval``, ``rescue sim eval``, ``rescue sim
fidelity``, ``rescue annotate draft``) goes the same way:

1. it loads its data and plans its work: bad input is an error before anything is written;
2. :func:`start_run` claims the run folder (:func:`claim_folder`: a folder that holds another run,
   of any kind, is refused unless ``--overwrite``, which clears what a run writes there) and writes
   ``run.json`` with status ``running``, the run's kind, identity (:func:`run_identity`) and
   settings, before the first call;
3. it runs, then writes its outputs (any error on the way leaves ``run.json`` failed with its one
   line; an interruption leaves it running, to resume);
4. :func:`finish_run` writes ``run.json`` once, with the keys every kind shares assembled here
   (status ``success`` or ``failed``, counts, the one-line cause, identity, settings, data, git
   revision, versions, time) and the kind's own keys; a failed run raises :class:`RunFailed`
   (exit 2, the one line). The same command resumes in the folder: every finished call is in the
   response cache.

An instance *without an answer* is one whose call never returned a model's reply (a rejected API
key, a refused connection, a host that does not resolve, a body that is not a chat completion,
after inspect_ai's retries): that is not the model's answer, wrong or right. A *judge failure* is a
valid answer whose judge call failed the same way. Either makes an eval run ``failed``
(:func:`failure_line`): no ``summary.json`` is written. A model's reply that is no usable answer
stays a wrong answer.
"""

from __future__ import annotations

import hashlib
import platform
import shutil
import subprocess
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from rescue_bench.engine.providers import check_providers
from rescue_bench.engine.settings import RunSettings, limits
from rescue_bench.errors import RescueError, RunInterrupted
from rescue_bench.runinfo import (
    KINDS,
    RUN_JSON,
    Estimate,
    GitRevision,
    RecordedSettings,
    RunIdentity,
    RunInfo,
    RunKind,
    parse_run_info,
    read_run_info,
)
from rescue_bench.runinfo import (
    RunStatus as StatusName,
)

RUN_FILES = ("results", "summary.json", RUN_JSON, "logs", "single", ".workers", "missing_clips.jsonl")
"""What a run writes in its folder: all ``--overwrite`` removes (nothing else is touched)."""

NOT_IDENTITY = {
    "out", "display", "workers", "max_connections", "max_retries", "timeout", "log_samples", "cache", "max_failed_share", "context_window",
}
"""Settings that change how a run goes, not what it computes: a resumed run may change them."""


class RunFailed(RescueError):
    """Calls got no answer: the run is recorded as failed (one line); ``info`` is the ``run.json`` written."""

    def __init__(self, message: str, info: RunInfo | None = None) -> None:
        super().__init__(message)
        self.info = info


class FolderTaken(RescueError):
    """``--out`` holds another run (one line naming what differs)."""


def file_digest(path: Path) -> str:
    """SHA-256 of a file, or of a folder's files (their relative paths and contents, in sorted order)."""
    h = hashlib.sha256()
    if path.is_dir():
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(str(child.relative_to(path)).encode() + b"\0")
            h.update(hashlib.sha256(child.read_bytes()).digest())
    else:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def data_files(data: Sequence[str] | None) -> list[dict[str, str]]:
    """The data a run reads: each file's (or folder's) absolute path and SHA-256 (the bundled demo when none)."""
    from rescue_bench.data.load import demo_path

    paths = [Path(p) for p in data] if data else [demo_path()]
    out = []
    for p in paths:
        resolved = p.resolve()
        out.append({"path": str(resolved), "sha256": file_digest(resolved) if resolved.exists() else "missing"})
    return out


def git_revision() -> GitRevision | None:
    """The project's git revision (and whether its tree had changes) when the package runs from a checkout."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return GitRevision(commit=head.stdout.strip(), dirty=bool(dirty.stdout.strip()) if dirty.returncode == 0 else None)


NOT_IDENTITY_OF: dict[str, set[str]] = {"draft": {"segments", "limit", "run_dir"}}
"""Settings of one kind that choose which part of its work a run does, not what it computes: a draft
run drafts the segments that need a draft (``--limit N`` the next N of them, ``--segment`` those
named) and merges them into one drafts file, run after run."""
MERGING = {"draft"}
"""Kinds whose data are checked piece by piece, not as the run's identity: a draft run redrafts the
segments whose manifest changed (its drafts record each manifest's hash), in the same folder."""


def run_identity(kind: str, settings: RunSettings, data: list[dict[str, str]]) -> RunIdentity:
    """What makes two runs the same run: the kind, every setting that changes what is computed, the data's digests."""
    skipped = NOT_IDENTITY | NOT_IDENTITY_OF.get(kind, set()) | {"data"}
    chosen = settings.model_dump(mode="json", exclude=skipped)
    return RunIdentity(
        kind=kind, settings=dict(sorted(chosen.items())), data=[] if kind in MERGING else [d["sha256"] for d in data]
    )


def recorded(settings: RunSettings) -> RecordedSettings:
    """``run.json``'s ``settings``: every field of the run's settings model, in its order."""
    return RecordedSettings.model_validate(settings.model_dump())


def previous_run(out: Path) -> RunInfo | None:
    """The ``run.json`` of ``out`` (``None`` when there is none, or it is not a ``run.json`` object)."""
    try:
        return read_run_info(out / RUN_JSON)
    except (OSError, ValueError):
        return None


def clear_folder(out: Path) -> None:
    """Remove what a run writes in ``out`` (:data:`RUN_FILES`), nothing else."""
    for name in RUN_FILES:
        target = out / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()


FOLDER_OPTION: dict[str, str] = {"draft": "--run-dir"}
"""The option that names a run's folder, by kind (``--out`` for the others): what a refusal points to."""


def claim_folder(out: Path, identity: RunIdentity, *, overwrite: bool) -> RunInfo | None:
    """Make ``out`` this run's folder; returns the previous ``run.json`` of the same run (a resume), else ``None``.

    Refused (:class:`FolderTaken`) when ``out`` holds another run, or run output without a ``run.json``
    that says which run it is, unless ``overwrite`` (then that output is removed first).
    """
    claimed = previous_run(out)
    if claimed is not None and identity.same(claimed.identity):
        return claimed
    leftovers = [name for name in RUN_FILES if (out / name).exists()]
    if claimed is not None and claimed.status == "running" and leftovers == [RUN_JSON]:
        leftovers = []  # a run stopped before its first call (bad data): nothing of it to keep
    if not leftovers:
        return None
    if overwrite:
        clear_folder(out)
        return None
    if claimed is None or claimed.identity is None:
        what = "output of a run it cannot identify (no run.json with the run's identity)"
    else:
        what = "a different run: " + "; ".join(claimed.identity.differences(identity)[:4])
    option = FOLDER_OPTION.get(str(identity.kind), "--out")
    raise FolderTaken(f"{out} holds {what}; choose another folder ({option} DIR), or pass --overwrite to replace it")


def counts(records: Sequence[Mapping[str, Any]], unanswered: dict[str, str]) -> dict[str, int]:
    """Instances, answered, without an answer, and judge failures of a run's records."""
    judge_failures = sum(1 for r in records if r.get("judge_failed"))
    return {
        "instances": len(records),
        "answered": len(records) - len(unanswered),
        "without_answer": len(unanswered),
        "judge_failures": judge_failures,
    }


def cause_of(message: str) -> str:
    """A short name for the cause of a failed call, from its error message."""
    low = message.lower()
    if "401" in low or "403" in low or "authentication" in low or "permissiondenied" in low or "api key" in low:
        return "authentication failed (the endpoint rejected the API key)"
    if "connect" in low or "name or service" in low or "nodename" in low or "resolve" in low or "timed out" in low or "timeout" in low:
        return "connection failed (nothing answered at the endpoint)"
    return "the calls failed"


def failure_line(numbers: Mapping[str, Any], messages: Sequence[str]) -> str | None:
    """The one line of a failed run (``None``: the run succeeded): the cause, the counts, what to do."""
    if not any(numbers.get(k) for k in ("without_answer", "judge_failures", "failed_calls", "task_errors")):
        return None
    first = Counter(m for m in messages if m).most_common(1)
    detail = " ".join(first[0][0].split())[:200] if first else "no error message"
    parts = []
    if numbers["without_answer"]:
        parts.append(f"{numbers['without_answer']} of {numbers['instances']} instances without an answer")
    if numbers["judge_failures"]:
        parts.append(f"{numbers['judge_failures']} judge calls failed")
    if numbers.get("failed_calls"):
        parts.append(f"{numbers['failed_calls']} calls failed")
    if numbers.get("task_errors"):
        parts.append(f"{numbers['task_errors']} task logs ended in error")
    return f"{cause_of(detail)}: {', '.join(parts)} ({detail})"


# --------------------------------------------------------------------------------------------------
# the lifecycle: start, finish
# --------------------------------------------------------------------------------------------------

InfoT = TypeVar("InfoT", bound=RunInfo)


@dataclass(frozen=True)
class RunStatus:
    """``status``, ``counts`` and ``failure`` of a finished run's ``run.json``."""

    status: StatusName
    counts: Mapping[str, int | Mapping[str, int]] | None
    failure: str | None = None


@dataclass(frozen=True)
class RunStart:
    """A run that has claimed its folder (:func:`start_run`), for :func:`finish_run`."""

    folder: Path
    kind: RunKind
    settings: RunSettings
    identity: RunIdentity
    data_files: list[dict[str, str]]
    previous: RunInfo | None
    """The ``run.json`` of the run this one resumes (``None`` for a new run)."""
    estimate: Estimate | None = None
    """What the run was estimated to send (``run.json``'s ``estimate``)."""

    def __enter__(self) -> RunStart:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        """An error once the folder is claimed leaves ``run.json`` ``failed`` with the error's one
        line, never ``running``. The run's own failure has written that already, and an interrupted
        run stays ``running``: it is resumed, not failed."""
        if not isinstance(exc, Exception) or isinstance(exc, (RunFailed, RunInterrupted)):
            return
        info = previous_run(self.folder)
        if info is not None and info.status == "running":
            info.model_copy(update={"status": "failed", "failure": error_line(exc)}).write(self.folder)


def error_line(exc: BaseException) -> str:
    """The one line ``run.json`` gives for an error that ended a run, as the command prints it: a
    project error's own line, else its type and first line."""
    if isinstance(exc, RescueError):
        return str(exc)
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"


def versions() -> dict[str, str]:
    """The versions a run records: rescue-bench, inspect_ai and Python."""
    from importlib.metadata import version

    from rescue_bench import __version__

    return {"rescue_bench": __version__, "inspect_ai": version("inspect_ai"), "python": platform.python_version()}


def now() -> str:
    """``run.json``'s ``created``: the time in UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def start_run(
    folder: str | Path,
    kind: RunKind,
    settings: RunSettings,
    *,
    overwrite: bool,
    files: list[dict[str, str]] | None = None,
    estimate: Estimate | None = None,
) -> RunStart:
    """Make the run's provider models (:func:`~rescue_bench.engine.providers.check_providers`), then
    claim ``folder`` for this run (:func:`claim_folder`) and write its ``run.json`` (status
    ``running``, kind, identity, settings, data, the estimate of what it will send) before any call.
    ``files``: the data the run reads, each ``{"path", "sha256"}`` (default: ``settings.data``'s
    files, :func:`data_files`). Used as ``with start_run(...) as start:`` around the run, so that
    an error before :func:`finish_run` leaves the run failed (:meth:`RunStart.__exit__`)."""
    out = Path(folder)
    check_providers(settings)  # a missing API key or provider package: refused before the claim
    files = data_files(settings.data) if files is None else files
    identity = run_identity(kind, settings, files)
    previous = claim_folder(out, identity, overwrite=overwrite)
    out.mkdir(parents=True, exist_ok=True)
    running = KINDS[kind](
        kind=kind, status="running", identity=identity, settings=recorded(settings), limits=limits(settings), data_files=files
    )
    if estimate is not None:
        running.estimate = estimate
    parse_run_info({**(previous.dump() if previous else {}), **running.dump()}).write(out)
    return RunStart(out, kind, settings, identity, files, previous, estimate)


def finish_run(start: RunStart, outcome: RunStatus, info: type[InfoT], **fields: Any) -> InfoT:
    """Write the finished run's ``run.json`` (the one place its shared keys are assembled) and return
    it; a failed run raises :class:`RunFailed` once the file says so. ``fields``: the kind's own keys
    (``model`` and ``judge`` default to the settings')."""
    assert KINDS[start.kind] is info, (start.kind, info)
    settings = start.settings
    shared = info(
        kind=start.kind,
        status=outcome.status,
        counts=None if outcome.counts is None else {k: v if isinstance(v, int) else dict(v) for k, v in outcome.counts.items()},
        failure=outcome.failure,
        identity=start.identity,
        settings=recorded(settings),
        model=settings.model,
        judge=settings.judge,
        limits=limits(settings),
        data_files=start.data_files,
        git_revision=git_revision(),
        versions=versions(),
        created=now(),
    )
    if start.estimate is not None:
        shared.estimate = start.estimate
    record = info.model_validate({**shared.dump(), **info(**fields).dump()})
    record.write(start.folder)
    if outcome.failure:
        raise RunFailed(f"run failed: {outcome.failure}; run.json says so; fix the cause and run the same command to resume", record)
    return record
