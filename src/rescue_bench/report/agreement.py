"""Agreement between human and judge scores (the paper's Table 12), and the sample humans rate.

Human ratings file (``HUMAN.csv``): a CSV with a header row holding at least the columns

=============  ==============================================================================
``id``         the record id of a judged ER or VP record of the run (``results/er.jsonl`` ...)
``task``       ``er`` or ``vp`` (must match the record)
``human_score`` an integer 1-5 on the judge's rubric; an empty cell means "not rated yet" (skipped
               and counted as ``unrated``)
``rater``      optional: who rated. With it, an id may appear once per rater (several raters per
               item, as ``rescue review export-ratings`` writes them)
=============  ==============================================================================

Other columns are ignored, so the file written by ``rescue agreement sample`` can be filled in and
passed back as is. Every problem (missing column, unknown id, score outside 1-5, duplicate id, or
duplicate id and rater) is an error naming the file and line. The files themselves are read and
written by :mod:`rescue_bench.judge_ratings` (the review app's questionnaire uses them too).

With several raters, judge-human agreement pools every (item, rater) pair (with one rater per item
that is the paper's layout), is also given per rater, and human-human agreement is reported beside
it (:func:`human_human_stats`: every two raters of an item compared, alpha over the items).

Statistics per task and overall (:func:`agreement_stats`): ``exact`` (share with equal scores),
``diff1`` (share with |human - judge| = 1), ``diff2`` (share with |difference| >= 2: the paper's three
columns sum to its 200 samples, so its last column counts every larger difference too; ``diff2_exact``
and ``diff3_plus`` split it), ``mae``, Cohen's kappa with quadratic weights (scikit-learn,
labels 1-5) and Krippendorff's alpha at the ordinal level (``krippendorff`` package, value domain
1-5). Kappa/alpha are ``None`` where undefined (e.g. every score the same).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from rescue_bench.judge_ratings import (
    HUMAN_COLUMNS,
    RATER_COLUMN,
    SAMPLE_COLUMNS,
    SCORES,
    answer_text,
    read_human_csv,
    read_sample_csv,
    write_sample,
)
from rescue_bench.labels import JUDGED_TASKS
from rescue_bench.report.runs import ReportInputError, Run

__all__ = [
    "HUMAN_COLUMNS",
    "RATER_COLUMN",
    "SAMPLE_COLUMNS",
    "SCORES",
    "agreement",
    "agreement_stats",
    "human_human_stats",
    "judged_records",
    "ordinal_alpha",
    "quadratic_kappa",
    "read_human_csv",
    "read_sample_csv",
    "score_alpha",
    "stratified_sample",
    "write_sample",
]



# ------------------------------------------------------------------------------------------------
# statistics
# ------------------------------------------------------------------------------------------------


def _nan_to_none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def quadratic_kappa(human: Sequence[int], judge: Sequence[int]) -> float | None:
    from sklearn.metrics import cohen_kappa_score

    if not human:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(list(human), list(judge), labels=list(SCORES), weights="quadratic")
    return _nan_to_none(float(value))


def ordinal_alpha(human: Sequence[int], judge: Sequence[int]) -> float | None:
    """Krippendorff's alpha (ordinal, values 1-5) of paired scores, each pair one unit."""
    return score_alpha([{"human": h, "judge": j} for h, j in zip(human, judge)])


def score_alpha(items: Sequence[dict[str, int]]) -> float | None:
    """Krippendorff's alpha (ordinal, values 1-5) of items rated by any raters (``{rater: score}``)."""
    from rescue_bench.metrics.agreement import Unit, krippendorff_alpha, value_counts

    units = [Unit("", item) for item in items]
    if not units:
        return None
    return krippendorff_alpha(value_counts(units, SCORES), "ordinal", SCORES)


class AgreementStats(BaseModel):
    """Agreement of paired 1-5 scores (see the module docstring for every field); shares are ``None``
    without pairs."""

    n: int
    counts: dict[str, int]
    """Pairs per class: ``exact``, ``diff1``, ``diff2``, ``diff2_exact``, ``diff3_plus``."""
    exact: float | None = None
    diff1: float | None = None
    diff2: float | None = None
    diff2_exact: float | None = None
    diff3_plus: float | None = None
    mae: float | None = None
    kappa_quadratic: float | None = None
    krippendorff_alpha_ordinal: float | None = None


