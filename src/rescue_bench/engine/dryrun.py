"""What a run will send, estimated before anything is sent: ``--dry-run`` and ``run.json``'s ``estimate``.

Every run command plans its work first (the instances, the decision points, the episodes, the
segments); from the plan, each part of the run (a task, the judge, the agent's chain, the simulator,
the drafter) is estimated as a :class:`CallPlan`:

- **calls, at most**: every call the plan may make, re-asks included (the judge's one re-ask, the
  simulator's, the drafter's), before inspect_ai's retries of a failed call;
- **prompt characters**: the text those calls send, from the very prompts the run will build where
  they are known before the first answer (a task's prompt, a chain's first step, a fidelity point's
  simulator request, a draft window's request), else estimated from them (a later step adds its
  question and the earlier answers, each counted as :data:`ANSWER_CHARS`; a re-ask resends its
  prompt with the answer); media (video, frames) is not counted;
- **estimated prompt tokens**: characters / :data:`CHARS_PER_TOKEN` (a provider's tokenizer decides
  the real number; English prose is about four characters a token);
- **output tokens, at most**: calls x the role's ``max_tokens``.

With prices per million tokens the estimate has a cost (input at the estimate, output at most).
The run records the estimate in ``run.json`` beside the tokens it used, per role.
"""

from __future__ import annotations

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
    """Calls at most (re-asks included)."""
    prompt_chars: int
    """Characters those calls send (estimated, at most)."""
    max_tokens: int | None
    """Most tokens of one answer of the role (``None``: not bounded by the run)."""

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
        """Per role: ``calls`` (at most), ``prompt_tokens`` (estimated), ``max_output_tokens``."""
        out: dict[str, dict[str, int | None]] = {}
        for part in self.parts:
            row = out.setdefault(part.role, {"calls": 0, "prompt_chars": 0, "prompt_tokens": 0, "max_output_tokens": 0})
            row["calls"] = (row["calls"] or 0) + part.calls
            row["prompt_chars"] = (row["prompt_chars"] or 0) + part.prompt_chars
            row["prompt_tokens"] = (row["prompt_tokens"] or 0) + part.prompt_tokens
            most = part.max_output_tokens
            row["max_output_tokens"] = None if most is None or row["max_output_tokens"] is None else row["max_output_tokens"] + most
        return {role: out[role] for role in ROLES if role in out}

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.parts)

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


def _reasked(prompt_chars: int) -> int:
    """Characters of a call and its re-ask: the re-ask resends the prompt with the answer."""
    return 2 * prompt_chars + ANSWER_CHARS


# --------------------------------------------------------------------------------------------------
# rescue eval (and the agent's single-task ablation)
# --------------------------------------------------------------------------------------------------


def task_parts(name: str, instances: Sequence[Instance], settings: RunSettings, *, baseline: bool) -> list[CallPlan]:
    """The model's calls for one task's ``instances`` (none for an offline baseline) and, for ER/VP
    with a judge, the judge's (each valid answer judged, with one re-ask)."""
    from rescue_bench.prompts import judge_prompt
    from rescue_bench.prompts.render import render
    from rescue_bench.task_table import rule

    prompts = [render(i) for i in instances]
    chars = sum(_chars(p.system, p.user) for p in prompts)
    parts = [CallPlan(name, "model", len(instances), 0 if baseline else len(instances), 0 if baseline else chars, settings.max_tokens)]
    if settings.judge and rule(name).judged and instances:
        # the judge sees the gold and the answer: the gold stands in for the answer's length
        judged = [judge_prompt(name, i.gold, i.gold, i.client) for i in instances]
        each = sum(_reasked(_chars(j.system, j.user)) for j in judged)
        parts.append(CallPlan(f"{name} judge", "judge", len(instances), JUDGE_ATTEMPTS * len(instances), each, settings.judge_max_tokens))
    return parts


def eval_estimate(plan: RunPlan) -> DryRun:
    settings = plan.settings
    parts = [p for t in plan.tasks for p in task_parts(t.name, t.chosen, settings, baseline=settings.is_baseline)]
    notes = ["video clips are sent besides the text and are not counted"] if plan.video is not None else []
    return DryRun("eval", tuple(parts), tuple(notes))


# --------------------------------------------------------------------------------------------------
# rescue agent eval
# --------------------------------------------------------------------------------------------------


def _chain_calls(point: DecisionPoint, state: str, how_given_gold: bool) -> tuple[int, int]:
    """(calls at most, prompt characters) of one decision point's chain: every step asked, each
    step's prompt the one before with the agent's answer and its question."""
    from rescue_bench.agent import Chain
    from rescue_bench.agent.prompts import QUESTIONS, how_given_target_question

    first = Chain(point, state, how_given_gold).next_request()
    if first is None:
        return 0, 0
    prompt = _chars(*(str(m["content"]) for m in first.messages))
    steps = (["state"] if state == "explicit" else []) + ["when", "whom_how", "turn"]
    total, calls = prompt, 1
    for step in steps[1:]:
        prompt += ANSWER_CHARS + len(QUESTIONS[step](point))
        total += prompt
        calls += 1
    if how_given_gold:  # the branch: up to the state answer, then the question with the gold target
        branch = _chars(*(str(m["content"]) for m in first.messages)) + ANSWER_CHARS
        total += branch + len(how_given_target_question(point, point.gold.whom or ""))
        calls += 1
    return calls, total


