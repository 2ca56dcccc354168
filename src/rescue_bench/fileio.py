"""Writing files whole or not at all, and JSON without NaN: the two rules every writer shares.

Every file the project writes (run records, summaries, drafts, manifests, clips' sidecars, exports)
goes through :func:`atomic_write` or :func:`atomic_path` (a whole folder through
:func:`replace_folder`): the bytes go to a temporary file in the
same folder, are flushed and fsynced, and only then renamed over the destination. A crash, a full
disk or an exception half-way leaves the previous file exactly as it was (a rename within one file
system is atomic on POSIX and on Windows' ``os.replace``), never a truncated one.

JSON is strict in both directions: Python's ``json`` reads and writes ``NaN``, ``Infinity`` and
``-Infinity``, which are not JSON (RFC 8259) and which browsers, ``jq`` and most other readers
refuse. :func:`dumps` refuses to write them and :func:`loads` refuses to read them, each with a
:class:`ValueError` that names the constant.

Nothing here imports the rest of the package, so every layer can use it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    """The process's umask, read without changing it where Linux tells it (``/proc``); elsewhere set
    and restored at once (``os.umask`` has no read-only form)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(dest: Path) -> int:
    """The mode a rewritten ``dest`` keeps, or what ``open()`` would give a new file (0666 less the umask)."""
    try:
        return stat.S_IMODE(dest.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike[str], *, suffix: str | None = None) -> Iterator[Path]:
    """A temporary path beside ``dest``; when the block ends without an exception the file written
    there replaces ``dest`` (fsynced first). On an exception the temporary file is removed and
    ``dest`` is untouched. For writers that need a path of their own (PyAV, zip files)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix if suffix is not None else ".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        # mkstemp makes the file 0600; the result should look like any file the user writes (or
        # keep the mode of the file it replaces), not be hidden from the lab's other accounts
        os.chmod(tmp, _mode_for(dest))
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(dest.parent)


def replace_folder(new: str | os.PathLike[str], dest: str | os.PathLike[str], *, aside: str | os.PathLike[str]) -> None:
    """Move the folder ``new`` to ``dest``; a folder already at ``dest`` is first moved to ``aside``
    (on the same file system; the caller deletes it once it is done).

    Two renames, since POSIX has no portable exchange of two folders. If the second fails (a full
    disk, a lost mount), the old folder is moved back before the error propagates, so an error never
    leaves ``dest`` empty; a process killed between the two renames leaves the old folder at
    ``aside``, not deleted.
    """
    new, dest, aside = Path(new), Path(dest), Path(aside)
    moved_aside = dest.exists()
    if moved_aside:
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(dest, aside)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(new, dest)
    except BaseException:
        if moved_aside:
            os.replace(aside, dest)
        raise
    _fsync_dir(dest.parent)


@contextlib.contextmanager
def atomic_open(dest: str | os.PathLike[str], mode: str = "w", *, encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """``open(dest, mode)`` whose result appears at ``dest`` only when the block succeeds."""
    if "b" in mode:
        encoding = None
    with atomic_path(dest) as tmp:
        with open(tmp, mode, encoding=encoding, newline="" if encoding else None) as fh:
            yield fh
            fh.flush()


def atomic_write(dest: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` to ``dest`` whole or not at all."""
    with atomic_open(dest, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


def atomic_write_jsonl(dest: str | os.PathLike[str], records: Iterable[Any]) -> int:
    """Write one strict JSON object per line, whole or not at all; returns the number of lines."""
    n = 0
    with atomic_open(dest) as fh:
        for record in records:
            fh.write(dumps(record) + "\n")
            n += 1
    return n


def atomic_write_json(dest: str | os.PathLike[str], obj: Any, *, indent: int | None = 2) -> None:
    """Write ``obj`` as strict JSON (with a final newline), whole or not at all."""
    atomic_write(dest, dumps(obj, indent=indent) + "\n")


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` that refuses NaN and infinities (``ValueError``) and keeps non-ASCII text."""
    kwargs.setdefault("ensure_ascii", False)
    return json.dumps(obj, allow_nan=False, **kwargs)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 is valid JSON syntax that overflows to inf
        raise ValueError(f"{text} is out of the range of a JSON number")
    return value


def loads(text: str | bytes) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity``, ``-Infinity`` and numbers that overflow
    to infinity such as ``1e999`` (``ValueError`` naming it)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
