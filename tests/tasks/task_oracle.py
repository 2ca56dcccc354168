"""An independent construction of the six tasks, straight from raw release dicts (SPEC section 3-4).

Deliberately imports nothing from ``rescue_bench``: label names are typed in from SPEC section 2, and
every rule is re-implemented from the SPEC's text, so the builders can be checked against it.
Output per task: a list of dicts ``{"sample_id", "row", "gold", "context": [row indices], ...}``
in clip order, then row order.
"""

from __future__ import annotations

import math
import re
from typing import Any

THERAPIST = "Therapist"
GROUP = {"couple": "Couple", "family": "Family"}
PATTERNS = {
    "couple": {
        "pursue_withdraw", "attack_attack", "withdraw_withdraw",
        "repair_softening", "constructive_alignment", "mixed_transition",
    },
    "family": {
        "escalation_conflict", "pursue_withdraw", "mutual_disengagement", "cross_generational_coalition",
        "boundary_hierarchy_strain", "repair_softening", "cooperative_family_alliance", "mixed_transition",
    },
}
STRATEGIES = {
    "couple": {"track", "reframe", "evoke", "enact", "join", "detach", "repair", "counterbalance", "safeguard", "goal_align"},
    "family": {"join", "track", "counterbalance", "enact", "boundary", "reframe", "repair", "safeguard"},
}
WORD = re.compile(r"[A-Za-z0-9']+")
CONTEXT = 3  # previous rows shown for ITP, STP, SSP, ER, VP (RPP: all)


def text(value: Any) -> str:
    """Missing, null and empty are the same: ''."""
    return value.strip() if isinstance(value, str) else ""


def names(value: Any) -> list[str]:
    return [text(v) for v in (value if isinstance(value, list) else []) if text(v)]


def is_therapist(r: dict[str, Any]) -> bool:
    return text(r.get("primary_speaker")) == THERAPIST


def is_client(r: dict[str, Any]) -> bool:
    return text(r.get("primary_speaker")) not in ("", THERAPIST, "Couple", "Family")


