"""Closed-loop episodes on inspect_ai, and the run driver of ``rescue sim eval``.

One inspect sample per episode (:class:`rescue_bench.sim.Episode`). The solver drives the episode:
each agent request is one ``generate`` call of the model under evaluation, each simulator request
one call of the ``--simulator`` model, both through inspect_ai's response cache (a re-run repeats no
finished call: a stopped run resumes where it stopped) and holding a slot of the run's channel
(``--max-connections`` bounds every call in flight). A call that fails after its retries gives its
step no answer, as in the agent's chain, so an episode always finishes; the run counts it
(:class:`CallTally`). Above ``--max-failed-share`` of episode steps with a failed call (and with
any failed judge call) the run is failed like ``rescue eval``'s: ``run.json`` says so with the counts
and the one-line cause, no ``summary.json`` is written, the command exits 2, and the same command
resumes. Call counts in ``run.json`` count answered calls only.

Runs with nothing to call (an offline agent, ``baseline/...``, against an offline simulator, ``fitted`` or ``scripted``)
are run in process, without inspect_ai and without logs.

Output folder::

    DIR/results/sim.jsonl   one episode per line (rescue_bench.sim.episode: start, steps, states, metrics)
    DIR/summary.json        {"sim": {scenario: {metric: {"value", "ci_low", "ci_high", "n"}, "episodes", "clips"}}}
    DIR/run.json            the run ("kind": "sim"): status and counts, gamma and lambda, calls per episode, usage
    DIR/logs/               inspect_ai logs (runs with a model)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import collect as gather

from rescue_bench.agent import AgentOptions, baseline_chain_answers
from rescue_bench.engine.channel import RunChannel, call_error, call_slot, request_key
from rescue_bench.engine.dryrun import DryRun, sim_estimate
from rescue_bench.engine.evaluate import log_usage, role_usage, run_inspect, sample_errors
from rescue_bench.engine.judge import CACHE, ask_judge, grader, to_messages
from rescue_bench.engine.outputs import intended_request, judge_intended, request_record
from rescue_bench.engine.plan import limited
from rescue_bench.engine.providers import SIMULATOR_ROLE, get_provider_model, use_cache_dir
from rescue_bench.engine.runfolder import RunStart, RunStatus, cause_of, finish_run, start_run
from rescue_bench.engine.settings import SimSettings, generate_config, simulator_config
from rescue_bench.errors import RunInterrupted
from rescue_bench.fileio import atomic_write_json, atomic_write_jsonl
from rescue_bench.gcpolicy import fewer_gc_passes
from rescue_bench.parse import parse_judge
from rescue_bench.runinfo import FidelityCalls, FidelityRunInfo, GenerateRequest, RunResult, SimCalls, SimRunInfo
from rescue_bench.sim import (
    OFFLINE_SIMULATORS,
    SIM_TASK,
    Episode,
    EpisodeStart,
    StrategyPrior,
    agent_kind,
    episode_starts,
    summarize,
)
from rescue_bench.sim.record import EpisodeRecord
from rescue_bench.sim.sensitivity import add_sensitivity
from rescue_bench.summary import FidelitySummary, SimSummary, summary_json

if TYPE_CHECKING:
    from rescue_bench.data.models import Clip
    from rescue_bench.prompts.render import Prompt
    from rescue_bench.sim.fidelity import FidelityRecord, PlausibilityKey

SIMULATOR_SAMPLE_INPUT = "closed-loop episode"




def build_episodes(settings: SimSettings, clips: Sequence[Any]) -> list[Episode]:
    """The run's episodes, fresh (clip order, then start row), limited by ``--limit``."""
    options = settings.options
    starts: list[EpisodeStart] = []
    points = []
    for clip in clips:
        s, p = episode_starts(clip, options)
        starts += s
        points += p
    starts = limited(starts, settings.limit)
    kind, method = agent_kind(settings.model)
    replay: dict[str, dict[str, str]] = {}
    if kind == "baseline":
        by_id = {p.id: p for p in points}
        agent_options = AgentOptions(state=options.state, mode=options.mode, context=options.context)
        chosen = [by_id[s.point_id] for s in starts]
        replay = baseline_chain_answers(clips, points, method or "", agent_options, chosen=chosen, seed=settings.seed)
    prior = StrategyPrior(clips)
    return [
        Episode(
            s, agent=settings.model, simulator=settings.simulator, options=options, prior=prior, replay=replay.get(s.point_id),
            subgroups=options.subgroups, model=settings.sim_model,
        )
        for s in starts
    ]


