"""Closed-loop runs in ``rescue report``: the objective and its metrics per run with intervals, its
floors and ceiling, the paired comparisons between runs, the simulators' checks and fidelity, and
trajectory figures.

A ``rescue sim eval`` folder holds ``results/sim.jsonl`` (one episode per line), a ``rescue sim
fidelity`` folder ``results/fidelity.jsonl`` (and, for an offline simulator, the simulator's checks in
``summary.json``). Everything else is recomputed from the records (:mod:`rescue_bench.sim.objective`,
:mod:`rescue_bench.sim.fidelity`):

* per run and scenario every metric of :data:`rescue_bench.sim.METRICS`, the headline first (J
  between the run's best constant policy, 0, and the optimum, 1), with the floor and ceiling rows;
  intervals are percentile cluster-bootstrap intervals over clips (the pooled one within each
  scenario), none below three clips, with the coverage measured at that many clips;
* what each offline simulator reads in the words and its effects on held-out clips;
* the paired comparisons: for every two runs on the same episodes against the same simulator (same
  gamma, lambda and horizon), J of one minus the other with the paired permutation test over clips,
  corrected for the number of comparisons (``--correction``);
* per simulator its checks and its fidelity against floors; a warning when a check fails, when a
  measure does not beat a floor, or when a simulator has no fidelity run;
* figures: the mean of the max distress after each step per run, and per run the trajectory of
  its first episode (each client's distress, the pattern underneath).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.labels import POOLED, SUMMARY_SCENARIOS
from rescue_bench.metrics import benjamini_hochberg, holm
from rescue_bench.report import render as R
from rescue_bench.report import tables as T
from rescue_bench.report.runs import Run
from rescue_bench.runinfo import FidelityRunInfo, SimRunInfo
from rescue_bench.sim import METRICS, SIM_TASK, paired_comparison, summarize
from rescue_bench.sim.fidelity import FIDELITY_METRICS, FIDELITY_TASK, summarize_fidelity
from rescue_bench.sim.objective import small_room_warning
from rescue_bench.sim.record import EpisodeRecord
from rescue_bench.sim.sensitivity import compare_variants
from rescue_bench.summary import FidelityEntry, FidelitySummary, Interval, OrderHolds, SimEntry, SimulatorCheck

SimulatorModel = dict[str, Any]
"""What an episode record says of its offline simulator's model (``simulator_model``: the closed
loop's own record format, JSON as written)."""


class SimRunRow(BaseModel):
    """One closed-loop run of the report."""

    model_config = ConfigDict(serialize_by_alias=True)

    name: str
    agent: str
    simulator: str | None = None
    gamma: float | None = None
    lam: float | None = Field(default=None, alias="lambda")
    horizon: int | None = None
    episodes: int
    path: str
    simulator_model: SimulatorModel | None = None
    calls: dict[str, int | float | None] | None = None
    """``run.json``'s ``calls``, the keys the file has."""


class PairedCheck(BaseModel):
    """J of run ``a`` minus run ``b`` on the episodes both scored, with its paired test."""

    a: str
    b: str
    simulator: str | None = None
    episodes: int = 0
    clips: int = 0
    delta: float | None = None
    p_value: float | None = None
    a_wins: int = 0
    b_wins: int = 0
    p_holm: float | None = None
    p_bh: float | None = None
    order: OrderHolds | None = None
    """In how many variants of the simulator's assumptions a's mean J lies above b's (the sensitivity)."""


class FidelityRunRow(BaseModel):
    """One fidelity run of the report."""

    name: str
    simulator: str | None = None
    points: int
    path: str
    simulator_model: SimulatorModel | None = None


class Trajectory(BaseModel):
    """One episode step by step: each client's distress, the pattern, whom the agent addressed."""

    episode: str
    distress: dict[str, list[float]]
    patterns: list[str]
    addressed: list[str | None]


class RunTrajectories(BaseModel):
    """A run's mean max-distress curve and its first episode."""

    mean_max_distress: list[float]
    first: Trajectory | None = None


class Coverage(BaseModel):
    """A simulator's fidelity runs, and those among them that hold its checks."""

    simulator: str | None
    fidelity: list[str]
    checks: list[str]


