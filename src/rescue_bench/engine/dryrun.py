"""What a run will send, estimated before anything is sent: ``--dry-run`` and ``run.json``'s ``estimate``.

Every run command plans its work first (the instances, the decision points, the episodes, the
segments); from the plan, each part of the run (a task, the judge, the agent's chain, the simulator,
the drafter) is estimated as a :class:`CallPlan`:

- **calls, at most**: every call the plan may make, before inspect_ai's retries of a failed call:
  re-asks (the judge's one re-ask, the simulator's, the drafter's), the trimming of every prompt
  under ``--on-overflow trim`` (:func:`trim_calls`), every step of every chain;
- **expected calls and prompt characters**: what a run sends when every answer is usable at the
  first ask, the agent speaks where the annotated therapist spoke, and each prompt fits the model's
  context window, or, with ``--context-window``, where it does not: a refused prompt costs nothing
  and its trimming is followed as the run follows it (:func:`fitted`). The prompts are the very ones
  the run will build where they are known before the first answer (a task's prompt and its trimmed
  forms, a chain's steps, a fidelity point's simulator request, a draft window's request), else
  estimated from them (a later step of an episode adds its question and the earlier answers, each
  counted as :data:`ANSWER_CHARS`); media (video, frames) is not counted;
- **if every answer is unusable**: the calls and prompt characters of the other end: nothing is
  judged, the agent's timing answer ends its chain, every simulator request and draft window is
  re-asked. What a run sends lies between the two ends (a small model's, near this one);
- **estimated prompt tokens**: characters / :data:`CHARS_PER_TOKEN` (a provider's tokenizer
  decides the real number; English prose is about four characters a token);
- **output tokens, at most**: calls at most x the role's ``max_tokens``.

With prices per million tokens the estimate has a cost (input at the estimate, output at most).
The run records the estimate in ``run.json`` beside the tokens it used, per role.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rescue_bench.runinfo import Estimate

if TYPE_CHECKING:  # pragma: no cover
    from rescue_bench.agent import DecisionPoint
    from rescue_bench.engine.plan import RunPlan
    from rescue_bench.engine.settings import AgentSettings, RunSettings, SimSettings
    from rescue_bench.sim import Episode
    from rescue_bench.tasks.instance import Instance

Role = Literal["model", "judge", "simulator", "drafter"]
"""Who a call goes to: the model under evaluation (the agent in a closed loop), the judge (the
``grader`` role), the simulated clients, the drafting model."""
ROLES: tuple[Role, ...] = ("model", "judge", "simulator", "drafter")
CHARS_PER_TOKEN = 4.0
"""Characters per token of the estimate (about right for English prose; a tokenizer decides)."""
ANSWER_CHARS = 500
"""Characters an earlier answer adds to a later prompt, in the estimate: a JSON answer, a turn or a
simulator's state is a few hundred characters (``max_tokens`` bounds the output, not this)."""
JUDGE_ATTEMPTS = 2
"""A judge call and its one re-ask."""
SIMULATOR_ATTEMPTS = 2
"""A simulator request and its one re-ask."""
DRAFT_ATTEMPTS = 2
"""A draft window's request and its one re-ask."""


@dataclass(frozen=True)
class CallPlan:
    """The calls of one part of a run, estimated (see the module doc)."""

    part: str
    role: Role
    instances: int
    """What the part is made of: instances, decision points, episodes, windows."""
    calls: int
    """Calls at most (re-asks, trimming and every chain step included)."""
    prompt_chars: int
    """Characters the expected calls send."""
    max_tokens: int | None
    """Most tokens of one answer of the role (``None``: not bounded by the run)."""
    expected_calls: int | None = None
    """The calls of a run whose answers are usable at the first ask (``None``: :attr:`calls`)."""
    unusable_calls: int | None = None
    """The calls of a run whose every answer is unusable (``None``: as :attr:`expected`)."""
    unusable_chars: int | None = None
    """Characters those calls send (``None``: :attr:`prompt_chars`)."""

    @property
    def expected(self) -> int:
        return self.calls if self.expected_calls is None else self.expected_calls

    @property
    def if_unusable(self) -> tuple[int, int]:
        """(calls, prompt tokens) of a run whose every answer is unusable."""
        chars = self.prompt_chars if self.unusable_chars is None else self.unusable_chars
        return (self.expected if self.unusable_calls is None else self.unusable_calls), round(chars / CHARS_PER_TOKEN)

    @property
    def prompt_tokens(self) -> int:
        return round(self.prompt_chars / CHARS_PER_TOKEN)

    @property
    def max_output_tokens(self) -> int | None:
        return None if self.max_tokens is None else self.calls * self.max_tokens