@dataclass
class CallTally:
    """The calls of a closed-loop run, as they go: answered and failed per role (``agent``,
    ``simulator``, ``judge``), the episode steps that had a failed call, and the errors.

    Passed to the solver as an argument, like the run's channel (inspect_ai logs it by class name)."""

    answered: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    steps: set[tuple[str, int]] = field(default_factory=set)
    """Every ``(episode, step)`` that made a call."""
    failed_steps: set[tuple[str, int]] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def called(self, episode: str, step: int, role: str, error: str | None) -> None:
        self.steps.add((episode, step))
        if error is None:
            self.answered[role] += 1
            return
        self.failed[role] += 1
        self.failed_steps.add((episode, step))
        self.errors.append(" ".join(error.split())[:500])

    def judge_failed(self, error: str) -> None:
        self.failed["judge"] += 1
        self.errors.append(" ".join(error.split())[:500])

    def episode_failed(self, episode: str, steps: int, error: str) -> None:
        """A whole episode that never finished (its sample failed): every step of it failed."""
        for t in range(1, steps + 1):
            self.steps.add((episode, t))
            self.failed_steps.add((episode, t))
        self.errors.append(" ".join(error.split())[:500])


def closed_loop_status(
    tally: CallTally, statuses: Sequence[str | None], max_failed_share: float, records: Sequence[EpisodeRecord] = ()
) -> RunStatus:
    """``status``, ``counts`` and ``failure`` of a closed-loop run: failed above ``max_failed_share``
    of its episode steps without a usable answer (a failed agent or simulator call, or a simulator
    answer still unusable after its re-ask) or of its episodes excluded from J, with any failed judge
    call, or with an inspect_ai task that ended in error. A step or an episode that has no score is
    never a score: it counts against the run."""
    unusable = set(tally.failed_steps) | {
        (r["id"], s["t"]) for r in records for s in r["steps"] if not s["simulator"].get("valid", True)
    }
    steps = len(tally.steps | {(r["id"], s["t"]) for r in records for s in r["steps"]})
    failed = len(unusable)
    excluded = sum(bool(r["metrics"]["excluded"]) for r in records)
    numbers = {
        "steps": steps,
        "failed_steps": len(tally.failed_steps),
        "unusable_steps": failed,
        "invalid_simulator_steps": failed - len(tally.failed_steps & unusable),
        "excluded_episodes": excluded,
        "failed_agent_calls": tally.failed["agent"],
        "failed_simulator_calls": tally.failed["simulator"],
        "judge_failures": tally.failed["judge"],
    }
    errored = sum(1 for status in statuses if status == "error")
    if errored:
        numbers["task_errors"] = errored
    parts = []
    if steps and failed / steps > max_failed_share:
        parts.append(
            f"{failed} of {steps} steps ({100 * failed / steps:.1f}%) had no usable answer (a failed call, or a simulator answer "
            f"unusable after its re-ask), above --max-failed-share {max_failed_share:g}"
        )
    if records and excluded / len(records) > max_failed_share:
        parts.append(f"{excluded} of {len(records)} episodes ({100 * excluded / len(records):.1f}%) are excluded from J, above --max-failed-share {max_failed_share:g}")
    if tally.failed["judge"]:
        parts.append(f"{tally.failed['judge']} judge calls failed")
    if errored:
        parts.append(f"{errored} task logs ended in error")
    if not parts:
        return RunStatus("success", numbers)
    reasons = tally.errors or [
        str(s["simulator"].get("error")) for r in records for s in r["steps"] if not s["simulator"].get("valid", True) and s["simulator"].get("error")
    ]
    first = Counter(reasons).most_common(1)
    detail = " ".join(first[0][0].split())[:200] if first else "no error message"
    cause = cause_of(detail) if tally.errors else "the simulator gave no usable answer"
    return RunStatus("failed", numbers, f"{cause}: {', '.join(parts)} ({detail})")