def agent_estimate(
    settings: AgentSettings, points: Sequence[DecisionPoint], singles: Mapping[str, tuple[Any, Sequence[Instance]]]
) -> DryRun:
    from rescue_bench.agent.prompts import turn_real_prompt, turn_strategy_prompt
    from rescue_bench.prompts import judge_prompt

    options, baseline = settings.options, settings.is_baseline
    calls = chars = 0
    for point in points:
        c, p = _chain_calls(point, options.state, options.how_given_gold)
        calls, chars = calls + c, chars + p
    parts = [CallPlan("agent chain", "model", len(points), 0 if baseline else calls, 0 if baseline else chars, settings.max_tokens)]
    if settings.judge and points:
        judged = judge_chars = 0
        for point in points:
            gold = point.gold
            prompts = [judge_prompt("er", e.model_dump(mode="json"), e.model_dump(mode="json"), client) for client, e in gold.emotions.items()]
            prompts += [
                judge_prompt("vp", [s.model_dump(mode="json") for s in stances], [s.model_dump(mode="json") for s in stances], source)
                for source, stances in gold.stances.items()
            ]
            turn = gold.turn or ""
            prompts += [turn_real_prompt(point, turn, turn), turn_strategy_prompt(point, gold.how or "", gold.whom or "", turn)]
            judged += len(prompts)
            judge_chars += sum(_reasked(_chars(p.system, p.user)) for p in prompts)
        parts.append(CallPlan("agent judge", "judge", len(points), JUDGE_ATTEMPTS * judged, judge_chars, settings.judge_max_tokens))
    for name, (_, instances) in singles.items():
        parts += [CallPlan(f"single {p.part}", p.role, p.instances, p.calls, p.prompt_chars, p.max_tokens)
                  for p in task_parts(name, instances, settings, baseline=baseline)]
    return DryRun("agent", tuple(parts))


# --------------------------------------------------------------------------------------------------
# rescue sim eval and rescue sim fidelity
# --------------------------------------------------------------------------------------------------


def _first_request_chars(episode: Episode) -> int:
    request = episode.next_request()
    return 0 if request is None else _chars(*(str(m["content"]) for m in request.messages))


def sim_estimate(settings: SimSettings, episodes: Sequence[Episode], *, kind: str = "sim", agent_is_model: bool) -> DryRun:
    """A closed-loop run's calls at most: each step, the agent's chain (a model agent) and the
    simulator's request with its re-ask (a model simulator), each prompt the episode's first request
    with what the earlier steps added (the chain's answers, the turns); the judge's turn ratings
    (every step, with a re-ask)."""
    from rescue_bench.sim import OFFLINE_SIMULATORS

    horizon = settings.options.horizon
    steps = (1 if settings.options.state == "explicit" else 0) + 3  # the chain's calls at a step, at most
    parts = []
    model_simulator = settings.simulator not in OFFLINE_SIMULATORS
    agent_calls = agent_chars = sim_calls = sim_chars = 0
    for episode in episodes:
        first = _first_request_chars(episode)
        # the transcript grows by the agent's turn and the clients' turn at each step
        prompts = [first + 2 * t * ANSWER_CHARS for t in range(horizon)]
        if agent_is_model:
            agent_calls += horizon * steps
            agent_chars += sum(steps * p + ANSWER_CHARS * steps * (steps - 1) // 2 for p in prompts)
        if model_simulator:
            sim_calls += horizon * SIMULATOR_ATTEMPTS
            sim_chars += sum(_reasked(p) for p in prompts)
    n = len(episodes)
    if agent_is_model:
        parts.append(CallPlan("agent chain", "model", n, agent_calls, agent_chars, settings.max_tokens))
    if model_simulator:
        parts.append(CallPlan("simulator", "simulator", n, sim_calls, sim_chars, settings.simulator_max_tokens))
    if settings.judge and episodes:
        per = 2 if kind == "sim_fidelity" else horizon  # the simulated and the real turn; a turn per step
        chars = sum(per * _reasked(_first_request_chars(e)) for e in episodes)
        parts.append(CallPlan("judge", "judge", n, JUDGE_ATTEMPTS * per * n, chars, settings.judge_max_tokens))
    notes = [] if parts else ["nothing to call: an offline agent against the scripted simulator"]
    return DryRun(kind, tuple(parts), tuple(notes))


# --------------------------------------------------------------------------------------------------
# rescue annotate draft
# --------------------------------------------------------------------------------------------------


def draft_estimate(windows: Iterable[tuple[str, str]], segments: int, max_tokens: int | None, media: str) -> DryRun:
    """A draft run's calls at most: each window's request and its re-ask (``windows``: the system and
    user text of every window's request)."""
    texts = list(windows)
    chars = sum(_reasked(_chars(system, user)) for system, user in texts)
    notes = [] if media == "none" else [f"the windows' media (--media {media}) are sent besides the text and are not counted"]
    return DryRun("draft", (CallPlan("drafts", "drafter", segments, DRAFT_ATTEMPTS * len(texts), chars, max_tokens),), tuple(notes))
