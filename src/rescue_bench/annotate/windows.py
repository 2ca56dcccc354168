"""Windows of cues: long segments are drafted a window at a time, with a summary carried forward.

A segment of any length fits a model's context this way: each request holds one window's cues
(and its media), the rules, and a short account of what came before (the model's own running
summary plus the last rows drafted). Windows are balanced in size and, where possible, end where
the speaker changes, so a turn is rarely split between two windows (a row never spans windows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from rescue_bench.annotate.manifest import ManifestCue

DEFAULT_WINDOW_CUES = 40
"""Cues per window. A cue is ~15 words; 40 cues and their answer (~200 output tokens a row) stay
well inside an 8k-token context together with the ~2.5k-token instructions."""

CARRIED_ROWS = 3
"""Rows of the previous window repeated (compactly) in the next window's request."""


@dataclass(frozen=True)
class Window:
    """One request's worth of cues: ``index`` (0-based) of ``count`` windows."""

    index: int
    count: int
    cues: tuple[ManifestCue, ...]

    @property
    def start(self) -> float:
        return self.cues[0].start

    @property
    def end(self) -> float:
        return self.cues[-1].end

    @property
    def numbers(self) -> list[int]:
        return [c.cue for c in self.cues]


def split_windows(cues: Sequence[ManifestCue], max_cues: int = DEFAULT_WINDOW_CUES) -> list[Window]:
    """Split ``cues`` into balanced windows of at most ``max_cues``.

    With ``n`` cues there are ``ceil(n / max_cues)`` windows of about equal size; each cut moves back
    (by at most a quarter of a window) to the last place where the subtitle speaker changes.
    """
    if max_cues < 1:
        raise ValueError("a window needs at least one cue")
    cues = list(cues)
    if not cues:
        return []
    count = math.ceil(len(cues) / max_cues)
    bounds: list[int] = [0]
    for k in range(1, count):
        remaining = count - k + 1
        target = bounds[-1] + math.ceil((len(cues) - bounds[-1]) / remaining)
        target = min(target, bounds[-1] + max_cues)
        cut = target
        # never so early that the windows left cannot hold the rest
        floor = max(bounds[-1] + 1, target - max(1, max_cues // 4), len(cues) - max_cues * (count - k))
        for i in range(target, floor - 1, -1):
            before, after = cues[i - 1].speaker, cues[i].speaker
            if before and after and before != after:
                cut = i
                break
        bounds.append(cut)
    bounds.append(len(cues))
    parts = [cues[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
    return [Window(i, len(parts), tuple(part)) for i, part in enumerate(parts)]


class CarriedRow(TypedDict):
    """A drafted row as the next window's request shows it (JSON): its labels only when it has them."""

    row: int | None
    primary_speaker: str | None
    target: list[str]
    dialogue_cleaned: str
    utterance_type: NotRequired[str]
    relation_cycle_state: NotRequired[str]
    relation_pattern: NotRequired[str]


def carried_rows(rows: Sequence[dict[str, Any]], keep: int = CARRIED_ROWS, text_chars: int = 160) -> list[CarriedRow]:
    """The last ``keep`` drafted rows (release-format JSON), compact: index, speaker, target, words
    (shortened), labels."""
    out = []
    for row in rows[-keep:]:
        text = (row.get("dialogue_cleaned") or "").strip()
        item: CarriedRow = {
            "row": row.get("row_index"),
            "primary_speaker": row.get("primary_speaker"),
            "target": row.get("target") or [],
            "dialogue_cleaned": text if len(text) <= text_chars else text[: text_chars - 3] + "...",
        }
        if row.get("utterance_type"):
            item["utterance_type"] = row["utterance_type"]
        if row.get("relation_cycle_state"):
            item["relation_cycle_state"] = row["relation_cycle_state"]
        if row.get("relation_pattern"):
            item["relation_pattern"] = row["relation_pattern"]
        out.append(item)
    return out
