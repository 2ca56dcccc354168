"""An episode of the closed loop, as a small state machine with no engine in it (like the agent's chain).

An episode starts at one of the agent's decision points (:func:`rescue_bench.agent.build_points`) of
a real clip, with the real transcript up to that point, the clients' role cards and the initial
hidden state (:mod:`rescue_bench.sim.cards`). Then, ``horizon`` times:

1. the agent decides, exactly as in ``rescue agent eval``: the chain of
   :class:`rescue_bench.agent.Chain` at a *live* decision point whose context is the transcript so
   far, real rows then simulated ones (state, when, whom and how, the turn; no gold branch). Its
   turn, when it takes one, joins the transcript as a therapist row;
2. the step is heard (:mod:`rescue_bench.sim.hearing`: silence, or the words to some clients) and
   the simulator answers: an offline one in process (:mod:`rescue_bench.sim.offline`: ``fitted``,
   the default, or the ``scripted`` smoke test), or a model (:mod:`rescue_bench.sim.prompts`, one
   request and at most one re-ask) giving who speaks, the turn and the updated hidden state. The
   client's turn joins the transcript. A step without a usable answer has no state (it is excluded
   and counted); the episode goes on from the last state it has.

The record carries the episode's floors and ceiling under an offline simulator
(:mod:`rescue_bench.sim.floors`) and its metrics (:mod:`rescue_bench.sim.objective`).

Drive it with any models::

    episode = Episode(start, agent="openai/gpt-4o", simulator="openai/gpt-4o-mini", options=...)
    while (request := episode.next_request()) is not None:   # request.role: "agent" or "simulator"
        episode.answer(ask(request.role, request.messages))
    episode.record()

Offline agents (``baseline/...``) and the offline simulators are answered inside, so an offline
episode makes no request at all. The agent only ever sees the live points' ``model_input`` (rows
projected by cue mode, clients, label sets): never a card, the hidden state or an annotation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.agent.chain import Chain
from rescue_bench.agent.options import AgentOptions
from rescue_bench.agent.points import DecisionPoint, PointGold, build_points
from rescue_bench.agent.prompts import message, turn_strategy_prompt
from rescue_bench.agent.record import FLOOR_JUDGE, recipients_of
from rescue_bench.data.models import Clip
from rescue_bench.labels import THERAPIST
from rescue_bench.prompts.render import ChatMessage, Prompt
from rescue_bench.sim.agents import LOOKAHEAD_AGENTS, Move, StrategyPrior, agent_kind, reference_answer, reference_turn
from rescue_bench.sim.cards import RoleCard, cards_json, initial_state, role_cards
from rescue_bench.sim.fitted import FittedModel
from rescue_bench.sim.hearing import hear
from rescue_bench.sim.offline import OfflineSimulator, offline_simulator
from rescue_bench.sim.options import SimOptions
from rescue_bench.sim.prompts import parse_simulator, reask, system_prompt, user_prompt
from rescue_bench.sim.record import (
    AgentAction,
    ClientTurn,
    EpisodeBody,
    EpisodeRecord,
    EpisodeStep,
    Heard,
    ReferenceJson,
    SimulatorOutcome,
)
from rescue_bench.sim.scripted import SIMULATOR
from rescue_bench.sim.state import HiddenState, distresses, max_distress, most_distressed, reward, utility
from rescue_bench.tasks.instance import RowView, pick_evenly, project_row

SIM_TASK: Final = "sim"
"""The task name of episode records (``results/sim.jsonl``)."""
MAX_SIMULATOR_ATTEMPTS = 2
"""The simulator's request and one re-ask (after an unusable answer or a failed call)."""
SUBGROUP_JOIN = " & "
"""Joins the members of a subgroup target label (``"Luis & Carmen"``)."""


def subgroup_targets(clients: Sequence[str]) -> list[str]:
    """Target labels for every pair or subgroup of two or more clients short of all of them (the
    group label stands for all), members in client order: none for a couple, three pairs for three
    clients. Offered to agents built with ``subgroups=True`` (the practice page's person)."""
    from itertools import combinations

    return [SUBGROUP_JOIN.join(c) for k in range(2, len(clients)) for c in combinations(clients, k)]


def subgroup_members(whom: str, clients: Sequence[str]) -> list[str] | None:
    """The clients of subgroup label ``whom`` (:func:`subgroup_targets`), or ``None`` when it is not one."""
    return whom.split(SUBGROUP_JOIN) if whom in subgroup_targets(clients) else None


