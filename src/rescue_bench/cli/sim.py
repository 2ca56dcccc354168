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
    if warning := small_room_warning({s: per[s].metric("room").value for s in SUMMARY_SCENARIOS if per[s].episodes}, "warning"):
        typer.echo(warning, err=True)
    print_sensitivity(summary)


def print_sensitivity(summary: SimSummary) -> None:
    """Whether the agent stays above (or below) the run's best constant policy when the simulator's
    assumptions move (:mod:`rescue_bench.sim.sensitivity`), per scenario, one line each."""
    for s in SUMMARY_SCENARIOS:
        sens = summary.sim[s].sensitivity
        if sens is None or sens.above_floor is None:
            continue
        o = sens.above_floor
        tied = o.variants - o.above - o.below
        verdict = "the order holds" if o.holds else "the order does not hold in every variant: the agent's place against the floor rests on the assumptions"
        console.print(
            f"sensitivity ({s}): above the run's best constant policy in {o.above}, at it in {tied}, below it in {o.below} of "
            f"{o.variants} variants of the simulator's assumptions (as fitted; the words' effects x0 to x2; each learned weight "
            f"at its interval's ends): {verdict}",
            highlight=False, markup=False,
        )


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
    print_validation(per["both"].validation, "against its best floor on these sessions (positive: the simulator is better)")
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
    from rescue_bench.sim.fitted import write_model
    from rescue_bench.sim.fitting import fit

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
    """What an offline simulator is: the fitted model played, how it reads the words, and how it did
    against its floors on sessions it was not fitted on; or that the scripted rules are a smoke test."""
    from rescue_bench.sim.options import FITTED, SCRIPTED

    if simulator == SCRIPTED:
        console.print("simulator: scripted, a smoke test of the harness (it reads the declared label, no client could)", highlight=False, markup=False)
    elif simulator == FITTED:
        from rescue_bench.sim.fitted import load_model

        m = load_model(sim_model)
        reader = "a reader learned from the sessions" if m.affect_used else "the project's marker lists (a learned reader did not beat them)"
        affect = m.readings[0] if m.affect_used else m.readings[1]
        ci = f" [{affect.balanced_accuracy_ci[0]:.3f}, {affect.balanced_accuracy_ci[1]:.3f}]" if affect.balanced_accuracy_ci else ""
        console.print(
            f"simulator: fitted on {m.source.name} ({sim_model or 'the bundled model'}, sha256 {m.sha256()[:12]}); the words' affect read by "
            f"{reader}: balanced accuracy {_fmt(affect.balanced_accuracy, 'num')}{ci} on held-out sessions (chance {_fmt(affect.chance, 'num')})",
            highlight=False, markup=False,
        )
        print_validation(m.validation, "against its best floors on sessions it was not fitted on (the fit's leave-one-out)")


def print_validation(checks: Any, title: str) -> None:
    """The simulator against its best floor per measure: the difference (positive: the simulator is
    better) with its interval and the verdict."""
    if not checks:
        console.print("validation: none (the model was fitted on a single clip, or before validation was recorded)", highlight=False, markup=False)
        return
    table = Table(show_edge=False, title=f"The simulator {title}")
    for col in ("measure", "simulator", "best floor", "floor", "difference [95% CI]", "verdict"):
        table.add_column(col, justify="left" if col in ("measure", "best floor", "verdict") else "right")
    for c in checks:
        ci = f" [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}]" if c.ci else ""
        table.add_row(c.label, _fmt(c.simulator, "num"), FLOOR_NAMES.get(c.floor, "no change"), _fmt(c.floor_value, "num"),
                      (fmt_number(c.difference, 3, sign=True) + ci) if c.difference is not None else "-", c.verdict)
    console.print(table)


FLOOR_NAMES = {
    "floor_last_correct": "the last client",
    "floor_addressed_correct": "addressed alone, else the last",
    "floor_least_recent_correct": "the least recent speaker",
}
"""How a fidelity floor is named in a table (the others are "no change")."""


def print_model(model: Any) -> None:
    """A fitted model: how it reads the words, each effect (learned with its interval, at its floor, or
    assumed) and the simulator against its floors on sessions left out (``rescue sim fit``)."""
    src = model.source
    console.print(f"[bold]Fitted on {escape(src.name)}: {len(src.clips)} clips of {src.groups} couples and families, {src.rows} rows[/bold]")
    table = Table(show_edge=False, title="What the words are read as, on held-out sessions")
    for col in ("reading", "rows", "accuracy", "majority", "balanced acc. [95% CI]", "chance", "used"):
        table.add_column(col, justify="left" if col == "reading" else "right")
    for r in model.readings:
        ci = f" [{r.balanced_accuracy_ci[0]:.3f}, {r.balanced_accuracy_ci[1]:.3f}]" if r.balanced_accuracy_ci else ""
        table.add_row(
            r.reading, str(r.rows), _fmt(r.accuracy, "num"), _fmt(r.majority_accuracy, "num"),
            (_fmt(r.balanced_accuracy, "num") + ci) if r.balanced_accuracy is not None else "-", _fmt(r.chance, "num"), "yes" if r.used else "no",
        )
    console.print(table)
    if not model.affect_used:
        console.print("the words' affect is read by the project's marker lists: a learned reader did not beat them on held-out sessions", highlight=False, markup=False)
    table = Table(show_edge=False, title="Effects: learned (95% CI over clips) or at the floor; intensity in points a step")
    for col in ("effect", "part", "status", "value [95% CI]"):
        table.add_column(col, justify="right" if col == "value [95% CI]" else "left")
    for e in model.effects:
        if e.status == "assumed":
            continue
        ci = f" [{e.ci[0]:+.2f}, {e.ci[1]:+.2f}]" if e.ci else ""
        table.add_row(e.name, e.component, e.status, (_signed(e.value) + ci) if e.value is not None else "-")
    console.print(table)
    for a in model.assumptions:
        unit = "intensity points a step" if a.component == "intensity" else "of the valence moved a step"
        console.print(f"assumed: {a.name}: {a.value:+.2f} {unit} for a client the words are said to ({a.why})", highlight=False, markup=False)
    print_validation(model.validation, "against its best floors on sessions it was not fitted on (each couple or family left out)")


def _signed(value: float | None) -> str:
    return fmt_number(value, 2, sign=True)
