"""Dataset statistics: the paper's Table 3 per scenario and overall, plus label distributions.

Everything here is a pure function of the loaded clips, so the numbers can be checked by hand and
compared with the paper (``data/reference/paper_reference.json``, key ``table3_dataset``).

Definitions (the paper does not spell them out; these are the project's choices):

* ``samples``: clips; ``rows``: annotated rows (the paper's "turns").
* ``duration_min``: the sum over clips of the clip span ``max(end_time) - min(start_time)`` over its
  rows that have times, in minutes. Gaps between rows count (they are part of the video); a clip
  with no times contributes 0 and is counted in ``clips_without_times``.
* ``avg_duration_min`` = ``duration_min / samples``; ``avg_rows`` = ``rows / samples``.
* ``avg_speakers``: the mean over clips of the number of distinct primary speakers, counting the
  Therapist and every client but not the group speakers ``Couple`` / ``Family`` (a couple clip
  where both partners and the therapist speak counts 3, the paper's couple value).
* ``therapist_share``: the fraction of rows whose primary speaker is the Therapist.
* Label distributions: ``relation_patterns`` counts the ``relation_cycle_state`` of therapist rows
  (the RPP gold; empty ones are counted in ``relation_patterns_empty``); ``strategies`` and
  ``targets`` come from the first ``support_strategy`` item of therapist rows that has a non-empty
  ``strategy_type`` (the STP/SSP gold; the target is resolved as for STP: the item's target, else
  the row's, minus empty names and the Therapist, two or more names becoming the group label);
  ``utterance_types`` counts client rows; ``emotion_intensities`` counts every ``internal_emotion``
  item whose intensity is an integer 0-10 (other non-null values go to ``emotion_intensity_invalid``).
  Every label of the scenario's closed set is listed (0 when absent), in the SPEC's order, followed
  by any label outside the set as it was found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import (
    GROUP_LABELS,
    PATTERNS,
    SCENARIOS,
    STRATEGIES,
    THERAPIST,
    UTTERANCE_TYPES,
)

SCOPES: tuple[str, ...] = (*SCENARIOS, "all")
"""The keys of :func:`dataset_stats`: each scenario, then both pooled."""

TABLE3_KEYS: tuple[str, ...] = (
    "samples",
    "duration_min",
    "rows",
    "avg_duration_min",
    "avg_rows",
    "avg_speakers",
    "therapist_share",
)
"""The Table 3 quantities, in the paper's column order."""

PAPER_KEY_NAMES: dict[str, str] = {
    "samples": "samples",
    "duration_min": "duration_min",
    "rows": "turns",
    "avg_duration_min": "avg_duration_min",
    "avg_rows": "avg_turns",
    "avg_speakers": "avg_speakers",
    "therapist_share": "therapist_turn_share",
}
"""Our key -> the key of the same quantity in ``paper_reference.json`` (the paper says "turns")."""

FULL_RELEASE_SAMPLES: dict[str, int] = {"couple": 174, "family": 17, "all": 191}
"""Clip counts of the full public release (``benchmark_191.jsonl``)."""

INTENSITY_VALUES: tuple[int, ...] = tuple(range(11))


# ------------------------------------------------------------------------------------------------
# per-clip quantities
# ------------------------------------------------------------------------------------------------


def clip_span_seconds(clip: Clip) -> float | None:
    """``max(end_time) - min(start_time)`` over the rows that have them; ``None`` without times.

    A row with only a start (or only an end) still counts towards the span.
    """
    starts = [float(r.start_time) for r in clip.rows if r.start_time is not None]
    ends = [float(r.end_time) for r in clip.rows if r.end_time is not None]
    points = starts + ends
    if not points:
        return None
    first = min(starts) if starts else min(points)
    last = max(ends) if ends else max(points)
    return max(0.0, last - first)


def clip_speakers(clip: Clip) -> set[str]:
    """Distinct primary speakers of a clip: clients and the Therapist, not group speakers."""
    groups = set(GROUP_LABELS.values())
    return {r.speaker for r in clip.rows if r.speaker and r.speaker not in groups}


def support_target(row: Row, scenario: str) -> str | None:
    """The STP target of a therapist row: resolved from the first ``support_strategy`` item.

    The item's target, else the row's target, minus empty names and ``Therapist``; two or more
    names become the scenario's group label. ``None`` when nothing is left or there is no item.
    """
    items = row.support_strategy or []
    if not items:
        return None
    first = items[0]
    names = [t.strip() for t in first.target or [] if t and t.strip() and t.strip() != THERAPIST]
    if not names:
        names = [t for t in row.targets if t != THERAPIST]
    names = list(dict.fromkeys(names))
    if not names:
        return None
    if len(names) > 1:
        return GROUP_LABELS[scenario]
    return names[0]


def first_strategy(row: Row) -> str:
    """``strategy_type`` of the first ``support_strategy`` item, stripped ('' when absent)."""
    items = row.support_strategy or []
    return (items[0].strategy_type or "").strip() if items else ""


# ------------------------------------------------------------------------------------------------
# aggregation
# ------------------------------------------------------------------------------------------------


def _ordered(counts: Counter[str], labels: Sequence[str]) -> dict[str, int]:
    """``counts`` as a dict: every label of ``labels`` first (0 when absent), then the rest."""
    out = {label: counts.get(label, 0) for label in labels}
    for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if label not in out:
            out[label] = n
    return out


def _union(*label_lists: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(label for labels in label_lists for label in labels))


