"""The support agent in ``rescue report``: its metrics with intervals, and the two ablations.

An agent run folder (``rescue agent eval``) holds ``results/agent.jsonl``; its ``single/`` subfolder,
when present, holds the six single-task prompts on the same rows. This module computes (pure, from
the records, through :mod:`rescue_bench.agent.metrics` and :mod:`rescue_bench.agent.ablation`):

* per agent run and scenario, every chain metric with its percentile cluster-bootstrap interval over
  clips and the units it is over (``support``);
* the chain against the single tasks on the same units: both values and the difference with a
  paired cluster-bootstrap interval (:func:`rescue_bench.metrics.paired_delta_ci`);
* ``--state explicit`` against ``none``: agent runs on the same data, model, cue mode, context and
  neglect settings are paired by point id, with the same paired intervals.

Then lays them out as tables (Markdown, CSV, LaTeX through :mod:`rescue_bench.report.render`), two
figures, and the HTML section of ``report.html``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from rescue_bench.agent import AGENT_TASK, GROUP_TITLES, GROUPS, METRICS, chain_metrics
from rescue_bench.agent.ablation import Comparison, single_task_comparisons, state_comparisons, subset
from rescue_bench.agent.metrics import REFERENCE_METRICS, REFERENCE_POLICIES, reference_metrics
from rescue_bench.labels import POOLED, SUMMARY_SCENARIOS, in_scenario
from rescue_bench.metrics import bootstrap_ci, coverage_note, interval_available, level_text, paired_delta_ci
from rescue_bench.report import render as R
from rescue_bench.report import tables as T
from rescue_bench.report.runs import ReportInputError, Run, load_run
from rescue_bench.runinfo import AgentCalls, AgentRunInfo, RecordedSettings
from rescue_bench.summary import AgentSummary

SCENARIOS3 = SUMMARY_SCENARIOS
CLUSTER = "sample_id"
STEP_FIGURE = {
    "when_f1": "when\nF1",
    "whom_recall_at_1": "whom\nRecall@1",
    "how_recall_at_1": "how Recall@1\n(own target)",
    "how_given_gold_target": "how Recall@1\n(gold target)",
    "joint": "joint\nsuccess",
}
PAIR_KEYS = ("model", "data", "mode", "context", "recent", "neglect_margin", "neglect_min", "limit")
"""Settings two agent runs must share to be compared as the state ablation."""


def _clean(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


class ChainCI(BaseModel):
    """A chain metric over a run's decision points, with its interval over clips and its support."""

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    support: int | None = None
    """The units the value is over (points, clients, turns)."""
    clips: int | None = None


class ComparisonRow(BaseModel):
    """One metric of two runs (or a run and its single-task prompts) on the same units: both values
    and the difference ``a - b`` with its paired interval."""

    name: str
    label: str
    kind: str
    n: int
    n_b: int
    clips: int
    a: float | None = None
    b: float | None = None
    diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class AgentRunRow(BaseModel):
    """One agent run of the report."""

    name: str
    model: str
    path: str
    baseline: bool
    state: str | None = None
    judge: str | None = None
    points: int
    calls: dict[str, int | dict[str, int] | None] | None = None
    """``run.json``'s ``calls``, the keys the file has."""


class StateAblation(BaseModel):
    """Two agent runs that differ only in ``--state``, compared per scenario."""

    explicit: str
    none: str
    rows: dict[str, list[ComparisonRow]]


class AgentSection(BaseModel):
    """Every agent number of the report: per run its metrics with intervals, the reference policies
    on the same points, the single-task and state ablations, its clips; and the warnings."""

    runs: list[AgentRunRow] = Field(default_factory=list)
    metrics: dict[str, dict[str, dict[str, ChainCI]]] = Field(default_factory=dict)
    """``{run: {scenario: {metric: ChainCI}}}``."""
    references: dict[str, dict[str, dict[str, dict[str, float | None]]]] = Field(default_factory=dict)
    """``{run: {policy: {scenario: {metric: value}}}}``."""
    single: dict[str, dict[str, list[ComparisonRow]]] = Field(default_factory=dict)
    state: list[StateAblation] = Field(default_factory=list)
    clips: dict[str, dict[str, int]] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


def _calls(run: Run) -> AgentCalls | None:
    """``run.json``'s ``calls`` of an agent run (``None`` when not recorded)."""
    return run.info.calls if isinstance(run.info, AgentRunInfo) else None


