"""Fixtures of the data-layer tests: a CLI runner, small hand-made clips, the real-data folder."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import pytest
from typer.testing import CliRunner

from _data_helpers import REAL_DIR, base_clip
from rescue_bench.cli import app


@pytest.fixture
def clip_dict() -> Callable[..., dict[str, Any]]:
    """Factory of fresh valid clip dicts (deep copies, safe to mutate)."""
    return lambda *a, **k: copy.deepcopy(base_clip(*a, **k))


@pytest.fixture
def invoke() -> Callable[..., Any]:
    """Run ``rescue <args>`` in-process; stdout and stderr are available separately."""
    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> Any:
        return runner.invoke(app, [str(a) for a in args], env=env)

    return run


@pytest.fixture
def real_dir() -> Path:
    """The folder of real release lines; the test is skipped when it is absent."""
    if not REAL_DIR.is_dir() or not sorted(REAL_DIR.glob("*.jsonl")):
        pytest.skip(f"real release lines not found at {REAL_DIR}")
    return REAL_DIR
