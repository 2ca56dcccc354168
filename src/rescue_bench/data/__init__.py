"""Data layer: release-format models, loaders, validation, statistics and the demo set."""

from rescue_bench.data.load import (
    DataError,
    LoadResult,
    Problem,
    demo_path,
    load_clips,
    read_folder,
    read_jsonl,
    read_path,
    read_paths,
)
from rescue_bench.data.models import (
    BackgroundTalk,
    Clip,
    Emotion,
    InteractionCue,
    PersonCue,
    Row,
    Strategy,
    Viewpoint,
)

__all__ = [
    "BackgroundTalk",
    "Clip",
    "DataError",
    "Emotion",
    "InteractionCue",
    "LoadResult",
    "PersonCue",
    "Problem",
    "Row",
    "Strategy",
    "Viewpoint",
    "demo_path",
    "load_clips",
    "read_folder",
    "read_jsonl",
    "read_path",
    "read_paths",
]