class SimSection(BaseModel):
    """Every closed-loop number of the report."""

    runs: list[SimRunRow] = Field(default_factory=list)
    metrics: dict[str, dict[str, SimEntry]] = Field(default_factory=dict)
    """``{run: {scenario: entry}}`` (:func:`rescue_bench.sim.summarize`, recomputed from the records)."""
    simulators: dict[str, SimulatorModel] = Field(default_factory=dict)
    checks: list[PairedCheck] = Field(default_factory=list)
    fidelity: dict[str, dict[str, FidelityEntry]] = Field(default_factory=dict)
    fidelity_runs: list[FidelityRunRow] = Field(default_factory=list)
    simulator_checks: dict[str, list[SimulatorCheck]] = Field(default_factory=dict)
    trajectories: dict[str, RunTrajectories] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    correction: str = "pairs"
    coverage: list[Coverage] = Field(default_factory=list)

SCENARIOS3 = SUMMARY_SCENARIOS
MAX_TRAJECTORIES = 6


def _sim_info(run: Run) -> SimRunInfo:
    """The run's ``run.json`` as a closed-loop run's (empty when it records another kind)."""
    return run.info if isinstance(run.info, SimRunInfo) else SimRunInfo()


def _simulator(run: Run) -> str | None:
    info = run.info
    return info.simulator if isinstance(info, SimRunInfo | FidelityRunInfo) else None


def _key(run: Run) -> tuple[Any, ...]:
    """What makes two closed-loop runs comparable: the simulator and the objective (gamma, lambda, horizon)."""
    info = _sim_info(run)
    return (info.simulator, info.gamma, info.lam, info.horizon)


def _simulator_model(run: Run, task: str) -> SimulatorModel | None:
    """What the run's records of ``task`` say of their simulator (an offline simulator's model and readings)."""
    found = next((r.get("simulator_model") for r in run.records[task] if r.get("simulator_model")), None)
    return found


def _episodes(run: Run) -> list[EpisodeRecord]:
    """The run's episode records (``results/sim.jsonl``, as ``rescue sim eval`` writes them)."""
    return cast(list[EpisodeRecord], run.records[SIM_TASK])


def compute_sim(
    runs: Sequence[Run], *, n_resamples: int, seed: int, confidence: float, correction: str = "pairs"
) -> SimSection:
    """Every closed-loop number of the report (:class:`SimSection`)."""
    sims = [r for r in runs if r.records.get(SIM_TASK)]
    fids = [r for r in runs if r.records.get(FIDELITY_TASK)]
    out = SimSection(correction=correction)
    for run in sims:
        records = run.records[SIM_TASK]
        info = _sim_info(run)
        model = _simulator_model(run, SIM_TASK)
        out.runs.append(
            SimRunRow.model_validate(
                {"name": run.name, "agent": run.model, "simulator": info.simulator, "gamma": info.gamma, "lambda": info.lam,
                 "horizon": info.horizon, "episodes": len(records), "path": str(run.path), "simulator_model": model,
                 "calls": None if info.calls is None else info.calls.model_dump(exclude_unset=True)}
            )
        )
        if model is not None and model.get("sha256"):
            out.simulators.setdefault(model["sha256"], model)
        out.metrics[run.name] = summarize(records, n_resamples=n_resamples, confidence=confidence, seed=seed)
        rooms = {scenario: e.metric("room").value for scenario, e in out.metrics[run.name].items() if e.episodes}
        if warning := small_room_warning(rooms, run.name):
            out.warnings.append(warning)
        out.trajectories[run.name] = RunTrajectories(
            mean_max_distress=_mean_curve(_episodes(run)), first=_trajectory(_episodes(run)[0]) if records else None
        )
    for i, a in enumerate(sims):
        for b in sims[i + 1 :]:
            if _key(a) != _key(b):
                continue
            ids_a = {r["id"] for r in a.records[SIM_TASK]}
            ids_b = {r["id"] for r in b.records[SIM_TASK]}
            if ids_a != ids_b:
                out.warnings.append(f"{a.name} and {b.name}: same simulator and objective but different episodes; not compared")
                continue
            check = paired_comparison(a.records[SIM_TASK], b.records[SIM_TASK], n_resamples=max(n_resamples, 1000), seed=seed)
            out.checks.append(PairedCheck.model_validate(
                {"a": a.name, "b": b.name, "simulator": _simulator(a), **check, "order": compare_variants(_episodes(a), _episodes(b))}
            ))
            if (o := out.checks[-1].order) is not None and not o.holds:
                out.warnings.append(
                    f"{a.name} vs {b.name}: the order does not hold across the simulator's assumptions (a above b in {o.above} of {o.variants} variants)"
                )
    _correct(out.checks)
    for run in fids:
        records = run.records[FIDELITY_TASK]
        model = _simulator_model(run, FIDELITY_TASK)
        out.fidelity_runs.append(FidelityRunRow(name=run.name, simulator=_simulator(run), points=len(records), path=str(run.path),
                                                simulator_model=model))
        if model is not None and model.get("sha256") and not model.get("refitted_without"):  # a refitted fold is its model's
            out.simulators.setdefault(model["sha256"], model)
        out.fidelity[run.name] = summarize_fidelity(records, n_resamples=n_resamples, seed=seed)
        checks = run.summary.checks if isinstance(run.summary, FidelitySummary) else []
        if checks:
            out.simulator_checks[run.name] = list(checks)
            for c in checks:
                if not c.passed:
                    out.warnings.append(f"simulator {_simulator(run)} fails the check '{c.check}': {c.why}")
        for key, floors in out.fidelity[run.name][POOLED].beaten_by.items():
            if floors:
                label = next(lab for k, _, lab in FIDELITY_METRICS if k == key)
                out.warnings.append(f"simulator {_simulator(run)} does not beat {', '.join(floors)} on '{label.strip()}' ({run.name})")
    out.coverage = coverage(out)
    for cov in out.coverage:
        if not cov.fidelity:
            out.warnings.append(
                f"simulator {cov.simulator}: no fidelity run given; run `rescue sim fidelity --simulator {cov.simulator}` and pass its folder"
            )
        elif not cov.checks:
            out.warnings.append(
                f"simulator {cov.simulator}: no checks (words, label, order of names) among its fidelity runs; they are run "
                "for an offline simulator only, so this simulator ranks agents unchecked"
            )
    return out


