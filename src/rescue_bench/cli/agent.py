"""``rescue agent eval``: the relation-aware support agent as a chain (inspect_ai underneath).

Conventions of :mod:`rescue_bench.cli._common`: bad input is one line ``error: ...`` and exit 2 (bad
data: one line per problem naming file, line, clip, row and field), never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rescue_bench.agent.options import AgentOptions
from rescue_bench.cli._common import (
    DEFAULT_RUN,
    ENGINE_RUN,
    RUN_INPUT_ERRORS,
    DataOption,
    MaxTokens,
    RunOptions,
    check_context,
    check_mode,
    check_model,
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
from rescue_bench.engine.settings import AgentSettings
from rescue_bench.labels import is_baseline

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.summary import AgentSummary

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="The relation-aware support agent: state, when, whom and how, then the turn; evaluated as a chain.",
)
console = Console()


def _fmt(value: float | None, kind: str) -> str:
    """A chain metric: percent (2 decimals), BERTScore (4) or a 1-5 score (2)."""
    return fmt_number(value, 4 if kind == "bert" else 2, percent=kind == "pct")


def print_agent_summary(summary: AgentSummary, title: str) -> None:
    """One table per metric group: a row per metric, a column per scenario (percent, 1-5, BERTScore)."""
    from rescue_bench.agent import GROUP_TITLES, GROUPS, METRICS

    per = summary.agent
    console.print(f"[bold]{escape(title)}[/bold]")
    console.print(
        f"decision points: couple {per['couple'].n}, family {per['family'].n}, both {per['both'].n}; "
        f"points with an invalid step: {_fmt(per['both'].invalid_rate, 'pct')}%",
        highlight=False,
    )
    for group in GROUPS:
        table = Table(title=GROUP_TITLES[group], title_justify="left", show_edge=False)
        table.add_column("metric")
        for scenario in ("couple", "family", "both"):
            table.add_column(scenario, justify="right")
        table.add_column("n (both)", justify="right")
        for m in (m for m in METRICS if m.group == group):
            table.add_row(m.label, *(_fmt(per[s].metric(m.name), m.kind) for s in ("couple", "family", "both")), str(per["both"].support[m.name]))
        console.print(table)


@command(app, "eval")
@run_options(*ENGINE_RUN, "bertscore_model")
def eval_command(
    model: str = setting(AgentSettings, "model", "--model", "-m"),
    judge: Optional[str] = setting(
        AgentSettings, "judge", "--judge", "-j", help="Judge model for the state (ER/VP rubrics) and the turn (none: judge scores left empty)."
    ),
    data: DataOption = None,
    state: str = setting(AgentOptions, "state", "--state"),
    mode: str = setting(AgentOptions, "mode", "--mode"),
    context: int = setting(AgentOptions, "context", "--context", typer_range=False),
    recent: int = setting(AgentOptions, "recent", "--recent"),
    neglect_margin: int = setting(AgentOptions, "neglect_margin", "--neglect-margin"),
    neglect_min: int = setting(AgentOptions, "neglect_min", "--neglect-min"),
    how_given_gold: bool = setting(AgentOptions, "how_given_gold", "--how-given-gold/--no-how-given-gold"),
    single_task: bool = setting(AgentSettings, "single_task", "--single-task/--no-single-task"),
    limit: Optional[int] = setting(AgentSettings, "limit", "--limit", help="Evaluate only the first N decision points."),
    max_tokens: Optional[int] = MaxTokens,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default: rescue_runs/agent-<state>-<model>)."),
    bertscore: bool = setting(AgentSettings, "bertscore", "--bertscore/--no-bertscore", help="Compute BERTScore F1 (state texts, turns, ER/VP)."),
    run: RunOptions = DEFAULT_RUN,
) -> None:
    """Run the agent chain at every decision point; writes results/, summary.json, run.json, single/ and logs."""
    params = {**locals(), **run.settings_values()}  # the options, by name: those naming a field go to AgentOptions and AgentSettings
    from rescue_bench.agent import STATE_MODES

    if state not in STATE_MODES:
        raise fail(f"--state must be one of {', '.join(STATE_MODES)} (got {state!r})")
    check_model(model)
    cue_mode = check_mode(mode)
    check_context(context)
    from rescue_bench.engine.agent import run_agent
    from rescue_bench.runinfo import AgentCalls

    options = AgentOptions(**settings_values(AgentOptions, params, mode=cue_mode))
    settings = AgentSettings(
        **settings_values(
            AgentSettings,
            params,
            data=[str(p) for p in data] if data else None,
            options=options,
            out=str(out) if out else default_out(f"agent-{state}-{model}"),
        )
    )
    try:
        if run.dry_run:
            print_dry_run(run_agent(settings, dry_run=True), run.price_in, run.price_out)
            return
        result = run_agent(settings, display=run.display, overwrite=run.overwrite)
    except RUN_INPUT_ERRORS as exc:
        raise run_input_error(exc) from None
    print_agent_summary(result.summary, f"{model}: support agent chain (state {state}, {mode})")
    print_usage(result.info)
    calls = result.info.calls or AgentCalls()
    what = "steps answered offline (no model calls)" if is_baseline(model) else "calls"
    console.print(
        f"{what}: {calls.chain_total} chain steps ({', '.join(f'{k} {v}' for k, v in calls.chain_steps.items())}), "
        f"{calls.chain_judge} judge; single-task ablation {calls.single_task} + {calls.single_task_judge} judge",
        highlight=False,
        markup=False,
    )
    if not judge:
        console.print("note: no --judge given, so judge scores (state, turn) are empty", highlight=False)
    console.print(f"Results in {settings.out} (rescue report {settings.out}; inspect view --log-dir {settings.out}/logs)", highlight=False, markup=False)
