"""``rescue sim eval`` and ``rescue sim fidelity``: the support agent in closed-loop episodes whose
clients answer back (inspect_ai underneath when a model is involved).

Conventions of :mod:`rescue_bench.cli._common`: bad input is one line ``error: ...`` and exit 2 (bad
data: one line per problem naming file, line, clip, row and field), never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rescue_bench.cli._common import (
    DEFAULT_RUN,
    ENGINE_RUN,
    RUN_INPUT_ERRORS,
    DataOption,
    RepairMojibake,
    RunOptions,
    Seed,
    check_context,
    check_mode,
    command,
    fail,
    fmt_number,
    print_dry_run,
    print_usage,
    run_input_error,
    run_options,
    setting,
    settings_values,
)
from rescue_bench.cli.eval import default_out
from rescue_bench.engine.settings import SimSettings
from rescue_bench.labels import SUMMARY_SCENARIOS
from rescue_bench.sim.options import SimOptions

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.summary import Interval, SimSummary

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Closed-loop evaluation: the agent in episodes whose simulated clients answer back.",
)
console = Console()

Simulator = setting(SimSettings, "simulator", "--simulator")
SimModel = setting(SimSettings, "sim_model", "--sim-model")
Mode = setting(SimOptions, "mode", "--mode")
MaxFailedShare = setting(SimSettings, "max_failed_share", "--max-failed-share")
SimulatorMaxTokens = setting(SimSettings, "simulator_max_tokens", "--simulator-max-tokens")


def warn_failed_steps(counts: Mapping[str, object] | None, threshold: float) -> None:
    """One warning line when some episode steps had a failed call but the run stayed under the threshold."""
    counts = counts or {}
    failed, steps = counts.get("failed_steps", 0), counts.get("steps", 0)
    if isinstance(failed, int) and isinstance(steps, int) and failed:
        typer.echo(
            f"warning: {failed} of {steps} episode steps ({100 * failed / max(steps, 1):.1f}%) had an agent or simulator call "
            f"that failed after its retries (the run fails above --max-failed-share {threshold:g}); run.json counts them",
            err=True,
        )


def check_agent(model: str) -> str:
    """``--model``: a reference agent (baseline/silent, group, attend, distressed, oracle), a baseline chain, or a model."""
    from rescue_bench.baselines import BASELINES
    from rescue_bench.labels import BASELINE_PREFIX, is_baseline
    from rescue_bench.sim import REFERENCE_AGENTS

    if is_baseline(model) and model.removeprefix(BASELINE_PREFIX) not in (*REFERENCE_AGENTS, *BASELINES):
        raise fail(
            f"unknown agent {model!r}; expected baseline/<{'|'.join(REFERENCE_AGENTS)}> (reference agents), "
            f"baseline/<{'|'.join(BASELINES)}> (the baseline chain) or an inspect_ai model"
        )
    return model


def check_simulator(simulator: str, sim_model: str | None = None) -> str:
    """``--simulator``: an offline simulator or an inspect_ai model; ``--sim-model`` only with ``fitted``
    and a readable model file (one line naming the file otherwise)."""
    from rescue_bench.labels import is_baseline
    from rescue_bench.sim.options import FITTED, OFFLINE_SIMULATORS

    if simulator not in OFFLINE_SIMULATORS and (is_baseline(simulator) or "/" not in simulator):
        raise fail(
            f"--simulator must be {' or '.join(map(repr, OFFLINE_SIMULATORS))} or an inspect_ai model such as openai/gpt-4o (got {simulator!r})"
        )
    if sim_model is not None:
        if simulator != FITTED:
            raise fail(f"--sim-model is the fitted simulator's model; --simulator is {simulator!r}")
        from rescue_bench.sim.fitted import load_model

        try:
            load_model(sim_model)
        except ValueError as exc:
            raise fail(str(exc)) from None
    return simulator


def _fmt(value: float | None, kind: str) -> str:
    """A closed-loop number: percent (1 decimal) or a value (3)."""
    return fmt_number(value, 1 if kind == "pct" else 3, percent=kind == "pct")


def _cell(v: Interval, kind: str) -> str:
    """A metric with its interval: ``value [low, high]``."""
    return f"{_fmt(v.value, kind)} [{_fmt(v.ci_low, kind)}, {_fmt(v.ci_high, kind)}]" if v.value is not None else "-"


def print_sim_summary(summary: SimSummary, title: str) -> None:
    from rescue_bench.sim import METRICS
    from rescue_bench.sim.objective import small_room_warning

    per = summary.sim
    console.print(f"[bold]{escape(title)}[/bold]")
    table = Table(show_edge=False)
    table.add_column("metric [95% CI over clips]")
    for s in SUMMARY_SCENARIOS:
        table.add_column(f"{s} ({per[s].episodes} ep.)", justify="right")
    for m in METRICS:
        table.add_row(m.name + (" (%)" if m.kind == "pct" else ""), *(_cell(per[s].metric(m.name), m.kind) for s in SUMMARY_SCENARIOS))
    console.print(table)
    both = per["both"]
    console.print(
        f"headline: normalised J {_fmt(both.metric('normalised').value, 'num')} (0 = the run's best constant policy, "
        f"{both.floor_policy or 'none'}; 1 = the optimum); {both.interval}",
        highlight=False, markup=False,
    )
    if warning := small_room_warning(both.metric("room").value, "warning"):
        typer.echo(warning, err=True)


@command(app, "eval")
@run_options(*ENGINE_RUN)
def eval_command(
    model: str = setting(SimSettings, "model", "--model", "-m"),
    simulator: str = Simulator,
    sim_model: Optional[str] = SimModel,
    judge: Optional[str] = setting(
        SimSettings, "judge", "--judge", "-j", help="Judge model rating each agent turn 1-5 (its own strategy toward its own target); none: not judged."
    ),
    data: DataOption = None,
    horizon: int = setting(SimOptions, "horizon", "--horizon"),
    gamma: float = setting(SimOptions, "gamma", "--gamma"),
    lam: float = setting(SimOptions, "lam", "--lambda"),
    per_clip: int = setting(SimOptions, "per_clip", "--episodes-per-clip"),
    state: str = setting(SimOptions, "state", "--state"),
    mode: str = Mode,
    context: int = setting(SimOptions, "context", "--context", typer_range=False),
    subgroups: bool = setting(SimOptions, "subgroups", "--subgroups"),
    limit: Optional[int] = setting(SimSettings, "limit", "--limit", help="Run only the first N episodes."),
    max_tokens: Optional[int] = setting(SimSettings, "max_tokens", "--max-tokens", help="Most tokens per answer of a model agent (sent with every call)."),
    simulator_max_tokens: int = SimulatorMaxTokens,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default: rescue_runs/sim-<model>-<simulator>)."),
    max_failed_share: float = MaxFailedShare,
    run: RunOptions = DEFAULT_RUN,
) -> None:
    """Run closed-loop episodes; writes results/sim.jsonl, summary.json, run.json (and logs with a model)."""
    params = {**locals(), **run.settings_values()}  # the options, by name: those naming a field go to SimOptions and SimSettings
    from rescue_bench.agent import STATE_MODES

    if state not in STATE_MODES:
        raise fail(f"--state must be one of {', '.join(STATE_MODES)} (got {state!r})")
    check_agent(model)
    check_simulator(simulator, sim_model)
    cue_mode = check_mode(mode)
    check_context(context)
    from rescue_bench.engine.sim import run_sim
    from rescue_bench.runinfo import SimCalls

    options = SimOptions(**settings_values(SimOptions, params, mode=cue_mode))
    settings = SimSettings(
        **settings_values(
            SimSettings,
            params,
            data=[str(p) for p in data] if data else None,
            options=options,
            bertscore=False,
            out=str(out) if out else default_out(f"sim-{model}-{simulator}"),
        )
    )
    try:
        if run.dry_run:
            print_dry_run(run_sim(settings, dry_run=True), run.price_in, run.price_out)
            return
        result = run_sim(settings, display=run.display, overwrite=run.overwrite)
    except RUN_INPUT_ERRORS as exc:
        raise run_input_error(exc) from None
    warn_failed_steps(result.info.counts, settings.max_failed_share)
    print_sim_summary(result.summary, f"{model} against the {simulator} simulator (horizon {horizon}, gamma {gamma}, lambda {lam})")
    print_simulator(settings.simulator, settings.sim_model)
    calls = result.info.calls or SimCalls()
    console.print(
        f"calls: agent {calls.agent_total} ({calls.agent_per_episode:.1f} per episode), "
        f"simulator {calls.simulator_total} ({calls.simulator_per_episode:.1f} per episode)",
        highlight=False,
        markup=False,
    )
    print_usage(result.info)
    console.print(f"Results in {settings.out} (rescue report {settings.out})", highlight=False, markup=False)


@command(app, "fidelity")
@run_options(*ENGINE_RUN, "bertscore_model")
def fidelity_command(
    simulator: str = Simulator,
    sim_model: Optional[str] = SimModel,
    judge: Optional[str] = setting(
        SimSettings, "judge", "--judge", "-j",
        help="Judge model rating 1-5 how plausible each simulated turn, and blind the real one, is as the client's next turn.",
    ),
    data: DataOption = None,
    mode: str = Mode,
    limit: Optional[int] = setting(SimSettings, "limit", "--limit", help="Compare only the first N decision points."),
    simulator_max_tokens: int = SimulatorMaxTokens,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default: rescue_runs/fidelity-<simulator>)."),
    bertscore: bool = setting(SimSettings, "bertscore", "--bertscore/--no-bertscore", help="BERTScore F1 of each simulated turn against the real one."),
    max_failed_share: float = MaxFailedShare,
    run: RunOptions = DEFAULT_RUN,
) -> None:
    """A simulator's first step against what really happened next, at every decision point."""
    params = {**locals(), **run.settings_values()}  # the options, by name: those naming a settings field go to SimSettings
    from rescue_bench.sim.fidelity import FIDELITY_METRICS

    check_simulator(simulator, sim_model)
    cue_mode = check_mode(mode)
    from rescue_bench.engine.sim import run_fidelity

    settings = SimSettings(
        **settings_values(
            SimSettings,
            params,
            model="baseline/real_therapist",
            data=[str(p) for p in data] if data else None,
            options=SimOptions(horizon=1, state="none", mode=cue_mode),
            out=str(out) if out else default_out(f"fidelity-{simulator}"),
        )
    )
    try:
        if run.dry_run:
            print_dry_run(run_fidelity(settings, dry_run=True), run.price_in, run.price_out)
            return
        result = run_fidelity(settings, display=run.display, overwrite=run.overwrite)
    except RUN_INPUT_ERRORS as exc:
        raise run_input_error(exc) from None
    warn_failed_steps(result.info.counts, settings.max_failed_share)
    summary = result.summary
    per = summary.fidelity
    console.print(f"[bold]{escape(simulator)}: its steps against what the session annotates next, beside floors[/bold]")
    table = Table(show_edge=False)
    table.add_column("metric [95% CI over clips]")
    for s in SUMMARY_SCENARIOS:
        table.add_column(f"{s} ({per[s].points} pts)", justify="right")
    for key, kind, label in FIDELITY_METRICS:
        table.add_row(label + (" (%)" if kind == "pct" else ""), *(_cell(per[s].metric(key), kind) for s in SUMMARY_SCENARIOS))
    console.print(table)
    labels = {key: label.strip() for key, _, label in FIDELITY_METRICS}
    for key, floors in per["both"].beaten_by.items():
        if floors:
            console.print(f"warning: '{labels[key]}' does not beat {', '.join(floors)}", highlight=False, markup=False)
    for check in summary.checks:
        console.print(f"check {'passed' if check.passed else 'FAILED'}: {check.check}: {check.why}", highlight=False, markup=False)
    print_usage(result.info)
    console.print(f"Results in {settings.out} (rescue report {settings.out})", highlight=False, markup=False)


