"""The assets folder: one manifest per segment, the segment's video, and its rows' clips.

Layout (shared with the review app, which relies on exactly this)::

    ASSETS/<segment_id>/manifest.json      Manifest below
    ASSETS/<segment_id>/video.<ext>        the segment's video (a hard link or a copy); manifest.video
    ASSETS/<segment_id>/rows/<i>.mp4       row i's clip: H.264 + AAC, faststart (``rescue annotate clips``)
    ASSETS/<segment_id>/rows/<i>.jpg       row i's keyframe

``segment_id`` may contain slashes (nested folders). ``manifest.video`` is relative to ASSETS, or
``null`` for a subtitles-only segment. ``duration`` is the video's, else the last cue's end.

A segment is known by the content of its files, never by their time stamps: ``video_sha256`` and
``subtitles_sha256`` are the SHA-256 of the source video and subtitle file, and
:func:`manifest_sha256` (the hash of the whole manifest) is what a draft records as the manifest it
was drafted from. A draft whose recorded hash differs from its manifest's is stale
(:mod:`rescue_bench.annotate.freshness`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rescue_bench.errors import RescueError
from rescue_bench.fileio import dumps, loads
from rescue_bench.labels import Scenario

MANIFEST = "manifest.json"
ROWS_DIR = "rows"


class ManifestCue(BaseModel):
    """One cue as stored in a manifest (and as sent to the drafting model)."""

    model_config = ConfigDict(extra="forbid")

    cue: int = Field(ge=1)
    start: float = Field(ge=0)
    end: float = Field(ge=0)
    speaker: str | None = None
    text: str


class Manifest(BaseModel):
    """``ASSETS/<segment_id>/manifest.json``."""

    model_config = ConfigDict(extra="forbid")

    segment_id: str
    scenario: Scenario
    participants: list[str]
    video: str | None
    video_sha256: str | None = None
    """SHA-256 of the segment's video (``None`` without video, or in a manifest of an older version)."""
    subtitles_sha256: str | None = None
    """SHA-256 of the subtitle file the cues were read from (``None`` in a manifest of an older version)."""
    duration: float
    cues: list[ManifestCue]

    def folder(self, assets: str | Path) -> Path:
        """``ASSETS/<segment_id>``."""
        return Path(assets) / self.segment_id

    def video_path(self, assets: str | Path) -> Path | None:
        """The segment video's path, or ``None`` for a subtitles-only segment."""
        return Path(assets) / self.video if self.video else None

    def to_text(self) -> str:
        return dumps(self.model_dump(mode="json"), indent=2) + "\n"


def manifest_sha256(manifest: Manifest) -> str:
    """The hash of a manifest's content (its canonical text): what a draft records it was drafted from."""
    return hashlib.sha256(manifest.to_text().encode("utf-8")).hexdigest()


HASH_CHUNK = 1 << 20


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in chunks (videos are large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(HASH_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def row_clip_name(segment_id: str, row_index: int) -> str:
    """``<segment_id>/rows/<row_index>.mp4``, relative to ASSETS."""
    return f"{segment_id}/{ROWS_DIR}/{int(row_index)}.mp4"


def row_keyframe_name(segment_id: str, row_index: int) -> str:
    """``<segment_id>/rows/<row_index>.jpg``, relative to ASSETS."""
    return f"{segment_id}/{ROWS_DIR}/{int(row_index)}.jpg"


def row_clip(assets: str | Path, segment_id: str, row_index: int) -> Path:
    """``ASSETS/<segment_id>/rows/<row_index>.mp4``."""
    return Path(assets) / row_clip_name(segment_id, row_index)


def row_keyframe(assets: str | Path, segment_id: str, row_index: int) -> Path:
    """``ASSETS/<segment_id>/rows/<row_index>.jpg``."""
    return Path(assets) / row_keyframe_name(segment_id, row_index)


class AssetsError(RescueError, ValueError):
    """An assets folder or manifest that cannot be read; the message names the file."""


def read_manifest(path: str | Path) -> Manifest:
    """One manifest file; :class:`AssetsError` naming the file and field when it is not valid."""
    path = Path(path)
    try:
        raw = loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AssetsError(f"{path}: cannot read file: {exc.strerror or exc}") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN/Infinity
        raise AssetsError(f"{path}: not valid JSON ({exc})") from None
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(manifest)"
        raise AssetsError(f"{path}: field {where}: {err['msg']}") from None


def load_assets(assets: str | Path) -> list[Manifest]:
    """Every segment's manifest under ``assets``, sorted by segment id.

    A manifest whose ``segment_id`` does not match its folder is an error (the layout is the contract).
    Folders whose name starts with a dot (temporary work) are skipped.
    """
    root = Path(assets)
    if not root.is_dir():
        raise AssetsError(f"{root}: no such assets folder")
    out = []
    for path in sorted(root.rglob(MANIFEST)):
        rel = path.parent.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        manifest = read_manifest(path)
        if manifest.segment_id != rel.as_posix():
            raise AssetsError(f"{path}: segment_id {manifest.segment_id!r} does not match its folder {rel.as_posix()!r}")
        out.append(manifest)
    if not out:
        raise AssetsError(f"{root}: no segments (no */manifest.json); run 'rescue annotate prepare' first")
    return sorted(out, key=lambda m: m.segment_id)