@dataclass(frozen=True)
class DryRun:
    """The estimate of one run: its parts, and per role the totals ``run.json`` records."""

    kind: str
    parts: tuple[CallPlan, ...]
    notes: tuple[str, ...] = ()

    def by_role(self) -> dict[str, dict[str, int | None]]:
        """Per role: ``calls`` (at most), ``expected_calls`` and ``prompt_tokens`` (every answer usable),
        ``unusable_calls`` and ``unusable_prompt_tokens`` (none usable), ``max_output_tokens``."""
        out: dict[str, dict[str, int | None]] = {}
        for part in self.parts:
            row = out.setdefault(
                part.role,
                {"calls": 0, "expected_calls": 0, "prompt_chars": 0, "prompt_tokens": 0, "max_output_tokens": 0,
                 "unusable_calls": 0, "unusable_prompt_tokens": 0},
            )
            row["calls"] = (row["calls"] or 0) + part.calls
            row["expected_calls"] = (row["expected_calls"] or 0) + part.expected
            calls, tokens = part.if_unusable
            row["unusable_calls"] = (row["unusable_calls"] or 0) + calls
            row["unusable_prompt_tokens"] = (row["unusable_prompt_tokens"] or 0) + tokens
            row["prompt_chars"] = (row["prompt_chars"] or 0) + part.prompt_chars
            row["prompt_tokens"] = (row["prompt_tokens"] or 0) + part.prompt_tokens
            most = part.max_output_tokens
            row["max_output_tokens"] = None if most is None or row["max_output_tokens"] is None else row["max_output_tokens"] + most
        return {role: out[role] for role in ROLES if role in out}

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.parts)

    @property
    def expected_calls(self) -> int:
        return sum(p.expected for p in self.parts)

    @property
    def if_unusable(self) -> tuple[int, int]:
        """(calls, prompt tokens) of the run if every answer is unusable."""
        ends = [p.if_unusable for p in self.parts]
        return sum(c for c, _ in ends), sum(t for _, t in ends)

    @property
    def prompt_tokens(self) -> int:
        return sum(p.prompt_tokens for p in self.parts)

    @property
    def max_output_tokens(self) -> int | None:
        most = [p.max_output_tokens for p in self.parts]
        return None if any(m is None for m in most) else sum(m or 0 for m in most)

    def cost(self, price_in: float, price_out: float) -> tuple[float, float | None]:
        """(input cost at the estimate, output cost at most), at prices per million tokens."""
        most = self.max_output_tokens
        return self.prompt_tokens * price_in / 1e6, None if most is None else most * price_out / 1e6

    def record(self) -> Estimate:
        """``run.json``'s ``estimate``: the totals per role, and how they were made."""
        return Estimate.model_validate({"by_role": self.by_role(), "chars_per_token": CHARS_PER_TOKEN, "notes": list(self.notes)})


def _chars(*texts: str | None) -> int:
    return sum(len(t) for t in texts if t)


# --------------------------------------------------------------------------------------------------
# rescue eval (and the agent's single-task ablation)
# --------------------------------------------------------------------------------------------------


def trim_calls(droppable: int) -> int:
    """The calls :func:`rescue_bench.engine.overflow.fit` makes after a prompt overflowed, at most:
    every droppable row left out, then the bisection (``ceil(log2(droppable))`` calls)."""
    return 0 if droppable <= 0 else 1 + math.ceil(math.log2(droppable))


