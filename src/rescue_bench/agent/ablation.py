"""The two ablations: the chain against the six single-task prompts on the same rows, and the chain
with an explicit state step against the chain without one.

Chain versus single tasks. The single-task instances are the tasks' own (their builders, prompts,
parsers and scoring), taken on the decision points' rows: ITP at the same boundary, RPP, STP and SSP
at the therapist row that follows it, ER and VP at the last client row shown. They are built with
the chain's cue mode and context window (so the comparison isolates chaining, not how many rows are
shown) and with ER's and VP's per-clip sampling switched off (so every such row has its instance).
Each comparison pairs one number of the chain with one of a single task on exactly the same units
(points, or point and client), so the difference gets a paired bootstrap interval over clips.

State ablation. Two chain runs on the same points, one per ``--state``, paired by point id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.agent.baseline import build_options
from rescue_bench.agent.metrics import BY_NAME, GROUPS
from rescue_bench.agent.options import AgentOptions
from rescue_bench.agent.points import SINGLE_TASKS, DecisionPoint
from rescue_bench.data.models import Clip
from rescue_bench.labels import POOLED
from rescue_bench.metrics import AdditiveStatistic, binary_statistic, mean_statistic
from rescue_bench.tasks import BuildOptions, Instance, build_instances

Record = dict[str, Any]
UNSAMPLED = 10**9
"""Per-clip cap of ER/VP instances in the ablation: large enough to keep every eligible row."""


def single_task_options(options: AgentOptions) -> BuildOptions:
    """The build options of the single-task ablation (see the module doc)."""
    return build_options(options).model_copy(
        update={"er_min_words": 0, "er_skip_ratio": 0.0, "er_max_per_clip": UNSAMPLED, "vp_max_per_clip": UNSAMPLED}
    )


def single_task_instances(
    clips: Sequence[Clip], points: Sequence[DecisionPoint], options: AgentOptions
) -> dict[str, tuple[list[Instance], list[Instance]]]:
    """Per task, ``(all its instances, those on the rows of points)``; a task with none on them is left out.

    The whole set comes along because the offline baselines cross-validate over it: a single-task
    ablation on some rows gets the same baseline answers as ``rescue eval`` over all of them.
    """
    bopts = single_task_options(options)
    out: dict[str, tuple[list[Instance], list[Instance]]] = {}
    for task in SINGLE_TASKS:
        wanted = {p.single_ids[task] for p in points}
        every = build_instances(clips, task, bopts)
        chosen = [i for i in every if i.id in wanted]
        if chosen:
            out[task] = (every, chosen)
    return out


@dataclass
class Comparison:
    """One number of two runs (or of the chain and a single task) on the same units.

    ``a`` and ``b`` are unit records with ``id`` and ``sample_id`` (the same ids in both);
    ``statistic`` computes the number from either list.
    """

    name: str
    label: str
    kind: str
    a: list[Record]
    b: list[Record]
    statistic: Callable[[Sequence[Record]], float]
    units: Callable[[Sequence[Record]], int] | None = None
    """How many units a side's number is over (default: its records)."""

    def values(self) -> tuple[float | None, float | None]:
        return _clean(self.statistic(self.a)) if self.a else None, _clean(self.statistic(self.b)) if self.b else None

    def sizes(self) -> tuple[int, int]:
        count = self.units or len
        return count(self.a), count(self.b)