class HumanHumanStats(AgreementStats):
    """Agreement between human raters: the pairs of raters of an item, and the items, raters behind them."""

    items: int
    pairs: int
    raters: list[str]


class TaskAgreement(BaseModel):
    """Judge-human agreement per judged task and over both."""

    er: AgreementStats
    vp: AgreementStats
    overall: AgreementStats


class HumanHumanAgreement(BaseModel):
    """Human-human agreement per judged task and over both."""

    er: HumanHumanStats
    vp: HumanHumanStats
    overall: HumanHumanStats


class Agreement(BaseModel):
    """Everything :func:`agreement` reports (its JSON form is ``rescue agreement --json``'s file)."""

    run: str
    human_file: str
    unrated: int
    items: int
    ratings: int
    excluded: dict[str, int]
    er: AgreementStats
    vp: AgreementStats
    overall: AgreementStats
    raters: dict[str, TaskAgreement]
    human_human: HumanHumanAgreement | None
    paper_table12: Any = None


def agreement_stats(human: Sequence[int], judge: Sequence[int]) -> AgreementStats:
    """Agreement of paired 1-5 scores (see the module docstring for every field)."""
    if len(human) != len(judge):
        raise ValueError("human and judge scores differ in length")
    n = len(human)
    diffs = [abs(h - j) for h, j in zip(human, judge)]
    counts = {
        "exact": sum(d == 0 for d in diffs),
        "diff1": sum(d == 1 for d in diffs),
        "diff2": sum(d >= 2 for d in diffs),
        "diff2_exact": sum(d == 2 for d in diffs),
        "diff3_plus": sum(d >= 3 for d in diffs),
    }

    def share(count: int) -> float | None:
        return count / n if n else None

    return AgreementStats(
        n=n,
        counts=counts,
        exact=share(counts["exact"]),
        diff1=share(counts["diff1"]),
        diff2=share(counts["diff2"]),
        diff2_exact=share(counts["diff2_exact"]),
        diff3_plus=share(counts["diff3_plus"]),
        mae=sum(diffs) / n if n else None,
        kappa_quadratic=quadratic_kappa(human, judge),
        krippendorff_alpha_ordinal=ordinal_alpha(human, judge),
    )


def human_human_stats(items: Sequence[dict[str, int]]) -> HumanHumanStats:
    """Agreement between human raters: ``items`` are ``{rater: score}`` for items rated by two or more.

    Every two raters of an item give one pair: ``exact`` / ``diff1`` / ``diff2`` / ``mae`` over the
    pairs (as :func:`agreement_stats`); ``krippendorff_alpha_ordinal`` over the items (raters may
    differ between items); ``kappa_quadratic`` only when the same two raters rated every item
    (Cohen's kappa assumes two fixed raters), else ``None``.
    """
    from itertools import combinations

    rated = [item for item in items if len(item) >= 2]
    pairs = [(item[a], item[b]) for item in rated for a, b in combinations(sorted(item), 2)]
    stats = agreement_stats([a for a, _ in pairs], [b for _, b in pairs])
    raters = sorted({r for item in rated for r in item})
    two = len(raters) == 2 and all(len(item) == 2 for item in rated)
    return HumanHumanStats(
        **stats.model_dump(exclude={"krippendorff_alpha_ordinal", "kappa_quadratic"}),
        kappa_quadratic=stats.kappa_quadratic if two else None,
        krippendorff_alpha_ordinal=score_alpha(rated),
        items=len(rated),
        pairs=len(pairs),
        raters=raters,
    )


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------