def fitted(instance: Instance, window: int | None, on_overflow: str) -> tuple[list[tuple[str, bool]], bool]:
    """The prompts a run sends for ``instance`` with a context window of ``window`` tokens (counted
    as the estimate counts them; ``None``: every prompt fits), each with whether it fits, and whether
    the instance is answered: the whole prompt, then under ``trim`` the search
    :func:`~rescue_bench.engine.overflow.fit` makes."""
    from rescue_bench.prompts.render import render

    def prompt(rows: int) -> str:
        rendered = render(instance.without_oldest_rows(rows))
        return rendered.system + "\x00" + rendered.user

    def fits(rows: int) -> bool:
        return window is None or (len(prompt(rows)) - 1) // CHARS_PER_TOKEN <= window

    sent = [(prompt(0), fits(0))]
    if sent[0][1]:
        return sent, True
    droppable = instance.droppable_rows()
    if on_overflow != "trim" or droppable <= 0:
        return sent, False
    sent.append((prompt(droppable), fits(droppable)))
    if not sent[-1][1]:
        return sent, False
    overflows, fit = 0, droppable  # the bisection of overflow.fit
    while fit - overflows > 1:
        middle = (overflows + fit) // 2
        sent.append((prompt(middle), fits(middle)))
        if sent[-1][1]:
            fit = middle
        else:
            overflows = middle
    return sent, True


def task_parts(name: str, instances: Sequence[Instance], settings: RunSettings, *, baseline: bool) -> list[CallPlan]:
    """The model's calls for one task's ``instances`` (none for an offline baseline; under ``trim``
    each prompt's trimming at most) and, for ER/VP with a judge, the judge's (each answer judged once,
    at most with one re-ask)."""
    from rescue_bench.prompts import judge_prompt
    from rescue_bench.task_table import rule

    on_overflow = getattr(settings, "on_overflow", "wrong")
    most = sum(1 + (trim_calls(i.droppable_rows()) if on_overflow == "trim" else 0) for i in instances)
    # one request is one call whichever instance asks it (the response cache); a refused one costs nothing
    distinct: dict[int, tuple[int, bool]] = {}
    answered = []
    for instance in instances:
        attempts, ok = fitted(instance, getattr(settings, "context_window", None), on_overflow)
        distinct.update((hash(text), (len(text) - 1, fits)) for text, fits in attempts)
        if ok:
            answered.append(instance)
    calls, chars = len(distinct), sum(n for n, fits in distinct.values() if fits)
    parts = [
        CallPlan(name, "model", len(instances), 0 if baseline else most, 0 if baseline else chars, settings.max_tokens, 0 if baseline else calls)
    ]
    if settings.judge and rule(name).judged and instances:
        # the judge sees the gold and the answer: the gold stands in for the answer's length
        judged = [judge_prompt(name, i.gold, i.gold, i.client) for i in answered]
        each = sum(_chars(j.system, j.user) for j in judged)
        parts.append(
            CallPlan(f"{name} judge", "judge", len(instances), JUDGE_ATTEMPTS * len(instances), each, settings.judge_max_tokens,
                     len(answered), unusable_calls=0, unusable_chars=0)  # an unusable answer is not judged
        )
    return parts


def eval_estimate(plan: RunPlan) -> DryRun:
    settings = plan.settings
    parts = [p for t in plan.tasks for p in task_parts(t.name, t.chosen, settings, baseline=settings.is_baseline)]
    notes = ["video clips are sent besides the text and are not counted"] if plan.video is not None else []
    if settings.context_window is None and settings.on_overflow == "trim":
        notes.append("every prompt is expected to fit the model's context window: give --context-window to count the trimming")
    return DryRun("eval", tuple(parts), tuple(notes))


# --------------------------------------------------------------------------------------------------
# rescue agent eval
# --------------------------------------------------------------------------------------------------