def _clean(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _top1(record: Record | None) -> Any:
    if record is None or not record.get("valid") or not record.get("prediction"):
        return None
    return record["prediction"][0]


def _unit(r: Record, suffix: str = "", **fields: Any) -> Record:
    return {"id": r["id"] + suffix, "sample_id": r["sample_id"], "scenario": r["scenario"], **fields}


MEAN = mean_statistic(lambda u: float("nan") if u["value"] is None else float(u["value"]), "value")


def single_task_comparisons(chain: Sequence[Record], single: dict[str, Sequence[Record]]) -> list[Comparison]:
    """Every chain-versus-single-task comparison the records allow (``single``: task -> records)."""
    by_id = {t: {r["id"]: r for r in rs} for t, rs in single.items()}

    def rec(task: str, r: Record) -> Record | None:
        return by_id.get(task, {}).get(r["single_ids"].get(task))

    out: list[Comparison] = []
    pairs = [(r, i) for r in chain if (i := rec("itp", r)) is not None]
    for metric in ("f1", "accuracy"):
        out.append(
            Comparison(
                f"when_{metric}",
                f"when {metric} vs ITP",
                "pct",
                [_unit(r, gold=r["gold"]["when"], prediction=r["prediction"]["when"]) for r, _ in pairs],
                [_unit(r, gold=i["gold"], prediction=i["prediction"]) for r, i in pairs],
                binary_statistic(metric, "gold", "prediction"),
            )
        )

    def ranked(name: str, label: str, task: str, gold: str, pred: Callable[[Record], Any], keep: Callable[[Record], bool]) -> None:
        units = [(r, s) for r in chain if r["gold"].get(gold) is not None and keep(r) and (s := rec(task, r)) is not None]
        out.append(
            Comparison(
                name,
                label,
                "pct",
                [_unit(r, value=float(pred(r) == r["gold"][gold])) for r, _ in units],
                [_unit(r, value=float(_top1(s) == r["gold"][gold])) for r, s in units],
                MEAN,
            )
        )

    spoke = lambda r: r["prediction"]["when"] == "yes"  # noqa: E731
    anyway = lambda r: True  # noqa: E731
    ranked("whom_recall_at_1", "whom Recall@1 vs STP", "stp", "whom", lambda r: r["prediction"]["whom"], anyway)
    ranked("whom_given_intervened", "whom Recall@1 vs STP, where the agent spoke", "stp", "whom", lambda r: r["prediction"]["whom"], spoke)
    ranked("how_recall_at_1", "how Recall@1 (own target) vs SSP", "ssp", "how", lambda r: r["prediction"]["how"], anyway)
    ranked("how_given_gold_target", "how Recall@1 (gold target) vs SSP", "ssp", "how", lambda r: r["prediction"]["how_given_gold"], lambda r: r.get("branch", True))
    ranked("pattern_accuracy", "pattern accuracy vs RPP", "rpp", "pattern", lambda r: r["prediction"]["pattern"], lambda r: r["state_mode"] == "explicit")

    joint_a, joint_b = [], []
    for r in chain:
        g = r["gold"]
        itp = rec("itp", r)
        if itp is None:
            continue
        if g["when"] == "no":
            joint_a.append(_unit(r, value=float(r["prediction"]["when"] == "no")))
            joint_b.append(_unit(r, value=float(itp["prediction"] == "no")))
            continue
        stp, ssp = rec("stp", r), rec("ssp", r)
        if g["whom"] is None or g["how"] is None or stp is None or ssp is None:
            continue
        p = r["prediction"]
        joint_a.append(_unit(r, value=float(p["when"] == "yes" and p["whom"] == g["whom"] and p["how"] == g["how"])))
        joint_b.append(_unit(r, value=float(itp["prediction"] == "yes" and _top1(stp) == g["whom"] and _top1(ssp) == g["how"])))
    out.append(Comparison("joint", "joint success vs ITP+STP+SSP composed", "pct", joint_a, joint_b, MEAN))

    for task, part, who, fields in (
        ("er", "emotions", "client", (("intensity_score", "emotion_intensity", "judge"), ("judge_score", "emotion_judge", "judge"), ("score", "emotion_score", "judge"), ("bertscore", "emotion_bertscore", "bert"))),
        ("vp", "stances", "source", (("judge_score", "stance_judge", "judge"), ("bertscore", "stance_bertscore", "bert"))),
    ):
        units = []
        for r in chain:
            s = rec(task, r)
            item = next((i for i in r["scores"].get(part) or [] if i[who] == r["last_speaker"]), None)
            if s is not None and item is not None:
                units.append((r, item, s))
        for field, name, kind in fields:
            out.append(
                Comparison(
                    name,
                    f"{name.replace('_', ' ')} vs {task.upper()} (the last speaker)",
                    kind,
                    [_unit(r, "/" + item[who], value=item.get(field)) for r, item, _ in units],
                    [_unit(r, "/" + item[who], value=s.get(field)) for r, item, s in units],
                    MEAN,
                )
            )
    return out


STATE_ABLATION_GROUPS = ("steps", "chain", "turn", "neglect", "validity")


def state_comparisons(explicit: Sequence[Record], none: Sequence[Record]) -> list[Comparison]:
    """The chain's step, chain, turn, neglect and validity metrics with and without the state step,
    on the points both runs have."""
    common = {r["id"] for r in explicit} & {r["id"] for r in none}
    a = [r for r in explicit if r["id"] in common]
    b = [r for r in none if r["id"] in common]
    out = []
    for group in GROUPS:
        if group not in STATE_ABLATION_GROUPS:
            continue
        for m in (BY_NAME[n] for n in BY_NAME if BY_NAME[n].group == group):
            if m.name == "invalid_state":
                continue
            stat: AdditiveStatistic = m.statistic()
            out.append(Comparison(m.name, m.label, m.kind, a, b, stat, _support(m)))
    return out


def _support(metric: Any) -> Callable[[Sequence[Record]], int]:
    def units(records: Sequence[Record]) -> int:
        return metric.support(metric.statistic().components(list(records)).sum(axis=0)) if records else 0

    return units


def subset(comparison: Comparison, scenario: str) -> Comparison:
    """The comparison restricted to one scenario (``both``: unchanged)."""
    if scenario == POOLED:
        return comparison
    return Comparison(
        comparison.name,
        comparison.label,
        comparison.kind,
        [u for u in comparison.a if u["scenario"] == scenario],
        [u for u in comparison.b if u["scenario"] == scenario],
        comparison.statistic,
        comparison.units,
    )
