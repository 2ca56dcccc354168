"""Constants and small readers the annotate tests share (fixtures live in the conftest)."""

from __future__ import annotations

import json
from pathlib import Path

SMALL = (160, 120)
"""Frame size of the synthetic test segments: small, so PyAV encodes each in about a second."""


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (to show a command changed nothing)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
