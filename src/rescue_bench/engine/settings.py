"""What defines a run, and the plain pieces the run driver and the workers share.

No inspect_ai here: the parent of a ``--workers`` run and ``rescue eval``'s checks import this module
without paying inspect_ai's import time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.agent.options import AgentOptions
from rescue_bench.errors import RescueError, RunInterrupted
from rescue_bench.labels import TASKS, EvalMode, Rubric, TaskName, is_baseline
from rescue_bench.runinfo import GenerateRequest, Limits, Usage
from rescue_bench.sim.options import DEFAULT_SIMULATOR, OFFLINE_SIMULATORS, SimOptions

__all__ = [
    "AgentSettings",
    "EvalSettings",
    "Evaluated",
    "RunInterrupted",
    "RunSettings",
    "SimSettings",
    "WorkerFailed",
    "WorkerPlan",
    "available_cpus",
    "eval_args",
    "generate_config",
    "judge_config",
    "limits",
    "plan_workers",
    "shard",
    "share_connections",
    "simulator_config",
    "task_args",
]

JUDGE_TEMPERATURE = 0.0
"""The judge is sent temperature 0 (and the run's seed) whatever the model under evaluation gets:
a judge score should not depend on a draw."""

MAX_RETRIES = 5
"""Retries per call by default, on the wire (the providers' own client retries are off:
``providers.CLIENT_RETRIES_OFF``): inspect_ai waits about 3, 6, 12, 24 and 48 s (exponential, with up to
3 s of jitter) between the attempts, so a call to a server that always fails gives up after about 2
minutes, and the run's circuit (:class:`~rescue_bench.engine.channel.RunChannel`) stops sending after
a wave of such calls: the run ends as failed within a few minutes."""
MODEL_MAX_TOKENS = 1024
"""Most tokens of an answer of the model under evaluation: a task's JSON answer, a chain step or a
therapist's turn is a few hundred at most. A reasoning model whose reasoning counts against it
needs ``--max-tokens`` raised."""
JUDGE_MAX_TOKENS = 512
"""Most tokens of a judge's answer (a score, or the authors' two scores, in JSON)."""
SIMULATOR_MAX_TOKENS = 1024
"""Most tokens of a simulator's answer (who speaks, the turn, the hidden state of every client)."""
DRAFTER_MAX_TOKENS = 8192
"""Most tokens of a drafter's answer (a window of up to 40 cues drafted as rows, with a summary)."""

MAX_FAILED_SHARE = 0.05
"""A closed-loop run (``rescue sim eval``, ``rescue sim fidelity``) fails when more than this share of
its episode steps had an agent or simulator call that failed after its retries (a step without an
answer is not the model's behaviour); any share above zero is warned about."""

Workers = Annotated[int, Field(ge=1)] | Literal["auto"]
"""``--workers``: a number of processes, or ``"auto"`` (see :func:`plan_workers`)."""

OnOverflow = Literal["wrong", "trim", "fail"]
"""``--on-overflow``: what a prompt longer than the model's context window becomes (:mod:`rescue_bench.engine.overflow`)."""
ON_OVERFLOW: tuple[OnOverflow, ...] = ("wrong", "trim", "fail")


