"""Hand-made clips for the baseline tests (all text here is invented)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rescue_bench.data.models import Clip
from rescue_bench.labels import GROUP_LABELS, patterns, strategies
from rescue_bench.tasks import build_all
from rescue_bench.tasks.instance import Instance

REAL_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "rescue_real"


def _pick(values: str | Sequence[str], k: int) -> str:
    return values if isinstance(values, str) else values[k % len(values)]


def make_clip(
    sample_id: str,
    *,
    scenario: str = "couple",
    clients: Sequence[str] = ("Ann", "Bob"),
    rounds: int = 4,
    pattern: str | Sequence[str] | None = None,
    strategy: str | Sequence[str] | None = None,
    target: str = "last",
    keyword: str = "",
    emotion: str = "tense and guarded",
    intensity: int = 6,
    viewpoint: str = "thinks they do not listen",
) -> Clip:
    """A clip of ``rounds`` rounds: each client speaks in turn, then the therapist.

    ``target``: ``"last"`` (the therapist addresses the client who spoke last), ``"first"`` (the
    first client), ``"group"`` (the group label). ``keyword`` is put in every client turn.
    """
    pattern = pattern or patterns(scenario)[0]
    strategy = strategy or strategies(scenario)[0]
    rows: list[dict[str, Any]] = []
    for k in range(rounds):
        for n, name in enumerate(clients):
            other = clients[(n + 1) % len(clients)]
            rows.append(
                {
                    "primary_speaker": name,
                    "target": [other],
                    "dialogue_cleaned": f"{keyword} well I really think that round {k} went badly for us".strip(),
                    "internal_emotion": [{"person": name, "emotion_description": emotion, "intensity": intensity}],
                    "viewpoints_attitudes": [
                        {"source": name, "target": other, "viewpoint": viewpoint, "attitude": "negative"}
                    ],
                }
            )
        addressee = {"last": clients[-1], "first": clients[0], "group": GROUP_LABELS[scenario]}[target]
        rows.append(
            {
                "primary_speaker": "Therapist",
                "target": [addressee],
                "dialogue_cleaned": "let us slow down for a moment",
                "relation_cycle_state": _pick(pattern, k),
                "support_strategy": [
                    {"provider": "Therapist", "target": [addressee], "strategy_type": _pick(strategy, k)}
                ],
            }
        )
    for i, r in enumerate(rows, 1):
        r["row_index"] = i
    return Clip.model_validate(
        {"sample_id": sample_id, "scenario": scenario, "participants": list(clients), "rows": rows}
    )


def mixed_clips() -> list[Clip]:
    """Several couple and family clips with varied labels, names, emotions and viewpoints."""
    couple, family = patterns("couple"), patterns("family")
    cs, fs = strategies("couple"), strategies("family")
    names = [("Ann", "Bob"), ("Cara", "Dev"), ("Eli", "Fay"), ("Gus", "Hana")]
    clips = [
        make_clip(
            f"pair_{j}/clip",
            clients=pair,
            pattern=couple[j : j + 3],
            strategy=cs[j : j + 4],
            target=("last", "first", "group", "last")[j],
            emotion=f"emotion number {j}",
            intensity=3 + j,
            viewpoint=f"viewpoint number {j}",
        )
        for j, pair in enumerate(names)
    ]
    clips += [
        make_clip(
            f"family_therapy/{j:03d}/merged",
            scenario="family",
            clients=("Mum", "Dad", f"Kid{j}"),
            pattern=family[j : j + 2],
            strategy=fs[j : j + 3],
            target=("group", "last")[j],
            emotion=f"family emotion {j}",
            intensity=8 - j,
            viewpoint=f"family viewpoint {j}",
        )
        for j in range(2)
    ]
    return clips


def instances_by_task(clips: Sequence[Clip]) -> dict[str, list[Instance]]:
    return build_all(list(clips))


def real_clips() -> list[Clip] | None:
    """The real release lines, or ``None`` when they are not present."""
    files = sorted(REAL_DIR.glob("*.jsonl")) if REAL_DIR.is_dir() else []
    if not files:
        return None
    from rescue_bench.data import load_clips

    return load_clips(files)


def check_answer(inst: Instance, raw: str) -> None:
    """Assert that ``raw`` follows the answer contract of ``inst``'s task exactly."""
    obj = json.loads(raw)
    assert isinstance(obj, dict)
    if inst.task == "itp":
        assert obj.keys() == {"answer"} and obj["answer"] in ("yes", "no")
    elif inst.task in ("rpp", "stp", "ssp"):
        assert obj.keys() == {"ranking"}
        ranking = obj["ranking"]
        assert len(ranking) == min(3, len(inst.candidates))
        assert len(set(ranking)) == len(ranking)
        assert set(ranking) <= set(inst.candidates)
    elif inst.task == "er":
        assert obj.keys() == {"emotion", "intensity"}
        assert isinstance(obj["emotion"], str) and obj["emotion"].strip()
        assert type(obj["intensity"]) is int and 0 <= obj["intensity"] <= 10
    else:
        assert obj.keys() == {"viewpoints"}
        others = [p for p in inst.participants if p != inst.client] or ["Therapist"]
        views = obj["viewpoints"]
        assert [v["target"] for v in views] == others
        for v in views:
            assert v.keys() == {"target", "viewpoint"}
            assert isinstance(v["viewpoint"], str) and v["viewpoint"].strip()