def spread(items: list[Any], limit: int) -> list[Any]:
    """pick_evenly, from the SPEC's words."""
    if len(items) <= limit:
        return list(items)
    if limit <= 0:
        return []
    if limit == 1:
        return [items[len(items) // 2]]
    idx: list[int] = []
    for r in range(limit):
        i = round(r * (len(items) - 1) / (limit - 1))
        if i not in idx:
            idx.append(i)
    for i in range(len(items)):  # top up in order
        if len(idx) == limit:
            break
        if i not in idx:
            idx.append(i)
    return [items[i] for i in sorted(idx)]


def integer_0_10(value: Any) -> int | None:
    # "an integer intensity 0-10": ints, and floats with an integral value (7.0; the project's
    # documented reading), never bools, strings or 7.5.
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= 10:
        return value
    return None


def expected(clip: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    rows = clip["rows"]
    n = len(rows)
    sid = clip["sample_id"]
    scenario = clip["scenario"]
    group = GROUP[scenario]

    def ri(pos: int) -> int:  # 1-based index of the row at 0-based position pos
        value = rows[pos].get("row_index")
        return value if isinstance(value, int) and not isinstance(value, bool) else pos + 1

    def last(pos_end: int, k: int | None) -> list[int]:
        """row indices of the rows before 0-based position pos_end, the last k (None = all)."""
        start = 0 if k is None else max(0, pos_end - k)
        return [ri(p) for p in range(start, pos_end)]

    out: dict[str, list[dict[str, Any]]] = {t: [] for t in ("itp", "rpp", "stp", "ssp", "er", "vp")}

    # ITP
    pos, neg = [], []
    for k in range(n - 1):
        if not is_therapist(rows[k]):
            if is_therapist(rows[k + 1]):
                pos.append(k)
            elif not is_therapist(rows[k + 1]):
                neg.append(k)
    keep = min(len(pos), len(neg))
    if keep > 0:
        chosen = [(k, "yes") for k in spread(pos, keep)] + [(k, "no") for k in spread(neg, keep)]
        for k, gold in sorted(chosen):
            out["itp"].append({"sample_id": sid, "row": ri(k), "gold": gold, "context": last(k + 1, CONTEXT)})

    for p, r in enumerate(rows):
        # RPP
        if is_therapist(r):
            state = text(r.get("relation_cycle_state"))
            if state and state in PATTERNS[scenario]:
                out["rpp"].append({"sample_id": sid, "row": ri(p), "gold": state, "context": last(p, None)})
        # STP / SSP
        strategies = r.get("support_strategy")
        if is_therapist(r) and isinstance(strategies, list) and strategies and isinstance(strategies[0], dict):
            first = strategies[0]
            kind = text(first.get("strategy_type"))
            people = [x for x in names(first.get("target")) if x != THERAPIST]
            if not people:
                people = [x for x in names(r.get("target")) if x != THERAPIST]
            people = list(dict.fromkeys(people))
            if kind and people:
                target = people[0] if len(people) == 1 else group
                out["stp"].append({"sample_id": sid, "row": ri(p), "gold": target, "context": last(p, CONTEXT)})
                if kind in STRATEGIES[scenario]:
                    out["ssp"].append(
                        {"sample_id": sid, "row": ri(p), "gold": kind, "support_target": target, "context": last(p, CONTEXT)}
                    )

    # ER
    skip = min(math.ceil(0.3 * n), n - 1)
    er = []
    for p, r in enumerate(rows):
        if not is_client(r) or ri(p) <= skip or len(WORD.findall(text(r.get("dialogue_cleaned")))) < 5:
            continue
        speaker = text(r.get("primary_speaker"))
        for item in r.get("internal_emotion") or []:
            if text(item.get("person")) != speaker or not text(item.get("emotion_description")):
                continue
            value = integer_0_10(item.get("intensity"))
            if value is None:
                continue
            er.append((p, {"emotion": text(item.get("emotion_description")), "intensity": value}))
            break
    for p, gold in spread(er, 5):
        out["er"].append({"sample_id": sid, "row": ri(p), "gold": gold, "context": last(p, CONTEXT), "current": ri(p)})

    # VP
    vp = []
    for p, r in enumerate(rows):
        if not is_client(r):
            continue
        speaker = text(r.get("primary_speaker"))
        gold = [
            {"source": speaker, "target": text(v.get("target")), "viewpoint": text(v.get("viewpoint"))}
            for v in r.get("viewpoints_attitudes") or []
            if text(v.get("source")) == speaker and text(v.get("target")) and text(v.get("viewpoint"))
        ]
        if gold:
            vp.append((p, gold))
    for p, gold in spread(vp, 5):
        out["vp"].append({"sample_id": sid, "row": ri(p), "gold": gold, "context": last(p, CONTEXT), "current": ri(p)})
    return out


def expected_all(clips: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    total: dict[str, list[dict[str, Any]]] = {t: [] for t in ("itp", "rpp", "stp", "ssp", "er", "vp")}
    for c in clips:
        for task, items in expected(c).items():
            total[task].extend(items)
    return total


def observed(instances: dict[str, list[Any]]) -> dict[str, list[dict[str, Any]]]:
    """The builders' output in the oracle's shape."""
    out: dict[str, list[dict[str, Any]]] = {}
    for task, items in instances.items():
        rows = []
        for inst in items:
            d: dict[str, Any] = {
                "sample_id": inst.sample_id,
                "row": inst.row,
                "gold": inst.gold,
                "context": [v.row_index for v in inst.context],
            }
            if task == "ssp":
                d["support_target"] = inst.support_target
            if task in ("er", "vp"):
                d["current"] = inst.current.row_index if inst.current else None
            rows.append(d)
        out[task] = rows
    return out
