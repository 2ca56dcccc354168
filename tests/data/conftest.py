"""Fixtures of the data-layer tests: a CLI runner and small hand-made clips."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from tests.factories import release_clip


@pytest.fixture
def clip_dict() -> Callable[..., dict[str, Any]]:
    """Factory of fresh valid clip dicts (deep copies, safe to mutate)."""
    return lambda *a, **k: copy.deepcopy(release_clip(*a, **k))


@pytest.fixture
def invoke() -> Callable[..., Any]:
    """Run ``rescue <args>`` in-process; stdout and stderr are available separately."""
    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> Any:
        return runner.invoke(app, [str(a) for a in args], env=env)

    return run
