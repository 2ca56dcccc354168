"""Fetching the public release (``benchmark_191.jsonl``) into a local cache directory.

Only the standard library is used (``urllib``), so fetching works on a fresh install. The download
goes to a temporary file in the cache directory (:mod:`rescue_bench.fileio`), is validated as a
release file, and only then renamed over the cached copy: an interrupted or broken download never replaces a good file. Every
failure becomes one :class:`FetchError` with a one-line message that says how to proceed offline.

A source is fetched at a revision (a branch, tag or commit of the Hugging Face dataset or of the
GitHub repository; :data:`PINNED_REVISION` by default), into a folder of its own in the cache
(``<cache>/<source>/<revision>/``), with the sha256 of what was fetched recorded beside it
(``fetched.json``): a cached copy whose bytes no longer match is fetched again, and ``sha256=``
refuses a download with other bytes. ``hf:tomhu/relation_therapy[@REV]`` names a revision of the
dataset wherever a command takes ``--data`` (:func:`resolve_data`). The cache is
``$RESCUE_DATA_DIR``, else ``$XDG_CACHE_HOME/rescue-bench``, else ``~/.cache/rescue-bench``.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rescue_bench.errors import RescueError
from rescue_bench.fileio import atomic_open, atomic_path, atomic_write_json

RELEASE_FILENAME = "benchmark_191.jsonl"
"""File name of the public release; also its name in the cache directory."""

HF_DATASET = "tomhu/relation_therapy"
"""The Hugging Face dataset of the release."""
GITHUB_REPO = "Tomsawyerhu/RESCUE-bench"
"""The authors' GitHub repository (the file is ``data/benchmark_191.jsonl``)."""
HF_ENDPOINT_ENV = "HF_ENDPOINT"
"""The variable naming the Hugging Face hub's address (huggingface_hub's own: a mirror of the hub)."""
HF_ENDPOINT = "https://huggingface.co"

SOURCES: dict[str, str] = {
    "hf": "{hf}/datasets/{dataset}/resolve/{revision}/benchmark_191.jsonl",
    "github": "https://raw.githubusercontent.com/" + GITHUB_REPO + "/{revision}/data/benchmark_191.jsonl",
}
"""Where the release is published, as URL templates of a revision: the Hugging Face dataset and the
authors' GitHub repository."""

PINNED_REVISION: dict[str, str] = {
    "hf": "main",
    "github": "0d0b0793e23157c7af76d1d301e63fc705b27f2a",
}
"""The revision fetched when none is asked for. GitHub: the commit of the repository whose
``data/benchmark_191.jsonl`` the released lines the tests read come from. Hugging Face: ``main``,
because no commit of the dataset could be observed where this toolkit is built (no network); the
sha256 of what a fetch got is recorded, and ``--revision``/``--sha256`` pin it."""

