"""Synthetic segments made once per session (PyAV encodes them in ~1 s each), copied per test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("av", reason="PyAV (the av package) is needed to make and cut test media")

from rescue_bench.testing.media import COUPLE, FAMILY, make_segment  # noqa: E402

SMALL = (160, 120)


@pytest.fixture(scope="session")
def source_dir(tmp_path_factory) -> Path:
    """A source folder: a couple segment (mp4 + srt), a family one (mkv + vtt), a subtitles-only one."""
    root = tmp_path_factory.mktemp("segments")
    make_segment(root, "couple/s01_seg01", COUPLE, size=SMALL)
    make_segment(root, "family/f01_seg01", FAMILY, subtitles="vtt", video="mkv", size=SMALL)
    make_segment(root, "couple/s01_seg02_textonly", COUPLE, video=None)
    return root


@pytest.fixture()
def src(source_dir, tmp_path) -> Path:
    """A private copy of the source folder (tests may break it)."""
    dest = tmp_path / "src"
    shutil.copytree(source_dir, dest)
    return dest


@pytest.fixture(scope="session")
def prepared(source_dir, tmp_path_factory) -> Path:
    """The source folder prepared into an assets folder once (read-only for tests)."""
    from rescue_bench.annotate import prepare

    assets = tmp_path_factory.mktemp("assets") / "assets"
    prepare(source_dir, assets)
    return assets


@pytest.fixture()
def assets(prepared, tmp_path) -> Path:
    """A private copy of the prepared assets folder."""
    dest = tmp_path / "assets"
    shutil.copytree(prepared, dest)
    return dest


@pytest.fixture()
def isolated_env(tmp_path, monkeypatch):
    """A private response cache and a fake key for the loopback server's provider."""
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    return tmp_path


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (to show a command changed nothing)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
