"""Conventions every ``rescue`` command shares, declared once.

- **Exit codes**: 0 success, 1 a check that ran and failed (``tasks build --strict``), 2 bad input
  (the same code click uses for a usage error), 130 interrupted.
- **Errors**: one line ``error: <message>`` on stderr, never a traceback (``RESCUE_DEBUG=1`` lets
  one through, for bug reports). Every error of the package derives from
  :class:`~rescue_bench.errors.RescueError`, and :func:`guard` formats them all, in one place. Data
  problems are listed one per line, each naming file, line, clip, row and field. :func:`command`
  registers a function with that guard; a test checks that every command of ``rescue`` has it.
- **Options** that several commands take (``--data``, ``--tasks``, ``--mode``, ``--context``,
  ``--repair-mojibake``, ``--display``) are declared here once, with one check each. An option that
  sets a field of the settings (the engine's ``RunSettings``, the agent's and the closed loop's
  options) is made by :func:`setting` from that field: its default, bounds and help are the field's.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar, cast

import typer
from pydantic import BaseModel

from rescue_bench.engine.settings import EvalSettings, RunSettings

# the exit codes are declared in rescue_bench.errors; the commands take them from here
from rescue_bench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from rescue_bench.errors import EXIT_CHECK_FAILED as EXIT_CHECK_FAILED

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.data.models import Clip
    from rescue_bench.labels import CueMode, TaskName
    from rescue_bench.runinfo import RunInfo


MAX_SHOWN_PROBLEMS = 50
"""Data problems listed before pointing at ``rescue data validate`` for the rest."""

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    """Print ``error: <message>`` as one line on stderr and return the exit to raise."""
    typer.echo(f"error: {' '.join(str(message).split())}", err=True)
    return typer.Exit(code)


def data_error_exit(problems: Sequence[Any], hint: str | None = None) -> typer.Exit:
    """List data problems, one line each (at most :data:`MAX_SHOWN_PROBLEMS`), then ``hint`` (the next
    step) when given; return the exit (2) to raise.

    One problem is one line and nothing else: the exit code says that nothing was written.
    """
    for problem in problems[:MAX_SHOWN_PROBLEMS]:
        typer.echo(str(problem), err=True)
    hidden = len(problems) - MAX_SHOWN_PROBLEMS
    if hidden > 0:
        typer.echo(f"error: ... and {hidden} more; run `rescue data validate` to list all", err=True)
    if hint:
        typer.echo(hint, err=True)
    return typer.Exit(EXIT_BAD_INPUT)


# What typer reports itself (its exit, an abort, a usage error): the guard lets these through. They
# are named through typer, never through the `click` package: typer 0.2x carries its own copy of click
# (typer._click) and raises that copy's exceptions, which are not click's; older typer raises click's.
_CLICK_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
TYPER_HANDLED: tuple[type[Exception], ...] = (typer.Exit, typer.Abort, _CLICK_ERROR)


def guard(func: F) -> F:
    """The error guard of every command, the one place that formats the package's errors.

    - every :class:`~rescue_bench.errors.RescueError` (the root of all of them): its one line, or one
      line per problem when it carries ``problems`` (a list of data problems); exit 2;
    - a module of an optional extra that is not installed: one line naming the extra; exit 2;
    - Ctrl-C (or :class:`~rescue_bench.errors.RunInterrupted`): one line, exit 130;
    - anything else is a bug: one line ``unexpected <type>: ...`` pointing at ``RESCUE_DEBUG=1``.

    With ``RESCUE_DEBUG=1`` every error but an interrupt propagates, with its traceback (and its
    notes: a failed worker's own traceback).
    """
    if getattr(func, "__rescue_guarded__", False):
        return func

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from rescue_bench.errors import RescueError, RunInterrupted, debug_enabled
        from rescue_bench.extras import missing_extra

        try:
            return func(*args, **kwargs)
        except TYPER_HANDLED:
            raise
        except (RunInterrupted, KeyboardInterrupt) as exc:
            raise fail(str(exc) or "interrupted", EXIT_INTERRUPTED) from None
        except RescueError as exc:
            if debug_enabled():
                raise
            problems = getattr(exc, "problems", None)
            if problems:
                raise data_error_exit(problems, getattr(exc, "hint", None)) from None
            raise fail(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the contract is: never a traceback
            hint = missing_extra(exc) if isinstance(exc, ModuleNotFoundError) else None
            if debug_enabled():
                raise
            if hint is not None:
                raise fail(str(hint)) from None
            raise fail(f"unexpected {type(exc).__name__}: {exc} (set RESCUE_DEBUG=1 for details)") from None

    wrapper.__rescue_guarded__ = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def command(app: typer.Typer, name: str | None = None, **kwargs: Any) -> Callable[[F], F]:
    """``@command(app)``: register a function as a command of ``app``, behind :func:`guard`."""

    def register(func: F) -> F:
        guarded = guard(func)
        app.command(name, **kwargs)(guarded)
        return guarded

    return register


# --------------------------------------------------------------------------------------------------
# shared options and their checks
# --------------------------------------------------------------------------------------------------

def resolve_data_option(values: list[Path] | None) -> list[Path] | None:
    """``--data``: each ``hf:OWNER/NAME[@REVISION]`` becomes the release of that Hugging Face dataset
    at that revision, fetched into the cache unless a valid copy is there
    (:func:`rescue_bench.data.fetch.resolve_data`); paths stay as they are. A fetch that fails is one
    line (the guard's; typer's own callbacks would show a usage box)."""
    if not values or not any(str(v).startswith("hf:") for v in values):
        return values
    from rescue_bench.data.fetch import FetchError, resolve_data

    try:
        return [resolve_data(v) for v in values]
    except FetchError as exc:
        raise fail(str(exc)) from None


DataOption = Annotated[
    Optional[list[Path]],  # noqa: UP007 - typer needs Optional here
    typer.Option(
        "--data", "-d", callback=resolve_data_option,
        help="Release JSONL file or per-clip folder, or hf:OWNER/NAME[@REVISION] (a revision of the Hugging Face dataset, "
        "fetched into the cache); repeatable. Default: the bundled synthetic demo.",
    ),
]
def _nonempty_tasks(value: str) -> str:
    """``--tasks``: an empty list (``''``, ``','``) is refused, not read as all six (say ``all``)."""
    if value is not None and not any(part.strip() for part in value.split(",")):
        raise typer.BadParameter("no task named; give some of itp,rpp,stp,ssp,er,vp, or 'all'")
    return value


TasksOption = Annotated[
    str, typer.Option("--tasks", "-t", callback=_nonempty_tasks, help="Comma-separated tasks: itp,rpp,stp,ssp,er,vp (or 'all').")
]
ModeOption = Annotated[str, typer.Option("--mode", help="Cues shown: dialogue, audio, visual or audiovisual.")]
ContextOption = Annotated[Optional[int], typer.Option("--context", help=EvalSettings.model_fields["context"].description)]  # noqa: UP007
"""``--context`` of the commands that build instances without running them (``tasks``), as ``rescue eval``'s."""

# --------------------------------------------------------------------------------------------------
# options built from the settings' fields
# --------------------------------------------------------------------------------------------------

FIELD_OF_OPTION = "__rescue_field__"
"""Attribute :func:`setting` puts on each option it makes: the ``(settings class, field name)`` it was
built from (a test walks every command and checks that each option naming a field is such an option)."""


def setting(
    model: type[BaseModel],
    name: str,
    *param_decls: str,
    help: str | None = None,  # noqa: A002 - typer's own name
    typer_range: bool = True,
    **kwargs: Any,
) -> Any:
    """A typer option made from the field ``name`` of the settings class ``model``: the field's
    default, its bounds (``ge``/``le`` become typer's ``min``/``max``: a value out of range is
    typer's usage error, exit 2) and its ``description`` as the help (``help`` when the command
    says it in its own words, e.g. what ``--limit`` counts). The option is the parameter's default
    (``limit: Optional[int] = setting(RunSettings, "limit", "--limit")``), so the command declares
    neither the default nor the range: the settings own them.

    ``typer_range=False`` leaves the range to a check of the command's own that names the meaning
    of the bound (``--context``'s -1 is "all previous rows": :func:`check_context`)."""
    import annotated_types

    info = model.model_fields[name]
    if info.is_required():
        default: Any = ...
    elif info.default_factory is not None:
        raise TypeError(f"{model.__name__}.{name} has a default factory; its option states its default itself")
    else:
        default = info.default
    bounds: dict[str, Any] = {}
    for item in info.metadata if typer_range else ():
        if isinstance(item, annotated_types.Ge):
            bounds["min"] = item.ge
        elif isinstance(item, annotated_types.Le):
            bounds["max"] = item.le
        elif isinstance(item, (annotated_types.Gt, annotated_types.Lt)):
            raise TypeError(f"{model.__name__}.{name}: a strict bound has no typer option form; use ge/le")
    option = typer.Option(default, *param_decls, help=help or info.description, **bounds, **kwargs)
    setattr(option, FIELD_OF_OPTION, (model, name))
    return option


def settings_values(settings: type[BaseModel], params: dict[str, Any], /, **values: Any) -> dict[str, Any]:
    """The keyword arguments of ``settings`` from a command's parameters: every parameter named as a
    field of ``settings``, then ``values`` (what the command checked or derived) over them."""
    return {**{k: v for k, v in params.items() if k in settings.model_fields}, **values}


# the engine's run options (RunSettings), shared by every command that runs the engine
Judge = setting(RunSettings, "judge", "--judge", "-j")
Limit = setting(RunSettings, "limit", "--limit")
MaxConnections = setting(RunSettings, "max_connections", "--max-connections")
MaxRetries = setting(RunSettings, "max_retries", "--max-retries")
Timeout = setting(RunSettings, "timeout", "--timeout")
Temperature = setting(RunSettings, "temperature", "--temperature")
MaxTokens = setting(RunSettings, "max_tokens", "--max-tokens")
JudgeMaxTokens = setting(RunSettings, "judge_max_tokens", "--judge-max-tokens")
Bertscore = setting(RunSettings, "bertscore", "--bertscore/--no-bertscore")
BertscoreModel = setting(RunSettings, "bertscore_model", "--bertscore-model")
RepairMojibake = setting(RunSettings, "repair_mojibake", "--repair-mojibake")
Cache = setting(RunSettings, "cache", "--cache/--no-cache")
Seed = setting(RunSettings, "seed", "--seed")
LogSamples = setting(RunSettings, "log_samples", "--log-samples/--no-log-samples")

RepairOption = Annotated[bool, typer.Option("--repair-mojibake", help=RunSettings.model_fields["repair_mojibake"].description)]
"""``--repair-mojibake`` of the commands that read data but run no engine (``tasks``, ``data``)."""
OverwriteOption = Annotated[bool, typer.Option("--overwrite", help="Replace the run in --out when it is another run (other tasks, model, data or settings).")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Plan the run and print the calls, prompt size and tokens it would send (and its cost with --price-in/--price-out); send nothing, write nothing.")
]
PriceInOption = Annotated[Optional[float], typer.Option("--price-in", min=0.0, help="--dry-run: the price of a million prompt tokens, for the cost estimate.")]  # noqa: UP007
PriceOutOption = Annotated[Optional[float], typer.Option("--price-out", min=0.0, help="--dry-run: the price of a million output tokens, for the cost estimate.")]  # noqa: UP007
DISPLAYS = ("full", "rich", "plain", "log", "none")
"""The progress displays a run takes (``--display``): inspect_ai's, and the worker pool's bar."""


def _known_display(value: str) -> str:
    if value not in DISPLAYS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(DISPLAYS)}")
    return value