class EpisodeStart(BaseModel):
    """Where an episode starts: the real point, the transcript so far, the cards and the initial state."""

    model_config = ConfigDict(extra="forbid")

    id: str
    sample_id: str
    scenario: str
    row: int
    """1-based row k of the start point (the last real row shown)."""
    n_rows: int
    point_id: str
    clients: list[str]
    group: str
    targets: list[str]
    strategies: list[str]
    patterns: list[str]
    transcript: list[RowView] = Field(default_factory=list)
    cards: dict[str, RoleCard]
    initial: HiddenState


def episode_starts(clip: Clip, options: SimOptions) -> tuple[list[EpisodeStart], list[DecisionPoint]]:
    """The episodes of ``clip`` (``options.per_clip`` of its decision points, picked evenly) and
    every decision point of the clip (the baseline chain's training pool needs them all)."""
    points = build_points(clip, AgentOptions(state=options.state, mode=options.mode, context=options.context))
    out = []
    for p in pick_evenly(points, options.per_clip):
        k = p.row - 1
        cards = role_cards(clip, k)
        out.append(
            EpisodeStart(
                id=f"{SIM_TASK}/{clip.sample_id}/{p.row}",
                sample_id=clip.sample_id,
                scenario=clip.scenario,
                row=p.row,
                n_rows=len(clip.rows),
                point_id=p.id,
                clients=list(clip.clients),
                group=clip.group_label,
                targets=list(p.targets),
                strategies=list(p.strategies),
                patterns=list(p.patterns),
                transcript=[project_row(r, i + 1, options.mode) for i, r in enumerate(clip.rows[: k + 1])],
                cards=cards,
                initial=initial_state(cards, clip.clients),
            )
        )
    return out, points


@dataclass(frozen=True)
class SimRequest:
    """One model call an episode needs: whose (``agent`` or ``simulator``), the chain step, the messages."""

    role: str
    step: str
    messages: tuple[dict[str, Any], ...]
    """The chat messages (:class:`rescue_bench.prompts.render.ChatMessage`) as the engine sends them."""
    t: int


def _plain(messages: Sequence[ChatMessage]) -> tuple[dict[str, str], ...]:
    """``messages`` as the plain role/content dicts of a :class:`SimRequest`."""
    return tuple({"role": m["role"], "content": m["content"]} for m in messages)


