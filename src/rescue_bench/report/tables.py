"""Table layouts of the report (paper Tables 5 and 11, CIs, significance, per label, invalid answers, usage).

Builders here are pure: they take computed numbers (see :mod:`rescue_bench.report.analysis`) and return
a :class:`Table` of display strings; :mod:`rescue_bench.report.render` writes a table as Markdown,
CSV, LaTeX or HTML. Number formats follow the paper: classification metrics in percent with two
decimals (our fractions x 100), judge scores on the 1-5 scale with two decimals, BERTScore with four
decimals, a missing value as an en dash.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rescue_bench.labels import POOLED
from rescue_bench.metrics.coverage import (
    COVERAGE_SOURCE,
    MIN_CLUSTERS_FOR_INTERVAL,
    coverage_note,
    interval_available,
    level_text,
)
from rescue_bench.records import CAUSE_LABELS, INVALID_CAUSES
from rescue_bench.report.analysis import (
    CORRECTIONS,
    Confusion,
    Headline,
    LabelAccuracy,
    MajorityShare,
    MetricCI,
    PairedTest,
    TaskCounts,
    UsageRow,
    per_label_union,
)
from rescue_bench.scoring import HEADLINE, PARSE_CAUSES, SUMMARY_SCENARIOS, AnswerCounts
from rescue_bench.task_table import TASK_TABLE, rule

MISSING = "–"
DAGGER = "†"
ITP_FOOTNOTE = (
    f"{DAGGER} Paper ITP numbers are not comparable with a clean run: the authors' prompts leaked the answer "
    "(a field naming the candidate type and pos/neg in the instance id)."
)
PAPER_SOURCE = "Hu et al. (2026), RESCUE-Bench, arXiv 2609.09657"


@dataclass(frozen=True)
class Column:
    group: str
    label: str
    task: str
    metric: str
    paper_key: str


PAPER_COLUMNS: tuple[Column, ...] = (
    Column("ITP", "P", "itp", "precision", "itp_precision"),
    Column("ITP", "R", "itp", "recall", "itp_recall"),
    Column("ITP", "F1", "itp", "f1", "itp_f1"),
    Column("RPP", "Acc", "rpp", "accuracy", "rpp_accuracy"),
    Column("STP", "Rec", "stp", "recall_at_1", "stp_recall"),
    Column("STP", "MRR", "stp", "mrr", "stp_mrr"),
    Column("SSP", "Rec", "ssp", "recall_at_1", "ssp_recall"),
    Column("SSP", "MRR", "ssp", "mrr", "ssp_mrr"),
    Column("ER", "Judge (/5)", "er", "judge", "er_judge"),
    Column("ER", "BERTScore", "er", "bertscore", "er_bertscore"),
    Column("VP", "Judge (/5)", "vp", "judge", "vp_judge"),
    Column("VP", "BERTScore", "vp", "bertscore", "vp_bertscore"),
)
"""The paper's Table 5 / Table 11 columns and where each comes from."""

SCENARIO_NAMES = {"couple": "Couple", "family": "Family", POOLED: "Both"}
TASK_LABELS = {task: r.label for task, r in TASK_TABLE.items()}


@dataclass
class Table:
    """A table of display strings. ``header`` has one ``(group, label)`` per column (group may be
    empty); ``groups`` maps a row index to a group caption shown before that row."""

    name: str
    title: str
    header: list[tuple[str, str]]
    rows: list[list[str]]
    groups: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def flat_header(self) -> list[str]:
        return [f"{g} {c}".strip() if g else c for g, c in self.header]

    def group_of(self) -> list[str]:
        """The group caption of every row (for flat formats such as CSV)."""
        out, current = [], ""
        for i in range(len(self.rows)):
            current = self.groups.get(i, current)
            out.append(current)
        return out


# ------------------------------------------------------------------------------------------------
# number formats
# ------------------------------------------------------------------------------------------------


def metric_kind(task: str, metric: str) -> str:
    """``pct`` (fraction shown x100), ``judge`` (1-5 scale) or ``bert`` (BERTScore in [0, 1])."""
    return rule(task).kind(metric)