def _calls_row(calls: AgentCalls | None) -> dict[str, int | dict[str, int] | None] | None:
    """``calls`` for ``report.json``: the keys ``run.json`` has."""
    return None if calls is None else calls.model_dump(exclude_unset=True)


def agent_runs(runs: Sequence[Run]) -> list[Run]:
    """The runs with chain records, non-baseline first (as the six-task tables order runs)."""
    chosen = [r for r in runs if r.records.get(AGENT_TASK)]
    return [r for r in chosen if not r.is_baseline] + [r for r in chosen if r.is_baseline]


@dataclass(frozen=True)
class AblationKey:
    """What pairs two agent runs as the state ablation: their ``--state``, and the settings of
    :data:`PAIR_KEYS` (model, data, limit and chain options) they must share."""

    state: str | None
    shared: tuple[object, ...]


def ablation_key(run: Run) -> AblationKey:
    """The run's ``--state`` (recorded option, else the records' ``state_mode``) and its :data:`PAIR_KEYS` settings."""
    settings = run.info.settings or RecordedSettings()
    options = settings.options.model_dump() if settings.options is not None else {}
    records = run.records[AGENT_TASK]
    flat = {"model": run.model, "data": settings.data, "limit": settings.limit, **options}
    flat.setdefault("state", records[0].get("state_mode") if records else None)
    return AblationKey(state=flat["state"], shared=tuple(flat.get(k) for k in PAIR_KEYS))


def headline(records: Sequence[dict[str, Any]], *, n_resamples: int, confidence: float, seed: int) -> dict[str, dict[str, ChainCI]]:
    """``{scenario: {metric: ChainCI}}`` over ``records``."""
    out: dict[str, dict[str, ChainCI]] = {}
    for scenario in SCENARIOS3:
        chosen = in_scenario(records, scenario)
        values = chain_metrics(chosen)
        n_clips = len({r[CLUSTER] for r in chosen})
        out[scenario] = {}
        for m in METRICS:
            value = values[m.name]
            low = high = None
            if value is not None and interval_available(n_clips):
                strata = "scenario" if scenario == POOLED else None  # the pooled number keeps each scenario's clips
                lo, hi = bootstrap_ci(chosen, m.statistic(), CLUSTER, n_resamples, confidence, seed, strata=strata)
                low, high = _clean(lo), _clean(hi)
            out[scenario][m.name] = ChainCI(value=value, ci_low=low, ci_high=high, support=values["support"][m.name], clips=n_clips)
    return out


def compare(comparisons: Sequence[Comparison], *, n_resamples: int, confidence: float, seed: int) -> dict[str, list[ComparisonRow]]:
    """Each comparison per scenario: both values, their difference a - b and its paired interval."""
    out: dict[str, list[ComparisonRow]] = {}
    for scenario in SCENARIOS3:
        rows = []
        for c in comparisons:
            part = subset(c, scenario)
            a, b = part.values()
            n_a, n_b = part.sizes()
            n_clips = len({u[CLUSTER] for u in part.a})
            row = ComparisonRow(name=c.name, label=c.label, kind=c.kind, n=n_a, n_b=n_b, clips=n_clips, a=a, b=b)
            if a is not None and b is not None and not interval_available(n_clips):
                row.diff = _clean(a - b)
            elif a is not None and b is not None:
                diff, lo, hi = paired_delta_ci(part.a, part.b, part.statistic, CLUSTER, n_resamples, confidence, seed, id_key="id")
                row.diff, row.ci_low, row.ci_high = _clean(diff), _clean(lo), _clean(hi)
            rows.append(row)
        out[scenario] = rows
    return out


