"""Fetching the public release (``benchmark_191.jsonl``) into a local cache directory.

Only the standard library is used (``urllib``), so fetching works on a fresh install. The download
goes to a temporary file in the cache directory (:mod:`rescue_bench.fileio`), is validated as a
release file, and only then renamed over the cached copy: an interrupted or broken download never replaces a good file. Every
failure becomes one :class:`FetchError` with a one-line message that says how to proceed offline.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rescue_bench.errors import RescueError
from rescue_bench.fileio import atomic_open, atomic_path

RELEASE_FILENAME = "benchmark_191.jsonl"
"""File name of the public release; also its name in the cache directory."""

SOURCES: dict[str, str] = {
    "hf": "https://huggingface.co/datasets/tomhu/relation_therapy/resolve/main/benchmark_191.jsonl",
    "github": "https://raw.githubusercontent.com/Tomsawyerhu/RESCUE-bench/main/data/benchmark_191.jsonl",
}
"""Where the release is published: the Hugging Face dataset and the authors' GitHub repository."""

DEFAULT_SOURCE = "hf"
CACHE_ENV = "RESCUE_DATA_DIR"
"""Environment variable naming the cache directory (default ``~/.cache/rescue-bench``)."""

USER_AGENT = "rescue-bench (https://github.com/Tomsawyerhu/RESCUE-bench data fetch)"
CHUNK = 1 << 16


class FetchError(RescueError):
    """Fetching failed; the message is one line meant for the user."""


@dataclass(frozen=True)
class FetchResult:
    """Outcome of :func:`fetch_release`."""

    path: Path
    url: str | None
    downloaded: bool
    """False when a valid cached copy was reused."""
    sha256: str
    clips: int
    rows: int
    warnings: int


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$RESCUE_DATA_DIR`` when set, else ``~/.cache/rescue-bench``."""
    env = os.environ if env is None else env
    value = env.get(CACHE_ENV, "").strip()
    return Path(value).expanduser() if value else Path.home() / ".cache" / "rescue-bench"


def cached_release(cache_dir: str | Path | None = None) -> Path | None:
    """Path of the fetched release in ``cache_dir`` (default: :func:`default_cache_dir`), if present."""
    path = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = path.expanduser() / RELEASE_FILENAME
    return path if path.is_file() else None


def offline_hint(cache_dir: Path) -> str:
    """How to proceed without network, in one sentence."""
    return (
        f"Without network, get {RELEASE_FILENAME} by other means (e.g. from {SOURCES['github']}) and pass it "
        f"with --data /path/to/{RELEASE_FILENAME}, or copy it to {cache_dir / RELEASE_FILENAME}"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _reason(exc: BaseException) -> str:
    """A short, single-line reason for a network failure."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        inner = exc.reason
        if isinstance(inner, BaseException):
            return _reason(inner)
        return str(inner)
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())


def download(url: str, dest: Path, *, timeout: float = 60.0) -> None:
    """Download ``url`` to ``dest`` atomically: a temporary file beside ``dest``, then a rename.

    Raises :class:`FetchError` (one line, offline hint included) on any network or write failure;
    ``dest`` is left untouched in that case.
    """
    with atomic_open(dest, "wb") as out:
        try:
            request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
            with urllib.request.urlopen(request, timeout=timeout) as response:
                for block in iter(lambda: response.read(CHUNK), b""):
                    out.write(block)
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            raise FetchError(f"could not download {url}: {_reason(exc)}. {offline_hint(dest.parent)}") from None


def _check(path: Path) -> tuple[int, int, int, str | None]:
    """Validate a release file: (clips, rows, soft warnings, first hard error or ``None``)."""
    from rescue_bench.data.validate import validate_paths

    result = validate_paths([path])
    errors = result.errors
    first = None
    if errors:
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        first = str(errors[0]) + more
    elif not result.clips:
        first = f"{path}: the file holds no clips"
    return len(result.clips), sum(len(c.rows) for c in result.clips), len(result.warnings), first


def fetch_release(
    source: str = DEFAULT_SOURCE,
    cache_dir: str | Path | None = None,
    url: str | None = None,
    *,
    force: bool = False,
    timeout: float = 60.0,
) -> FetchResult:
    """Make sure a valid copy of the release is in ``cache_dir`` and return where it is.

    A valid cached copy is reused unless ``force``. ``url`` overrides ``source`` (mirrors, tests).
    The download is validated (every line must load as a clip) before it replaces the cached file.
    """
    if url is None:
        if source not in SOURCES:
            raise FetchError(f"unknown source {source!r}; choose one of: {', '.join(SOURCES)}")
        url = SOURCES[source]
    root = (Path(cache_dir) if cache_dir is not None else default_cache_dir()).expanduser()
    dest = root / RELEASE_FILENAME
    if dest.is_file() and not force:
        clips, rows, warnings, error = _check(dest)
        if error is None:
            return FetchResult(dest, None, False, _sha256(dest), clips, rows, warnings)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"cannot create cache directory {root}: {exc.strerror or exc}") from None

    try:
        with atomic_path(dest, suffix=".download") as staging:  # replaces dest only once it is valid
            download(url, staging, timeout=timeout)
            clips, rows, warnings, error = _check(staging)
            if error is not None:
                raise FetchError(f"downloaded file from {url} is not a valid release ({error}); nothing was saved")
    except OSError as exc:
        raise FetchError(f"cannot write to {root}: {exc.strerror or exc}") from None
    return FetchResult(dest, url, True, _sha256(dest), clips, rows, warnings)