def judge_exclusion(record: dict[str, Any]) -> str | None:
    """Why a record's judge score is not a judge's verdict, or ``None`` when a judge gave it.

    ``invalid_answer``: the answer was unusable, so the scorer filled in the lowest score without a
    judge call (whatever score is stored). ``judge_failed``: the judge was called but never gave a
    usable score (``judge_flagged``, or an explicit ``judge_failed`` / ``judge_error`` field), so the
    stored 1 is a floor, not an opinion. Either would count as agreement with a human who also gave 1.
    """
    if not record.get("valid"):
        return "invalid_answer"
    if record.get("judge_flagged") or record.get("judge_failed") or record.get("judge_error"):
        return "judge_failed"
    return None


EXCLUSION_REASONS = ("invalid_answer", "judge_failed")


def judged_records(run: Run) -> dict[str, dict[str, Any]]:
    """The run's ER/VP records with a judge score, by id (see :func:`judge_exclusion` for which of
    them hold a score a judge actually gave)."""
    out = {}
    for task in JUDGED_TASKS:
        for r in run.records.get(task, []):
            if r.get("judge_score") is not None:
                out[r["id"]] = r
    return out


def agreement(path: str | Path, run: Run) -> dict[str, Any]:
    """Human-vs-judge agreement for the ratings in ``path`` against ``run``'s judge scores.

    Only scores a judge gave are compared: ratings of records :func:`judge_exclusion` rules out are
    left out and counted in ``excluded`` (by reason). Returns the JSON form of :class:`Agreement`
    (what ``rescue agreement --json`` writes).

    Keys ``er``, ``vp``, ``overall``: :func:`agreement_stats` over every (item, rater) pair. With a
    rater column: ``raters`` (the same per rater) and, where an item has two or more raters,
    ``human_human`` (:func:`human_human_stats` per task and overall).
    """
    rows, unrated = read_human_csv(path)
    records = judged_records(run)
    pairs: dict[str, list[tuple[int, int]]] = {t: [] for t in JUDGED_TASKS}
    per_rater: dict[str, dict[str, list[tuple[int, int]]]] = {}
    per_item: dict[str, dict[str, int]] = {}
    item_task: dict[str, str] = {}
    excluded = dict.fromkeys(EXCLUSION_REASONS, 0)
    for row in rows:
        record = records.get(row["id"])
        if record is None:
            raise ReportInputError(path, f"id {row['id']!r} is not a judged ER/VP record of {run.path}", row["line"])
        if record["task"] != row["task"]:
            raise ReportInputError(path, f"id {row['id']!r} is a {record['task']} record, not {row['task']}", row["line"])
        reason = judge_exclusion(record)
        if reason is not None:
            excluded[reason] += 1
            continue
        judge = record["judge_score"]
        if not isinstance(judge, int) or isinstance(judge, bool) or judge not in SCORES:
            raise ReportInputError(run.path / "results" / f"{record['task']}.jsonl", f"judge_score {judge!r} of {row['id']!r} is not an integer 1-5")
        pairs[row["task"]].append((row["human_score"], judge))
        per_rater.setdefault(row["rater"], {t: [] for t in JUDGED_TASKS})[row["task"]].append((row["human_score"], judge))
        per_item.setdefault(row["id"], {})[row["rater"]] = row["human_score"]
        item_task[row["id"]] = row["task"]
    def stats(found: list[tuple[int, int]]) -> AgreementStats:
        return agreement_stats([h for h, _ in found], [j for _, j in found])

    def by_task(found: dict[str, list[tuple[int, int]]]) -> TaskAgreement:
        return TaskAgreement(er=stats(found["er"]), vp=stats(found["vp"]), overall=stats([p for t in JUDGED_TASKS for p in found[t]]))

    def human_human(task: str) -> HumanHumanStats:
        return human_human_stats([item for rid, item in several.items() if item_task[rid] == task])

    named = sorted(r for r in per_rater if r)
    several = {rid: item for rid, item in per_item.items() if len(item) >= 2}
    from rescue_bench.reference import paper_reference

    judged = by_task(pairs)
    result = Agreement(
        run=run.name,
        human_file=str(path),
        unrated=unrated,
        items=len(per_item),
        ratings=len(rows),
        excluded=excluded,
        er=judged.er,
        vp=judged.vp,
        overall=judged.overall,
        raters={name: by_task(per_rater[name]) for name in named} if len(named) > 1 else {},
        human_human=HumanHumanAgreement(
            er=human_human("er"), vp=human_human("vp"), overall=human_human_stats(list(several.values()))
        ) if several else None,
        paper_table12=paper_reference().get("table12_judge_vs_human"),
    )
    return result.model_dump()