DisplayOption = Annotated[
    str, typer.Option("--display", callback=_known_display, help="Progress display: full, rich, plain, log or none.")
]


@dataclass(frozen=True)
class RunOptions:
    """The options every run command shares (:func:`run_options` declares them once): how calls go,
    how the run shows and what it records, and ``--dry-run`` with its prices. A command reads them as
    ``run.<name>``; :meth:`settings_values` gives the ones naming a settings field."""

    max_connections: int | None = None
    max_retries: int | None = None
    timeout: int | None = None
    temperature: float | None = None
    judge_max_tokens: int | None = None
    bertscore_model: str | None = None
    repair_mojibake: bool = False
    cache: bool = True
    seed: int = 0
    log_samples: bool = True
    display: str = "full"
    overwrite: bool = False
    dry_run: bool = False
    price_in: float | None = None
    price_out: float | None = None
    given: tuple[str, ...] = ()
    """The options the command declared (the others keep the settings' defaults)."""

    def settings_values(self) -> dict[str, Any]:
        """The declared options by name (:func:`settings_values` keeps those naming a field)."""
        return {name: getattr(self, name) for name in self.given}


DEFAULT_RUN = RunOptions()
"""The shared options' defaults (a run command called from Python without them)."""

SHARED_OPTIONS: dict[str, tuple[Any, Any]] = {
    "max_connections": (Optional[int], MaxConnections),  # noqa: UP045 - typer reads the annotation at run time
    "max_retries": (Optional[int], MaxRetries),  # noqa: UP045
    "timeout": (Optional[int], Timeout),  # noqa: UP045
    "temperature": (float, Temperature),
    "judge_max_tokens": (int, JudgeMaxTokens),
    "bertscore_model": (Optional[str], BertscoreModel),  # noqa: UP045
    "repair_mojibake": (bool, RepairMojibake),
    "cache": (bool, Cache),
    "seed": (int, Seed),
    "display": (DisplayOption, "full"),
    "log_samples": (bool, LogSamples),
    "overwrite": (OverwriteOption, False),
    "dry_run": (DryRunOption, False),
    "price_in": (PriceInOption, None),
    "price_out": (PriceOutOption, None),
}
"""Each shared run option: its annotation and its typer option (or default, for an ``Annotated`` one)."""

