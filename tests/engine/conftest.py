"""Fixtures shared by the engine tests: an isolated response cache and a fake API key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture()
def isolated_env(tmp_path, monkeypatch):
    """A temporary response cache and a fake key, so tests never share cached answers."""
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    return tmp_path


def read_records(out: Path) -> list[dict]:
    """Every result record of a run folder, task files in name order."""
    rows = []
    for path in sorted((out / "results").glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows
