"""Fixtures of the agent tests: an isolated response cache and a fake API key."""

from __future__ import annotations

import pytest


@pytest.fixture()
def isolated_env(tmp_path, monkeypatch):
    """A temporary response cache and a fake key, so tests never share cached answers."""
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    return tmp_path