ENGINE_RUN = (
    "max_connections", "max_retries", "timeout", "temperature", "judge_max_tokens", "repair_mojibake", "cache", "seed",
    "display", "log_samples", "overwrite", "dry_run", "price_in", "price_out",
)
"""The shared options of ``rescue eval``, ``rescue agent eval``, ``rescue sim eval`` and ``rescue sim fidelity``."""


def run_options(*names: str) -> Callable[[F], F]:
    """Give a run command the shared options ``names`` (:data:`SHARED_OPTIONS`), declared here once.

    The command takes its own options as parameters and the shared ones as one parameter ``run``
    (a :class:`RunOptions`); typer sees the shared options after the command's own, so ``--help``
    lists them and each is checked as any other option."""
    unknown = set(names) - set(SHARED_OPTIONS)
    if unknown:
        raise TypeError(f"no shared run option {sorted(unknown)}")

    def decorate(func: F) -> F:
        signature = inspect.signature(func, eval_str=True)  # typer reads the annotations as objects
        own = [p for p in signature.parameters.values() if p.name != "run"]
        shared = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=SHARED_OPTIONS[name][1], annotation=SHARED_OPTIONS[name][0])
            for name in names
        ]

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            return func(**kwargs, run=RunOptions(**values, given=names))

        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + shared
        )
        return cast(F, wrapper)

    return decorate