class RunSettings(BaseModel):
    """What every run of the engine takes (``rescue eval``, ``rescue agent``, ``rescue sim`` and
    ``rescue annotate draft``); written to ``run.json`` (no secrets in here). The command-specific
    settings extend it.

    Each field's default, bounds (``ge``/``le``) and ``description`` are THE declaration: the
    commands build their options from them (``rescue_bench.cli._common.setting``), so ``--help``,
    the range checks and a run made from Python agree. :func:`eval_args`, :func:`task_args` and
    :func:`generate_config` are the one mapping of these fields to inspect_ai's arguments.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default="baseline/majority", description="inspect_ai model, e.g. openai/gpt-4o or baseline/majority.")
    judge: str | None = Field(default=None, description="Judge model for ER/VP (none: judge scores left empty).")
    data: list[str] | None = None
    limit: int | None = Field(default=None, ge=1, description="Evaluate only the first N instances of each task.")
    max_connections: int | None = Field(default=None, ge=1, description="Bound on model and judge calls in flight, over the whole run.")
    max_retries: int = Field(
        default=MAX_RETRIES,
        ge=0,
        description=(
            "Retries of a model, judge or simulator call after a transient error (HTTP 429/5xx, a dropped connection), on the "
            "wire: N retries send at most N + 1 requests per call (the OpenAI and Anthropic clients' own retries are off), "
            "with inspect_ai's exponential backoff (about 3, 6, 12, 24, 48 s, with jitter): the default gives up on a call "
            "after about 2 minutes."
        ),
    )
    timeout: int | None = Field(
        default=None, ge=1, description="Seconds one attempt of a model call may take before it is abandoned and retried."
    )
    temperature: float | None = Field(default=0.0, description="Sampling temperature (the paper used 0).")
    max_tokens: int | None = Field(
        default=MODEL_MAX_TOKENS, ge=1, description="Most tokens per answer of the model under evaluation (sent with every call)."
    )
    judge_max_tokens: int = Field(default=JUDGE_MAX_TOKENS, ge=1, description="Most tokens per judge answer (sent with every judge call).")
    repair_mojibake: bool = Field(
        default=False, description="Repair mojibake (e.g. 'â€™') in all text with ftfy before use; off keeps gold text untouched."
    )
    bertscore: bool = Field(default=True, description="Compute BERTScore F1 for ER/VP.")
    bertscore_model: str | None = Field(default=None, description="BERTScore backbone (path or name; default: bundled all-MiniLM-L6-v2).")
    cache: bool = Field(default=True, description="Use the response cache (RESCUE_CACHE_DIR); --no-cache makes every call again.")
    seed: int = Field(
        default=0,
        description="Seed of the random/prior baselines, also sent with every model and judge call (providers that support it).",
    )
    log_samples: bool = Field(
        default=True, description="Write every sample to the inspect logs (for inspect view); off runs about a third faster."
    )
    out: str = "rescue_runs/latest"

    @property
    def is_baseline(self) -> bool:
        """The model is an offline baseline (no calls, no cache, no workers)."""
        return is_baseline(self.model)


class EvalSettings(RunSettings):
    """Everything that defines a ``rescue eval`` run."""

    vp_rubric: Rubric = Field(
        default="default",
        description="VP judge rubric: default (1-5) or authors (the authors' 0-2 target + 0-4 viewpoint, reported as judge_authors 0-6).",
    )
    tasks: list[TaskName] = Field(default_factory=lambda: list(TASKS))
    mode: EvalMode = Field(
        default="dialogue",
        description="Cues shown: dialogue, audio, visual or audiovisual; or video (dialogue plus each row's clip, needs --assets).",
    )
    context: int | None = Field(
        default=None, ge=-1, description="Rows of context for every task (-1 = all previous rows). Default: 3, and all for RPP."
    )
    """``None`` keeps the per-task defaults."""
    workers: Workers = Field(
        default="auto",
        description=(
            "Processes to spread the instances over, or auto: one per CPU with --max-connections (at most one per "
            "connection and per 200 instances), else one; --max-connections is shared among them."
        ),
    )
    assets: str | None = Field(default=None, description="--mode video: assets folder with the row clips (rescue annotate clips).")
    context_window: int | None = Field(
        default=None,
        ge=1,
        description=(
            "The model's context window in tokens, when you know it: the estimate (--dry-run, run.json) counts the prompts "
            "that will not fit, which cost nothing, and what trimming them costs; the run itself never reads it."
        ),
    )
    on_overflow: OnOverflow = Field(
        default="wrong",
        description=(
            "A prompt longer than the model's context window: wrong (scored as a wrong answer, as the paper scores an "
            "unusable one, so runs stay comparable with it), trim (the oldest context rows left out until it fits) or fail "
            "(the run fails). Counted in run.json and the tables either way."
        ),
    )
    lenient: bool = Field(
        default=False,
        description=(
            "Evaluate data with content errors: leave out the instances whose gold is outside its closed set or range "
            "(counted and named per task in the console, run.json and summary.json) and let the other errors through. "
            "Default: refuse the data, naming file, line, clip, row and field."
        ),
    )


class AgentSettings(RunSettings):
    """Everything that defines a ``rescue agent`` run (the shared run settings, the agent's options)."""

    model: str = Field(
        default=RunSettings.model_fields["model"].default,
        description="inspect_ai model, e.g. openai/gpt-4o, or baseline/<method> for the baseline chain.",
    )
    options: AgentOptions = Field(default_factory=AgentOptions)
    single_task: bool = Field(
        default=True, description="Also run the six single-task prompts on the same rows (the chain vs single-task ablation)."
    )
    out: str = "rescue_runs/agent"


class SimSettings(RunSettings):
    """Everything that defines a ``rescue sim eval`` (or ``fidelity``) run; ``model`` is the agent."""

    model: str = Field(
        default="baseline/attend",
        description="The agent: baseline/silent|group|attend|distressed|oracle, baseline/<method> (the baseline chain), or an inspect_ai model.",
    )
    simulator: str = Field(
        default=DEFAULT_SIMULATOR,
        description="Who plays the clients: fitted (offline, counted from annotated sessions), scripted (offline fixed rules: a smoke test) or an inspect_ai model.",
    )
    sim_model: str | None = Field(
        default=None, description="The fitted simulator's model file (rescue sim fit); default: the bundled one, fitted on the demo."
    )
    options: SimOptions = Field(default_factory=SimOptions)
    simulator_max_tokens: int = Field(
        default=SIMULATOR_MAX_TOKENS, ge=1, description="Most tokens per simulator answer (sent with every simulator call)."
    )
    max_failed_share: float = Field(
        default=MAX_FAILED_SHARE,
        ge=0,
        le=1,
        description="Share of episode steps with a failed agent or simulator call (after retries) above which the run fails (exit 2).",
    )
    out: str = "rescue_runs/sim"


# --------------------------------------------------------------------------------------------------
# the one mapping of the run settings to inspect_ai's arguments
# --------------------------------------------------------------------------------------------------


def eval_args(settings: RunSettings, *, tasks: int | None = None) -> dict[str, Any]:
    """``inspect_ai.eval``'s keyword arguments for the call limits and logging of ``settings``.

    A limit left unset is not passed (inspect_ai's default holds). With ``max_connections``,
    ``tasks`` (how many tasks the eval runs) become ``max_tasks``: the tasks run at the same time,
    their calls bounded by the run's channel. ``timeout`` is per attempt, then retried: inspect_ai's
    ``timeout`` would instead bound a call with all its retries, and a stalled connection would hold
    its slot until the client's own 10-minute limit.
    """
    args: dict[str, Any] = {}
    if settings.max_connections is not None:
        args["max_connections"] = settings.max_connections
        if tasks is not None:
            args["max_tasks"] = tasks
    args["max_retries"] = settings.max_retries
    if settings.timeout is not None:
        args["attempt_timeout"] = settings.timeout
    args["log_samples"] = settings.log_samples
    return args


def task_args(settings: RunSettings) -> dict[str, Any]:
    """The keyword arguments of the engine's task factories (``rescue_task``, ``agent_task``) that
    come from ``settings``: the cache (never for an offline baseline: it makes no calls), what is
    sent with every call of the model under evaluation, and the per-attempt timeout of the judge."""
    return {
        "cache": settings.cache and not settings.is_baseline,
        "temperature": settings.temperature,
        "seed": settings.seed,
        "max_tokens": settings.max_tokens,
        "attempt_timeout": settings.timeout,
    }


def generate_config(settings: RunSettings) -> Any:
    """The ``GenerateConfig`` of a task that is not one of the factories above (the closed loop's
    episodes, the annotation drafts): the temperature, seed and ``max_tokens`` of ``settings``."""
    from inspect_ai.model import GenerateConfig

    return GenerateConfig(temperature=settings.temperature, seed=settings.seed, max_tokens=settings.max_tokens)


def judge_config(settings: RunSettings) -> Any:
    """The ``GenerateConfig`` the judge (the ``grader`` role) is made with: temperature
    :data:`JUDGE_TEMPERATURE`, the run's seed, retries and per-attempt timeout, and ``judge_max_tokens``."""
    from inspect_ai.model import GenerateConfig

    return GenerateConfig(
        temperature=JUDGE_TEMPERATURE, seed=settings.seed, max_tokens=settings.judge_max_tokens,
        max_retries=settings.max_retries, attempt_timeout=settings.timeout,
    )


def simulator_config(settings: SimSettings) -> Any:
    """The ``GenerateConfig`` sent with every call of a model simulator: the run's temperature, seed,
    retries and per-attempt timeout, and ``simulator_max_tokens``."""
    from inspect_ai.model import GenerateConfig

    return GenerateConfig(
        temperature=settings.temperature, seed=settings.seed, max_tokens=settings.simulator_max_tokens,
        max_retries=settings.max_retries, attempt_timeout=settings.timeout,
    )


def limits(settings: RunSettings) -> Limits:
    """``run.json``'s ``limits``: how long a call may retry, and the most tokens of each role's answer."""
    roles = {"model": settings.max_tokens, "judge": settings.judge_max_tokens if settings.judge else None}
    if isinstance(settings, SimSettings):
        roles["simulator"] = settings.simulator_max_tokens if settings.simulator not in OFFLINE_SIMULATORS else None
    return Limits(
        max_retries=settings.max_retries,
        backoff="inspect_ai's exponential backoff: about 3, 6, 12, 24, 48 s ... (at most 30 min), plus up to 3 s of jitter",
        attempt_timeout=settings.timeout,
        max_tokens={role: n for role, n in roles.items() if n is not None},
    )


class WorkerFailed(RescueError):
    """A worker process of a ``--workers N`` run failed; the message is its one-line error."""


RecordT = TypeVar("RecordT")


@dataclass
class Evaluated(Generic[RecordT]):
    """What evaluating a settings' instances (or one shard of them) gives back, before any output."""

    records: list[RecordT]
    """One record per evaluated instance (the scorer's, or an invalid "no answer" record): result
    records (:class:`~rescue_bench.records.ResultRow`), with the agent's chain records beside them in
    an agent run."""
    usage: dict[str, Usage]
    """Token usage per model (see ``merge_usage``)."""
    statuses: list[str | None]
    """Status of every inspect_ai log written."""
    unanswered: dict[str, str] = field(default_factory=dict)
    """Instances whose call never returned a reply (after retries), by id: the error that stopped each."""
    logs: list[str] = field(default_factory=list)
    """The inspect_ai logs this run wrote (their paths)."""
    requests: dict[str, GenerateRequest] = field(default_factory=dict)
    """The first model (``"model"``) and judge (``"judge"``) request as sent (see ``RunChannel.note_request``)."""
    role_usage: dict[str, Usage] = field(default_factory=dict)
    """Token usage per role (``model``, ``judge``; see ``evaluate.role_usage``)."""


MIN_CALLS_PER_WORKER = 200
"""``auto`` gives no process fewer instances than this: a worker's start-up (imports, the plan:
about 3 s of CPU) would outweigh its share of the calls."""


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class WorkerPlan:
    """How many processes a run evaluates its instances in, and why (recorded in ``run.json``)."""

    requested: int | Literal["auto"]
    workers: int
    """Processes (1: the run is evaluated in the ``rescue`` process itself); each takes one static
    shard of every task's instances (:func:`shard`)."""
    reason: str
    cpus: int
    max_connections: int | None


def plan_workers(
    requested: int | Literal["auto"],
    *,
    cpus: int,
    max_connections: int | None,
    baseline: bool = False,
    instances: int | None = None,
) -> WorkerPlan:
    """How many processes a run uses (pure; ``rescue eval`` passes :func:`available_cpus` and the
    plan's instance count).

    A number is taken as asked, but never more than ``max_connections`` (every worker keeps at least
    one connection). ``"auto"`` is one process per CPU, never more than ``max_connections``, nor more
    than one per :data:`MIN_CALLS_PER_WORKER` ``instances``: against a fast endpoint a run is
    CPU-bound in inspect_ai's per-sample work, and against a slow one the extra process costs only
    its start-up, on another CPU. Without ``max_connections`` (inspect_ai's own per-model limit, 10
    for most providers, which one process keeps busy) and for the offline baselines (no calls): one.
    """
    def plan(n: int, reason: str) -> WorkerPlan:
        return WorkerPlan(requested, n, reason, cpus, max_connections)

    if baseline:
        return plan(1, "an offline baseline makes no calls")
    if requested != "auto":
        n = min(requested, max_connections) if max_connections is not None else requested
        capped = f" (at most --max-connections {max_connections})" if n < requested else ""
        return plan(n, f"--workers {requested}{capped}")
    if max_connections is None:
        return plan(1, "auto: no --max-connections: inspect_ai's per-model limit, which one process keeps busy")
    bounds = {"CPUs": cpus, "--max-connections": max_connections}
    if instances is not None:
        bounds[f"{instances} instances / {MIN_CALLS_PER_WORKER} per worker"] = max(1, instances // MIN_CALLS_PER_WORKER)
    n = max(1, min(bounds.values()))
    binding = min(bounds, key=lambda k: bounds[k])
    return plan(n, f"auto: one process per CPU, capped by {binding} ({bounds[binding]})")


def share_connections(max_connections: int | None, workers: int) -> list[int | None]:
    """Each worker's part of ``--max-connections``: they add up to it (the first ones take the rest)."""
    if max_connections is None:
        return [None] * workers  # inspect_ai's default, per worker
    base, rest = divmod(max_connections, workers)
    return [max(1, base + (1 if k < rest else 0)) for k in range(workers)]


T = TypeVar("T")


def shard(items: Sequence[T], index: int, count: int) -> list[T]:
    """Worker ``index``'s static shard of ``items`` (of ``count``): every ``count``-th item from the
    ``index``-th, so each shard takes its share of every clip and every task, long prompts and short."""
    return list(items[index::count])
