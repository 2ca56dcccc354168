"""One output folder, one run; and a run that got no answers is a failed run.

A run folder holds the output of one run: one model, judge, set of tasks, data and settings
(:func:`run_identity`). :func:`claim_folder` refuses a folder that holds another run (unless
``--overwrite``, which clears what a run writes there), and lets the same command resume in it.
The identity is written to ``run.json`` before the first call (status ``running``), so an
interrupted run's folder is recognised as well as a finished one's.

An instance *without an answer* is one whose call never returned a model's reply (a rejected API
key, a refused connection, a host that does not resolve, a body that is not a chat completion,
after inspect_ai's retries): that is not the model's answer, wrong or right. A *judge failure* is a
valid answer whose judge call failed the same way. Either makes the run ``failed``
(:func:`outcome`): ``run.json`` says so with the counts, no ``summary.json`` is written, the command
exits non-zero with one line (:class:`RunFailed`), and the same command resumes (every finished call
is in the response cache). A model's reply that is no usable answer stays a wrong answer.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rescue_bench.errors import RescueError
from rescue_bench.runinfo import RUN_JSON, ClaimedRunInfo, RunInfo, read_run_info

RUN_FILES = ("results", "summary.json", RUN_JSON, "logs", "single", ".workers", "missing_clips.jsonl")
"""What a run writes in its folder: all ``--overwrite`` removes (nothing else is touched)."""

NOT_IDENTITY = {"out", "display", "workers", "max_connections", "max_retries", "timeout", "log_samples", "cache"}
"""Settings that change how a run goes, not what it computes: a resumed run may change them."""


class RunFailed(RescueError):
    """Instances got no answer, or judge calls failed: the run is recorded as failed (one line)."""


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


def git_revision() -> dict[str, Any] | None:
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
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}


def run_identity(kind: str, settings: dict[str, Any], data: list[dict[str, str]]) -> dict[str, Any]:
    """What makes two runs the same run: the kind, every setting that changes what is computed, the data's digests."""
    chosen = {k: v for k, v in sorted(settings.items()) if k not in NOT_IDENTITY and k != "data"}
    return {"kind": kind, "settings": chosen, "data": [d["sha256"] for d in data]}


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    if old.get("kind") != new.get("kind"):
        return [f"kind {old.get('kind')!r} vs {new.get('kind')!r}"]
    diffs = []
    if old.get("data") != new.get("data"):
        diffs.append("data (other files or contents)")
    a, b = old.get("settings") or {}, new.get("settings") or {}
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            diffs.append(f"{key} {a.get(key)!r} vs {b.get(key)!r}")
    return diffs


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


def claim_folder(out: Path, identity: dict[str, Any], *, overwrite: bool) -> RunInfo | None:
    """Make ``out`` this run's folder; returns the previous ``run.json`` of the same run (a resume), else ``None``.

    Refused (:class:`FolderTaken`) when ``out`` holds another run, or run output without a ``run.json``
    that says which run it is, unless ``overwrite`` (then that output is removed first).
    """
    previous = previous_run(out)
    claimed = previous if isinstance(previous, ClaimedRunInfo) else None
    if claimed is not None and claimed.identity == identity:
        return previous
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
        what = "a different run: " + "; ".join(_differences(claimed.identity, identity)[:4])
    raise FolderTaken(f"{out} holds {what}; choose another --out, or pass --overwrite to replace it")


def counts(records: Sequence[Mapping[str, Any]], unanswered: dict[str, str]) -> dict[str, int]:
    """Instances, answered, without an answer, and judge failures of a run's records."""
    judge_failures = sum(1 for r in records if r.get("judge_failed"))
    return {
        "instances": len(records),
        "answered": len(records) - len(unanswered),
        "without_answer": len(unanswered),
        "judge_failures": judge_failures,
    }


def _cause(message: str) -> str:
    """A short name for the cause of a failed call, from its error message."""
    low = message.lower()
    if "401" in low or "403" in low or "authentication" in low or "permissiondenied" in low or "api key" in low:
        return "authentication failed (the endpoint rejected the API key)"
    if "connect" in low or "name or service" in low or "nodename" in low or "resolve" in low or "timed out" in low or "timeout" in low:
        return "connection failed (nothing answered at the endpoint)"
    return "the calls failed"


def failure_line(numbers: dict[str, int], messages: Sequence[str]) -> str | None:
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
    return f"{_cause(detail)}: {', '.join(parts)} ({detail})"