RUN_INPUT_ERRORS: tuple[type[Exception], ...] = (ValueError, OSError)
"""What a run command reports as bad input although it is no project error: inspect_ai's
``ValueError`` for a model API it does not know, and an ``OSError`` for a path that cannot be used.
Nothing broader (a ``KeyError`` is a bug: the guard reports it as unexpected)."""


def run_input_error(exc: Exception) -> typer.Exit:
    """The exit of a run command for a :data:`RUN_INPUT_ERRORS` error: one line ``error: <type>:
    <first line>``, exit 2; under ``RESCUE_DEBUG=1`` the error itself propagates, with its traceback."""
    from rescue_bench.errors import debug_enabled

    if debug_enabled():
        raise exc
    first = str(exc).splitlines()[0] if str(exc) else ""
    return fail(f"{type(exc).__name__}: {first}")


def check_tasks(spec: str) -> list[TaskName]:
    """``--tasks``: the named tasks in canonical order (``all`` = the six); unknown -> exit 2."""
    from rescue_bench.tasks.build import parse_tasks

    try:
        return parse_tasks(spec)
    except ValueError as exc:
        raise fail(str(exc)) from None


def check_mode(mode: str) -> CueMode:
    """``--mode``: one of the cue modes (case-insensitive); anything else -> exit 2."""
    from rescue_bench.labels import CUE_MODES

    value = mode.strip().lower()
    if value not in CUE_MODES:
        raise fail(f"unknown mode {mode!r} (--mode); expected one of {', '.join(CUE_MODES)}")
    return value


