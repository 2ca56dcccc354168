"""Factories of test inputs, one set for every test folder (all names and text here are invented).

Rows and clips in the release format:

- :func:`row`, :func:`therapist`, :func:`strat`, :func:`emo`, :func:`view` build the pieces of a
  row with only the fields a test names; :func:`raw_clip` wraps rows into a clip dict (rows are
  numbered) and :func:`clip` validates it into a :class:`~rescue_bench.data.models.Clip`;
- :func:`release_row` and :func:`release_clip`: a row carrying every field of the release, and a
  small valid clip of such rows, for the data layer's tests that break one field at a time;
- :func:`rounds_clip` and :func:`mixed_clips`: whole conversations in rounds (each client speaks,
  then the therapist) with chosen labels, for the baselines;
- :func:`table6_release`: 191 clips whose instance counts are exactly the paper's Table 6;
- :func:`write_lines`: a JSON Lines file (strings are written as they are, for broken lines).

Run folders as ``rescue eval`` writes them: :func:`run_instances`, :func:`run_records`,
:func:`write_run` and :func:`make_run` make one (records through the project's own scoring);
:func:`read_records` reads the records of any run folder back.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rescue_bench.data.models import Clip
from rescue_bench.labels import GROUP_LABELS, patterns, strategies
from rescue_bench.scoring import base_record, summarize, with_bertscore_floor, with_judge
from rescue_bench.tasks.instance import instance_id

T = "Therapist"
PEOPLE = {"couple": ["Ann", "Bob"], "family": ["Ann", "Bob", "Cyd"]}
"""The clients of a clip by scenario, unless a test names others."""
FIVE_WORDS = "we went home very late"
FOUR_WORDS = "we went home late"

# =================================================================================================
# rows and clips
# =================================================================================================


def row(speaker: str | None, text: str | None = "some words here", **fields: Any) -> dict[str, Any]:
    """A raw release-format row; ``row_index`` is filled in by :func:`raw_clip`."""
    out: dict[str, Any] = {"dialogue_cleaned": text, **fields}
    if speaker is not None:
        out["primary_speaker"] = speaker
    return out


def therapist(text: str = "tell me more", **fields: Any) -> dict[str, Any]:
    return row(T, text, **fields)


def strat(strategy_type: str | None = "track", target: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    """One ``support_strategy`` item of the therapist."""
    item: dict[str, Any] = {"provider": T, "strategy_type": strategy_type, **fields}
    if target is not None:
        item["target"] = target
    return item


def emo(person: str | None, description: str | None = "uneasy", intensity: Any = 5) -> dict[str, Any]:
    """One ``internal_emotion`` item."""
    return {"person": person, "emotion_description": description, "intensity": intensity}


def view(source: str | None, target: str | None, viewpoint: str | None = "distant", attitude: str = "cool") -> dict[str, Any]:
    """One ``viewpoints_attitudes`` item."""
    return {"source": source, "target": target, "viewpoint": viewpoint, "attitude": attitude}


def raw_clip(
    rows: list[dict[str, Any]],
    *,
    scenario: str = "couple",
    participants: list[str] | None = None,
    sample_id: str = "synthetic_pair/clip_a",
    source_file: str | None = "synthetic.mp4",
    index_rows: bool = True,
) -> dict[str, Any]:
    """A clip dict of copies of ``rows``, numbered from 1 unless a row has its own ``row_index``
    (``source_file=None`` leaves the key out)."""
    if participants is None:
        participants = list(PEOPLE["couple" if scenario == "couple" else "family"])
    rows = [dict(r) for r in rows]
    if index_rows:
        for i, r in enumerate(rows, 1):
            r.setdefault("row_index", i)
    out: dict[str, Any] = {"sample_id": sample_id, "scenario": scenario, "participants": participants}
    if source_file is not None:
        out["source_file"] = source_file
    out["rows"] = rows
    return out


def clip(rows: list[dict[str, Any]], **kwargs: Any) -> Clip:
    """:func:`raw_clip`, validated into a :class:`Clip`."""
    return Clip.model_validate(raw_clip(rows, **kwargs))


def release_row(**overrides: Any) -> dict[str, Any]:
    """A complete, valid client row with every field of the release."""
    out: dict[str, Any] = {
        "start_time": 0.0,
        "end_time": 2.5,
        "primary_speaker": "Ana",
        "target": ["Therapist"],
        "dialogue_cleaned": "I keep waiting for him to notice me.",
        "utterance_type": "disclosure",
        "background_dialogue": [],
        "tone_of_voice": "quiet",
        "body_posture": [],
        "facial_expressions": [],
        "self_directed_behavior": [],
        "interaction_behavior": [],
        "internal_emotion": [{"person": "Ana", "emotion_description": "lonely", "intensity": 6}],
        "viewpoints_attitudes": [],
        "support_strategy": [],
        "row_index": 1,
        "relation_pattern": "pursue_withdraw",
        "relation_pattern_reason": "Ana reaches, Bo retreats.",
        "relation_pattern_evidence_rows": [1],
    }
    out.update(overrides)
    return out


def release_clip(sample_id: str = "tiny/c1", scenario: str = "couple", n_rows: int = 2) -> dict[str, Any]:
    """A small valid clip of :func:`release_row` rows: client and therapist rows alternate."""
    rows = []
    for i in range(n_rows):
        if i % 2:
            r = release_row(
                primary_speaker="Therapist", target=["Ana"], utterance_type="", internal_emotion=[],
                relation_cycle_state="pursue_withdraw" if scenario == "couple" else "escalation_conflict",
                relation_pattern=None, relation_pattern_reason=None, relation_pattern_evidence_rows=[],
                support_strategy=[{"provider": "Therapist", "target": ["Ana"], "strategy_type": "track",
                                   "strategy_content": "names the loop"}],
            )
        else:
            r = release_row()
        r["row_index"] = i + 1
        r["start_time"] = float(3 * i)
        r["end_time"] = float(3 * i + 2)
        rows.append(r)
    return raw_clip(rows, scenario=scenario, participants=["Ana", "Bo"], sample_id=sample_id, source_file="x.json")


def _pick(values: str | Sequence[str], k: int) -> str:
    return values if isinstance(values, str) else values[k % len(values)]


def rounds_clip(
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
    """A clip of ``rounds`` rounds: each client speaks in turn (to the next client), then the therapist.

    ``pattern`` and ``strategy``: one label, or a sequence taken round by round. ``target``:
    ``"last"`` (the therapist addresses the client who spoke last), ``"first"`` (the first client),
    ``"group"`` (the group label). ``keyword`` is put in every client turn.
    """
    pattern = pattern or patterns(scenario)[0]
    strategy = strategy or strategies(scenario)[0]
    rows: list[dict[str, Any]] = []
    for k in range(rounds):
        for n, name in enumerate(clients):
            other = clients[(n + 1) % len(clients)]
            rows.append(
                row(
                    name,
                    f"{keyword} well I really think that round {k} went badly for us".strip(),
                    target=[other],
                    internal_emotion=[emo(name, emotion, intensity)],
                    viewpoints_attitudes=[view(name, other, viewpoint, "negative")],
                )
            )
        addressee = {"last": clients[-1], "first": clients[0], "group": GROUP_LABELS[scenario]}[target]
        rows.append(
            therapist(
                "let us slow down for a moment",
                target=[addressee],
                relation_cycle_state=_pick(pattern, k),
                support_strategy=[strat(_pick(strategy, k), [addressee])],
            )
        )
    return clip(rows, scenario=scenario, participants=list(clients), sample_id=sample_id, source_file=None)


def mixed_clips() -> list[Clip]:
    """Four couple and two family clips with varied labels, names, emotions and viewpoints."""
    couple, family = patterns("couple"), patterns("family")
    cs, fs = strategies("couple"), strategies("family")
    names = [("Ann", "Bob"), ("Cara", "Dev"), ("Eli", "Fay"), ("Gus", "Hana")]
    clips = [
        rounds_clip(
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
        rounds_clip(
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


def write_lines(path: Path, items: list[Any]) -> Path:
    """Write JSON Lines: dicts are serialised, strings written as they are (for broken lines)."""
    text = "".join((json.dumps(i, ensure_ascii=False) if not isinstance(i, str) else i) + "\n" for i in items)
    path.write_text(text, encoding="utf-8")
    return path


# =================================================================================================
# A synthetic 191-clip release whose instance counts are exactly the paper's Table 6
# =================================================================================================

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


# =================================================================================================
# run folders, as `rescue eval` writes them
# =================================================================================================

_EMOTIONS = ["hurt", "angry", "anxious", "hopeful", "ashamed"]
_TASKS = ("itp", "rpp", "stp", "ssp", "er", "vp")


def _run_clip_ids(n_couple: int, n_family: int) -> list[tuple[str, str]]:
    return [(f"pair_{i:03d}/clip", "couple") for i in range(n_couple)] + [
        (f"family_{i:03d}/merged", "family") for i in range(n_family)
    ]


def run_instances(n_couple: int = 12, n_family: int = 4, per_clip: int = 6, seed: int = 0) -> list[dict[str, Any]]:
    """Instance dicts of all six tasks, ``per_clip`` of each task per clip (deterministic)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for sample_id, scenario in _run_clip_ids(n_couple, n_family):
        people = PEOPLE[scenario]
        n_rows = 4 * per_clip + 3
        for task in _TASKS:
            for k in range(per_clip):
                row_no = 2 + 4 * k + _TASKS.index(task) % 4
                inst: dict[str, Any] = {
                    "id": instance_id(task, sample_id, row_no),
                    "task": task,
                    "sample_id": sample_id,
                    "scenario": scenario,
                    "row": row_no,
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
                    inst["gold"] = {"emotion": rng.choice(_EMOTIONS), "intensity": rng.randint(0, 10)}
                    inst["client"] = people[0]
                else:
                    inst["gold"] = [{"source": people[0], "target": people[1], "viewpoint": "feels unheard by them"}]
                    inst["client"] = people[0]
                out.append(inst)
    return out


def _wrong(labels: list[str], gold: str, rng: random.Random) -> str:
    return rng.choice([x for x in labels if x != gold])


def _simulated_answer(inst: dict[str, Any], skill: float, rng: random.Random) -> tuple[str | None, int | None, float]:
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


def run_records(
    insts: list[dict[str, Any]], skill: float, seed: int = 1, invalid_every: int = 0, judged: bool = True
) -> list[dict[str, Any]]:
    """Scored records of a simulated model (:func:`rescue_bench.scoring.base_record`, then
    :func:`~rescue_bench.scoring.with_judge` for ER/VP); every ``invalid_every``-th instance gets an
    unparseable answer. Without ``judged`` ER/VP records keep no judge score and no BERTScore (a run
    without --judge)."""
    rng = random.Random(seed)
    out = []
    for i, inst in enumerate(insts):
        raw, judge, bert = _simulated_answer(inst, skill, rng)
        if invalid_every and i % invalid_every == 0:
            raw = "I am not sure."
        rec = base_record(inst, raw)
        if inst["task"] in ("er", "vp"):
            rec["client"] = inst.get("client")
            if judged:  # the judge and BERTScore of the run: an invalid answer takes their floors
                rec = with_bertscore_floor(with_judge(rec, judge))
                if rec["valid"]:
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
    """A run folder as `rescue eval` writes it: results/<task>.jsonl, summary.json, run.json."""
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
    """:func:`write_run` of :func:`run_records` of :func:`run_instances`: a whole synthetic run."""
    judged = kwargs.get("judge", "judge/synthetic") is not None
    recs = run_records(run_instances(n_couple, n_family, per_clip), skill, seed=answer_seed, judged=judged)
    return write_run(root, recs, model, **kwargs)


def read_records(out: Path) -> list[dict[str, Any]]:
    """Every result record of a run folder, task files in name order."""
    rows: list[dict[str, Any]] = []
    for path in sorted((out / "results").glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return rows