def _correct(checks: list[PairedCheck]) -> None:
    """Set ``p_holm`` and ``p_bh`` of every paired comparison: adjusted over all of the report's
    closed-loop comparisons (one family)."""
    defined = {i: c.p_value for i, c in enumerate(checks) if c.p_value is not None}
    by_holm, by_bh = holm(defined), benjamini_hochberg(defined)
    for i, c in enumerate(checks):
        c.p_holm = float(by_holm[i]) if i in by_holm else None
        c.p_bh = float(by_bh[i]) if i in by_bh else None


def coverage(sim: SimSection) -> list[Coverage]:
    """For every simulator of the closed-loop runs: its fidelity runs and the fidelity runs that hold
    its checks (the two ways the report says whether its numbers can be trusted)."""
    simulators = list(dict.fromkeys(r.simulator for r in sim.runs))
    return [
        Coverage(
            simulator=name,
            fidelity=[f.name for f in sim.fidelity_runs if f.simulator == name],
            checks=[f.name for f in sim.fidelity_runs if f.simulator == name and f.name in sim.simulator_checks],
        )
        for name in simulators
    ]


def _mean_curve(records: Sequence[EpisodeRecord]) -> list[float]:
    """Mean over episodes of the max distress at the start and after each step."""
    horizon = max((len(r["steps"]) for r in records), default=0)
    curve = [sum(r["metrics"]["initial_max_distress"] for r in records) / max(len(records), 1)]
    for t in range(horizon):
        values = [d for r in records if len(r["steps"]) > t and (d := r["steps"][t].get("max_distress")) is not None]
        curve.append(sum(values) / len(values) if values else math.nan)
    return curve


def _trajectory(record: EpisodeRecord) -> Trajectory:
    from rescue_bench.sim.state import HiddenState, distresses

    steps = [s for s in record["steps"] if s.get("state") is not None]  # a step without a state is left out
    states = [HiddenState.model_validate(record["initial_state"])] + [HiddenState.model_validate(s["state"]) for s in steps]
    addressed: list[str | None] = [None]
    addressed += [s["action"]["whom"] if s["action"]["intervened"] else None for s in steps]
    return Trajectory(
        episode=record["id"],
        distress={c: [distresses(s)[c] for s in states] for c in record["clients"]},
        patterns=[s.pattern for s in states],
        addressed=addressed,
    )