def compute_agent(runs: Sequence[Run], *, n_resamples: int, seed: int, confidence: float) -> AgentSection:
    """Every agent number of the report (:class:`AgentSection`)."""
    chosen = agent_runs(runs)
    out = AgentSection()
    for run in chosen:
        records = run.records[AGENT_TASK]
        out.runs.append(
            AgentRunRow(name=run.name, model=run.model, path=str(run.path), baseline=run.is_baseline, state=ablation_key(run).state,
                        judge=run.info.judge, points=len(records), calls=_calls_row(_calls(run)))
        )
        out.clips[run.name] = {s: len({r[CLUSTER] for r in in_scenario(records, s)}) for s in SCENARIOS3}
        out.metrics[run.name] = headline(records, n_resamples=n_resamples, confidence=confidence, seed=seed)
        out.references[run.name] = {
            policy: {scenario: {m: values[m] for m in REFERENCE_METRICS} for scenario, values in per.items()}
            for policy, per in reference_metrics(records).items()
        }
        stored = run.summary.agent.get(POOLED) if isinstance(run.summary, AgentSummary) else None
        for m in METRICS:
            mine, theirs = out.metrics[run.name][POOLED][m.name].value, _clean(stored.metric(m.name) if stored else None)
            if (mine is None) != (theirs is None) or (mine is not None and theirs is not None and abs(mine - theirs) > 1e-9):
                out.warnings.append(f"{run.path / 'summary.json'} disagrees with its records (agent/both/{m.name}); the report uses the records")
        single_dir = run.path / "single"
        if single_dir.is_dir():
            try:
                single = load_run(single_dir)
            except ReportInputError as exc:
                out.warnings.append(f"single-task ablation skipped: {exc}")
            else:
                comparisons = single_task_comparisons(records, {t: single.records[t] for t in single.tasks})
                out.single[run.name] = compare(comparisons, n_resamples=n_resamples, confidence=confidence, seed=seed)
    for i, a in enumerate(chosen):
        for b in chosen[i + 1 :]:
            ka, kb = ablation_key(a), ablation_key(b)
            if {ka.state, kb.state} != {"explicit", "none"} or ka.shared != kb.shared:
                continue
            explicit, none = (a, b) if ka.state == "explicit" else (b, a)
            comparisons = state_comparisons(explicit.records[AGENT_TASK], none.records[AGENT_TASK])
            out.state.append(StateAblation(explicit=explicit.name, none=none.name, rows=compare(comparisons, n_resamples=n_resamples, confidence=confidence, seed=seed)))
    return out


# --------------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------------


def _signed(value: float | None, kind: str) -> str:
    shown = T.to_display(value, kind)
    if shown is None:
        return T.MISSING
    return f"{shown:+.4f}" if kind == "bert" else f"{shown:+.2f}"


def _delta(row: ComparisonRow) -> str:
    text = _signed(row.diff, row.kind)
    if row.ci_low is not None and row.ci_high is not None:
        text += f" [{_signed(row.ci_low, row.kind)}, {_signed(row.ci_high, row.kind)}]"
    elif row.diff is not None and not interval_available(row.clips):
        text += f" [{coverage_note(row.clips, 0.95)}]"
    return text


def _notes(confidence: float, n_resamples: int) -> list[str]:
    return [
        f"value [low, high]: {level_text(confidence)} percentile bootstrap interval, {n_resamples} resamples of clips (sample_id; Both "
        "resamples within each scenario); percent for rates, 1-5 for judge and intensity scores, [0, 1] for BERTScore; n = the units a number is over (both scenarios).",
        f"{T.MISSING} = not measured (e.g. no judge, no state step, no unit of that kind).",
        T.coverage_footnote(confidence),
    ]


def ci_tables(agent: AgentSection, *, confidence: float, n_resamples: int) -> list[T.Table]:
    """One table per agent run: every chain metric by group, with intervals per scenario."""
    tables = []
    for k, run in enumerate(agent.runs):
        name = run.name
        clips = agent.clips[name]
        header = [("", "Metric")] + [("", T.scenario_caption(s, clips[s], confidence=confidence)) for s in SCENARIOS3] + [("", "n")]
        rows: list[list[str]] = []
        groups: dict[int, str] = {}
        per = agent.metrics[name]
        for group in GROUPS:
            groups[len(rows)] = GROUP_TITLES[group]
            for m in (m for m in METRICS if m.group == group):
                rows.append([m.label] + [T.fmt_ci(per[s][m.name], m.kind) for s in SCENARIOS3] + [str(per[POOLED][m.name].support)])
        title = f"Support agent: {name} (state {run.state}, {run.points} decision points)"
        tables.append(T.Table(name=f"agent_ci_{k}", title=title, header=header, rows=rows, groups=groups, notes=_notes(confidence, n_resamples)))
    return tables


JOINT_CONSTANT = 0.5
"""Balanced joint success of the best constant timing policy: always silent scores exactly this, always
speaking at most this (with perfect target and strategy); an agent must beat it to show skill."""


