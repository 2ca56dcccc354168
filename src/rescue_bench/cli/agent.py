"""``rescue agent eval``: the relation-aware support agent as a chain (inspect_ai underneath).

Conventions of :mod:`rescue_bench.cli._common`: bad input is one line ``error: ...`` and exit 2 (bad
data: one line per problem naming file, line, clip, row and field), never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rescue_bench.cli._common import (
    BertscoreModelOption,
    DataOption,
    DisplayOption,
    LogSamplesOption,
    MaxConnectionsOption,
    MaxRetriesOption,
    MaxTokensOption,
    ModeOption,
    NoCacheOption,
    OverwriteOption,
    RepairOption,
    SeedOption,
    TemperatureOption,
    TimeoutOption,
    check_context,
    check_mode,
    check_model,
    command,
    fail,
)
from rescue_bench.cli.eval import default_out
from rescue_bench.labels import is_baseline

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="The relation-aware support agent: state, when, whom and how, then the turn; evaluated as a chain.",
)
console = Console()


def _fmt(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "pct":
        return f"{100 * value:.2f}"
    return f"{value:.4f}" if kind == "bert" else f"{value:.2f}"


def print_agent_summary(summary: dict[str, Any], title: str) -> None:
    """One table per metric group: a row per metric, a column per scenario (percent, 1-5, BERTScore)."""
    from rescue_bench.agent import GROUP_TITLES, GROUPS, METRICS

    per = summary["agent"]
    console.print(f"[bold]{escape(title)}[/bold]")
    console.print(
        f"decision points: couple {per['couple']['n']}, family {per['family']['n']}, both {per['both']['n']}; "
        f"points with an invalid step: {_fmt(per['both']['invalid_rate'], 'pct')}%",
        highlight=False,
    )
    for group in GROUPS:
        table = Table(title=GROUP_TITLES[group], title_justify="left", show_edge=False)
        table.add_column("metric")
        for scenario in ("couple", "family", "both"):
            table.add_column(scenario, justify="right")
        table.add_column("n (both)", justify="right")
        for m in (m for m in METRICS if m.group == group):
            table.add_row(m.label, *(_fmt(per[s][m.name], m.kind) for s in ("couple", "family", "both")), str(per["both"]["support"][m.name]))
        console.print(table)


@command(app, "eval")
def eval_command(
    model: str = typer.Option("baseline/majority", "--model", "-m", help="inspect_ai model, e.g. openai/gpt-4o, or baseline/<method> for the baseline chain."),
    judge: Optional[str] = typer.Option(None, "--judge", "-j", help="Judge model for the state (ER/VP rubrics) and the turn (none: judge scores left empty)."),
    data: DataOption = None,
    state: str = typer.Option("explicit", "--state", help="explicit: estimate the group's state first; none: decide without it (the ablation)."),
    mode: ModeOption = "dialogue",
    context: int = typer.Option(5, "--context", help="Rows shown, ending with the last row before the decision (-1 = all previous rows)."),
    recent: int = typer.Option(5, "--recent", min=1, help="Rows whose annotations give the state gold and the distress levels."),
    neglect_margin: int = typer.Option(2, "--neglect-margin", min=1, help="Intensity points by which the most distressed client must lead every other annotated client."),
    neglect_min: int = typer.Option(5, "--neglect-min", min=0, max=10, help="Lowest intensity that counts as distress."),
    how_given_gold: bool = typer.Option(True, "--how-given-gold/--no-how-given-gold", help="Also ask the strategy toward the gold target (a branch of the conversation)."),
    single_task: bool = typer.Option(True, "--single-task/--no-single-task", help="Also run the six single-task prompts on the same rows (the chain vs single-task ablation)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Evaluate only the first N decision points."),
    max_connections: MaxConnectionsOption = None,
    max_retries: MaxRetriesOption = None,
    timeout: TimeoutOption = None,
    temperature: TemperatureOption = 0.0,
    max_tokens: MaxTokensOption = None,
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default: rescue_runs/agent-<state>-<model>)."),
    bertscore: bool = typer.Option(True, "--bertscore/--no-bertscore", help="Compute BERTScore F1 (state texts, turns, ER/VP)."),
    bertscore_model: BertscoreModelOption = None,
    repair_mojibake: RepairOption = False,
    no_cache: NoCacheOption = False,
    seed: SeedOption = 0,
    display: DisplayOption = "full",
    log_samples: LogSamplesOption = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Run the agent chain at every decision point; writes results/, summary.json, run.json, single/ and logs."""
    from rescue_bench.agent import STATE_MODES, AgentOptions

    if state not in STATE_MODES:
        raise fail(f"--state must be one of {', '.join(STATE_MODES)} (got {state!r})")
    check_model(model)
    cue_mode = check_mode(mode)
    check_context(context)
    from rescue_bench.engine.agent import AgentSettings, run_agent
    from rescue_bench.runinfo import AgentCalls

    options = AgentOptions(
        state=state,  # type: ignore[arg-type]
        mode=cue_mode,
        context=context,
        recent=recent,
        neglect_margin=neglect_margin,
        neglect_min=neglect_min,
        how_given_gold=how_given_gold,
    )
    settings = AgentSettings(
        model=model,
        judge=judge,
        data=[str(p) for p in data] if data else None,
        options=options,
        single_task=single_task,
        limit=limit,
        max_connections=max_connections,
        max_retries=max_retries,
        timeout=timeout,
        temperature=temperature,
        max_tokens=max_tokens,
        repair_mojibake=repair_mojibake,
        bertscore=bertscore,
        bertscore_model=bertscore_model,
        cache=not no_cache,
        seed=seed,
        log_samples=log_samples,
        out=str(out) if out else default_out(f"agent-{state}-{model}"),
    )
    try:
        result = run_agent(settings, display=display, overwrite=overwrite)
    except (ValueError, OSError) as exc:  # an unknown model API (inspect_ai raises ValueError), a bad path
        raise fail(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    print_agent_summary(result.summary, f"{model}: support agent chain (state {state}, {mode})")
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