def to_display(value: float | None, kind: str) -> float | None:
    """Our value on the paper's scale (fractions to percent)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value * 100.0 if kind == "pct" else float(value)


def fmt_display(value: float | None, kind: str) -> str:
    """A value already on the paper's scale, formatted as the paper prints it."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:.4f}" if kind == "bert" else f"{value:.2f}"


def fmt(value: float | None, kind: str) -> str:
    """Our value (fraction / 1-5 / [0, 1]) formatted as the paper prints it."""
    return fmt_display(to_display(value, kind), kind)


class WithInterval(Protocol):
    """A value with its interval over clips (:class:`~rescue_bench.report.analysis.MetricCI`, the agent's)."""

    @property
    def value(self) -> float | None: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def clips(self) -> int | None: ...


def fmt_ci(entry: WithInterval, kind: str) -> str:
    """``value [low, high]`` on the paper's scale; ``value [no interval: 1 clip]`` where the clips
    (``entry.clips``) are too few to resample."""
    if entry.value is None:
        return MISSING
    text = fmt(entry.value, kind)
    clips = entry.clips
    if clips is not None and not interval_available(int(clips)):
        return f"{text} [{coverage_note(int(clips), 0.95)}]"
    if entry.ci_low is not None and entry.ci_high is not None:
        text += f" [{fmt(entry.ci_low, kind)}, {fmt(entry.ci_high, kind)}]"
    return text


def fmt_p(p: float | None) -> str:
    if p is None:
        return MISSING
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}"


def fmt_int(value: Any) -> str:
    if value is None:
        return MISSING
    return f"{int(value):,}"


def fmt_cost(value: Any) -> str:
    if value is None:
        return MISSING
    return f"{float(value):.4f}"


# ------------------------------------------------------------------------------------------------
# Tables 5 and 11
# ------------------------------------------------------------------------------------------------


def scenario_caption(scenario: str, clips: int | None, paper_clips: int | None = None, confidence: float | None = None) -> str:
    """``Couple (6 clips)``; with ``paper_clips`` the paper's count; with ``confidence`` the coverage
    note of an interval from that many clips (:func:`rescue_bench.metrics.coverage_note`)."""
    text = SCENARIO_NAMES[scenario]
    if clips is not None:
        text += f" ({clips} clip{'s' if clips != 1 else ''}"
        if paper_clips is not None:
            text += f"; paper: {paper_clips}"
        if confidence is not None:
            text += f"; {coverage_note(clips, confidence)}"
        text += ")"
    return text


def coverage_footnote(confidence: float) -> str:
    """The table note that says where the coverage notes of the scenario columns come from."""
    return (
        f"Column notes: a scenario with fewer than {MIN_CLUSTERS_FOR_INTERVAL} clips gets no interval (one clip cannot be resampled); "
        f"'covers ~X%' is how often a nominal {level_text(confidence)} interval from that many clips held the true value in "
        f"simulation ({COVERAGE_SOURCE}): with few clips the intervals are too narrow."
    )


