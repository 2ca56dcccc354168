"""Fixtures of the engine tests: ``rescue eval`` run in-process (``isolated_env`` is the root
conftest's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app


@pytest.fixture()
def eval_cli() -> Callable[..., Any]:
    """Run ``rescue eval --display none <args>`` in-process (``env``: extra environment variables)."""
    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> Any:
        return runner.invoke(app, ["eval", "--display", "none", *args], env=env)

    return run