@command(app, "fit")
def fit_command(
    data: DataOption = None,
    out: Path = typer.Option(..., "--out", "-o", help="The model file to write (JSON)."),
    repair_mojibake: bool = RepairMojibake,
    seed: int = Seed,
) -> None:
    """Fit the offline simulator on annotated sessions; writes the model (with its counts) for --sim-model."""
    from rescue_bench.data.load import load_clips
    from rescue_bench.sim.fitted import fit, write_model

    clips = load_clips([str(p) for p in data] if data else None, repair_mojibake=repair_mojibake)
    name = ", ".join(str(p) for p in data) if data else "demo"
    try:
        model = fit(clips, name, seed=seed).model
    except ValueError as exc:
        raise fail(str(exc)) from None
    try:
        write_model(model, out)
    except OSError as exc:
        raise run_input_error(exc) from None
    print_model(model)
    console.print(f"Model in {out} (rescue sim eval --simulator fitted --sim-model {out})", highlight=False, markup=False)


def print_simulator(simulator: str, sim_model: str | None) -> None:
    """One line on an offline simulator: the fitted model played and what its words are read as, or
    that the scripted rules are a smoke test."""
    from rescue_bench.sim.options import FITTED, SCRIPTED

    if simulator == SCRIPTED:
        console.print("simulator: scripted, a smoke test of the harness (it reads the declared label, no client could)", highlight=False, markup=False)
    elif simulator == FITTED:
        from rescue_bench.sim.fitted import load_model

        m = load_model(sim_model)
        affect = m.readings[0]
        ci = f" [{affect.balanced_accuracy_ci[0]:.3f}, {affect.balanced_accuracy_ci[1]:.3f}]" if affect.balanced_accuracy_ci else ""
        console.print(
            f"simulator: fitted on {m.source.name} ({sim_model or 'the bundled model'}, sha256 {m.sha256()[:12]}); the words' affect read "
            f"with balanced accuracy {_fmt(affect.balanced_accuracy, 'num')}{ci} on held-out clips (chance {_fmt(affect.chance, 'num')}): "
            f"{'used' if m.affect_used else 'not used'}",
            highlight=False, markup=False,
        )


