"""Closed-loop runs in ``rescue report``: the objective and its metrics per run with intervals, the
manipulation check between runs, the simulators' fidelity, and trajectory figures.

A ``rescue sim eval`` folder holds ``results/sim.jsonl`` (one episode per line), a ``rescue sim
fidelity`` folder ``results/fidelity.jsonl``. Everything is recomputed from the records
(:mod:`rescue_bench.sim.objective`, :mod:`rescue_bench.sim.fidelity`):

* per run and scenario every metric of :data:`rescue_bench.sim.METRICS` with its percentile
  cluster-bootstrap interval over clips;
* per simulator of the runs, whether a fidelity run and a manipulation check cover it (a warning
  when not: both are what says whether its numbers can be trusted);
* the manipulation check: for every two runs on the same episodes against the same simulator (same
  gamma, lambda and horizon), J of one minus the other with the paired permutation test over clips;
* per fidelity run, each comparison with its interval;
* figures: the mean of the max distress after each step per run, and per run the trajectory of
  its first episode (each client's distress, the pattern underneath).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rescue_bench.labels import POOLED, SUMMARY_SCENARIOS
from rescue_bench.report import render as R
from rescue_bench.report import tables as T
from rescue_bench.report.runs import Run
from rescue_bench.runinfo import FidelityRunInfo, SimRunInfo
from rescue_bench.sim import METRICS, SIM_TASK, manipulation_check, summarize
from rescue_bench.sim.fidelity import FIDELITY_METRICS, FIDELITY_TASK, summarize_fidelity

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


def compute_sim(runs: Sequence[Run], *, n_resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    """Every closed-loop number of the report (JSON-ready): ``runs``, ``metrics``, ``checks``,
    ``fidelity``, ``trajectories``, ``warnings``."""
    sims = [r for r in runs if r.records.get(SIM_TASK)]
    fids = [r for r in runs if r.records.get(FIDELITY_TASK)]
    out: dict[str, Any] = {"runs": [], "metrics": {}, "checks": [], "fidelity": {}, "fidelity_runs": [], "trajectories": {}, "warnings": []}
    for run in sims:
        records = run.records[SIM_TASK]
        info = _sim_info(run)
        out["runs"].append(
            {"name": run.name, "agent": run.model, "simulator": info.simulator, "gamma": info.gamma,
             "lambda": info.lam, "horizon": info.horizon, "episodes": len(records), "path": str(run.path),
             "calls": None if info.calls is None else info.calls.model_dump(exclude_unset=True)}
        )
        out["metrics"][run.name] = summarize(records, n_resamples=n_resamples, confidence=confidence, seed=seed)
        out["trajectories"][run.name] = {
            "mean_max_distress": _mean_curve(records),
            "first": _trajectory(records[0]) if records else None,
        }
    for i, a in enumerate(sims):
        for b in sims[i + 1 :]:
            if _key(a) != _key(b):
                continue
            ids_a = {r["id"] for r in a.records[SIM_TASK]}
            ids_b = {r["id"] for r in b.records[SIM_TASK]}
            if ids_a != ids_b:
                out["warnings"].append(f"{a.name} and {b.name}: same simulator and objective but different episodes; not compared")
                continue
            check = manipulation_check(a.records[SIM_TASK], b.records[SIM_TASK], n_resamples=max(n_resamples, 1000), seed=seed)
            out["checks"].append({"a": a.name, "b": b.name, "simulator": _simulator(a), **check})
    for run in fids:
        records = run.records[FIDELITY_TASK]
        out["fidelity_runs"].append({"name": run.name, "simulator": _simulator(run), "points": len(records), "path": str(run.path)})
        out["fidelity"][run.name] = summarize_fidelity(records, n_resamples=n_resamples, seed=seed)
    out["coverage"] = coverage(out)
    for cov in out["coverage"]:
        if not cov["fidelity"]:
            out["warnings"].append(
                f"simulator {cov['simulator']}: no fidelity run given; run `rescue sim fidelity --simulator {cov['simulator']}` and pass its folder"
            )
        if not cov["checks"]:
            out["warnings"].append(
                f"simulator {cov['simulator']}: no manipulation check; pass a second run on the same episodes against it "
                "(e.g. baseline/attend and baseline/silent)"
            )
    return out


def coverage(sim: dict[str, Any]) -> list[dict[str, Any]]:
    """For every simulator of the closed-loop runs: its fidelity runs and its manipulation checks (the
    two ways the report says whether its numbers can be trusted)."""
    simulators = list(dict.fromkeys(r["simulator"] for r in sim["runs"]))
    return [
        {
            "simulator": name,
            "fidelity": [f["name"] for f in sim["fidelity_runs"] if f["simulator"] == name],
            "checks": [[c["a"], c["b"]] for c in sim["checks"] if c["simulator"] == name],
        }
        for name in simulators
    ]


def _mean_curve(records: Sequence[dict[str, Any]]) -> list[float]:
    """Mean over episodes of the max distress at the start and after each step."""
    horizon = max((len(r["steps"]) for r in records), default=0)
    curve = [sum(r["metrics"]["initial_max_distress"] for r in records) / max(len(records), 1)]
    for t in range(horizon):
        values = [r["steps"][t]["max_distress"] for r in records if len(r["steps"]) > t]
        curve.append(sum(values) / len(values))
    return curve


def _trajectory(record: dict[str, Any]) -> dict[str, Any]:
    from rescue_bench.sim.state import HiddenState, distresses

    states = [HiddenState.model_validate(record["initial_state"])] + [HiddenState.model_validate(s["state"]) for s in record["steps"]]
    return {
        "episode": record["id"],
        "distress": {c: [distresses(s)[c] for s in states] for c in record["clients"]},
        "patterns": [s.pattern for s in states],
        "addressed": [None] + [s["action"]["whom"] if s["action"]["intervened"] else None for s in record["steps"]],
    }


# --------------------------------------------------------------------------------------------------
# tables and figures
# --------------------------------------------------------------------------------------------------


def _cell(v: dict[str, Any], kind: str) -> str:
    if v["value"] is None:
        return T.MISSING
    scale = 100.0 if kind == "pct" else 1.0
    return f"{v['value'] * scale:.2f} [{v['ci_low'] * scale:.2f}, {v['ci_high'] * scale:.2f}]"


def sim_tables(sim: dict[str, Any], *, confidence: float, n_resamples: int) -> list[T.Table]:
    note = f"{confidence:.0%} percentile cluster-bootstrap intervals over clips ({n_resamples} resamples); shares in percent."
    out = []
    names = [r["name"] for r in sim["runs"]]
    for scenario in SCENARIOS3:
        rows = [[m.label, *(_cell(sim["metrics"][n][scenario][m.name], m.kind) for n in names)] for m in METRICS]
        rows.append(["episodes", *(str(sim["metrics"][n][scenario]["episodes"]) for n in names)])
        out.append(T.Table(name=f"sim_{scenario}", title=f"Closed-loop evaluation, {scenario}", header=[("", "metric"), *(("", n) for n in names)], rows=rows, notes=[note]))
    if sim["checks"]:
        rows = [[c["a"], c["b"], c["simulator"] or T.MISSING, str(c["episodes"]), f"{c['delta']:.3f}" if c["delta"] is not None else T.MISSING,
                 f"{c['p_value']:.4f}" if c["p_value"] is not None else T.MISSING, f"{c['a_wins']} / {c['b_wins']}"] for c in sim["checks"]]
        out.append(T.Table(name="sim_manipulation", title="Manipulation check: J of run a minus run b on the same episodes",
                           header=[("", h) for h in ("run a", "run b", "simulator", "episodes", "delta J", "p (paired permutation over clips)", "episodes a / b better")],
                           rows=rows, notes=["A simulator that cannot separate an attentive agent from a silent one cannot rank agents."]))
    fnames = [r["name"] for r in sim["fidelity_runs"]]
    if fnames:
        rows = []
        for key, kind, label in FIDELITY_METRICS:
            rows.append([label, *(_cell(sim["fidelity"][n][POOLED][key], "pct" if kind == "pct" else "num") for n in fnames)])
        rows.append(["points", *(str(sim["fidelity"][n][POOLED]["points"]) for n in fnames)])
        out.append(T.Table(name="sim_fidelity", title="Simulator fidelity: its first step against the real next client turn (both scenarios)",
                           header=[("", "metric"), *(("", n) for n in fnames)], rows=rows, notes=[note]))
    return out


def draw_sim_figures(sim: dict[str, Any], fig_dir: Path) -> list[tuple[Path, str]]:
    from rescue_bench.report.figures import FONT, _figure, _save, _style

    if not sim["runs"]:
        return []
    out = []
    fig, axes = _figure(3.0)
    ax = axes[0, 0]
    for run in sim["runs"]:
        curve = sim["trajectories"][run["name"]]["mean_max_distress"]
        ax.plot(range(len(curve)), curve, marker="o", label=run["name"])
    ax.set_xlabel("step (0 = the real start)")
    ax.set_ylabel("mean max distress")
    ax.set_ylim(0, 1)
    ax.set_title("Closed loop: the most distressed client's distress over the episode, per run")
    ax.legend(fontsize=FONT)
    ax.grid(alpha=0.3)
    _style(ax)
    out.append((_save(fig, fig_dir / "sim_distress.png"), "Mean over episodes of the highest client distress at the start and after each step, per run."))
    for i, run in enumerate(sim["runs"][:MAX_TRAJECTORIES]):
        traj = sim["trajectories"][run["name"]]["first"]
        if traj is None:
            continue
        fig, axes = _figure(3.6, nrows=2, sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
        ax, pax = axes[0, 0], axes[1, 0]
        for client, values in traj["distress"].items():
            ax.plot(range(len(values)), values, marker="o", label=client)
        for t, whom in enumerate(traj["addressed"]):
            if whom:
                ax.annotate(f"to {whom}", (t, 1.0), fontsize=FONT - 1, ha="center", va="top")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("distress d")
        ax.set_title(f"{run['name']}: episode {traj['episode']}")
        ax.legend(fontsize=FONT)
        ax.grid(alpha=0.3)
        labels = list(dict.fromkeys(traj["patterns"]))
        pax.step(range(len(traj["patterns"])), [labels.index(p) for p in traj["patterns"]], where="mid")
        pax.set_yticks(range(len(labels)), [p.replace("_", " ") for p in labels])
        pax.set_xlabel("step")
        pax.set_ylim(-0.5, len(labels) - 0.5)
        _style(ax)
        _style(pax)
        caption = f"Trajectory of {run['name']}'s first episode: each client's distress and the relation pattern after each step."
        out.append((_save(fig, fig_dir / f"sim_trajectory_{i + 1}.png"), caption))
    return out


def sim_section_html(sim: dict[str, Any], tables: Sequence[T.Table], figures: Sequence[tuple[Path, str]]) -> str:
    e = html.escape
    rows = [[r["name"], r["agent"], r["simulator"] or T.MISSING, str(r["gamma"]), str(r["lambda"]), str(r["horizon"]), str(r["episodes"]), r["path"]]
            for r in sim["runs"]]
    overview = T.Table(name="sim_runs", title="Closed-loop runs", header=[("", h) for h in ("Run", "Agent", "Simulator", "gamma", "lambda", "Horizon", "Episodes", "Folder")], rows=rows)
    parts = [R.to_html(overview)] if rows else []
    for w in sim["warnings"]:
        parts.append(f'<p class="warn">{e(w)}</p>')
    parts += [R.to_html(t) for t in tables]
    parts += [R.figure_html(p, c) for p, c in figures]
    return "\n".join(parts)


def write_sim(sim: dict[str, Any], tab_dir: Path, fig_dir: Path, *, confidence: float, n_resamples: int) -> tuple[list[str], list[str], str | None]:
    """Write the closed-loop tables and figures; returns (table files, figure files, HTML section or None)."""
    if not sim.get("runs") and not sim.get("fidelity_runs"):
        return [], [], None
    tables = sim_tables(sim, confidence=confidence, n_resamples=n_resamples) if sim["runs"] else sim_tables(
        {**sim, "runs": [], "metrics": {}}, confidence=confidence, n_resamples=n_resamples
    )
    if not sim["runs"]:
        tables = [t for t in tables if t.name == "sim_fidelity"]
    files = [str(p) for t in tables for p in R.write_table(t, tab_dir)]
    figures = draw_sim_figures(sim, fig_dir)
    return files, [str(p) for p, _ in figures], sim_section_html(sim, tables, figures)