def _chain_calls(point: DecisionPoint, state: str, how_given_gold: bool, *, speaks: bool) -> tuple[int, int]:
    """(calls, prompt characters) of one decision point's chain, driven as the engine drives it
    (:class:`~rescue_bench.agent.Chain`) with answers of :data:`ANSWER_CHARS` characters: the agent
    takes the turn when ``speaks`` (every step asked), else it keeps listening."""
    from rescue_bench.agent import Chain
    from rescue_bench.contract import answer_text

    chain = Chain(point, state, how_given_gold)
    calls = chars = 0
    while (request := chain.next_request()) is not None:
        calls += 1
        chars += _chars(*(str(m["content"]) for m in request.messages))
        answer = answer_text("itp", "yes" if speaks else "no") if request.step == "when" else ""
        chain.answer(answer.ljust(ANSWER_CHARS))
    return calls, chars


def agent_estimate(
    settings: AgentSettings, points: Sequence[DecisionPoint], singles: Mapping[str, tuple[Any, Sequence[Instance]]]
) -> DryRun:
    from rescue_bench.agent.prompts import turn_real_prompt, turn_strategy_prompt
    from rescue_bench.prompts import judge_prompt

    options, baseline = settings.options, settings.is_baseline
    most = calls = chars = silent_calls = silent_chars = 0
    for point in points:
        most += _chain_calls(point, options.state, options.how_given_gold, speaks=True)[0]
        c, p = _chain_calls(point, options.state, options.how_given_gold, speaks=point.gold.when == "yes")
        calls, chars = calls + c, chars + p
        c, p = _chain_calls(point, options.state, options.how_given_gold, speaks=False)  # an unusable timing answer ends the chain
        silent_calls, silent_chars = silent_calls + c, silent_chars + p
    parts = [
        CallPlan("agent chain", "model", len(points), 0 if baseline else most, 0 if baseline else chars, settings.max_tokens,
                 0 if baseline else calls, 0 if baseline else silent_calls, 0 if baseline else silent_chars)
    ]
    if settings.judge and points:
        judged = expected = judge_chars = 0
        for point in points:
            gold = point.gold
            prompts = [judge_prompt("er", e.model_dump(mode="json"), e.model_dump(mode="json"), client) for client, e in gold.emotions.items()]
            prompts += [
                judge_prompt("vp", [s.model_dump(mode="json") for s in stances], [s.model_dump(mode="json") for s in stances], source)
                for source, stances in gold.stances.items()
            ]
            turn = gold.turn or ""
            turns = [turn_real_prompt(point, turn, turn), turn_strategy_prompt(point, gold.how or "", gold.whom or "", turn)]
            judged += len(prompts) + len(turns)
            spoken = turns if gold.when == "yes" else []  # a turn is judged where the agent took it
            expected += len(prompts) + len(spoken)
            judge_chars += sum(_chars(p.system, p.user) for p in [*prompts, *spoken])
        parts.append(CallPlan("agent judge", "judge", len(points), JUDGE_ATTEMPTS * judged, judge_chars, settings.judge_max_tokens, expected,
                              unusable_calls=0, unusable_chars=0))
    for name, (_, instances) in singles.items():
        parts += [CallPlan(f"single {p.part}", p.role, p.instances, p.calls, p.prompt_chars, p.max_tokens, p.expected_calls,
                           p.unusable_calls, p.unusable_chars)
                  for p in task_parts(name, instances, settings, baseline=baseline)]
    return DryRun("agent", tuple(parts))


# --------------------------------------------------------------------------------------------------
# rescue sim eval and rescue sim fidelity
# --------------------------------------------------------------------------------------------------


def _first_request_chars(episode: Episode) -> int:
    request = episode.next_request()
    return 0 if request is None else _chars(*(str(m["content"]) for m in request.messages))