def print_model(model: Any) -> None:
    """A fitted model's readings and effects on held-out clips (``rescue sim fit``)."""
    console.print(f"[bold]Fitted on {escape(model.source.name)}: {len(model.source.clips)} clips, {model.source.rows} rows; units {model.units}[/bold]")
    table = Table(show_edge=False, title="What the words are read as, on held-out clips")
    for col in ("reading", "rows", "accuracy", "majority", "balanced acc. [95% CI]", "chance", "used"):
        table.add_column(col, justify="left" if col == "reading" else "right")
    for r in model.readings:
        ci = f" [{r.balanced_accuracy_ci[0]:.3f}, {r.balanced_accuracy_ci[1]:.3f}]" if r.balanced_accuracy_ci else ""
        table.add_row(
            r.reading, str(r.rows), _fmt(r.accuracy, "num"), _fmt(r.majority_accuracy, "num"),
            (_fmt(r.balanced_accuracy, "num") + ci) if r.balanced_accuracy is not None else "-", _fmt(r.chance, "num"), "yes" if r.used else "no",
        )
    console.print(table)
    table = Table(show_edge=False, title="Effects on intensity (change of the first arm minus the second), held-out clips")
    for col in ("effect", "units", "annotated", "fitted", "scripted rules"):
        table.add_column(col, justify="left" if col == "effect" else "right")
    for e in model.effects:
        table.add_row(e.name, f"{e.n[0]} / {e.n[1]}", _signed(e.observed), _signed(e.fitted), _signed(e.scripted))
    console.print(table)
    h = model.heldout
    console.print(
        f"intensity change, mean absolute error on held-out clips: fitted {_fmt(h.get('mae_fitted'), 'num')}, "
        f"no change {_fmt(h.get('mae_no_change'), 'num')}, scripted rules {_fmt(h.get('mae_scripted'), 'num')}",
        highlight=False, markup=False,
    )


def _signed(value: float | None) -> str:
    return fmt_number(value, 2, sign=True)
