"""Assembling a report: compute everything (:func:`compute_report`), then write it (:func:`write_report`).

Output folder::

    DIR/report.json      every number of the report (see :func:`compute_report`)
    DIR/report.html      one self-contained page (figures as data URIs, inline CSS, no network)
    DIR/tables/          table5, table11_couple, table11_family, headline_ci, outcomes, invalid_rates, invalid_causes, usage
                         as .md/.csv/.tex; significance.md, per_label.md, confusion.md
    DIR/figures/         PNG figures (paper Figs. 3-9, per-label RPP accuracy)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from rescue_bench.labels import POOLED, RANKED_TASKS, SCENARIOS, patterns
from rescue_bench.metrics import level_text
from rescue_bench.records import ResultRow
from rescue_bench.reference import paper_reference, table5, table6, table11
from rescue_bench.report import analysis as A
from rescue_bench.report import figures as F
from rescue_bench.report import render as R
from rescue_bench.report import tables as T
from rescue_bench.report.agent import AgentSection
from rescue_bench.report.pairs import AgreementEntry
from rescue_bench.report.runs import Run, run_data_paths
from rescue_bench.report.sim import SimSection
from rescue_bench.scoring import SUMMARY_SCENARIOS, AnswerCounts, answer_counts

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95


class ReportSettings(BaseModel):
    """How the report's intervals and tests were made, and from which data."""

    resamples: int
    seed: int
    confidence: float
    ci: str = "percentile cluster bootstrap over clips (sample_id); the pooled scenario resamples within each scenario"
    test: str = (
        "paired permutation test swapping clips between runs (exact when 2**clips <= resamples), "
        "two-sided, on the instances both runs answered; Holm over all pairs per task, metric and scenario"
    )
    correction: str = "pairs"
    """The p-values the significance tables show: ``pairs``, ``holm`` or ``bh`` (see ``analysis.CORRECTIONS``)."""
    position_bins: str = "ten bins of row / n_rows: (0, 0.1], ..., (0.9, 1]"
    data: list[str] | str = "bundled demo"


class RunEntry(BaseModel):
    """One run of the report, as its tables name it."""

    name: str
    model: str
    path: str
    baseline: bool
    judge: str | None = None
    created: str | None = None
    mode: str | None = None
    bertscore_backbone: str | None = None
    tasks: list[str]


class PaperReference(BaseModel):
    """What the report shows of the paper beside the runs."""

    source: str
    itp_note: str
    table6_clips: dict[str, int]
    label_shares: Any = None
    per_label_rpp_accuracy_avg_over_models: Any = None

    @classmethod
    def published(cls) -> PaperReference:
        """The paper's values, from the bundled reference file."""
        ref = paper_reference()
        return cls(
            source=T.PAPER_SOURCE,
            itp_note=T.ITP_FOOTNOTE,
            table6_clips={s: max(v.get(f"{s}_samples", 0) for v in table6().values()) for s in SCENARIOS},
            label_shares=ref.get("label_shares"),
            per_label_rpp_accuracy_avg_over_models=ref.get("per_label_rpp_accuracy_avg_over_models"),
        )