# --------------------------------------------------------------------------------------------------
# tables and figures
# --------------------------------------------------------------------------------------------------


def _cell(v: Interval, kind: str) -> str:
    if v.value is None:
        return T.MISSING
    scale = 100.0 if kind == "pct" else 1.0
    text = f"{v.value * scale:.2f}"
    if v.ci_low is not None and v.ci_high is not None:
        text += f" [{v.ci_low * scale:.2f}, {v.ci_high * scale:.2f}]"
    return text


def _holds(entry: SimEntry) -> str:
    """``k / K`` variants in which the agent is above the run's best constant policy (and how often at
    it); marked when the order is not the same in every variant."""
    o = entry.sensitivity.above_floor if entry.sensitivity else None
    if o is None:
        return T.MISSING
    tied = o.variants - o.above - o.below
    return f"{o.above} / {o.variants}" + (f", at it in {tied}" if tied else "") + ("" if o.holds else " (order does not hold)")


def _num(value: float | None, fmt: str = "{:.3f}") -> str:
    return T.MISSING if value is None else fmt.format(value)


P_KEY = {"pairs": ("p_holm", "Holm over the report's closed-loop comparisons"), "holm": ("p_holm", "Holm over the report's closed-loop comparisons"),
         "bh": ("p_bh", "Benjamini-Hochberg over the report's closed-loop comparisons")}
"""``--correction``: the adjusted p-value the comparison table shows, and how it was adjusted."""


def sim_tables(sim: SimSection, *, confidence: float, n_resamples: int) -> list[T.Table]:
    notes = [
        f"value [low, high]: {confidence:.0%} percentile cluster-bootstrap interval over clips ({n_resamples} resamples; both scenarios: "
        "within each scenario); no interval from fewer than 3 clips; the row 'interval' gives the coverage measured at that many clips "
        "(bench/bootstrap_coverage.py --kind score). Shares in percent.",
        "Headline: normalised J = sum over episodes of (J - floor) / sum of (optimum - floor), floor = J of the run's best constant policy "
        "(a targeting rule and a fixed strategy that never look at the session: no such policy scores above 0). Regret = optimum - J.",
        f"Floors and ceiling need an offline simulator ({T.MISSING} under a model simulator: each constant policy would be a run of calls). "
        "Episodes that no action can change, and episodes with a step without a usable answer, are left out of J, its floors and ceiling.",
    ]
    out = []
    names = [r.name for r in sim.runs]
    for scenario in SCENARIOS3:
        per = [sim.metrics[n][scenario] for n in names]
        rows = [[m.label, *(_cell(e.metric(m.name), m.kind) for e in per)] for m in METRICS]
        rows.insert(3, ["floor policy (the run's best constant policy)", *(e.floor_policy or T.MISSING for e in per)])
        rows.append(["episodes / clips", *(f"{e.episodes} / {e.clips}" for e in per)])
        rows.append(["interval", *(e.interval or T.MISSING for e in per)])
        rows.append(["sensitivity: above the floor in k of K variants of the assumptions", *(_holds(e) for e in per)])
        out.append(T.Table(name=f"sim_{scenario}", title=f"Closed-loop evaluation, {scenario}", header=[("", "metric"), *(("", n) for n in names)],
                           rows=rows, notes=notes))
    if sim.checks:
        key, how = P_KEY[sim.correction]
        rows = [[c.a, c.b, c.simulator or T.MISSING, str(c.episodes), _num(c.delta), _num(c.p_value, "{:.4f}"),
                 _num(c.p_holm if key == "p_holm" else c.p_bh, "{:.4f}"), f"{c.a_wins} / {c.b_wins}",
                 T.MISSING if c.order is None else f"{c.order.above} / {c.order.variants}" + ("" if c.order.holds else " (does not hold)")]
                for c in sim.checks]
        out.append(T.Table(name="sim_comparisons", title="Paired comparisons: J of run a minus run b on the episodes both scored",
                           header=[("", h) for h in ("run a", "run b", "simulator", "episodes", "delta J", "p", f"p ({how})", "episodes a / b better",
                                                     "a above b in k of K variants")],
                           rows=rows, notes=["Paired permutation test swapping clips (exact when 2**clips <= resamples), two-sided.",
                                             "Variants: the fitted simulator's assumptions moved (the words' effects x0, x0.5, x2; each learned "
                                             "intensity weight at either end of its interval); each run's recorded moves replayed under each. "
                                             "An order that is not the same in every variant is marked: it rests on the assumptions."]))
    out += _simulator_tables(sim)
    fnames = [r.name for r in sim.fidelity_runs]
    if fnames:
        rows = []
        for key, kind, label in FIDELITY_METRICS:
            rows.append([label, *(_cell(sim.fidelity[n][POOLED].metric(key), "pct" if kind == "pct" else "num") for n in fnames)])
        rows.append(["points", *(str(sim.fidelity[n][POOLED].points) for n in fnames)])
        rows.append(["does not beat", *("; ".join(f"{k}: {', '.join(v)}" for k, v in sim.fidelity[n][POOLED].beaten_by.items() if v) or "every floor beaten"
                                         for n in fnames)])
        out.append(T.Table(name="sim_fidelity", title="Simulator fidelity: its step against what the session annotates next (both scenarios)",
                           header=[("", "metric"), *(("", n) for n in fnames)], rows=rows,
                           notes=[notes[0], "Each measure is followed by its floors, given the same inputs as the simulator; a floor it does not beat "
                                  "is named in the last row and in the warnings."]))
    return out


