"""Which drafts are older than their manifest: the check ``clips``, ``review import`` and ``tasks build`` share.

A draft clip records, under ``draft.manifest_sha256``, the hash of the manifest it was drafted from
(:func:`rescue_bench.annotate.manifest.manifest_sha256`). When ``rescue annotate prepare`` has since
written a different manifest for that segment (edited subtitles, another video, other participants),
the draft's rows no longer match the cues: the draft is *stale*. A draft that records no hash (made
by an older version) cannot be shown current and counts as stale too.

Only clips with ``draft`` provenance are checked (a reviewed clip is the reviewers' word, not a
draft), and only for segments that have a manifest in the assets folder (a missing segment is
reported by the command itself where it matters).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue_bench.annotate.manifest import MANIFEST, AssetsError, Manifest, manifest_sha256, read_manifest
from rescue_bench.data.models import Clip

HASH_KEY = "manifest_sha256"
"""The key under a clip's ``draft`` provenance that holds the hash of the manifest it was drafted from."""


@dataclass(frozen=True)
class StaleDraft:
    """A draft older than its manifest."""

    segment_id: str
    recorded: str | None
    current: str

    def line(self, assets: str | Path) -> str:
        why = ("it records no manifest hash (drafted by an older version)" if self.recorded is None
               else f"drafted from manifest {self.recorded[:12]}, the manifest is now {self.current[:12]}")
        return (f"draft of segment {self.segment_id} is older than its manifest ({why}); "
                f"run 'rescue annotate draft {assets}' to redraft it")


def draft_provenance(clip: Clip | dict[str, Any]) -> dict[str, Any] | None:
    """The ``draft`` provenance of a clip (a loaded clip or its JSON), or ``None`` when it has none."""
    extra = clip.get("draft") if isinstance(clip, dict) else (clip.model_extra or {}).get("draft")
    return extra if isinstance(extra, dict) else None


def is_stale(draft: dict[str, Any], manifest: Manifest) -> bool:
    """Whether a draft's provenance records another manifest than ``manifest`` (or none)."""
    return draft.get(HASH_KEY) != manifest_sha256(manifest)


def stale_drafts(assets: str | Path, clips: Iterable[Clip]) -> list[StaleDraft]:
    """The drafts among ``clips`` that are older than their manifest in ``assets``, in input order."""
    out = []
    for clip in clips:
        draft = draft_provenance(clip)
        path = Path(assets) / clip.sample_id / MANIFEST
        if draft is None or not path.is_file():
            continue
        try:
            manifest = read_manifest(path)
        except AssetsError:
            continue  # an unreadable manifest is the command's own error to report
        if is_stale(draft, manifest):
            recorded = draft.get(HASH_KEY)
            out.append(StaleDraft(clip.sample_id, recorded if isinstance(recorded, str) else None, manifest_sha256(manifest)))
    return out
