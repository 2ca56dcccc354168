"""Synthetic `rescue eval` output folders for the report tests (all names and text invented).

Records are made by the project's own code path: :func:`rescue_bench.scoring.base_record` on a
synthetic instance dict and a raw answer, :func:`~rescue_bench.scoring.with_judge` for ER/VP, and
``summary.json`` from :func:`~rescue_bench.scoring.summarize`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from rescue_bench.labels import GROUP_LABELS, patterns, strategies
from rescue_bench.scoring import base_record, summarize, with_judge
from rescue_bench.tasks.instance import instance_id

PEOPLE = {"couple": ["Ann", "Bob"], "family": ["Ann", "Bob", "Cyd"]}
EMOTIONS = ["hurt", "angry", "anxious", "hopeful", "ashamed"]


def clip_ids(n_couple: int, n_family: int) -> list[tuple[str, str]]:
    return [(f"pair_{i:03d}/clip", "couple") for i in range(n_couple)] + [
        (f"family_{i:03d}/merged", "family") for i in range(n_family)
    ]


def instances(n_couple: int = 12, n_family: int = 4, per_clip: int = 6, seed: int = 0) -> list[dict[str, Any]]:
    """Instances of all six tasks, ``per_clip`` of each task per clip (deterministic)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for sample_id, scenario in clip_ids(n_couple, n_family):
        people = PEOPLE[scenario]
        n_rows = 4 * per_clip + 3
        for task in ("itp", "rpp", "stp", "ssp", "er", "vp"):
            for k in range(per_clip):
                row = 2 + 4 * k + ("itp", "rpp", "stp", "ssp", "er", "vp").index(task) % 4
                inst: dict[str, Any] = {
                    "id": instance_id(task, sample_id, row),
                    "task": task,
                    "sample_id": sample_id,
                    "scenario": scenario,
                    "row": row,
                    "n_rows": n_rows,
                    "participants": list(people),
                }
                if task == "itp":
                    inst["gold"] = "yes" if k % 2 == 0 else "no"
                elif task == "rpp":
                    labels = list(patterns(scenario))
                    inst["candidates"] = labels
                    # skewed gold distribution: the first label is the majority
                    inst["gold"] = labels[0] if rng.random() < 0.4 else rng.choice(labels)
                elif task == "stp":
                    labels = [*people, GROUP_LABELS[scenario]]
                    inst["candidates"] = labels
                    inst["gold"] = rng.choice(labels)
                elif task == "ssp":
                    labels = list(strategies(scenario))
                    inst["candidates"] = labels
                    inst["gold"] = rng.choice(labels)
                elif task == "er":
                    inst["gold"] = {"emotion": rng.choice(EMOTIONS), "intensity": rng.randint(0, 10)}
                    inst["client"] = people[0]
                else:
                    inst["gold"] = [{"source": people[0], "target": people[1], "viewpoint": "feels unheard by them"}]
                    inst["client"] = people[0]
                out.append(inst)
    return out


def _wrong(labels: list[str], gold: str, rng: random.Random) -> str:
    return rng.choice([x for x in labels if x != gold])


def answer(inst: dict[str, Any], skill: float, rng: random.Random) -> tuple[str | None, int | None, float]:
    """``(raw answer, judge score, bertscore)`` of a simulated model that is right with prob. ``skill``."""
    right = rng.random() < skill
    task, gold = inst["task"], inst["gold"]
    if task == "itp":
        return json.dumps({"answer": gold if right else ("no" if gold == "yes" else "yes")}), None, 0.0
    if task in ("rpp", "stp", "ssp"):
        labels = inst["candidates"]
        first = gold if right else _wrong(labels, gold, rng)
        rest = [x for x in labels if x != first]
        rng.shuffle(rest)
        return json.dumps({"ranking": [first, *rest[:2]]}), None, 0.0
    if task == "er":
        intensity = gold["intensity"] if right else min(10, gold["intensity"] + 3)
        raw = json.dumps({"emotion": gold["emotion"] if right else "calm", "intensity": intensity})
        return raw, (rng.choice([4, 5]) if right else rng.choice([1, 2, 3])), (0.9 if right else 0.8)
    raw = json.dumps({"viewpoints": [{"target": inst["participants"][1], "viewpoint": "feels unheard" if right else "likes them"}]})
    return raw, (rng.choice([4, 5]) if right else rng.choice([1, 2, 3])), (0.88 if right else 0.81)


def records(
    insts: list[dict[str, Any]], skill: float, seed: int = 1, invalid_every: int = 0, judged: bool = True
) -> list[dict[str, Any]]:
    """Scored records; every ``invalid_every``-th instance gets an unparseable answer. Without
    ``judged`` ER/VP records keep no judge score and no BERTScore (a run without --judge)."""
    rng = random.Random(seed)
    out = []
    for i, inst in enumerate(insts):
        raw, judge, bert = answer(inst, skill, rng)
        if invalid_every and i % invalid_every == 0:
            raw = "I am not sure."
        rec = base_record(inst, raw)
        if inst["task"] in ("er", "vp"):
            rec["client"] = inst.get("client")
            if rec["valid"] and judged:
                rec = with_judge(rec, judge)
                rec["bertscore"] = bert
        out.append(rec)
    return out


def write_run(
    root: Path,
    recs: list[dict[str, Any]],
    model: str,
    *,
    judge: str | None = "judge/synthetic",
    usage: dict[str, Any] | None = None,
    data: list[str] | None = None,
) -> Path:
    """A run folder as `rescue eval` writes it."""
    (root / "results").mkdir(parents=True, exist_ok=True)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        by_task.setdefault(r["task"], []).append(r)
    for task, rows in by_task.items():
        rows = sorted(rows, key=lambda r: (r["sample_id"], r["row"]))
        (root / "results" / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "summary.json").write_text(json.dumps(summarize(recs), indent=2), encoding="utf-8")
    info = {
        "settings": {"model": model, "judge": judge, "data": data, "mode": "dialogue"},
        "model": model,
        "judge": judge,
        "usage": usage if usage is not None else {model: {"input_tokens": 1200, "output_tokens": 340, "total_tokens": 1540}},
        "created": "2026-01-01T00:00:00+00:00",
    }
    (root / "run.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    return root


def make_run(root: Path, model: str, skill: float, *, n_couple: int = 12, n_family: int = 4, per_clip: int = 6,
             answer_seed: int = 1, **kwargs: Any) -> Path:
    judged = kwargs.get("judge", "judge/synthetic") is not None
    recs = records(instances(n_couple, n_family, per_clip), skill, seed=answer_seed, judged=judged)
    return write_run(root, recs, model, **kwargs)
