"""Fixtures shared by the engine tests: an isolated response cache and a fake API key, and
``rescue eval`` run in-process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app


@pytest.fixture()
def isolated_env(tmp_path, monkeypatch):
    """A temporary response cache and a fake key, so tests never share cached answers."""
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    return tmp_path


@pytest.fixture()
def eval_cli() -> Callable[..., Any]:
    """Run ``rescue eval --display none <args>`` in-process (``env``: extra environment variables)."""
    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> Any:
        return runner.invoke(app, ["eval", "--display", "none", *args], env=env)

    return run
