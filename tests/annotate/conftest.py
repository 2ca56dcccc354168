"""Synthetic segments made once per session (PyAV encodes them in ~1 s each), copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("av", reason="PyAV (the av package) is needed to make and cut test media")

from rescue_bench.testing.media import COUPLE, FAMILY, make_segment  # noqa: E402
from tests.annotate.helpers import SMALL  # noqa: E402


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