async def _call(
    model: Model, messages: Sequence[dict[str, Any]], cache: bool, channel: RunChannel | None, config: GenerateConfig | None = None
) -> tuple[str | None, str | None]:
    try:
        chat = to_messages(messages)
        async with call_slot(channel, request_key(str(model), chat)):
            output = await model.generate(chat, cache=CACHE if cache else False, config=config or GenerateConfig())
    except Exception as exc:  # noqa: BLE001 - retries are spent; the step has no answer
        return None, call_error(exc)
    ok = output.choices and not output.error
    return (output.completion, None) if ok else (None, output.error or "no choices")


@solver
def episode_solver(
    episodes: dict[str, Episode],
    simulator: str,
    agent_is_model: bool,
    cache: bool = True,
    channel: RunChannel | None = None,
    sim_config: GenerateConfig | None = None,
    attempt_timeout: int | None = None,
    tally: CallTally | None = None,
    seed: int | None = None,
):
    """Drive the sample's episode to its end, then (with the ``grader`` role bound) judge each turn
    the agent took; its record goes to the channel (and the sample store). Every call is counted in
    ``tally``.

    The simulator is not the eval's model, so its config (temperature, seed, retries, per-attempt
    timeout, ``max_tokens``: :func:`~rescue_bench.engine.settings.simulator_config`) is passed with
    each call.
    """

    async def solve(task_state: TaskState, generate_fn: Generate) -> TaskState:
        episode = episodes[str(task_state.sample_id)]
        agent = get_model() if agent_is_model else None
        sim = get_provider_model(simulator, role=SIMULATOR_ROLE) if simulator not in OFFLINE_SIMULATORS else None
        while (request := episode.next_request()) is not None:
            model = agent if request.role == "agent" else sim
            assert model is not None  # the episode asks only the models the run has
            raw, error = await _call(model, request.messages, cache, channel, sim_config if request.role == "simulator" else None)
            if tally is not None:
                tally.called(episode.start.id, request.t, request.role, error)
            if channel is not None and error is None:
                channel.note_request("model" if request.role == "agent" else "simulator")
            episode.answer(raw, error)
        judge = grader()
        if judge is not None:
            todo = episode.judge_requests()
            scores = await gather(*(_judge_one(judge, prompt, attempt_timeout, channel, tally, seed) for _, prompt in todo))
            episode.set_judged({i: score for (i, _), score in zip(todo, scores)})
        record = episode.typed_record()
        task_state.store.set("rescue_sim", {"J": record["metrics"]["J"]})
        if channel is not None:
            channel.keep(record)
        return task_state

    return solve


async def _judge_one(
    judge: Model, prompt: Any, attempt_timeout: int | None, channel: RunChannel | None, tally: CallTally | None = None, seed: int | None = None
) -> tuple[int | None, bool]:
    """One judge score with one re-ask; no prompt (an unusable turn) or a failed call is ``None``
    (scored 1, flagged); a failed call is counted in ``tally``."""
    if prompt is None:
        return None, False
    try:
        return await ask_judge(judge, prompt, parse_judge, attempt_timeout, channel, seed=seed)
    except Exception as exc:  # noqa: BLE001 - the judge's retries are spent
        if tally is not None:
            tally.judge_failed(call_error(exc))
        return None, True


def sim_task(episodes: Sequence[Episode], settings: SimSettings, channel: RunChannel, tally: CallTally | None = None) -> Task:
    by_id = {e.start.id: e for e in episodes}
    return Task(
        dataset=MemoryDataset([Sample(id=e.start.id, input=SIMULATOR_SAMPLE_INPUT) for e in episodes], name="rescue_sim"),
        solver=episode_solver(
            by_id, settings.simulator, agent_kind(settings.model)[0] == "model", cache=settings.cache, channel=channel,
            sim_config=simulator_config(settings), attempt_timeout=settings.timeout, tally=tally, seed=settings.seed,
        ),
        config=generate_config(settings),
        name="rescue_sim",
        metadata={"rescue_task": SIM_TASK, "simulator": settings.simulator},
    )