def check_context(context: int | None) -> int | None:
    """``--context``: ``None`` (the per-task defaults), -1 (all previous rows) or a number >= 0."""
    if context is not None and context < -1:
        raise fail(f"--context must be -1 (all previous rows) or a number >= 0, got {context}")
    return context


def check_model(model: str) -> str:
    """``--model``: any inspect_ai model name, or one of the offline baselines (``baseline/<method>``)."""
    from rescue_bench.labels import BASELINE_PREFIX, is_baseline

    if is_baseline(model):
        from rescue_bench.baselines import BASELINES

        if model.removeprefix(BASELINE_PREFIX) not in BASELINES:
            raise fail(f"unknown baseline {model!r}; expected one of {', '.join(BASELINE_PREFIX + b for b in BASELINES)}")
    return model


def load_data(data: Sequence[Path] | None, repair_mojibake: bool = False) -> list[Clip]:
    """The clips of ``--data`` (the bundled demo when none is given); bad data raises
    :class:`~rescue_bench.data.DataError`, which :func:`guard` lists and turns into exit 2."""
    from rescue_bench.data.load import load_clips

    return load_clips(list(data) if data else None, repair_mojibake=repair_mojibake)


LENIENT_HINT = (
    "hint: fix the data (`rescue data validate FILE` lists every problem), or pass --lenient to leave out the instances "
    "whose gold is invalid (each named) and let the other problems through"
)
"""The next step a command that refuses invalid data prints (``rescue eval``, ``rescue tasks``)."""

LenientOption = Annotated[
    bool,
    typer.Option(
        "--lenient",
        help="Evaluate data with content errors: leave out (and name) the instances whose gold is outside its closed set "
        "or range, and let the other problems through as warnings. Default: refuse, naming file, line, clip, row and field.",
    ),
]


def load_checked_data(data: Sequence[Path] | None, repair_mojibake: bool = False, *, lenient: bool = False) -> Any:
    """The clips of ``--data`` (the demo when none is given) held to the data layer's rules
    (:func:`rescue_bench.data.validate.load_checked`): a content error refuses the data (exit 2,
    one line per problem, then :data:`LENIENT_HINT`) unless ``lenient``, which returns them as the
    result's problems."""
    from rescue_bench.data.validate import ContentError, load_checked

    try:
        return load_checked(list(data) if data else None, repair_mojibake=repair_mojibake, lenient=lenient)
    except ContentError as exc:
        raise ContentError(exc.problems, LENIENT_HINT) from None


def print_let_through(problems: Sequence[Any], *, shown: int = 10) -> None:
    """``--lenient``: the content errors let through, as warnings (the first ``shown``, then a count)."""
    if not problems:
        return
    for problem in problems[:shown]:
        typer.echo("warning: let through by --lenient: " + str(problem).removeprefix("error: "), err=True)
    more = f"; {len(problems) - shown} more: `rescue data validate` lists them" if len(problems) > shown else ""
    typer.echo(f"warning: {len(problems)} data error(s) let through by --lenient{more}", err=True)


def print_left_out(left_out: Mapping[str, Sequence[Any]], where: str, *, shown: int = 10) -> None:
    """``--lenient``: per task, how many instances were left out for an invalid gold, and which
    (the first ``shown``; ``where`` names the file that lists them all)."""
    for task, items in left_out.items():
        if not items:
            continue
        typer.echo(f"warning: {task.upper()}: {len(items)} instance(s) left out (gold outside its closed set or range):", err=True)
        for item in items[:shown]:
            typer.echo(f"  clip {item.sample_id}, row {item.row}, field {item.field}: {item.reason}", err=True)
        if len(items) > shown:
            typer.echo(f"  ... and {len(items) - shown} more (all in {where})", err=True)