def reference_tables(agent: AgentSection) -> list[T.Table]:
    """One table per agent run: the agent beside always silent, always the group and the real
    therapist on the same decision points (both scenarios), from the gold alone."""
    tables = []
    for k, run in enumerate(agent.runs):
        name = run.name
        header = [("", "Policy")] + [("", REFERENCE_HEADERS[m]) for m in REFERENCE_METRICS]
        mine = agent.metrics[name][POOLED]
        rows = [[f"agent: {name}"] + [T.fmt(mine[m].value, "pct") for m in REFERENCE_METRICS]]
        for policy, label in REFERENCE_POLICIES:
            values = agent.references[name][policy][POOLED]
            rows.append([label] + [T.fmt(values[m], "pct") for m in REFERENCE_METRICS])
        notes = [
            f"Reference rows use the gold of the same {run.points} decision points, no model call: always silent never "
            "takes the turn; always the group takes every turn toward the group label with no strategy; the real therapist "
            "does what the therapist did (its joint success is 100 by construction).",
            f"Balanced joint success is the mean of 'joint | therapist spoke' and 'joint | therapist silent'; a constant "
            f"timing policy scores at most {T.fmt(JOINT_CONSTANT, 'pct')} (always silent exactly), so that is its chance level.",
            "Neglect is measured at the same points for every row: a clearly most distressed client and a real therapist turn. "
            "Silence, another client, an unusable target or a whole-group address all leave that client out; "
            "'group address' is the share of those points addressed to the whole group.",
        ]
        tables.append(T.Table(name=f"agent_reference_{k}", title=f"Support agent beside reference policies: {name}, both scenarios",
                              header=header, rows=rows, notes=notes))
    return tables


REFERENCE_HEADERS = {
    "joint": f"joint, balanced (chance {100 * JOINT_CONSTANT:.2f})",
    "joint_yes": "joint | therapist spoke",
    "joint_no": "joint | therapist silent",
    "when_f1": "when F1",
    "when_accuracy": "when accuracy",
    "neglect_agent": "neglect",
    "group_address_agent": "group address",
}


def _n(row: ComparisonRow) -> str:
    n = str(row.n) if row.n == row.n_b else f"{row.n} / {row.n_b}"
    return f"{n} ({row.clips})"


def comparison_table(name: str, title: str, rows: list[ComparisonRow], a: str, b: str, notes: list[str]) -> T.Table:
    header = [("", "Metric"), ("", "n"), ("", a), ("", b), ("", f"{a} − {b} [CI]")]
    body = [[r.label, _n(r), T.fmt(r.a, r.kind), T.fmt(r.b, r.kind), _delta(r)] for r in rows]
    return T.Table(name=name, title=title, header=header, rows=body, notes=notes)


def ablation_tables(agent: AgentSection, *, confidence: float, n_resamples: int) -> list[T.Table]:
    """The chain-versus-single-task table of each run, and the state ablation of each pair (both scenarios)."""
    tables = []
    level = level_text(confidence)
    for k, run in enumerate(agent.runs):
        rows = agent.single.get(run.name)
        if rows is None:
            continue
        tables.append(
            comparison_table(
                f"agent_vs_single_{k}",
                f"Chain vs the six single-task prompts on the same rows: {run.name} (state {run.state}), both scenarios",
                rows[POOLED],
                "chain",
                "single task",
                [
                    f"n = units (clips) both were scored on; the difference has a {level} paired cluster-bootstrap interval "
                    f"({n_resamples} resamples of clips).",
                    "A chain that stays silent at a point misses whom and how there; SSP (and the chain's gold-target branch) "
                    "is told the gold target; 'composed' joint = ITP right, and at a 'yes' also STP and SSP top-1 right.",
                    "Single-task prompts use the chain's cue mode and context window, so the rows shown are the same.",
                ],
            )
        )
    for k, pair in enumerate(agent.state):
        tables.append(
            comparison_table(
                f"agent_state_ablation_{k}",
                f"State ablation: --state explicit ({pair.explicit}) vs none ({pair.none}), both scenarios",
                pair.rows[POOLED],
                "explicit",
                "none",
                [
                    f"Paired by decision point; {level} paired cluster-bootstrap interval of the difference ({n_resamples} resamples of clips).",
                    "n = units each number is over (explicit / none when they differ), clips in brackets.",
                ],
            )
        )
    return tables


# --------------------------------------------------------------------------------------------------
# figures and HTML
# --------------------------------------------------------------------------------------------------