def sim_estimate(
    settings: SimSettings, episodes: Sequence[Episode], *, kind: str = "sim", agent_is_model: bool, speak_share: float = 1.0
) -> DryRun:
    """A closed-loop run's calls: each step, the agent's chain (a model agent) and the simulator's
    request (a model simulator), each prompt the episode's first request with what the earlier steps
    added (the chain's answers, the turns); the judge's turn ratings. At most: every step of every
    chain, a re-ask of every simulator request and judge call. Expected: the agent takes the turn at
    ``speak_share`` of the steps (the share of decision points where the annotated therapist spoke;
    else it asks the state and the timing only), a turn taken is judged once, every simulator answer
    is usable at the first ask."""
    from rescue_bench.sim import OFFLINE_SIMULATORS

    horizon = settings.options.horizon
    listen = (1 if settings.options.state == "explicit" else 0) + 1  # the chain's calls at a step where the agent listens
    steps = listen + 2  # ... and where it takes the turn: whom and how, the turn
    parts = []
    model_simulator = settings.simulator not in OFFLINE_SIMULATORS
    agent_most = agent_calls = agent_chars = silent_chars = sim_calls = sim_chars = 0.0
    for episode in episodes:
        first = _first_request_chars(episode)
        # the transcript grows by the agent's turn and the clients' turn at each step
        prompts = [first + 2 * t * ANSWER_CHARS for t in range(horizon)]
        if agent_is_model:
            agent_most += horizon * steps
            agent_calls += horizon * (listen + 2 * speak_share)
            for p in prompts:  # each step's prompt is the one before with the answer and the next question
                listening = listen * p + ANSWER_CHARS * listen * (listen - 1) // 2
                speaking = steps * p + ANSWER_CHARS * steps * (steps - 1) // 2
                agent_chars += (1 - speak_share) * listening + speak_share * speaking
                silent_chars += listening
        if model_simulator:
            sim_calls += horizon
            sim_chars += sum(prompts)
    n = len(episodes)
    if agent_is_model:  # unusable: the timing answer ends every step's chain
        parts.append(CallPlan("agent chain", "model", n, round(agent_most), round(agent_chars), settings.max_tokens, round(agent_calls),
                              horizon * listen * n, round(silent_chars)))
    if model_simulator:  # unusable: every request re-asked, with the answer and the re-ask
        parts.append(CallPlan("simulator", "simulator", n, SIMULATOR_ATTEMPTS * round(sim_calls), round(sim_chars),
                              settings.simulator_max_tokens, round(sim_calls), SIMULATOR_ATTEMPTS * round(sim_calls),
                              round(2 * sim_chars + ANSWER_CHARS * sim_calls)))
    if settings.judge and episodes:
        per = 2 if kind == "sim_fidelity" else horizon  # the simulated and the real turn; a turn per step
        judged = per if kind == "sim_fidelity" else horizon * speak_share
        unjudged = 1 if kind == "sim_fidelity" else 0  # unusable: no simulated turn (no turn of the agent's) to rate
        chars = sum(_first_request_chars(e) for e in episodes)
        parts.append(CallPlan("judge", "judge", n, JUDGE_ATTEMPTS * per * n, round(judged * chars), settings.judge_max_tokens,
                              round(judged * n), unjudged * n, unjudged * chars))
    notes = [] if parts else ["nothing to call: an offline agent against the scripted simulator"]
    return DryRun(kind, tuple(parts), tuple(notes))


# --------------------------------------------------------------------------------------------------
# rescue annotate draft
# --------------------------------------------------------------------------------------------------


def draft_estimate(windows: Iterable[tuple[str, str]], segments: int, max_tokens: int | None, media: str) -> DryRun:
    """A draft run's calls at most: each window's request and its re-ask (``windows``: the system and
    user text of every window's request)."""
    texts = list(windows)
    chars = sum(_chars(system, user) for system, user in texts)
    notes = [] if media == "none" else [f"the windows' media (--media {media}) are sent besides the text and are not counted"]
    again = 2 * chars + ANSWER_CHARS * len(texts)  # unusable: every window re-asked, with the answer and the re-ask
    plan = CallPlan("drafts", "drafter", segments, DRAFT_ATTEMPTS * len(texts), chars, max_tokens, len(texts), DRAFT_ATTEMPTS * len(texts), again)
    return DryRun("draft", (plan,), tuple(notes))