def _unfinished(episode: Episode, error: str) -> EpisodeRecord:
    """The record of an episode whose sample failed: every remaining call unanswered."""
    while episode.next_request() is not None:
        episode.answer(None, error)
    return {**episode.typed_record(), "error": error}


def call_counts(records: Sequence[EpisodeRecord], tally: CallTally) -> SimCalls:
    """Calls the run's agent and simulator answered (failed calls are in ``counts``), in total and
    per episode, and the judge's judged turns. An offline agent and the scripted simulator make none."""
    n = max(len(records), 1)
    return SimCalls(
        episodes=len(records),
        agent_total=tally.answered["agent"],
        simulator_total=tally.answered["simulator"],
        agent_per_episode=tally.answered["agent"] / n,
        simulator_per_episode=tally.answered["simulator"] / n,
        judge=sum(r["metrics"]["judge_n"] for r in records),
    )


def _run_episodes(
    episodes: Sequence[Episode], settings: SimSettings, main: SimSettings, display: str, tally: CallTally
) -> tuple[list[EpisodeRecord], list[Any], dict[str, GenerateRequest]]:
    """Run ``episodes`` through inspect_ai (``main``: the settings whose model drives the eval);
    their records, the logs and the first request of each kind."""
    channel = RunChannel[EpisodeRecord](max_calls=settings.max_connections)
    try:
        logs = run_inspect([sim_task(episodes, settings, channel, tally)], main, display=display) if episodes else []
    except KeyboardInterrupt as exc:
        raise RunInterrupted() from exc
    errors = sample_errors(logs, {e.start.id for e in episodes if e.start.id not in channel.records})
    records = []
    for e in episodes:
        record = channel.records.get(e.start.id)
        if record is None:
            error = errors.get(e.start.id, "the sample failed")
            tally.episode_failed(e.start.id, e.options.horizon, error)
            record = _unfinished(e, error)
        records.append(record)
    return records, logs, dict(channel.requests)


def speak_share(clips: Sequence[Clip], settings: SimSettings) -> float:
    """The share of the clips' decision points where the annotated therapist took the turn: how often
    the estimate expects a model agent to speak."""
    from rescue_bench.agent import build_points

    options = AgentOptions(state=settings.options.state, mode=settings.options.mode, context=settings.options.context)
    golds = [p.gold.when for clip in clips for p in build_points(clip, options)]
    return sum(1 for g in golds if g == "yes") / len(golds) if golds else 1.0


@overload
def run_sim(settings: SimSettings, *, display: str = ..., overwrite: bool = ..., dry_run: Literal[False] = ...) -> RunResult[SimRunInfo, SimSummary]: ...
@overload
def run_sim(settings: SimSettings, *, display: str = ..., overwrite: bool = ..., dry_run: Literal[True]) -> DryRun: ...
def run_sim(settings: SimSettings, *, display: str = "full", overwrite: bool = False, dry_run: bool = False) -> RunResult[SimRunInfo, SimSummary] | DryRun:
    """Run the episodes and write the output folder; returns the summary and the ``run.json`` written
    (``dry_run``: the estimate of what the run would send, nothing sent or written).

    Raises :class:`rescue_bench.data.DataError` for bad data (before the folder is claimed),
    :class:`RunInterrupted` when stopped and :class:`~rescue_bench.engine.runfolder.RunFailed` when
    too many calls failed (once ``run.json`` says so).
    """
    from rescue_bench.data.load import load_clips
    from rescue_bench.engine.run import drop_stale_logs

    with fewer_gc_passes():
        use_cache_dir()
        clips = load_clips(settings.data, repair_mojibake=settings.repair_mojibake)
        episodes = build_episodes(settings, clips)
        agent_is_model = agent_kind(settings.model)[0] == "model"
        estimate = sim_estimate(settings, episodes, agent_is_model=agent_is_model, speak_share=speak_share(clips, settings))
        if dry_run:
            return estimate
        with start_run(settings.out, "sim", settings, overwrite=overwrite, estimate=estimate.record()) as start:
            logs: list[Any] = []
            requests: dict[str, GenerateRequest] = {}
            tally = CallTally()
            offline = not agent_is_model and settings.simulator in OFFLINE_SIMULATORS and not settings.judge
            if offline:
                records = [e.typed_record() for e in episodes]
            else:
                # inspect_ai needs a model to run the task: the agent's, else whichever model the run has
                stand_in = settings.simulator if settings.simulator not in OFFLINE_SIMULATORS else settings.judge
                main = settings if agent_is_model else settings.model_copy(update={"model": stand_in})
                records, logs, requests = _run_episodes(episodes, settings, main, display, tally)
                drop_stale_logs(Path(settings.out), [str(log.location) for log in logs])
            outcome = closed_loop_status(tally, [getattr(log, "status", None) for log in logs], settings.max_failed_share, records)
            if episodes:
                add_sensitivity(records, episodes[0].offline, gamma=settings.options.gamma, lam=settings.options.lam)
            return write_sim_outputs(start, records, logs, clips=len(clips), outcome=outcome, tally=tally, requests=requests)