def _bars(ax: Any, groups: Sequence[str], series: Sequence[tuple[str, list[ChainCI]]], kind: str) -> None:
    k = max(1, len(series))
    width = 0.8 / k
    x = np.arange(len(groups))
    for i, (name, entries) in enumerate(series):
        values = np.array([np.nan if e.value is None else T.to_display(e.value, kind) for e in entries], dtype=float)
        low = np.array([np.nan if e.ci_low is None else T.to_display(e.ci_low, kind) for e in entries], dtype=float)
        high = np.array([np.nan if e.ci_high is None else T.to_display(e.ci_high, kind) for e in entries], dtype=float)
        err = np.vstack([np.nan_to_num(values - low), np.nan_to_num(high - values)])
        ax.bar(x - 0.4 + width * (i + 0.5), np.nan_to_num(values), width=width, yerr=err, capsize=2, label=name,
               color=f"C{i % 10}", error_kw={"linewidth": 0.8})
    ax.set_xticks(x, groups, fontsize=7)
    ax.set_xlim(-0.6, len(groups) - 0.4)


def _legend(fig: Any, ax: Any, font: int) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(2, len(labels)), fontsize=font - 1, frameon=False)


def draw_agent_figures(agent: AgentSection, fig_dir: Path) -> list[tuple[Path, str]]:
    """Two figures: the step metrics of every agent run, and its neglect rate beside the therapist's."""
    from rescue_bench.report.figures import FONT, _figure, _save, _style

    if not agent.runs:
        return []
    out = []
    names = [r.name for r in agent.runs]
    legend = {r.name: f"{r.name}, state {r.state}" for r in agent.runs}
    fig, axes = _figure(3.2 + 0.15 * len(names))
    ax = axes[0, 0]
    _bars(ax, list(STEP_FIGURE.values()), [(legend[n], [agent.metrics[n][POOLED][m] for m in STEP_FIGURE]) for n in names], "pct")
    ax.set_ylabel("percent (both scenarios)")
    ax.set_ylim(0, 105)
    ax.set_title("Support agent: steps of the chain and joint success (error bars: bootstrap CI over clips)")
    ax.grid(axis="y", alpha=0.3)
    _legend(fig, ax, FONT)
    _style(ax)
    path = _save(fig, fig_dir / "agent_steps.png")
    out.append((path, "Support agent: when F1, whom and how Recall@1 (own and gold target) and joint success per run, "
                      "with cluster-bootstrap intervals."))
    fig, axes = _figure(3.0 + 0.15 * len(names))
    ax = axes[0, 0]
    series = [(legend[n], [agent.metrics[n][POOLED]["neglect_agent"], agent.metrics[n][POOLED]["neglect_therapist"]]) for n in names]
    _bars(ax, ["agent", "real therapist"], series, "pct")
    ax.set_ylabel("turns leaving that client out (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Neglect rate at points with a clearly most distressed client (error bars: bootstrap CI over clips)")
    ax.grid(axis="y", alpha=0.3)
    _legend(fig, ax, FONT)
    _style(ax)
    path = _save(fig, fig_dir / "agent_neglect.png")
    out.append((path, "Neglect rate of the agent and of the real therapist at the same points, with bootstrap intervals."))
    return out


def agent_section_html(agent: AgentSection, tables: Sequence[T.Table], figures: Sequence[tuple[Path, str]]) -> str:
    """The body of the report's agent section."""
    e = html.escape
    rows = [[r.name, r.model, r.state or T.MISSING, r.judge or T.MISSING, str(r.points), r.path] for r in agent.runs]
    overview = T.Table(name="agent_runs", title="Agent runs", header=[("", h) for h in ("Run", "Model", "State", "Judge", "Points", "Folder")], rows=rows)
    parts = [R.to_html(overview)]
    if not agent.state:
        parts.append("<p class=\"note\">No state ablation: pass two agent runs that differ only in --state.</p>")
    for w in agent.warnings:
        parts.append(f'<p class="warn">{e(w)}</p>')
    parts += [R.to_html(t) for t in tables]
    parts += [R.figure_html(p, c) for p, c in figures]
    return "\n".join(parts)


def write_agent(agent: AgentSection, tab_dir: Path, fig_dir: Path, *, confidence: float, n_resamples: int) -> tuple[list[str], list[str], str | None]:
    """Write the agent tables and figures; returns (table files, figure files, HTML section or None)."""
    if not agent.runs:
        return [], [], None
    tables = reference_tables(agent) + ci_tables(agent, confidence=confidence, n_resamples=n_resamples) + ablation_tables(
        agent, confidence=confidence, n_resamples=n_resamples
    )
    files = [str(p) for t in tables for p in R.write_table(t, tab_dir)]
    figures = draw_agent_figures(agent, fig_dir)
    return files, [str(p) for p, _ in figures], agent_section_html(agent, tables, figures)