DEFAULT_SOURCE = "hf"
CACHE_ENV = "RESCUE_DATA_DIR"
"""Environment variable naming the cache directory (default ``$XDG_CACHE_HOME/rescue-bench``)."""
META_FILE = "fetched.json"
"""Beside a fetched release: its source, revision, URL and sha256."""
HF_SPEC = re.compile(r"^hf:(?P<dataset>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")
"""``hf:OWNER/NAME[@REVISION]``, the form ``--data`` takes for a revision of a Hugging Face dataset."""

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
    revision: str | None = None
    """The revision fetched (``None`` for a ``--url``)."""


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$RESCUE_DATA_DIR`` when set, else ``$XDG_CACHE_HOME/rescue-bench`` (the XDG base directory
    specification's user cache), else ``~/.cache/rescue-bench``."""
    env = os.environ if env is None else env
    value = env.get(CACHE_ENV, "").strip()
    if value:
        return Path(value).expanduser()
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():  # the specification ignores a relative value
        return Path(xdg) / "rescue-bench"
    return Path.home() / ".cache" / "rescue-bench"


def _folder_name(text: str) -> str:
    """A revision or dataset id as one path component."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def release_url(source: str, revision: str, dataset: str = HF_DATASET, env: Mapping[str, str] | None = None) -> str:
    """The URL of the release file of ``source`` at ``revision`` (``$HF_ENDPOINT`` for the hub)."""
    env = os.environ if env is None else env
    hub = (env.get(HF_ENDPOINT_ENV) or HF_ENDPOINT).rstrip("/")
    return SOURCES[source].format(hf=hub, dataset=dataset, revision=urllib.parse.quote(revision, safe=""))


def release_folder(root: Path, source: str, revision: str, dataset: str = HF_DATASET) -> Path:
    """Where ``source`` at ``revision`` is kept in the cache ``root``."""
    where = root / source
    if source == "hf" and dataset != HF_DATASET:
        where = where / _folder_name(dataset)
    return where / _folder_name(revision)


def cached_release(cache_dir: str | Path | None = None, source: str | None = None, revision: str | None = None) -> Path | None:
    """Path of the fetched release in ``cache_dir`` (default: :func:`default_cache_dir`), if present:
    of ``source`` at ``revision`` (its pinned one by default), else the file of a ``--url`` fetch."""
    root = (Path(cache_dir) if cache_dir is not None else default_cache_dir()).expanduser()
    folder = root if source is None else release_folder(root, source, revision or PINNED_REVISION[source])
    path = folder / RELEASE_FILENAME
    return path if path.is_file() else None


def offline_hint(cache_dir: Path) -> str:
    """How to proceed without network, in one sentence."""
    github = release_url("github", PINNED_REVISION["github"])
    return (
        f"Without network, get {RELEASE_FILENAME} by other means (e.g. from {github}) and pass it "
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


def _recorded_sha256(folder: Path) -> str | None:
    """The sha256 ``fetched.json`` recorded for the release in ``folder`` (``None`` without one)."""
    try:
        value = json.loads((folder / META_FILE).read_text(encoding="utf-8")).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def fetch_release(
    source: str = DEFAULT_SOURCE,
    cache_dir: str | Path | None = None,
    url: str | None = None,
    *,
    revision: str | None = None,
    dataset: str = HF_DATASET,
    sha256: str | None = None,
    force: bool = False,
    timeout: float = 60.0,
) -> FetchResult:
    """Make sure a valid copy of the release is in ``cache_dir`` and return where it is.

    ``source`` at ``revision`` (default :data:`PINNED_REVISION`; ``dataset``: the Hugging Face
    dataset) is kept in a folder of its own with its sha256 recorded (:data:`META_FILE`); ``url``
    overrides the source (mirrors, tests) and is kept in ``cache_dir`` itself. A cached copy is
    reused unless ``force``, when it still loads and its bytes are the ones recorded. ``sha256``:
    the digest the file must have (a download with other bytes is refused, nothing saved). The
    download is validated (every line must load as a clip) before it replaces the cached file.
    """
    root = (Path(cache_dir) if cache_dir is not None else default_cache_dir()).expanduser()
    expected = sha256.strip().lower() if sha256 else None
    if expected is not None and not re.fullmatch(r"[0-9a-f]{64}", expected):
        raise FetchError(f"--sha256 {sha256!r} is not a sha256 digest (64 hexadecimal characters)")
    if url is None:
        if source not in SOURCES:
            raise FetchError(f"unknown source {source!r}; choose one of: {', '.join(SOURCES)}")
        revision = revision or PINNED_REVISION[source]
        url = release_url(source, revision, dataset)
        folder = release_folder(root, source, revision, dataset)
    elif revision is not None:
        raise FetchError("--revision names a revision of --source; a --url is fetched as it is")
    else:
        folder = root
    dest = folder / RELEASE_FILENAME
    if dest.is_file() and not force:
        digest = _sha256(dest)
        recorded = _recorded_sha256(folder)
        clips, rows, warnings, error = _check(dest)
        if error is None and (recorded is None or recorded == digest) and (expected is None or expected == digest):
            return FetchResult(dest, None, False, digest, clips, rows, warnings, revision)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"cannot create cache directory {folder}: {exc.strerror or exc}") from None

    try:
        with atomic_path(dest, suffix=".download") as staging:  # replaces dest only once it is valid
            download(url, staging, timeout=timeout)
            got = _sha256(staging)
            if expected is not None and got != expected:
                raise FetchError(f"downloaded file from {url} has sha256 {got}, not the {expected} asked for; nothing was saved")
            clips, rows, warnings, error = _check(staging)
            if error is not None:
                raise FetchError(f"downloaded file from {url} is not a valid release ({error}); nothing was saved")
        atomic_write_json(folder / META_FILE, {
            "source": None if revision is None else source, "dataset": dataset if revision is not None and source == "hf" else None,
            "revision": revision, "url": url, "sha256": got, "fetched": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        })
    except OSError as exc:
        raise FetchError(f"cannot write to {folder}: {exc.strerror or exc}") from None
    return FetchResult(dest, url, True, got, clips, rows, warnings, revision)


def parse_hf_spec(text: str) -> tuple[str, str | None] | None:
    """``(dataset, revision)`` of ``hf:OWNER/NAME[@REVISION]`` (revision ``None`` when not given), or
    ``None`` when ``text`` is not such a spec (a path)."""
    found = HF_SPEC.match(text.strip())
    return None if found is None else (found["dataset"], found["revision"])


def resolve_data(value: str | Path, *, timeout: float = 60.0) -> Path:
    """What ``--data`` names as a local path: a path as it is, ``hf:OWNER/NAME[@REVISION]`` the
    release of that dataset at that revision (:data:`PINNED_REVISION` when none is given), fetched
    into the cache unless a valid copy is there. A string starting with ``hf:`` that is no such spec
    is a :class:`FetchError` naming the form."""
    text = str(value)
    if not text.startswith("hf:"):
        return Path(value)
    spec = parse_hf_spec(text)
    if spec is None:
        raise FetchError(f"--data {text!r}: a Hugging Face dataset is named hf:OWNER/NAME or hf:OWNER/NAME@REVISION (e.g. hf:{HF_DATASET})")
    dataset, revision = spec
    return fetch_release("hf", revision=revision, dataset=dataset, timeout=timeout).path