def _fingerprint(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def judge_fingerprint() -> str:
    """A hash of the judge prompts a closed-loop run uses (the agent's turn rubrics)."""
    from rescue_bench.agent import judge_texts

    return _fingerprint(judge_texts())


def _write_records(
    out: Path, name: str, records: Sequence[EpisodeRecord] | Sequence[FidelityRecord], summary: SimSummary | FidelitySummary, failed: bool
) -> None:
    """``results/<name>.jsonl``, and ``summary.json`` unless the run failed (a stale one is removed)."""
    (out / "results").mkdir(parents=True, exist_ok=True)
    atomic_write_jsonl(out / "results" / f"{name}.jsonl", records)
    if failed:
        (out / "summary.json").unlink(missing_ok=True)
    else:
        atomic_write_json(out / "summary.json", summary_json(summary))


def write_sim_outputs(
    start: RunStart,
    records: list[EpisodeRecord],
    logs: Sequence[Any],
    *,
    clips: int,
    outcome: RunStatus,
    tally: CallTally,
    requests: dict[str, GenerateRequest],
) -> RunResult[SimRunInfo, SimSummary]:
    settings = start.settings
    assert isinstance(settings, SimSettings)
    records.sort(key=lambda r: (r["sample_id"], r["row"]))
    summary = SimSummary(sim=summarize(records, seed=settings.seed))
    _write_records(Path(settings.out), SIM_TASK, records, summary, outcome.status == "failed")
    o = settings.options
    agent_is_model = agent_kind(settings.model)[0] == "model"
    before = start.previous
    info = finish_run(
        start,
        outcome,
        SimRunInfo,
        judge_prompt_sha=judge_fingerprint() if settings.judge else None,
        request=request_record(intended_request(settings), requests.get("model"), before.request if before else None)
        if agent_is_model else None,
        simulator_request=request_record(
            simulator_intended(settings), requests.get("simulator"), before.simulator_request if isinstance(before, SimRunInfo) else None
        ) if settings.simulator not in OFFLINE_SIMULATORS else None,
        judge_request=request_record(judge_intended(settings), requests.get("judge"), before.judge_request if before else None)
        if settings.judge else None,
        clips=clips,
        agent=settings.model,
        simulator=settings.simulator,
        gamma=o.gamma,
        lam=o.lam,
        horizon=o.horizon,
        episodes=len(records),
        calls=call_counts(records, tally),
        usage=log_usage(logs),
        usage_by_role=role_usage(logs),
        log_statuses=[getattr(log, "status", None) for log in logs],
    )
    return RunResult(summary, info)


def simulator_intended(settings: SimSettings) -> GenerateRequest:
    """What the simulator is meant to be sent with each call."""
    return GenerateRequest(
        temperature=settings.temperature, seed=settings.seed, max_tokens=settings.simulator_max_tokens, system_role="system"
    )


# --------------------------------------------------------------------------------------------------
# rescue sim fidelity
# --------------------------------------------------------------------------------------------------


@overload
def run_fidelity(
    settings: SimSettings, *, display: str = ..., overwrite: bool = ..., dry_run: Literal[False] = ...
) -> RunResult[FidelityRunInfo, FidelitySummary]: ...
@overload
def run_fidelity(settings: SimSettings, *, display: str = ..., overwrite: bool = ..., dry_run: Literal[True]) -> DryRun: ...
def run_fidelity(
    settings: SimSettings, *, display: str = "full", overwrite: bool = False, dry_run: bool = False
) -> RunResult[FidelityRunInfo, FidelitySummary] | DryRun:
    """A simulator's first step against the real next turn at every decision point
    (:mod:`rescue_bench.sim.fidelity`); writes ``results/fidelity.jsonl``, ``summary.json``, ``run.json``
    (and ``logs/`` with a model simulator or a judge). With ``--judge`` the plausibility of every
    simulated and real next turn is rated after the simulator's run, as its own inspect task. The
    run's lifecycle and failed calls are as :func:`run_sim`'s."""
    from rescue_bench.data.load import load_clips
    from rescue_bench.engine.run import drop_stale_logs
    from rescue_bench.sim import SimOptions
    from rescue_bench.sim.checks import simulator_checks
    from rescue_bench.sim.fidelity import (
        FIDELITY_TASK,
        REAL_THERAPIST,
        fidelity_cases,
        fidelity_episode,
        fidelity_record,
        summarize_fidelity,
    )
    from rescue_bench.sim.fidelity import judge_texts as fidelity_judge_texts
    from rescue_bench.sim.fitting import simulators_for

    with fewer_gc_passes():
        use_cache_dir()
        clips = load_clips(settings.data, repair_mojibake=settings.repair_mojibake)
        cases = fidelity_cases(clips, settings.options, settings.limit)
        sims = simulators_for(clips, settings.simulator, settings.sim_model)

        def sim_of(start: EpisodeStart) -> Any:
            return sims[start.sample_id] if sims is not None else None

        episodes = [fidelity_episode(start, answers, settings.simulator, settings.options, sim_of(start)) for start, answers, _ in cases]
        estimate = sim_estimate(settings, episodes, kind="sim_fidelity", agent_is_model=False)
        if dry_run:
            return estimate
        with start_run(settings.out, "sim_fidelity", settings, overwrite=overwrite, estimate=estimate.record()) as start:
            logs: list[Any] = []
            requests: dict[str, GenerateRequest] = {}
            tally = CallTally()
            if settings.simulator in OFFLINE_SIMULATORS:
                done = [e.typed_record() for e in episodes]
            else:
                # the simulator's run binds no judge: the real therapist's replayed turns are not rated
                main = settings.model_copy(update={"model": settings.simulator, "judge": None})
                done, logs, requests = _run_episodes(episodes, main.model_copy(update={"model": REAL_THERAPIST}), main, display, tally)
            records = [fidelity_record(start_, real, ep, sim_of(start_)) for (start_, _, real), ep in zip(cases, done)]
            backbone = _fidelity_bertscore(records, settings) if settings.bertscore else None
            judged = 0
            if settings.judge:
                judge_logs, judged, judge_requests = _fidelity_judge(records, [s for s, _, _ in cases], settings, display, tally)
                logs += judge_logs
                requests.update(judge_requests)
            drop_stale_logs(Path(settings.out), [str(log.location) for log in logs])
            outcome = closed_loop_status(tally, [getattr(log, "status", None) for log in logs], settings.max_failed_share, done)
            numbers: dict[str, object] = {FIDELITY_TASK: summarize_fidelity(records, seed=settings.seed)}
            if sims is not None:
                # the checks play whole episodes: the closed loop's defaults, in the run's cue mode
                check_options = SimOptions(mode=settings.options.mode)
                numbers["checks"] = simulator_checks(clips, settings.simulator, check_options, model=settings.sim_model, seed=settings.seed)
            summary = FidelitySummary.model_validate(numbers)
            _write_records(Path(settings.out), FIDELITY_TASK, records, summary, outcome.status == "failed")
            before = start.previous
            info = finish_run(
                start,
                outcome,
                FidelityRunInfo,
                model=settings.simulator,
                simulator=settings.simulator,
                simulator_request=request_record(
                    simulator_intended(settings), requests.get("simulator"),
                    before.simulator_request if isinstance(before, FidelityRunInfo) else None,
                ) if settings.simulator not in OFFLINE_SIMULATORS else None,
                judge_request=request_record(judge_intended(settings), requests.get("judge"), before.judge_request if before else None)
                if settings.judge else None,
                clips=len(clips),
                points=len(records),
                bertscore_backbone=backbone,
                judge_prompt_sha=_fingerprint(fidelity_judge_texts()) if settings.judge else None,
                calls=FidelityCalls(simulator_total=tally.answered["simulator"], judge=judged),
                usage=log_usage(logs),
                usage_by_role=role_usage(logs),
                log_statuses=[getattr(log, "status", None) for log in logs],
            )
            return RunResult(summary, info)


def _fidelity_bertscore(records: list[FidelityRecord], settings: SimSettings) -> str | None:
    """BERTScore F1 of each simulated turn against the real one, in one batch (None when unavailable)."""
    from rescue_bench.bertscore import BertScoreUnavailable, bertscore_f1, default_backbone

    todo = [(r, pred, gold) for r in records if (pred := r["prediction"]["text"]) and (gold := r["gold"]["text"])]
    if not todo:
        return None
    try:
        backbone = settings.bertscore_model or default_backbone()
        values = bertscore_f1([pred for _, pred, _ in todo], [gold for _, _, gold in todo], backbone=backbone)
    except BertScoreUnavailable:
        return None
    for (r, _, _), v in zip(todo, values):
        r["bertscore"] = v
    return backbone


@solver
def plausibility_solver(
    prompts: dict[str, dict[PlausibilityKey, Prompt]],
    scores: dict[str, dict[PlausibilityKey, tuple[int | None, bool]]],
    attempt_timeout: int | None,
    channel: RunChannel | None,
    tally: CallTally | None = None,
    seed: int | None = None,
):
    """Ask the ``grader`` for every plausibility prompt of the sample's fidelity point (both at once)."""

    async def solve(task_state: TaskState, generate_fn: Generate) -> TaskState:
        judge = grader()
        assert judge is not None  # the task runs only with --judge
        todo = prompts[str(task_state.sample_id)]
        got = await gather(*(_judge_one(judge, prompt, attempt_timeout, channel, tally, seed) for prompt in todo.values()))
        scores[str(task_state.sample_id)] = dict(zip(todo, got))
        return task_state

    return solve


def _fidelity_judge(
    records: list[FidelityRecord], starts: Sequence[EpisodeStart], settings: SimSettings, display: str, tally: CallTally
) -> tuple[list[Any], int, dict[str, GenerateRequest]]:
    """The judge's plausibility of each simulated and real next turn (blind, the same prompt form),
    stored on the records; a missing turn or a judge that never scores counts the floor. Returns the
    logs, the number of prompts sent and the judge's first request."""
    from rescue_bench.sim.fidelity import PLAUSIBILITY_FLOOR, plausibility_requests

    prompts = {r["id"]: plausibility_requests(start, r) for r, start in zip(records, starts)}
    asked = {rid: {k: p for k, p in ps.items() if p is not None} for rid, ps in prompts.items()}
    scores: dict[str, dict[PlausibilityKey, tuple[int | None, bool]]] = {}
    channel = RunChannel[Mapping[str, object]](max_calls=settings.max_connections)  # it keeps no records
    task = Task(
        dataset=MemoryDataset([Sample(id=rid, input="fidelity judge") for rid in asked], name="rescue_sim_fidelity_judge"),
        solver=plausibility_solver(asked, scores, settings.timeout, channel, tally, settings.seed),
        name="rescue_sim_fidelity_judge",
        metadata={"rescue_task": "fidelity_judge", "judge": settings.judge},
    )
    try:
        logs = run_inspect([task], settings.model_copy(update={"model": settings.judge}), display=display) if asked else []
    except KeyboardInterrupt as exc:
        raise RunInterrupted() from exc
    for r in records:
        got = scores.get(r["id"], {})
        for key in prompts[r["id"]]:
            score, flagged = got.get(key, (None, True))
            r[key] = PLAUSIBILITY_FLOOR if score is None else int(score)
            if flagged or score is None:
                r.setdefault("judge_flagged", []).append(key)
    return logs, sum(len(ps) for ps in asked.values()), dict(channel.requests)
