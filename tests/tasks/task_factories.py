"""Small factories for hand-made clips in the task tests (all text here is invented)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rescue_bench.data.models import Clip

T = "Therapist"
FIVE_WORDS = "we went home very late"
FOUR_WORDS = "we went home late"


def row(speaker: str | None, text: str = "some words here", **fields: Any) -> dict[str, Any]:
    """A raw release-format row; ``row_index`` is filled in by :func:`clip`."""
    out: dict[str, Any] = {"dialogue_cleaned": text, **fields}
    if speaker is not None:
        out["primary_speaker"] = speaker
    return out


def therapist(text: str = "tell me more", **fields: Any) -> dict[str, Any]:
    return row(T, text, **fields)


def strat(strategy_type: str | None = "track", target: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"provider": T, "strategy_type": strategy_type, **fields}
    if target is not None:
        item["target"] = target
    return item


def emo(person: str | None, description: str | None = "uneasy", intensity: Any = 5) -> dict[str, Any]:
    return {"person": person, "emotion_description": description, "intensity": intensity}


def view(source: str | None, target: str | None, viewpoint: str | None = "distant", attitude: str = "cool") -> dict[str, Any]:
    return {"source": source, "target": target, "viewpoint": viewpoint, "attitude": attitude}


def raw_clip(
    rows: list[dict[str, Any]],
    *,
    scenario: str = "couple",
    participants: list[str] | None = None,
    sample_id: str = "synthetic_pair/clip_a",
    index_rows: bool = True,
) -> dict[str, Any]:
    if participants is None:
        participants = ["Ann", "Bob"] if scenario == "couple" else ["Ann", "Bob", "Cyd"]
    rows = [dict(r) for r in rows]
    if index_rows:
        for i, r in enumerate(rows, 1):
            r.setdefault("row_index", i)
    return {
        "sample_id": sample_id,
        "scenario": scenario,
        "participants": participants,
        "source_file": "synthetic.mp4",
        "rows": rows,
    }


def clip(rows: list[dict[str, Any]], **kwargs: Any) -> Clip:
    return Clip.model_validate(raw_clip(rows, **kwargs))


def write_jsonl(path: Path, clips: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in clips), encoding="utf-8")
    return path


# -------------------------------------------------------------------------------------------------
# A synthetic 191-clip release whose instance counts are exactly the paper's Table 6
# -------------------------------------------------------------------------------------------------

TABLE6 = {  # the paper's Table 6, typed in from SPEC section 3: (couple, family, couple clips, family clips)
    "itp": (2722, 284, 168, 16),
    "rpp": (1608, 525, 172, 17),
    "stp": (1290, 347, 172, 17),
    "ssp": (1290, 347, 172, 17),
    "er": (844, 82, 174, 17),
    "vp": (775, 80, 170, 17),
}
N_CLIPS = {"couple": 174, "family": 17}
_PATTERNS = {
    "couple": ["pursue_withdraw", "attack_attack", "withdraw_withdraw"],
    "family": ["escalation_conflict", "mutual_disengagement", "cooperative_family_alliance"],
}
_STRATS = {"couple": ["track", "evoke", "goal_align"], "family": ["track", "boundary", "join"]}


def _spread(total: int, used: int, n_clips: int) -> list[int]:
    base, rem = divmod(total, used)
    return [base + (1 if i < rem else 0) for i in range(used)] + [0] * (n_clips - used)


def _table6_clip(scenario: str, j: int, itp: int, rpp: int, stp: int, er: int, vp: int) -> dict[str, Any]:
    a, b = ("Ann", "Bob")
    units = [r for _ in range(itp) for r in (row(a, "so"), row(b, "right"), therapist())]
    block = []
    for k in range(max(rpp, stp)):
        fields: dict[str, Any] = {}
        if k < rpp:
            fields["relation_cycle_state"] = _PATTERNS[scenario][k % 3]
        if k < stp:
            fields["support_strategy"] = [strat(_STRATS[scenario][k % 3], [a])]
        block.append(therapist(**fields))
    tail = []
    for k in range(max(er, vp)):
        who, other = (a, b) if k % 2 == 0 else (b, a)
        fields = {}
        if k < er:
            fields["internal_emotion"] = [emo(who)]
        if k < vp:
            fields["viewpoints_attitudes"] = [view(who, other)]
        tail.append(row(who, FIVE_WORDS, **fields))
    before = len(units) + len(block)
    pad = 0
    while before + pad < math.ceil(0.3 * (before + pad + len(tail))):
        pad += 1
    rows = [therapist() for _ in range(pad)] + units + block + tail
    participants = [a, b] if scenario == "couple" else [a, b, "Cyd"]
    return raw_clip(rows, scenario=scenario, participants=participants, sample_id=f"synthetic_{scenario}/clip_{j:03d}")


def table6_release() -> list[dict[str, Any]]:
    """191 raw clips (174 couple, 17 family) whose instance and clip counts equal Table 6."""
    clips = []
    for s_i, scenario in enumerate(("couple", "family")):
        n = N_CLIPS[scenario]
        per = {}
        for task, values in TABLE6.items():
            total, used = values[s_i], values[2 + s_i]
            if task == "itp":
                per[task] = _spread(total // 2, used, n)  # ITP instances come in yes/no pairs
            else:
                per[task] = _spread(total, used, n)
        for j in range(n):
            clips.append(
                _table6_clip(scenario, j, per["itp"][j], per["rpp"][j], per["stp"][j], per["er"][j], per["vp"][j])
            )
    return clips