def _labels(scenarios: Sequence[str], table: dict[str, dict[str, str]]) -> list[str]:
    return _union(*(table[s] for s in scenarios))


def scope_stats(clips: Sequence[Clip], scenarios: Sequence[str]) -> dict[str, Any]:
    """Table 3 quantities and label distributions of ``clips`` (all of the given ``scenarios``).

    Averages and shares are ``None`` when there is nothing to average (no clips, no rows).
    """
    n_clips = len(clips)
    n_rows = sum(len(c.rows) for c in clips)
    spans = [clip_span_seconds(c) for c in clips]
    duration_min = sum(s for s in spans if s is not None) / 60.0
    therapist_rows = sum(1 for c in clips for r in c.rows if r.is_therapist)
    client_rows = sum(1 for c in clips for r in c.rows if r.is_client)

    patterns: Counter[str] = Counter()
    patterns_empty = 0
    strategies: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    target_kinds: Counter[str] = Counter()
    therapist_without_strategy = 0
    utterances: Counter[str] = Counter()
    utterances_missing = 0
    intensities: Counter[str] = Counter()
    intensity_invalid = 0
    intensity_sum = 0
    groups = set(GROUP_LABELS.values())

    for clip in clips:
        for row in clip.rows:
            if row.is_therapist:
                state = row.cycle_state
                if state:
                    patterns[state] += 1
                else:
                    patterns_empty += 1
                strategy = first_strategy(row)
                if strategy:
                    strategies[strategy] += 1
                    target = support_target(row, clip.scenario)
                    if target is not None:
                        targets[target] += 1
                        target_kinds["group" if target in groups else "individual"] += 1
                else:
                    therapist_without_strategy += 1
            elif row.is_client:
                utype = (row.utterance_type or "").strip()
                if utype:
                    utterances[utype] += 1
                else:
                    utterances_missing += 1
            for emo in row.internal_emotion or []:
                value = emo.intensity
                if value is None:
                    continue
                if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10:
                    intensities[str(value)] += 1
                    intensity_sum += value
                else:
                    intensity_invalid += 1

    n_intensities = sum(intensities.values())
    group_labels = [GROUP_LABELS[s] for s in scenarios]
    return {
        "samples": n_clips,
        "rows": n_rows,
        "duration_min": duration_min,
        "avg_duration_min": duration_min / n_clips if n_clips else None,
        "avg_rows": n_rows / n_clips if n_clips else None,
        "avg_speakers": sum(len(clip_speakers(c)) for c in clips) / n_clips if n_clips else None,
        "therapist_rows": therapist_rows,
        "client_rows": client_rows,
        "therapist_share": therapist_rows / n_rows if n_rows else None,
        "clips_without_times": sum(1 for s in spans if s is None),
        "relation_patterns": _ordered(patterns, _labels(scenarios, PATTERNS)),
        "relation_patterns_empty": patterns_empty,
        "strategies": _ordered(strategies, _labels(scenarios, STRATEGIES)),
        "therapist_rows_without_strategy": therapist_without_strategy,
        "targets": _ordered(targets, group_labels),
        "target_kinds": _ordered(target_kinds, ["individual", "group"]),
        "utterance_types": _ordered(utterances, UTTERANCE_TYPES),
        "utterance_types_missing": utterances_missing,
        "emotion_intensities": _ordered(intensities, [str(v) for v in INTENSITY_VALUES]),
        "emotion_intensity_mean": intensity_sum / n_intensities if n_intensities else None,
        "emotion_intensity_invalid": intensity_invalid,
    }


def dataset_stats(clips: Iterable[Clip]) -> dict[str, dict[str, Any]]:
    """Statistics per scenario and pooled: ``{"couple": ..., "family": ..., "all": ...}``.

    Each value holds the Table 3 quantities (see the module docstring for their definitions) and the
    label distributions. Clip order does not matter.
    """
    clips = list(clips)
    out: dict[str, dict[str, Any]] = {}
    for scenario in SCENARIOS:
        out[scenario] = scope_stats([c for c in clips if c.scenario == scenario], [scenario])
    out["all"] = scope_stats(clips, list(SCENARIOS))
    return out


# ------------------------------------------------------------------------------------------------
# the paper's values
# ------------------------------------------------------------------------------------------------


def paper_table3() -> dict[str, dict[str, float]]:
    """The paper's Table 3 per scope, under *our* key names (``rows`` rather than ``turns``)."""
    from rescue_bench.reference import table3

    table = table3()
    return {
        scope: {ours: table[scope][theirs] for ours, theirs in PAPER_KEY_NAMES.items() if theirs in table[scope]}
        for scope in SCOPES
        if scope in table
    }


def is_full_release(stats: dict[str, dict[str, Any]]) -> bool:
    """True when the clip counts are those of the full release (174 couple + 17 family clips)."""
    return all(stats.get(scope, {}).get("samples") == n for scope, n in FULL_RELEASE_SAMPLES.items())


def with_paper(stats: dict[str, dict[str, Any]], *, force: bool = False) -> dict[str, dict[str, Any]]:
    """A copy of ``stats`` where each scope holds ``paper`` (the paper's Table 3 values).

    Added only on the full release (or when ``force``), since on a subset the comparison means nothing.
    """
    if not (force or is_full_release(stats)):
        return stats
    paper = paper_table3()
    return {scope: {**values, "paper": paper.get(scope, {})} for scope, values in stats.items()}