def paper_layout(
    runs: Sequence[tuple[str, bool, dict[str, dict[str, dict[str, float | None]]]]],
    paper: dict[str, dict[str, float]],
    scenario: str,
    *,
    name: str,
    title: str,
    backbones: dict[str, str | None] | None = None,
) -> Table:
    """The paper's Table 5 / 11 layout for one scenario.

    ``backbones``: the BERTScore backbone each run recorded (``run.json``), named in a note, since
    BERTScore values from different backbones are not comparable.

    ``runs``: ``(display name, is_baseline, points)`` with ``points = {task: {scenario: {metric:
    value}}}``; ``paper``: ``{model: {paper_key: value as printed}}`` (an ``Average`` entry is shown
    last). Rows: this evaluation's runs, then the baselines, then the paper's models and their average.
    ITP cells of paper rows carry a dagger and the table a footnote.
    """
    header = [("", "Model")] + [(c.group, c.label) for c in PAPER_COLUMNS]
    rows: list[list[str]] = []
    groups: dict[int, str] = {}

    def ours(points: dict[str, dict[str, dict[str, float | None]]]) -> list[str]:
        cells = []
        for c in PAPER_COLUMNS:
            value = ((points.get(c.task) or {}).get(scenario) or {}).get(c.metric)
            cells.append(fmt(value, metric_kind(c.task, c.metric)))
        return cells

    for label, baseline in (("This evaluation", False), ("Baselines", True)):
        chosen = [r for r in runs if r[1] is baseline]
        if chosen:
            groups[len(rows)] = label
            rows.extend([r[0], *ours(r[2])] for r in chosen)
    if paper:
        groups[len(rows)] = f"Paper ({PAPER_SOURCE})"
        models = [m for m in paper if m != "Average"] + [m for m in paper if m == "Average"]
        for model in models:
            cells = []
            for c in PAPER_COLUMNS:
                text = fmt_display(paper[model].get(c.paper_key), metric_kind(c.task, c.metric))
                if not rule(c.task).paper_comparable and text != MISSING:
                    text += DAGGER
                cells.append(text)
            rows.append([f"{model} (paper)" if model == "Average" else model, *cells])
    notes = [
        "Classification metrics in percent; judge scores on a 1-5 scale; BERTScore F1 in [0, 1]; "
        f"{MISSING} = not available (e.g. no judge or no BERTScore in the run).",
        "Rec = recall@1; MRR counts ranks 1-3. Our rows are micro means over instances, as summary.json.",
    ]
    if backbones is not None:
        notes.append(backbone_note(backbones, paper=bool(paper)))
    if paper:
        notes.append(ITP_FOOTNOTE)
    return Table(name=name, title=title, header=header, rows=rows, groups=groups, notes=notes)


PAPER_BACKBONE = "not stated (the bert-score library's English default is roberta-large)"
"""What the paper says of its BERTScore backbone."""


def backbone_note(backbones: dict[str, str | None], *, paper: bool) -> str:
    """``BERTScore backbone: run: model, ...; paper: ...`` (a path is shown by its last part)."""
    parts = [f"{name}: {Path(b).name if b else 'not recorded'}" for name, b in backbones.items()]
    text = "BERTScore backbone (values from different backbones are not comparable): " + "; ".join(parts)
    return text + (f"; paper: {PAPER_BACKBONE}." if paper else ".")