def _simulator_tables(sim: SimSection) -> list[T.Table]:
    """What each offline simulator model reads in the words, its effects (learned with their
    intervals, at their floor, or assumed), how it did against its floors on sessions it was not
    fitted on, and the checks of the fidelity runs."""
    out = []
    for sha, model in sim.simulators.items():
        rows = [[f"reading: {r['reading']}", str(r["rows"]), "used" if r["used"] else "not used",
                 _num(r.get("balanced_accuracy")) + (f" [{r['balanced_accuracy_ci'][0]:.3f}, {r['balanced_accuracy_ci'][1]:.3f}]" if r.get("balanced_accuracy_ci") else ""),
                 f"chance {_num(r.get('chance'))}, majority {_num(r.get('majority_accuracy'))}"] for r in model.get("readings", [])]
        rows += [[f"effect ({e['component']}): {e['name']}", T.MISSING if e.get("units") is None else str(e["units"]), e["status"],
                  _num(e.get("value"), "{:+.3f}") + (f" [{e['ci'][0]:+.2f}, {e['ci'][1]:+.2f}]" if e.get("ci") else ""), e.get("note") or ""]
                 for e in model.get("effects", [])]
        rows += [[f"vs its best floor, out of sample: {c['label']}", str(c["points"]), c["verdict"],
                  _num(c.get("difference"), "{:+.3f}") + (f" [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]" if c.get("ci") else ""),
                  f"simulator {_num(c.get('simulator'))}, floor ({c['floor']}) {_num(c.get('floor_value'))}"] for c in model.get("validation", [])]
        if not rows:
            continue
        out.append(T.Table(
            name=f"sim_model_{sha[:8]}", title=f"Simulator {model['name']} ({model.get('model')}, fitted on {model.get('fitted_on')}, sha256 {sha[:12]})",
            header=[("", h) for h in ("reading, effect or check", "rows / units / points", "status", "value [95% CI]", "note")],
            rows=rows,
            notes=["Readings: on held-out sessions; the learned reader of the words' affect is used only when it beats chance and the "
                   "project's marker lists, else the marker lists read them.",
                   "Effects: learned (a weight of the fitted model, intensity points per step, with its 95% interval over clips), at the "
                   "floor (the part fell back to no change or to a speaker floor: its learned model did not beat the floor on sessions "
                   "left out; the value is the out-of-sample score), or assumed (what the data cannot identify: the words' effects, "
                   "declared with their reason).",
                   "Checks: the simulator against its best floor on sessions it was not fitted on (each couple or family left out), the "
                   "difference oriented so that positive is better, with its 95% interval over clips."],
        ))
    for name, checks in sim.simulator_checks.items():
        rows = [[c.check, c.a or T.MISSING, c.b or T.MISSING, c.expect or T.MISSING, "pass" if c.passed else "FAIL", c.why] for c in checks]
        out.append(T.Table(name=f"sim_checks_{len(out)}", title=f"Simulator checks ({name})",
                           header=[("", h) for h in ("check", "agent a", "agent b", "expected", "result", "measured")], rows=rows,
                           notes=["Each pair of agents differs in one thing. 'a better': a must score higher and never lower in an episode; "
                                  "'same': no episode may differ; 'report': the direction is the simulator's to say."]))
    return out