class Episode:
    """One episode (see the module doc)."""

    def __init__(
        self,
        start: EpisodeStart,
        *,
        agent: str,
        simulator: str = SIMULATOR,
        options: SimOptions | None = None,
        prior: StrategyPrior | None = None,
        replay: dict[str, str] | None = None,
        subgroups: bool = False,
        model: FittedModel | OfflineSimulator | str | None = None,
        floors: bool = True,
    ) -> None:
        self.start = start
        self.with_floors = floors
        """Compute the episode's floors and ceiling under an offline simulator (a one-step fidelity case needs none)."""
        self.subgroups = subgroups
        """Offer pair and subgroup targets besides the clients and the group (:func:`subgroup_targets`)."""
        self.agent = agent
        self.simulator = simulator
        """The simulator's name. The constructor's default is the ``scripted`` smoke test (the practice
        page plays it, and its tests build episodes without naming it); runs name theirs."""
        self.offline = offline_simulator(simulator, model)
        """The offline simulator (``None``: a model plays the clients, through requests)."""
        self.options = options or SimOptions()
        self.kind, self.reference = agent_kind(agent)
        if self.kind == "reference" and prior is None:
            raise ValueError("reference agents need the run's strategy prior")
        if self.reference in LOOKAHEAD_AGENTS and self.offline is None:
            raise ValueError(
                f"{agent} looks one step ahead with an offline simulator's own step and {simulator!r} is a model; "
                "with a model simulator use baseline/distressed"
            )
        self.prior = prior
        self.replay = replay or {}
        self.chain_state = "none" if self.kind == "reference" else self.options.state
        self.transcript: list[RowView] = list(start.transcript)
        self.state: HiddenState = start.initial
        self.history: list[EpisodeStep] = []
        """Every finished step, as the record holds it."""
        self.points: list[DecisionPoint] = []
        """The live decision point of every finished step (what the agent saw; for the turn judge)."""
        self._chain: Chain | None = None
        self._point: DecisionPoint | None = None
        self._action: AgentAction | None = None
        self._heard: Heard | None = None
        self._top: str | None = None
        self._sim_raw: list[str | None] = []
        self._sim_errors: list[str | None] = []
        self._pending: SimRequest | None = None
        self._sim_messages: list[ChatMessage] = []
        self._advance()

    # -- driving ---------------------------------------------------------------------------------
    @property
    def steps(self) -> list[dict[str, Any]]:
        """Copies of the finished steps (:attr:`history`) as plain dicts, for code that handles them as JSON (the practice page)."""
        return [dict(step) for step in self.history]

    def next_request(self) -> SimRequest | None:
        return self._pending

    @property
    def done(self) -> bool:
        return self._pending is None

    def answer(self, raw: str | None, error: str | None = None) -> None:
        """Give the reply to the pending request (``None`` with ``error`` when the call failed)."""
        request = self._pending
        if request is None:
            raise RuntimeError("no pending request: the episode is complete")
        self._pending = None
        if request.role == "agent":
            assert self._chain is not None
            self._chain.answer(raw, error)
        else:
            self._simulator_answer(self._sim_messages, raw, error)
        self._advance()

    # -- the loop --------------------------------------------------------------------------------
    def live_point(self) -> DecisionPoint:
        """The decision point the agent sees now: the transcript so far, nothing else."""
        s, n = self.start, len(self.transcript)
        context = self.transcript if self.options.context == -1 else self.transcript[max(0, n - self.options.context) :] if self.options.context else []
        return DecisionPoint(
            id=f"{s.id}/t{len(self.history) + 1}",
            sample_id=s.sample_id,
            scenario=s.scenario,  # type: ignore[arg-type]
            row=n,
            n_rows=n,
            participants=s.clients,
            group=s.group,
            targets=[*s.targets, *subgroup_targets(s.clients)] if self.subgroups else s.targets,
            strategies=s.strategies,
            patterns=s.patterns,
            mode=self.options.mode,
            context=list(context),
            last_speaker=self.transcript[-1].speaker if self.transcript else "",
            gold=PointGold(when="no"),  # never read: the closed loop has no gold, and no gold branch is asked
        )

    def _advance(self) -> None:
        if self._pending is not None:  # a re-ask of the simulator is waiting
            return
        while len(self.history) < self.options.horizon:
            if self._chain is None:
                self._point = self.live_point()
                self._chain = Chain(self._point, self.chain_state, how_given_gold=False)
                self._top = most_distressed(self.state, self.start.clients)
            if not self._chain.done:
                request = self._chain.next_request()
                assert request is not None
                if self.kind == "model":
                    self._pending = SimRequest("agent", request.step, _plain(request.messages), len(self.history) + 1)
                    return
                self._chain.answer(*self._offline(request.step))
                continue
            if self._action is None:
                self._action = self._act()
                read = self.offline.read if self.offline is not None else None
                self._heard = hear(self._action, self.start.clients, read)
            if self.offline is not None:
                self._offline_step()
                continue
            assert self._heard is not None
            messages = [
                message("system", system_prompt(self.start.scenario, self.start.cards)),
                message("user", user_prompt(self.transcript, self.state, self._heard, len(self.history) + 1, self.options.horizon)),
            ]
            self._sim_messages = messages
            self._pending = SimRequest("simulator", "simulator", _plain(messages), len(self.history) + 1)
            return

    def _offline(self, step: str) -> tuple[str | None, str | None]:
        if self.kind == "reference":
            assert self._point is not None and self.prior is not None and self.reference is not None
            raw = reference_answer(
                self.reference, step, clients=self.start.clients, group=self.start.group, scenario=self.start.scenario,
                sample_id=self.start.sample_id, transcript=self._point.context, hidden=self.state, prior=self.prior,
                targets=self._point.targets, ahead=self._ahead if self.offline is not None else None,
            )
            return raw, None
        replayed = self.replay.get(step)
        return replayed, None if replayed is not None else "the baseline has no answer for this step"

    def _act(self) -> AgentAction:
        """The agent's action from its chain, and its turn joins the transcript."""
        assert self._chain is not None and self._point is not None
        r = self._chain.results

        def pred(step: str) -> Any:
            return r[step].prediction if step in r and r[step].valid else None

        intervened = pred("when") == "yes"
        act = (r["whom_how"].prediction or {}) if "whom_how" in r else {}  # a usable part counts on its own
        whom = act.get("whom") if intervened else None
        how = act.get("how") if intervened else None
        turn = pred("turn") if intervened else None
        recipients = self._recipients(whom) if intervened else []
        if intervened:
            self.transcript.append(
                RowView(row_index=len(self.transcript) + 1, speaker=THERAPIST, target=[whom] if whom else [], text=turn or "")
            )
        return {"intervened": intervened, "whom": whom, "how": how, "turn": turn, "recipients": recipients}

    def _recipients(self, whom: str | None) -> list[str]:
        """The clients of a declared target ``whom`` at the current point."""
        assert self._point is not None
        members = subgroup_members(whom, self.start.clients) if self.subgroups and whom else None
        return members or [c for c in recipients_of(whom, self._point) if c in self.start.clients]

    def _ahead(self, move: Move) -> float:
        """The reward of the state after ``move`` at this step, by the offline simulator's own step
        (what :data:`rescue_bench.sim.agents.LOOKAHEAD_AGENTS` read)."""
        assert self.offline is not None
        clients = self.start.clients
        action: AgentAction = {"intervened": False, "whom": None, "how": None, "turn": None, "recipients": []}
        if move is not None:
            whom, how = move
            action = {"intervened": True, "whom": whom, "how": how, "turn": reference_turn(whom, self.start.group), "recipients": self._recipients(whom)}
        after, _ = self.offline.step(self.state, hear(action, clients, self.offline.read), clients, self.start.scenario, len(self.history) + 1)
        return reward(after, self.options.lam)

    def _offline_step(self) -> None:
        assert self.offline is not None and self._heard is not None
        clients = self.start.clients
        after, info = self.offline.step(self.state, self._heard, clients, self.start.scenario, len(self.history) + 1)
        spoken = [row.speaker for row in self.transcript]
        real = [row.speaker for row in self.start.transcript]
        speaker = self.offline.speaker(after, self._heard, info, clients, spoken, real)
        said = [row.text for row in self.transcript if row.speaker in clients]  # no client says another's line again
        text = self.offline.turn(speaker, after, clients, said, f"{self.start.id}|{len(self.history) + 1}")
        outcome: SimulatorOutcome = {"valid": True}
        if info.escalated is not None:
            outcome["escalated"] = info.escalated
        self._finish(after, [{"speaker": speaker, "text": text}], outcome)

    def _simulator_answer(self, messages: list[ChatMessage], raw: str | None, error: str | None) -> None:
        self._sim_raw.append(raw)
        self._sim_errors.append(None if raw is not None else error or "no answer")
        parsed = parse_simulator(raw, self.start.clients, self.start.patterns) if raw is not None else None
        if parsed is not None and parsed.valid:
            p = parsed.prediction
            turns: list[ClientTurn] = [{"speaker": p["speaker"], "text": p["turn"]}] if p["speaker"] is not None else []
            self._finish(HiddenState.model_validate(p["state"]), turns, self._simulator_record(True, None))
            return
        why = parsed.error if parsed is not None else f"no answer: {error}" if error else "no answer"
        if len(self._sim_raw) < MAX_SIMULATOR_ATTEMPTS:
            # asked again, never with the same request: after an unusable answer the answer and the
            # reason follow it; after a failed call, the reason
            again = [*messages, message("assistant", raw), message("user", reask(why or "unusable"))] if raw is not None else [
                *messages[:-1], message("user", f"{messages[-1]['content']}\n\n{reask(why or 'no answer')}")
            ]
            self._sim_messages = again
            self._pending = SimRequest("simulator", "simulator", _plain(again), len(self.history) + 1)
            return
        # still no usable answer: the step has no state (it is excluded from the objective and
        # counted); the episode goes on from the last state the simulator gave
        self._finish(None, [], self._simulator_record(False, why))

    def _simulator_record(self, valid: bool, error: str | None) -> SimulatorOutcome:
        return {"raw": self._sim_raw, "errors": self._sim_errors, "valid": valid, "error": error}

    def _finish(self, after: HiddenState | None, turns: list[ClientTurn], simulator: SimulatorOutcome) -> None:
        assert self._chain is not None and self._action is not None and self._point is not None and self._heard is not None
        for turn in turns:
            target = [THERAPIST] if turn["speaker"] in self._heard["recipients"] else [c for c in self.start.clients if c != turn["speaker"]]
            self.transcript.append(RowView(row_index=len(self.transcript) + 1, speaker=turn["speaker"], target=target, text=turn["text"]))
        if after is not None:
            self.state = after
        chain = self._chain.transcript()
        agent_failed = self.kind == "model" and any(v["raw"] is None for v in chain.values())
        self.points.append(self._point)
        self.history.append(
            {
                "t": len(self.history) + 1,
                "point": self._point.id,
                "top_before": self._top,
                "chain": chain,
                "action": self._action,
                "heard": self._heard,
                "simulator": simulator,
                "client_turns": turns,
                "agent_failed": agent_failed,
                "excluded": after is None or agent_failed,
                "state": after.to_json() if after is not None else None,
                "utility": utility(after) if after is not None else None,
                "distress": distresses(after) if after is not None else None,
                "max_distress": max_distress(after) if after is not None else None,
                "reward": reward(after, self.options.lam) if after is not None else None,
            }
        )
        self._chain = None
        self._point = None
        self._action = None
        self._heard = None
        self._sim_raw = []
        self._sim_errors = []

    # -- the turn judge --------------------------------------------------------------------------
    def judge_requests(self) -> list[tuple[int, Prompt | None]]:
        """``(step index, prompt)`` for every step where the agent spoke: does its turn carry out its
        own strategy toward its own target (the agent's strategy rubric, 1-5)? ``None`` when the turn,
        target or strategy is unusable: that step scores the floor, 1, as an owed turn does in
        ``rescue agent eval``."""
        out: list[tuple[int, Prompt | None]] = []
        for i, (step, point) in enumerate(zip(self.history, self.points)):
            a = step["action"]
            if not a["intervened"]:
                continue
            how, whom, turn = a["how"], a["whom"], a["turn"]
            out.append((i, turn_strategy_prompt(point, how, whom, turn) if how is not None and whom is not None and turn is not None else None))
        return out

    def set_judged(self, judged: dict[int, tuple[int | None, bool]]) -> None:
        """Store judge scores ``{step index: (score or None, flagged)}``; no valid score counts 1, flagged."""
        for i, (score, flagged) in judged.items():
            self.history[i]["judge_strategy"] = FLOOR_JUDGE if score is None else int(score)
            self.history[i]["judge_flagged"] = flagged or score is None

    # -- the record ------------------------------------------------------------------------------
    def floors(self) -> ReferenceJson | None:
        """The episode's floors and ceiling (:mod:`rescue_bench.sim.floors`) under an offline
        simulator; ``None`` under a model simulator (each constant policy would be a run of calls)."""
        from rescue_bench.sim.floors import episode_reference

        if self.offline is None or not self.with_floors:
            return None
        s, o = self.start, self.options
        key = (s.id, s.initial.model_dump_json(), json.dumps(self.offline.describe(), sort_keys=True), o.horizon, o.gamma, o.lam)
        ref = episode_reference(self.offline, s.initial, s.clients, s.group, s.scenario, horizon=o.horizon, gamma=o.gamma, lam=o.lam, key=key)
        return ref.to_json()

    def record(self) -> dict[str, Any]:
        """The episode's line of ``results/sim.jsonl`` (:meth:`typed_record`), as the engine writes it."""
        return dict(self.typed_record())

    def typed_record(self) -> EpisodeRecord:
        """The episode's record with its metrics (:mod:`rescue_bench.sim.objective`)."""
        from rescue_bench.sim.objective import episode_metrics

        if not self.done:
            raise RuntimeError("the episode is not finished")
        s = self.start
        base: EpisodeBody = {
            "id": s.id,
            "task": SIM_TASK,
            "sample_id": s.sample_id,
            "scenario": s.scenario,
            "row": s.row,
            "n_rows": s.n_rows,
            "start": {"point": s.point_id, "row": s.row, "transcript_rows": len(s.transcript)},
            "agent": self.agent,
            "simulator": self.simulator,
            "simulator_model": self.offline.describe() if self.offline is not None else {"name": self.simulator},
            "chain_state": self.chain_state,
            "horizon": self.options.horizon,
            "clients": s.clients,
            "group": s.group,
            "cards": cards_json(s.cards),
            "initial_state": s.initial.to_json(),
            "steps": self.history,
            "reference": self.floors(),
        }
        errors = [
            f"step {st['t']} {name}: {v['error']}" for st in self.history for name, v in st["chain"].items() if not v["valid"]
        ] + [f"step {st['t']} simulator: {st['simulator'].get('error')}" for st in self.history if not st["simulator"]["valid"]]
        return {
            **base,
            "metrics": episode_metrics(base, gamma=self.options.gamma, lam=self.options.lam),
            # the fields every result record has
            "gold": None,
            "valid": not errors,
            "error": errors[0] if errors else None,
        }


def run_offline(episodes: Sequence[Episode]) -> list[EpisodeRecord]:
    """The records of episodes that need no model (an offline agent and an offline simulator)."""
    out: list[EpisodeRecord] = []
    for e in episodes:
        if not e.done:
            raise ValueError(f"episode {e.start.id} needs model calls ({e.next_request().role})")  # type: ignore[union-attr]
        out.append(e.typed_record())
    return out