class DataFigures(BaseModel):
    """The data figures' values: transitions and pattern positions per scenario, label distributions,
    where they come from and (from the clips) the clips per scenario."""

    transitions: dict[str, A.TransitionMatrix] = Field(default_factory=dict)
    label_distributions: dict[str, A.LabelDistribution] = Field(default_factory=dict)
    pattern_positions: dict[str, A.PositionDistribution] = Field(default_factory=dict)
    source: str | None = None
    clips: dict[str, int] | None = None

    @model_serializer(mode="wrap")
    def _without_absent_clips(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data: dict[str, object] = handler(self)
        if self.clips is None:
            data.pop("clips", None)
        return data


class Report(BaseModel):
    """Every number of a report; ``report.json`` is its JSON form (``model_dump``).

    Per-run fields are keyed by the run's unique name: ``models`` is
    ``{run: {task: {scenario: {metric: {"value", "ci_low", "ci_high"}}}}}``; ``counts``,
    ``majority_share``, ``per_label``, ``stp_roles``, ``confusion`` and ``position`` follow the same
    run -> task -> scenario nesting. ``data`` holds the data figures' values (transitions, label
    distributions, gold pattern positions), ``agent`` the support agent's section.
    """

    settings: ReportSettings
    runs: list[RunEntry] = Field(default_factory=list)
    clips: dict[str, dict[str, int]] = Field(default_factory=dict)
    clips_all: dict[str, int] = Field(default_factory=dict)
    models: dict[str, A.Headline] = Field(default_factory=dict)
    counts: dict[str, dict[str, dict[str, A.TaskCounts]]] = Field(default_factory=dict)
    outcomes: dict[str, AnswerCounts] = Field(default_factory=dict)
    """``{run: AnswerCounts}``: what became of every instance (``run.json``'s counts)."""
    majority_share: dict[str, dict[str, dict[str, A.MajorityShare]]] = Field(default_factory=dict)
    per_label: dict[str, dict[str, dict[str, dict[str, A.LabelAccuracy]]]] = Field(default_factory=dict)
    """``{run: {task: {scenario: {gold label: LabelAccuracy}}}}``."""
    stp_roles: dict[str, dict[str, dict[str, A.LabelAccuracy]]] = Field(default_factory=dict)
    """``{run: {scenario: {role: LabelAccuracy}}}``."""
    confusion: dict[str, dict[str, dict[str, A.Confusion]]] = Field(default_factory=dict)
    """``{run: {task or "stp_role": {scenario: Confusion}}}``."""
    position: dict[str, dict[str, A.PositionAccuracy]] = Field(default_factory=dict)
    """``{run: {scenario: PositionAccuracy}}`` of RPP."""
    usage: list[A.UsageRow] = Field(default_factory=list)
    tests: list[A.PairedTest] = Field(default_factory=list)
    data: DataFigures = Field(default_factory=DataFigures)
    paper: PaperReference = Field(default_factory=PaperReference.published)
    agent: AgentSection = Field(default_factory=AgentSection)
    sim: SimSection = Field(default_factory=SimSection)
    agreement: list[AgreementEntry] = Field(default_factory=list)
    """People's pairwise ratings of closed-loop episodes scored against the runs (``rescue agreement score --out``)."""
    warnings: list[str] = Field(default_factory=list)
    created: str = ""


# ------------------------------------------------------------------------------------------------
# data used by the runs
# ------------------------------------------------------------------------------------------------


def resolve_data(runs: Sequence[Run], data: Sequence[str | Path] | None) -> tuple[list[str] | None, list[str]]:
    """The data paths for the data figures, and warnings.

    ``--data`` wins; otherwise the first run's recorded ``settings.data`` (``None`` = the bundled demo).
    A recorded relative path is tried as given, then relative to the run folder. Returns ``(paths,
    warnings)``; ``paths`` is ``[]`` when the recorded data cannot be found (data figures skipped).
    """
    warnings: list[str] = []
    if data:
        return [str(p) for p in data], warnings
    recorded = [run_data_paths(r) for r in runs]
    first = recorded[0] if recorded else None
    if any(r != first for r in recorded[1:]):
        warnings.append("the runs were made on different data; data figures use the first run's data")
    if first is None:
        return None, warnings
    resolved = []
    for p in first:
        candidates = [Path(p), runs[0].path / p, runs[0].path.parent / p]
        found = next((c for c in candidates if c.exists()), None)
        if found is None:
            warnings.append(f"data recorded in {runs[0].path / 'run.json'} not found: {p}; pass --data to draw the data figures")
            return [], warnings
        resolved.append(str(found))
    return resolved, warnings


# ------------------------------------------------------------------------------------------------
# computation
# ------------------------------------------------------------------------------------------------


def _ordered(runs: Sequence[Run]) -> list[Run]:
    """Non-baseline runs first (in the given order), then the baselines."""
    return [r for r in runs if not r.is_baseline] + [r for r in runs if r.is_baseline]


def compute_report(
    runs: Sequence[Run],
    clips: Sequence[Any] | None,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    data_paths: Sequence[str] | None = None,
    correction: str = "pairs",
    agreements: Sequence[str | Path] = (),
) -> Report:
    """Every number of the report (no files written). ``correction`` picks the p-values the
    significance tables show (``pairs``, ``holm`` or ``bh``; report.json holds all three);
    ``agreements``: folders of ``rescue agreement score --out`` on closed-loop ratings, shown beside
    the runs they scored."""
    if correction not in A.CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; expected one of {', '.join(A.CORRECTIONS)}")
    every_run = list(runs)
    runs = _ordered([r for r in runs if r.tasks])  # agent-only runs are reported in their own section
    warnings: list[str] = []
    report = Report(
        settings=ReportSettings(
            resamples=n_resamples,
            seed=seed,
            confidence=confidence,
            correction=correction,
            test=(
                "paired permutation test swapping clips between runs (exact when 2**clips <= resamples), two-sided, "
                "on the instances both runs answered; p-values shown: "
                + A.CORRECTIONS[correction][1].replace(" {n}", "")
                + " (report.json holds p_holm, p_report_holm and p_report_bh)"
            ),
            data=list(data_paths) if data_paths is not None else "bundled demo",
        )
    )
    all_records: list[ResultRow] = []
    for run in runs:
        records: dict[str, A.Records] = dict(run.task_records())
        all_records.extend(r for t in records.values() for r in t)
        points = A.point_metrics(records)
        for problem in A.summary_mismatches(points, run.summary):
            warnings.append(f"{run.path / 'summary.json'} disagrees with its records ({problem}); the report uses the records")
        report.runs.append(
            RunEntry(
                name=run.name,
                model=run.model,
                path=str(run.path),
                baseline=run.is_baseline,
                judge=run.info.judge,
                created=run.info.created,
                mode=run.info.settings.mode if run.info.settings else None,
                bertscore_backbone=run.info.bertscore_backbone,
                tasks=run.tasks,
            )
        )
        report.clips[run.name] = A.clips_by_scenario(run.all_records())
        report.models[run.name] = A.headline_cis(records, n_resamples=n_resamples, confidence=confidence, seed=seed)
        report.counts[run.name] = A.counts(records)
        report.outcomes[run.name] = answer_counts(run.all_records())
        report.majority_share[run.name] = A.majority_shares(records)
        report.per_label[run.name] = {
            t: {s: A.per_label_accuracy(t, records[t], s) for s in SCENARIOS if A.subset(records[t], s)}
            for t in RANKED_TASKS
            if t in records
        }
        if "stp" in records:
            report.stp_roles[run.name] = {s: A.per_role_accuracy(records["stp"], s) for s in SUMMARY_SCENARIOS}
        conf: dict[str, dict[str, A.Confusion]] = {}
        for t in RANKED_TASKS:
            if t in records:
                conf[t] = {s: A.confusion(t, records[t], s) for s in SCENARIOS if A.subset(records[t], s)}
        if "stp" in records:
            conf["stp_role"] = {s: A.confusion("stp", records["stp"], s, by_role=True) for s in SUMMARY_SCENARIOS if A.subset(records["stp"], s)}
        report.confusion[run.name] = conf
        if "rpp" in records:
            report.position[run.name] = {s: A.position_accuracy(records["rpp"], s) for s in SUMMARY_SCENARIOS if A.subset(records["rpp"], s)}
    for run in every_run:  # the agent's and the closed loop's runs too
        report.usage.extend(A.usage_rows(run.name, run.info))
    report.clips_all = A.clips_by_scenario(all_records)
    report.tests = A.paired_tests(
        [(run.name, dict(run.task_records())) for run in runs], n_resamples=n_resamples, seed=seed
    )
    data = DataFigures()
    if clips is not None:
        data.source = "clips"
        data.clips = {s: sum(1 for c in clips if c.scenario == s) for s in SCENARIOS}
        for s in SCENARIOS:
            if data.clips[s]:
                data.transitions[s] = A.transition_matrix(A.pattern_sequences(clips, s), patterns(s))
                data.pattern_positions[s] = A.position_distribution(A.gold_positions_from_clips(clips, s), patterns(s))
        data.label_distributions = A.label_distributions(clips)
    else:
        source = next((r for r in runs if r.records.get("rpp")), None)
        if source is not None:
            data.source = f"RPP records of {source.name}"
            for s in SCENARIOS:
                items = A.gold_positions_from_records(source.task_records()["rpp"], s)
                if items:
                    data.pattern_positions[s] = A.position_distribution(items, patterns(s))
    report.data = data
    from rescue_bench.report.agent import compute_agent  # hook: the support agent's section

    report.agent = compute_agent(every_run, n_resamples=n_resamples, seed=seed, confidence=confidence)
    warnings.extend(report.agent.warnings)
    from rescue_bench.report.sim import compute_sim  # hook: the closed-loop section

    report.sim = compute_sim(every_run, n_resamples=n_resamples, seed=seed, confidence=confidence, correction=correction)
    warnings.extend(report.sim.warnings)
    from rescue_bench.report.pairs import report_entry  # hook: people's ratings of the closed loop

    report.agreement = [report_entry(folder, every_run) for folder in agreements]
    warnings.extend(w for entry in report.agreement for w in entry.warnings)
    report.warnings = warnings
    report.created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return report


# ------------------------------------------------------------------------------------------------
# tables
# ------------------------------------------------------------------------------------------------


def _points(report: Report, name: str) -> dict[str, dict[str, dict[str, float | None]]]:
    return {
        task: {s: {m: e.value for m, e in per_s.items()} for s, per_s in per.items()}
        for task, per in report.models[name].items()
    }


def build_tables(report: Report) -> dict[str, T.Table]:
    """The report's tables (pure), keyed by file stem."""
    runs = [(r.name, r.baseline, _points(report, r.name)) for r in report.runs]
    backbones = {r.name: r.bertscore_backbone for r in report.runs}
    clips = report.clips_all
    paper_clips = {**report.paper.table6_clips, POOLED: sum(report.paper.table6_clips.values())}
    out: dict[str, T.Table] = {}
    out["table5"] = T.paper_layout(
        runs,
        T.paper_rows_table5(table5(), table11()),
        POOLED,
        name="table5",
        backbones=backbones,
        title=f"Table 5 layout: both scenarios pooled {T.scenario_caption(POOLED, clips[POOLED], paper_clips[POOLED]).removeprefix('Both ')}",
    )
    for s in SCENARIOS:
        out[f"table11_{s}"] = T.paper_layout(
            runs,
            T.paper_rows_table11(table11(), s),
            s,
            name=f"table11_{s}",
            backbones=backbones,
            title=f"Table 11 layout: {T.scenario_caption(s, clips[s], paper_clips[s]).replace(' (', ' scenario (', 1)}",
        )
    out["headline_ci"] = T.ci_table(
        [(r.name, report.models[r.name], report.counts[r.name], report.majority_share[r.name]) for r in report.runs],
        clips,
        confidence=report.settings.confidence,
        n_resamples=report.settings.resamples,
    )
    out["outcomes"] = T.outcomes_table([(r.name, report.outcomes[r.name]) for r in report.runs])
    out["invalid_rates"] = T.invalid_table([(r.name, report.counts[r.name]) for r in report.runs])
    out["invalid_causes"] = T.causes_table([(r.name, report.counts[r.name]) for r in report.runs])
    if report.usage:
        refused = [(r.name, o.overflow, o.instances) for r in report.runs if (o := report.outcomes.get(r.name)) and o.overflow]
        out["usage"] = T.usage_table(report.usage, refused)
    return out


def per_label_tables(report: Report) -> list[T.Table]:
    names = [r.name for r in report.runs]
    # the paper publishes per-label accuracy (averaged over its models) for RPP only
    paper = {"rpp": report.paper.per_label_rpp_accuracy_avg_over_models or {}}
    tables = []
    s: str  # a scenario, then a summary scenario (both loops below)
    for task in RANKED_TASKS:
        for s in SCENARIOS:
            per_run = [(n, report.per_label[n][task][s]) for n in names if s in (report.per_label[n].get(task) or {})]
            if per_run:
                tables.append(T.per_label_table(task, s, per_run, paper=paper[task].get(s) if task in paper else None))
    role_runs = [(n, report.stp_roles[n]) for n in names if n in report.stp_roles]
    for s in SUMMARY_SCENARIOS:
        per_run = [(n, per[s]) for n, per in role_runs if per.get(s)]
        if per_run:
            tables.append(
                T.per_label_table(
                    "stp", s, per_run, name=f"per_role_stp_{s}",
                    title=f"STP top-1 accuracy by target role (group label vs individual), {T.SCENARIO_NAMES[s]}",
                )
            )
    return tables


def confusion_tables(report: Report) -> list[T.Table]:
    tables = []
    for k, r in enumerate(report.runs):
        for task, per in report.confusion[r.name].items():
            for s, conf in per.items():
                what = "STP by target role" if task == "stp_role" else T.TASK_LABELS[task]
                tables.append(
                    T.confusion_table(
                        conf,
                        name=f"confusion_{k}_{task}_{s}",
                        title=f"{r.name}: {what} confusion (gold rows, top-1 columns), {T.SCENARIO_NAMES[s]}",
                    )
                )
    return tables


# ------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------


def draw_figures(report: Report, fig_dir: Path) -> list[tuple[Path, str]]:
    """All figures; returns ``(path, caption)`` pairs in display order."""
    out: list[tuple[Path, str]] = []
    data = report.data
    names = [r.name for r in report.runs]
    for s, matrix in data.transitions.items():
        path = F.transition_heatmap(matrix, s, fig_dir / f"fig3_transitions_{s}.png", n_clips=(data.clips or {})[s])
        out.append((path, f"Fig. 3 ({s}): row-normalised transition matrix of consecutive relation-pattern labels "
                          "(therapist rows' relation_cycle_state within a clip)."))
    series = [(n, report.position[n]) for n in names if n in report.position]
    if series:
        scen = [s for s in SUMMARY_SCENARIOS if any(s in per for _, per in series)]
        path = F.position_accuracy_plot(series, scen, fig_dir / "fig4_rpp_accuracy_by_position.png")
        out.append((path, "Fig. 4: RPP top-1 accuracy over ten relative-position bins (row / rows), ±1 binomial standard error."))
    for s, dist in data.pattern_positions.items():
        path = F.position_distribution_plot(dist, s, fig_dir / f"fig5_pattern_by_position_{s}.png")
        out.append((path, f"Fig. 5 ({s}): gold relation-pattern distribution per relative-position bin ({data.source})."))
    dists = data.label_distributions
    if dists:
        specs = [
            ("relation_patterns", "fig6_relation_patterns.png", "Relation patterns of therapist rows", "therapist rows", "Fig. 6"),
            ("strategies", "fig7_strategies.png", "Support strategies (first support_strategy item)", "therapist rows", "Fig. 7"),
            ("target_kinds", "fig8_targets.png", "Support targets by role (individual vs group label)", "therapist rows", "Fig. 8"),
            ("utterance_types", "fig9_utterance_types.png", "Utterance types of client rows", "client rows", "Fig. 9"),
            ("emotion_intensities", "fig9b_emotion_intensity.png", "Emotion intensities (internal_emotion, 0-10)", "emotion annotations", "Fig. 9b"),
        ]
        for key, file, title, xlabel, fig in specs:
            per: dict[str, dict[str, int]] = {s: getattr(dists[s], key) for s in SCENARIOS if dists[s].samples}
            if per:
                path = F.distribution_plot(per, title, xlabel, fig_dir / file)
                out.append((path, f"{fig}: {title.lower()} per scenario."))
    # the paper publishes per-label accuracy (averaged over its models) for RPP only
    paper = {"rpp": report.paper.per_label_rpp_accuracy_avg_over_models or {}}
    for s in SCENARIOS:
        per_run = [(n, report.per_label[n]["rpp"][s]) for n in names if s in (report.per_label[n].get("rpp") or {})]
        if per_run:
            path = F.per_label_accuracy_plot(per_run, s, fig_dir / f"rpp_per_label_{s}.png", paper=paper.get(s))
            out.append((path, f"RPP top-1 accuracy per gold relation pattern ({s}), a bar per run; diamonds: the paper's average over its ten models."))
    return out


# ------------------------------------------------------------------------------------------------
# writing
# ------------------------------------------------------------------------------------------------


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return _json_safe(obj.item())
    return obj


def _collection(title: str, tables: Sequence[T.Table]) -> str:
    return f"# {title}\n\n" + "\n".join(R.to_markdown(t) for t in tables)


def _overview_html(report: Report) -> str:
    import html

    e = html.escape
    rows = []
    for r in report.runs:
        c = report.clips[r.name]
        rows.append(
            [r.name, r.model, r.path, r.judge or "–", r.mode or "–",
             ", ".join(r.tasks), f"{c['couple']} / {c['family']} / {c[POOLED]}"]
        )
    table = T.Table(
        name="runs", title="Runs",
        header=[("", h) for h in ("Run", "Model", "Folder", "Judge", "Cue mode", "Tasks", "Clips couple / family / both")],
        rows=rows,
    )
    s = report.settings
    parts = [R.to_html(table)]
    parts.append(
        f"<p>Confidence intervals: {e(s.ci)}, {s.resamples} resamples, seed {s.seed}, "
        f"{level_text(s.confidence)} level. Significance: {e(s.test)}. Data for the data figures: "
        f"<code>{e(str(s.data))}</code>.</p>"
    )
    parts.append(f"<p class=\"note\">{e(T.ITP_FOOTNOTE)}</p>")
    for w in report.warnings:
        parts.append(f'<p class="warn">{e(w)}</p>')
    return "\n".join(parts)


def write_report(report: Report, out_dir: str | Path) -> dict[str, list[str]]:
    """Write tables, figures, ``report.json`` and ``report.html`` into ``out_dir``; returns the files."""
    out = Path(out_dir)
    tab_dir, fig_dir = out / "tables", out / "figures"
    tab_dir.mkdir(parents=True, exist_ok=True)
    fig_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, list[str]] = {"tables": [], "figures": []}

    tables = build_tables(report)
    for table in tables.values():
        files["tables"] += [str(p) for p in R.write_table(table, tab_dir)]
    names = [r.name for r in report.runs]
    correction = report.settings.correction
    matrices = T.test_matrices(report.tests, names, correction)
    n_tests = sum(t.p_value is not None for t in report.tests)
    how = A.CORRECTIONS[correction][1].format(n=n_tests)
    labels = per_label_tables(report)
    confusions = confusion_tables(report)
    extra = {
        "significance.md": _collection(
            f"Paired significance (p-values adjusted: {how})",
            matrices,
        ) if matrices else "# Paired significance\n\nNo two runs share instances.\n",
        "per_label.md": _collection("Per-label accuracy", labels),
        "confusion.md": _collection("Confusion matrices", confusions),
    }
    for file, text in extra.items():
        (tab_dir / file).write_text(text, encoding="utf-8")
        files["tables"].append(str(tab_dir / file))

    figs = draw_figures(report, fig_dir)
    files["figures"] = [str(p) for p, _ in figs]
    from rescue_bench.report.agent import write_agent  # hook: the support agent's section

    agent_tables, agent_figures, agent_html = write_agent(
        report.agent, tab_dir, fig_dir, confidence=report.settings.confidence, n_resamples=report.settings.resamples
    )
    files["tables"] += agent_tables
    files["figures"] += agent_figures
    from rescue_bench.report.sim import write_sim  # hook: the closed-loop section

    sim_tables, sim_figures, sim_html = write_sim(report.sim, tab_dir, fig_dir, confidence=report.settings.confidence, n_resamples=report.settings.resamples)
    files["tables"] += sim_tables
    files["figures"] += sim_figures
    from rescue_bench.report.pairs import report_tables, section_html

    for table in report_tables(report.agreement):
        files["tables"] += [str(p) for p in R.write_table(table, tab_dir)]

    dumped = dict(report.model_dump(mode="python"), files=files)
    (out / "report.json").write_text(json.dumps(_json_safe(dumped), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    sections: list[tuple[str, str, str]] = [("overview", "Overview", _overview_html(report))]
    sections.append(("tables", "Paper tables", "\n".join(R.to_html(tables[k]) for k in ("table5", "table11_couple", "table11_family"))))
    sections.append(("ci", "Confidence intervals", R.to_html(tables["headline_ci"])))
    if matrices:
        both = [m for m in matrices if m.name.endswith("_both")]
        rest = [m for m in matrices if not m.name.endswith("_both")]
        body = "<p>Cell (row, column): difference row − column on the paper's scale, and its Holm-adjusted p-value (* &lt; 0.05).</p>"
        body += "\n".join(R.to_html(m, heading="h4") for m in both)
        if rest:
            body += "<details><summary>Per scenario (couple, family)</summary>" + "\n".join(R.to_html(m, heading="h4") for m in rest) + "</details>"
    else:
        body = "<p>No two runs share instances, so no paired test was run.</p>"
    sections.append(("significance", "Paired significance", body))
    body = "\n".join(R.to_html(t, heading="h4") for t in labels)
    if confusions:
        body += "<details><summary>Confusion matrices</summary>" + "\n".join(R.to_html(t, heading="h4") for t in confusions) + "</details>"
    sections.append(("labels", "Per label", body))
    usage = R.to_html(tables["usage"]) if "usage" in tables else "<p>No token usage recorded in run.json.</p>"
    answers = "\n".join(R.to_html(tables[k]) for k in ("outcomes", "invalid_rates", "invalid_causes"))
    sections.append(("answers", "Answers, invalid answers by cause, and usage", answers + "\n" + usage))
    sections.append(("figures", "Figures", "\n".join(R.figure_html(p, c) for p, c in figs) or "<p>No figures.</p>"))
    if agent_html is not None:
        sections.append(("agent", "Support agent (chain)", agent_html))
    if sim_html is not None:
        sections.append(("sim", "Closed-loop evaluation", sim_html))
    if report.agreement:
        body = "\n".join(section_html(entry.result, entry.names, entry.warnings) for entry in report.agreement)
        sections.append(("people", "People and the closed loop", body))
    html_text = R.html_document("RESCUE-Bench report", sections)
    (out / "report.html").write_text(html_text, encoding="utf-8")
    files["report"] = [str(out / "report.json"), str(out / "report.html")]
    return files