def draw_sim_figures(sim: SimSection, fig_dir: Path) -> list[tuple[Path, str]]:
    from rescue_bench.report.figures import FONT, _figure, _save, _style

    if not sim.runs:
        return []
    out = []
    fig, axes = _figure(3.0)
    ax = axes[0, 0]
    for run in sim.runs:
        curve = sim.trajectories[run.name].mean_max_distress
        ax.plot(range(len(curve)), curve, marker="o", label=run.name)
    ax.set_xlabel("step (0 = the real start)")
    ax.set_ylabel("mean max distress")
    ax.set_ylim(0, 1)
    ax.set_title("Closed loop: the most distressed client's distress over the episode, per run")
    ax.legend(fontsize=FONT)
    ax.grid(alpha=0.3)
    _style(ax)
    out.append((_save(fig, fig_dir / "sim_distress.png"), "Mean over episodes of the highest client distress at the start and after each step, per run."))
    for i, run in enumerate(sim.runs[:MAX_TRAJECTORIES]):
        traj = sim.trajectories[run.name].first
        if traj is None:
            continue
        fig, axes = _figure(3.6, nrows=2, sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
        ax, pax = axes[0, 0], axes[1, 0]
        for client, values in traj.distress.items():
            ax.plot(range(len(values)), values, marker="o", label=client)
        for t, whom in enumerate(traj.addressed):
            if whom:
                ax.annotate(f"to {whom}", (t, 1.0), fontsize=FONT - 1, ha="center", va="top")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("distress d")
        ax.set_title(f"{run.name}: episode {traj.episode}")
        ax.legend(fontsize=FONT)
        ax.grid(alpha=0.3)
        labels = list(dict.fromkeys(traj.patterns))
        pax.step(range(len(traj.patterns)), [labels.index(p) for p in traj.patterns], where="mid")
        pax.set_yticks(range(len(labels)), [p.replace("_", " ") for p in labels])
        pax.set_xlabel("step")
        pax.set_ylim(-0.5, len(labels) - 0.5)
        _style(ax)
        _style(pax)
        caption = f"Trajectory of {run.name}'s first episode: each client's distress and the relation pattern after each step."
        out.append((_save(fig, fig_dir / f"sim_trajectory_{i + 1}.png"), caption))
    return out


def sim_section_html(sim: SimSection, tables: Sequence[T.Table], figures: Sequence[tuple[Path, str]]) -> str:
    e = html.escape
    rows = [[r.name, r.agent, r.simulator or T.MISSING, str(r.gamma), str(r.lam), str(r.horizon), str(r.episodes), r.path]
            for r in sim.runs]
    overview = T.Table(name="sim_runs", title="Closed-loop runs", header=[("", h) for h in ("Run", "Agent", "Simulator", "gamma", "lambda", "Horizon", "Episodes", "Folder")], rows=rows)
    parts = [R.to_html(overview)] if rows else []
    for w in sim.warnings:
        parts.append(f'<p class="warn">{e(w)}</p>')
    parts += [R.to_html(t) for t in tables]
    parts += [R.figure_html(p, c) for p, c in figures]
    return "\n".join(parts)


def write_sim(sim: SimSection, tab_dir: Path, fig_dir: Path, *, confidence: float, n_resamples: int) -> tuple[list[str], list[str], str | None]:
    """Write the closed-loop tables and figures; returns (table files, figure files, HTML section or None)."""
    if not sim.runs and not sim.fidelity_runs:
        return [], [], None
    tables = sim_tables(sim, confidence=confidence, n_resamples=n_resamples)
    if not sim.runs:
        tables = [t for t in tables if not t.name.startswith(("sim_both", "sim_couple", "sim_family"))]
    files = [str(p) for t in tables for p in R.write_table(t, tab_dir)]
    figures = draw_sim_figures(sim, fig_dir)
    return files, [str(p) for p, _ in figures], sim_section_html(sim, tables, figures)