def paper_rows_table5(table5: dict[str, dict[str, float]], table11: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """The paper's Table 5 models plus their printed average (Table 11's ``Average``/``both``)."""
    rows = {m: dict(v) for m, v in table5.items()}
    average = (table11.get("Average") or {}).get(POOLED)
    if average:
        rows["Average"] = dict(average)
    return rows


def paper_rows_table11(table11: dict[str, dict[str, dict[str, float]]], scenario: str) -> dict[str, dict[str, float]]:
    return {m: dict(v[scenario]) for m, v in table11.items() if scenario in v}


# ------------------------------------------------------------------------------------------------
# CIs next to majority shares
# ------------------------------------------------------------------------------------------------


def _share_cells(per_scenario: dict[str, MajorityShare], *, role: bool) -> list[str]:
    """One cell per scenario: the share of the majority label (``role``: target role) as a percentage,
    then its name in brackets."""
    cells = []
    for scenario in SUMMARY_SCENARIOS:
        m = per_scenario.get(scenario) or MajorityShare()
        share, name = (m.role_share, m.role) if role else (m.share, m.label)
        text = fmt(share, "pct")
        if name is not None:
            text += f" ({name})"
        cells.append(text)
    return cells


def _with_chance(entry: MetricCI, kind: str) -> str:
    text = fmt_ci(entry, kind)
    if entry.value is not None and entry.chance is not None:
        text += f" · chance {fmt(entry.chance, kind)}"
    return text


def _constant(entry: MetricCI) -> str:
    c = entry.constant or {}
    if c.get("yes") is None:
        return MISSING
    return f"{fmt(c['yes'], 'pct')} / {fmt(c.get('no'), 'pct')}"


def ci_table(
    runs: Sequence[tuple[str, Headline, dict[str, dict[str, TaskCounts]], dict[str, dict[str, MajorityShare]]]],
    clips: dict[str, int],
    *,
    confidence: float,
    n_resamples: int,
) -> Table:
    """Every headline metric with its bootstrap CI per scenario, one row group per run.

    ``runs``: ``(name, cis, counts, majority)`` from :func:`analysis.headline_cis`,
    :func:`analysis.counts`, :func:`analysis.majority_shares`. Beside the top-1 metric of RPP, STP
    and SSP, a row gives the majority-class share of the golds (the accuracy of always answering the
    most frequent label).
    """
    header = [("", "Task"), ("", "Metric")] + [("", scenario_caption(s, clips.get(s), confidence=confidence)) for s in SUMMARY_SCENARIOS]
    rows: list[list[str]] = []
    groups: dict[int, str] = {}
    for name, cis, cnt, majority in runs:
        groups[len(rows)] = name
        for task in HEADLINE:
            if task not in cis:
                continue
            found = [(cnt.get(task) or {}).get(s) or TaskCounts() for s in SUMMARY_SCENARIOS]
            rows.append([TASK_LABELS[task], "n instances (clips)"] + [f"{c.n} ({c.clips})" for c in found])
            for metric in HEADLINE[task]:
                kind = metric_kind(task, metric)
                rows.append([TASK_LABELS[task], metric] + [_with_chance(cis[task][s][metric], kind) for s in SUMMARY_SCENARIOS])
                if rule(task).binary and metric == "f1":
                    rows.append([TASK_LABELS[task], "f1 of always yes / always no"] + [_constant(cis[task][s][metric]) for s in SUMMARY_SCENARIOS])
                if rule(task).top1 == metric and task in majority:
                    rows.append([TASK_LABELS[task], "majority-class share"] + _share_cells(majority[task], role=False))
                    if rule(task).target_roles:
                        rows.append([TASK_LABELS[task], "majority-role share"] + _share_cells(majority[task], role=True))
    notes = [
        f"value [low, high]: {level_text(confidence)} percentile bootstrap interval, {n_resamples} resamples of clips "
        "(sample_id; Both resamples couple and family clips within their scenario), seeded; percent for classification metrics, 1-5 for judge/intensity/ER score, [0, 1] for BERTScore.",
        coverage_footnote(confidence),
        "majority-class share: the share of the most frequent gold label (the accuracy of always answering it).",
        "chance: the expected score of an answer that ignores the input, fixed by the task design (ITP a fair coin; a ranking "
        "a uniformly random order of the instance's candidates: couple STP has three, so its Recall@3 is 100 for any valid "
        "ranking). A constant ITP answer is no coin: 'always yes' scores the F1 shown, 'always no' 0, so a majority "
        "baseline's ITP F1 is its tie-break's.",
    ]
    return Table(name="headline_ci", title=f"Headline metrics with {level_text(confidence)} bootstrap confidence intervals", header=header, rows=rows, groups=groups, notes=notes)


# ------------------------------------------------------------------------------------------------
# significance
# ------------------------------------------------------------------------------------------------


def test_matrices(tests: Sequence[PairedTest], names: Sequence[str], correction: str = "pairs") -> list[Table]:
    """One matrix per (task, metric, scenario): cell (row a, column b) = difference a - b on the
    paper's scale and its adjusted p-value (``*`` when < 0.05): ``correction`` picks the adjustment
    (:data:`rescue_bench.report.analysis.CORRECTIONS`)."""
    key = CORRECTIONS[correction][0]
    families: dict[tuple[str, str, str], list[PairedTest]] = {}
    for t in tests:
        families.setdefault((t.task, t.metric, t.scenario), []).append(t)
    tables = []
    for task in HEADLINE:
        for metric in HEADLINE[task]:
            for scenario in SUMMARY_SCENARIOS:
                members = families.get((task, metric, scenario))
                if not members:
                    continue
                involved = [n for n in names if any(n in (t.a, t.b) for t in members)]
                cell: dict[tuple[str, str], str] = {}
                kind = metric_kind(task, metric)
                for t in members:
                    for a, b, sign in ((t.a, t.b, 1.0), (t.b, t.a, -1.0)):
                        diff = to_display(sign * t.diff, kind)
                        p = getattr(t, key)
                        star = "*" if p is not None and p < 0.05 else ""
                        d = f"{diff:+.4f}" if kind == "bert" else f"{diff:+.2f}"
                        cell[(a, b)] = f"{d}, p={fmt_p(p)}{star}"
                rows = [[a] + [("·" if a == b else cell.get((a, b), MISSING)) for b in involved] for a in involved]
                n = max(t.n for t in members)
                tables.append(
                    Table(
                        name=f"test_{task}_{metric}_{scenario}",
                        title=f"{TASK_LABELS[task]} {metric}, {SCENARIO_NAMES[scenario]} (up to {n} paired instances)",
                        header=[("", "row − column")] + [("", b) for b in involved],
                        rows=rows,
                    )
                )
    return tables


# ------------------------------------------------------------------------------------------------
# per label, invalid answers, usage
# ------------------------------------------------------------------------------------------------


def per_label_table(
    task: str,
    scenario: str,
    per_run: Sequence[tuple[str, dict[str, LabelAccuracy]]],
    *,
    paper: dict[str, float] | None = None,
    title: str | None = None,
    name: str | None = None,
) -> Table:
    """Rows: gold labels; columns: instances, then each run's top-1 accuracy on that label (and the
    paper's average over models where given)."""
    labels, n = per_label_union(per_run)
    header = [("", "Gold label"), ("", "n")] + [("", f"{run} acc.") for run, _ in per_run]
    if paper is not None:
        header.append(("", "paper avg. over models"))
    rows = []
    for label in labels:
        row = [label, str(n[label])] + [fmt(e.accuracy if (e := per.get(label)) else None, "pct") for _, per in per_run]
        if paper is not None:
            row.append(fmt(paper.get(label), "pct"))
        rows.append(row)
    return Table(
        name=name or f"per_label_{task}_{scenario}",
        title=title or f"{TASK_LABELS[task]} top-1 accuracy per gold label, {SCENARIO_NAMES[scenario]}",
        header=header,
        rows=rows,
        notes=["Accuracy in percent: the share of a label's instances whose top-1 answer is that label (its recall)."],
    )


def confusion_table(conf: Confusion, *, name: str, title: str) -> Table:
    header = [("", "gold \\ predicted")] + [("", c) for c in conf.columns]
    rows = [[label] + [str(v) for v in row] for label, row in zip(conf.labels, conf.matrix)]
    return Table(name=name, title=title, header=header, rows=rows)


def outcomes_table(per_run: Sequence[tuple[str, AnswerCounts]]) -> Table:
    """What became of every instance of each run (``run.json``'s counts): answered, usable or unusable
    by cause; refused as longer than the model's context window; without an answer."""
    header = [("", "Run"), ("", "Instances"), ("", "Answered"), ("", "Usable")]
    header += [("Unusable:", CAUSE_LABELS[c]) for c in PARSE_CAUSES]
    header += [("", "Refused as too long"), ("", "Without an answer")]
    rows = [
        [name, str(c.instances), str(c.answered), str(c.usable)]
        + [str(c.invalid.get(str(cause), 0)) for cause in PARSE_CAUSES]
        + [str(c.overflow), str(c.without_answer)]
        for name, c in per_run
    ]
    return Table(
        name="outcomes",
        title="What became of every instance",
        header=header,
        rows=rows,
        notes=["Each instance counts once: answered (usable, or unusable by cause) + refused as longer than the model's "
               "context window + without an answer (a call that failed) = instances. The same counts as run.json's "
               "counts and the Answers line of rescue eval."],
    )


def invalid_table(per_run: Sequence[tuple[str, dict[str, dict[str, TaskCounts]]]]) -> Table:
    """Invalid-answer rate (percent) per run and task, as ``both (couple / family)``."""
    tasks = [t for t in HEADLINE if any(t in c for _, c in per_run)]
    header = [("", "Run")] + [("", f"{TASK_LABELS[t]} invalid %") for t in tasks]
    rows = []
    for name, cnt in per_run:
        row = [name]
        for t in tasks:
            per = cnt.get(t)
            if not per:
                row.append(MISSING)
                continue
            row.append(
                f"{fmt(per['both'].invalid_rate, 'pct')} ({fmt(per['couple'].invalid_rate, 'pct')} / "
                f"{fmt(per['family'].invalid_rate, 'pct')})"
            )
        rows.append(row)
    return Table(
        name="invalid_rates",
        title="Invalid-answer rates",
        header=header,
        rows=rows,
        notes=["Percent of instances whose answer could not be parsed or named no valid label: both (couple / family). "
               "Invalid answers are scored as wrong, never dropped; their causes are in the next table."],
    )


def causes_table(per_run: Sequence[tuple[str, dict[str, dict[str, TaskCounts]]]]) -> Table:
    """Why answers were unusable, per run, task and scenario: the invalid answers by cause, valid answers
    that no judge scored, and the prompts trimmed to fit the model's context window."""
    header = [("", "Run"), ("", "Task"), ("", "Scenario"), ("", "n"), ("", "Invalid %")]
    header += [("Unusable:", CAUSE_LABELS[c]) for c in INVALID_CAUSES]
    header.append(("", "Trimmed prompts"))
    rows = []
    for name, cnt in per_run:
        for task in (t for t in HEADLINE if t in cnt):
            for scenario in SUMMARY_SCENARIOS:
                per = cnt[task][scenario]
                n = per.n
                rows.append(
                    [name, TASK_LABELS[task], SCENARIO_NAMES[scenario], str(n), fmt(per.invalid_rate, "pct")]
                    + [_share(per.invalid_causes.get(c, 0), n) for c in INVALID_CAUSES]
                    + [_share(per.trimmed, n)]
                )
    return Table(
        name="invalid_causes",
        title="Why answers were unusable",
        header=header,
        rows=rows,
        notes=[
            "Each cell: percent of the scenario's instances (their count). The causes up to out-of-range value add up to the "
            "invalid answers: no answer (an empty reply), context overflow (the prompt did not fit the model's context "
            "window), no JSON, an echoed template (the prompt's answer template sent back), JSON without the key, an "
            "unknown label, an out-of-range value. Judge failed counts valid "
            "answers that no judge scored (they get the floor score). Every unusable answer is scored as wrong.",
            "Trimmed prompts (rescue eval --on-overflow trim) fit the window once their oldest context rows were left "
            "out; they are answered and scored as usual.",
        ],
    )


def _share(count: int, n: int) -> str:
    """``12.50 (6)``: a count as the percent of ``n`` it is, and the count; ``0`` for none."""
    if not count:
        return "0"
    return f"{fmt(count / n if n else None, 'pct')} ({count})"


def usage_table(rows_: Sequence[UsageRow], refused: Sequence[tuple[str, int, int]] = ()) -> Table:
    """Tokens used per run and role beside the estimate; ``refused``: ``(run, prompts refused as too
    long, prompts)`` of the runs with such prompts, each said in a note (a refused prompt costs
    nothing, so their use falls short of an estimate that counts them)."""
    header = [
        ("", "Run"), ("", "Role (model)"), ("Used", "Input tokens"), ("Used", "Output tokens"), ("Used", "Total tokens"), ("Used", "Cost"),
        ("Estimated before the run", "Calls (at most)"), ("Estimated before the run", "Prompt tokens"),
        ("Estimated before the run", "Output tokens (at most)"),
    ]
    def prompt(r: UsageRow) -> str:
        low = r.estimated_prompt_tokens_unusable
        shown = fmt_int(r.estimated_prompt_tokens)
        return shown if low is None or low == r.estimated_prompt_tokens else f"{shown} ({fmt_int(low)} if no answer is usable)"

    rows = [
        [r.run, r.model, fmt_int(r.input_tokens), fmt_int(r.output_tokens), fmt_int(r.total_tokens), fmt_cost(r.total_cost),
         fmt_int(r.estimated_calls), prompt(r), fmt_int(r.max_output_tokens)]
        for r in rows_
    ]
    return Table(
        name="usage",
        title="Token usage and cost (from run.json), beside the estimate made before the run",
        header=header,
        rows=rows,
        notes=["Per role (model, judge, simulator, drafter) where run.json records it, else per model. Cost as reported by the "
               "provider through inspect_ai, where available. The estimate is rescue's --dry-run count: calls at most (re-asks, "
               "trimming and every chain step included), prompt tokens expected (every answer usable at the first ask; in "
               "brackets, if none is: nothing judged, a silent agent, every re-ask), as characters / 4, output tokens at most "
               "(calls x max_tokens); replies from the response cache use no tokens."]
        + [f"{run}: {n} of {total} prompts were refused as longer than the model's context window; a refused prompt costs no "
           "tokens, so the tokens used fall short of an estimate that counts them (rescue eval --context-window leaves them out of it)."
           for run, n, total in refused],
    )