# ------------------------------------------------------------------------------------------------
# the sample humans rate
# ------------------------------------------------------------------------------------------------


def _allocate(total: int, sizes: dict[Any, int], *, at_least_one: bool) -> dict[Any, int]:
    """Split ``total`` over strata proportionally to ``sizes`` (largest remainder, capped by size)."""
    keys = [k for k, s in sizes.items() if s > 0]
    alloc = {k: 0 for k in sizes}
    if not keys or total <= 0:
        return alloc
    total = min(total, sum(sizes[k] for k in keys))
    if at_least_one and total >= len(keys):
        for k in keys:
            alloc[k] = 1
    remaining = total - sum(alloc.values())
    while remaining > 0:
        room = {k: sizes[k] - alloc[k] for k in keys if sizes[k] > alloc[k]}
        mass = sum(sizes[k] for k in room)
        quotas = {k: remaining * sizes[k] / mass for k in room}
        given = 0
        for k in room:
            add = min(room[k], int(math.floor(quotas[k])))
            alloc[k] += add
            given += add
        left = remaining - given
        order = sorted(room, key=lambda k: (-(quotas[k] - math.floor(quotas[k])), str(k)))
        for k in order:
            if left <= 0:
                break
            if alloc[k] < sizes[k]:
                alloc[k] += 1
                left -= 1
        remaining = total - sum(alloc.values())
    return alloc


def stratified_sample(run: Run, n: int = 100, seed: int = 0) -> list[dict[str, Any]]:
    """Up to ``n`` judged ER/VP records, stratified by task and judge score, as CSV rows.

    Only valid answers that the judge actually scored are eligible (an invalid answer gets score 1
    without a judge call, and a failed judge call leaves a floor, so neither says anything about the
    judge). ``n`` is split evenly between the two
    tasks (as the paper's 100 ER + 100 VP; a task with too few records passes its share on), and
    within a task proportionally to the judge-score counts, with at least one record per score that
    occurs when ``n`` allows. The draw and the final (shuffled) order depend only on ``seed``.
    """
    rng = np.random.default_rng(seed)
    pools: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for task in JUDGED_TASKS:
        pools[task] = {}
        for r in run.records.get(task, []):
            if judge_exclusion(r) is None and r.get("judge_score") is not None:
                pools[task].setdefault(int(r["judge_score"]), []).append(r)
    sizes = {t: sum(len(v) for v in pools[t].values()) for t in JUDGED_TASKS}
    total = min(n, sum(sizes.values()))
    first, second = JUDGED_TASKS
    per_task = {first: min(sizes[first], total // 2)}
    per_task[second] = min(sizes[second], total - per_task[first])
    per_task[first] = min(sizes[first], total - per_task[second])
    chosen: list[dict[str, Any]] = []
    for task in JUDGED_TASKS:
        strata = pools[task]
        alloc = _allocate(per_task[task], {s: len(strata[s]) for s in sorted(strata)}, at_least_one=True)
        for score in sorted(strata):
            items = sorted(strata[score], key=lambda r: r["id"])
            k = alloc.get(score, 0)
            if k:
                picks = rng.choice(len(items), size=k, replace=False)
                chosen.extend(items[i] for i in sorted(picks.tolist()))
    order = rng.permutation(len(chosen))
    rows = []
    for i in order.tolist():
        r = chosen[i]
        rows.append(
            {
                "id": r["id"],
                "task": r["task"],
                "sample_id": r["sample_id"],
                "scenario": r["scenario"],
                "row": r["row"],
                "gold": answer_text(r["task"], r["gold"]),
                "prediction": answer_text(r["task"], r["prediction"], r.get("client")),
                "judge_score": r["judge_score"],
                "human_score": "",
            }
        )
    return rows


