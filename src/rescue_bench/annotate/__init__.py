"""Pre-annotation: from a video segment and its subtitles to a draft clip in the release format.

The pipeline (``rescue annotate``) is ``prepare`` (subtitles and video to a manifest per segment),
``draft`` (a model groups cues into rows and fills every annotated field; validated, re-asked once,
what is still invalid dropped and recorded), ``clips`` (each row's video clip and keyframe for the
review app and the raw-video evaluation mode), then review and ``rescue tasks build``.

This package is the domain core: subtitles, media, manifests, the prompt, the answer contract and
its validation, windows, clip assembly. It never imports inspect_ai; the model calls are made by
``rescue_bench.engine.annotate``.
"""

from rescue_bench.annotate.clips import ClipsResult, cut_rows, plan
from rescue_bench.annotate.contract import ROW_FIELDS, AnswerCheck, CheckedRow, Context, DraftProblem, check_answer
from rescue_bench.annotate.draft import MediaItem, SegmentDraft
from rescue_bench.annotate.manifest import (
    AssetsError,
    Manifest,
    ManifestCue,
    load_assets,
    read_manifest,
    row_clip,
    row_keyframe,
)
from rescue_bench.annotate.media import MediaError, MediaInfo, cut, extract_audio, frames_at, keyframe, probe
from rescue_bench.annotate.prepare import PrepareError, PrepareResult, prepare
from rescue_bench.annotate.prompt import MEDIA_MODES, prompt_sha, reask_prompt, system_prompt, user_prompt
from rescue_bench.annotate.subtitles import Cue, SubtitleError, read_subtitles, split_speaker
from rescue_bench.annotate.windows import Window, split_windows

__all__ = [
    "MEDIA_MODES",
    "ROW_FIELDS",
    "AnswerCheck",
    "AssetsError",
    "CheckedRow",
    "ClipsResult",
    "Context",
    "Cue",
    "DraftProblem",
    "Manifest",
    "ManifestCue",
    "MediaError",
    "MediaInfo",
    "MediaItem",
    "PrepareError",
    "PrepareResult",
    "SegmentDraft",
    "SubtitleError",
    "Window",
    "check_answer",
    "cut",
    "cut_rows",
    "extract_audio",
    "frames_at",
    "keyframe",
    "load_assets",
    "plan",
    "prepare",
    "probe",
    "prompt_sha",
    "read_manifest",
    "read_subtitles",
    "reask_prompt",
    "row_clip",
    "row_keyframe",
    "split_speaker",
    "split_windows",
    "system_prompt",
    "user_prompt",
]
