"""ER, emotion recognition: what does this client feel right now, and how strongly (0-10)?

An instance is a client row with at least ``er_min_words`` words, an ``internal_emotion`` item for
the speaker with a description and an integer intensity 0-10 (the first such item is the gold), and
a position after ``ceil(er_skip_ratio * T)`` (at most ``T - 1`` rows skipped). At most
``er_max_per_clip`` per clip, picked evenly. The model sees the previous rows and the current row.

"Integer" is judged by value: ``7`` and ``7.0`` qualify, ``7.5``, ``"7"`` and booleans do not. A row
that qualifies but whose speaker's described emotion has an intensity that is not a whole number 0-10
(and no other that is) is a :class:`~rescue_bench.tasks.instance.LeftOut`.
"""

from __future__ import annotations

import math

from rescue_bench.data.models import Clip, Emotion, Row
from rescue_bench.data.validate import intensity_problem
from rescue_bench.tasks.instance import Instance, LeftOut, make_instance, pick_evenly, project_row, word_count
from rescue_bench.tasks.options import BuildOptions


def integer_intensity(value: object) -> int | None:
    """``value`` as an int when it is an integral number in 0..10, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    value = int(value)
    return value if 0 <= value <= 10 else None


def speaker_emotion(row: Row) -> Emotion | None:
    """The first emotion item of the row's speaker with a description and an integer intensity."""
    for item in row.internal_emotion or []:
        if (item.person or "").strip() != row.speaker:
            continue
        if (item.emotion_description or "").strip() and integer_intensity(item.intensity) is not None:
            return item
    return None


def _intensity_out_of_range(row: Row) -> tuple[str, str] | None:
    """(field, reason) of the first described emotion of the row's speaker whose intensity is given
    but is not a whole number 0-10, or ``None``."""
    for j, item in enumerate(row.internal_emotion or []):
        if (item.person or "").strip() != row.speaker or not (item.emotion_description or "").strip():
            continue
        why = intensity_problem(item.intensity)
        if why:
            return f"internal_emotion[{j}].intensity", why
    return None


def skipped_rows(n_rows: int, ratio: float) -> int:
    """How many leading rows ER skips: ``ceil(ratio * T)``, at most ``T - 1``."""
    return max(0, min(math.ceil(ratio * n_rows), n_rows - 1))


def build_er(clip: Clip, options: BuildOptions, left_out: list[LeftOut] | None = None) -> list[Instance]:
    n_rows = len(clip.rows)
    skip = skipped_rows(n_rows, options.er_skip_ratio)
    eligible = []
    for i, row in enumerate(clip.rows):
        if i + 1 <= skip or not row.is_client or word_count(row.text) < options.er_min_words:
            continue
        item = speaker_emotion(row)
        if item is not None:
            eligible.append((i, item))
        elif left_out is not None and (bad := _intensity_out_of_range(row)) is not None:
            left_out.append(LeftOut("er", clip.sample_id, clip.scenario, i + 1, *bad))
    window = options.window("er")
    return [
        make_instance(
            clip,
            "er",
            i,
            {"emotion": (item.emotion_description or "").strip(), "intensity": integer_intensity(item.intensity)},
            window,
            options.mode,
            current=project_row(clip.rows[i], i + 1, options.mode),
            client=clip.rows[i].speaker,
        )
        for i, item in pick_evenly(eligible, options.er_max_per_clip)
    ]