def table_console() -> Any:
    """A rich console for tables: the terminal's width, or 140 columns when the output is not a
    terminal (rich's 80 would wrap every wide table of a piped or logged command)."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=140)


def fmt_number(
    value: float | None, digits: int = 4, *, percent: bool = False, sign: bool = False, suffix: str = "", missing: str = "-"
) -> str:
    """A number for a table cell or a line of a command's output, formatted one way everywhere:
    ``missing`` for none, a whole number with thousands separators, else ``digits`` decimals
    (``percent``: the share times 100; ``sign``: always signed), then ``suffix``."""
    if value is None:
        return missing
    if isinstance(value, int) and not isinstance(value, bool) and not percent:
        return f"{value:+,}{suffix}" if sign else f"{value:,}{suffix}"
    shown = 100 * value if percent else value
    return f"{shown:{'+' if sign else ''}.{digits}f}{suffix}"


def _count(value: int | None) -> str:
    return fmt_number(value)


def print_dry_run(dry: Any, price_in: float | None, price_out: float | None) -> None:
    """``--dry-run``'s table: each part of the run (calls at most, prompt size, tokens), the totals,
    and with prices the estimated cost."""
    from rich.table import Table

    console = table_console()
    table = Table(title=f"Dry run ({dry.kind}): nothing sent, nothing written", title_justify="left", show_edge=False)
    for col in ("part", "role", "instances", "calls (at most)", "prompt chars", "prompt tokens (est.)", "output tokens (at most)"):
        table.add_column(col, justify="left" if col in ("part", "role") else "right")
    for part in dry.parts:
        table.add_row(part.part, part.role, _count(part.instances), _count(part.calls), _count(part.prompt_chars),
                      _count(part.prompt_tokens), _count(part.max_output_tokens))
    table.add_row("total", "", "", _count(dry.calls), _count(sum(p.prompt_chars for p in dry.parts)), _count(dry.prompt_tokens),
                  _count(dry.max_output_tokens))
    console.print(table)
    from rescue_bench.engine.dryrun import CHARS_PER_TOKEN

    calls, tokens = dry.if_unusable
    console.print(
        f"calls and output tokens: at most (every re-ask, trimming and chain step; no retries); prompt chars and tokens: "
        f"expected (every answer usable at the first ask, the agent speaking where the annotated therapist spoke, "
        f"{dry.expected_calls:,} calls), tokens as characters / {CHARS_PER_TOKEN:g}; if no answer is usable (nothing judged, "
        f"a silent agent, every re-ask): {calls:,} calls, {tokens:,} prompt tokens",
        highlight=False, markup=False,
    )
    for note in dry.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    if price_in is not None or price_out is not None:
        cost_in, cost_out = dry.cost(price_in or 0.0, price_out or 0.0)
        out = "-" if cost_out is None else f"{cost_out:.2f}"
        console.print(f"estimated cost: {cost_in:.2f} for the prompts + at most {out} for the answers "
                      f"(at {price_in or 0:g} / {price_out or 0:g} per million tokens)", highlight=False, markup=False)


def print_usage(info: RunInfo) -> None:
    """The tokens a run used, per role (``run.json``'s ``usage_by_role``), beside its estimate."""
    from rich.table import Table

    used = info.usage_by_role or {}
    if not used:
        return
    estimate = info.estimate.by_role if info.estimate is not None else {}
    table = Table(title="Tokens per role", title_justify="left", show_edge=False)
    for col in ("role", "input tokens", "output tokens", "estimated prompt tokens", "output tokens (at most)"):
        table.add_column(col, justify="left" if col == "role" else "right")
    for role, u in used.items():
        e = estimate.get(role)
        table.add_row(role, _count(u.input_tokens), _count(u.output_tokens), _count(e.prompt_tokens if e else None),
                      _count(e.max_output_tokens if e else None))
    table_console().print(table)
    refused = (info.counts or {}).get("overflow")
    if isinstance(refused, int) and refused:
        table_console().print(
            f"note: the {refused} prompts refused as longer than the model's context window cost no tokens; the estimate "
            "counts them unless --context-window gives the window", highlight=False, markup=False,
        )
