"""The offline simulators behind one interface: the ``fitted`` default and the ``scripted`` smoke test.

Each plays a step from the state before and the step as heard (:class:`rescue_bench.sim.record.Heard`):
the state after, who speaks, and what they say. An episode (:class:`rescue_bench.sim.Episode`) and the
floors and optimum (:mod:`rescue_bench.sim.floors`) call the same methods, so a policy run through
an episode and the same policy searched by the floors get the same J.

* ``fitted`` (:mod:`rescue_bench.sim.fitted`): transitions counted from annotated sessions; hears
  the words (their affect, whom they name) and never the strategy label.
* ``scripted`` (:mod:`rescue_bench.sim.scripted`): the project's own fixed rules, kept as a smoke test
  of the harness. It reads the declared strategy label (a fitting label calms), which no client could
  hear: the report's checks show it failing the label check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Protocol, cast

from rescue_bench.labels import strategies
from rescue_bench.sim.fitted import FittedModel, load_model
from rescue_bench.sim.fitted import client_turn as fitted_turn
from rescue_bench.sim.hearing import SILENCE, heard_as
from rescue_bench.sim.options import DEFAULT_SIMULATOR, FITTED, OFFLINE_SIMULATORS, SCRIPTED
from rescue_bench.sim.reader import AFFECTS
from rescue_bench.sim.record import CheckJson, EffectJson, Heard, InferenceJson, SimulatorDescription
from rescue_bench.sim.scripted import client_turn as scripted_turn
from rescue_bench.sim.scripted import fits, next_speaker, transition
from rescue_bench.sim.state import HiddenState, most_distressed

__all__ = ["DEFAULT_SIMULATOR", "FITTED", "OFFLINE_SIMULATORS", "SCRIPTED", "Fitted", "OfflineSimulator", "Scripted", "offline_simulator"]


@dataclass(frozen=True)
class StepInfo:
    """What a simulator's step leaves for its speaker rule: the ``scripted`` rules' escalation flag
    and the most distressed client before the step (``None`` for the ``fitted`` model, which needs neither)."""

    escalated: bool | None = None
    top: str | None = None


class OfflineSimulator(Protocol):
    name: str

    def read(self, words: str) -> str | None: ...

    def step(self, state: HiddenState, heard: Heard, clients: Sequence[str], scenario: str, t: int) -> tuple[HiddenState, StepInfo]:
        """The state after step ``t`` (1-based) and what the speaker rule needs of it."""
        ...

    def speaker(
        self, after: HiddenState, heard: Heard, info: StepInfo, clients: Sequence[str], spoken: Sequence[str], real: Sequence[str]
    ) -> str: ...

    def turn(self, speaker: str, after: HiddenState, clients: Sequence[str], said: Sequence[str], salt: str) -> str: ...

    def describe(self) -> SimulatorDescription: ...

    def distinct_steps(self, state: HiddenState, clients: Sequence[str], scenario: str) -> list[Heard]: ...


def client_sets(clients: Sequence[str]) -> list[tuple[str, ...]]:
    """Every non-empty set of clients, in client order."""
    return [tuple(c) for k in range(1, len(clients) + 1) for c in combinations(clients, k)]


class Scripted:
    name = SCRIPTED

    def read(self, words: str) -> str | None:
        return None

    def step(self, state: HiddenState, heard: Heard, clients: Sequence[str], scenario: str, t: int) -> tuple[HiddenState, StepInfo]:
        top = most_distressed(state, list(clients))
        after, escalated = transition(state, heard, clients, scenario)
        return after, StepInfo(escalated=escalated, top=top)

    def speaker(
        self, after: HiddenState, heard: Heard, info: StepInfo, clients: Sequence[str], spoken: Sequence[str], real: Sequence[str]
    ) -> str:
        assert info.escalated is not None
        return next_speaker(after, heard, info.top, info.escalated, clients, spoken, real=real)

    def turn(self, speaker: str, after: HiddenState, clients: Sequence[str], said: Sequence[str], salt: str) -> str:
        return scripted_turn(speaker, after, clients)

    def describe(self) -> SimulatorDescription:
        return {"name": SCRIPTED, "smoke_test": True}

    def distinct_steps(self, state: HiddenState, clients: Sequence[str], scenario: str) -> list[Heard]:
        """Silence, and every set of clients with a label that fits the state's pattern and one that
        does not (the rules read a label only through whether it fits)."""
        labels = strategies(scenario)
        chosen = [s for s in (next((x for x in labels if fits(x, state.pattern, scenario)), None),
                              next((x for x in labels if not fits(x, state.pattern, scenario)), None)) if s is not None]
        return [SILENCE] + [heard_as(g, words="...", strategy=s) for g in client_sets(clients) for s in chosen]


class Fitted:
    name = FITTED

    def __init__(self, model: FittedModel, path: str | None = None, held_out: str | None = None) -> None:
        self.model = model
        self.path = path
        self.held_out = held_out
        """The clip this model was refitted without (fidelity on the model's own clips)."""
        self._description: SimulatorDescription | None = None

    def read(self, words: str) -> str | None:
        return self.model.read(words)

    def step(self, state: HiddenState, heard: Heard, clients: Sequence[str], scenario: str, t: int) -> tuple[HiddenState, StepInfo]:
        return self.model.transition(state, heard, clients, scenario), StepInfo()

    def speaker(
        self, after: HiddenState, heard: Heard, info: StepInfo, clients: Sequence[str], spoken: Sequence[str], real: Sequence[str]
    ) -> str:
        return self.model.next_speaker(heard, clients, spoken, real)

    def turn(self, speaker: str, after: HiddenState, clients: Sequence[str], said: Sequence[str], salt: str) -> str:
        return fitted_turn(speaker, after, clients, said, salt)

    def describe(self) -> SimulatorDescription:
        m = self.model
        if self._description is None:
            self._description = {
                "name": FITTED, "model": self.path or "default", "sha256": m.sha256(), "version": m.version, "fitted_on": m.source.name,
                "affect_used": m.affect_used, "readings": [cast(InferenceJson, r.model_dump(mode="json")) for r in m.readings],
                "effects": [cast(EffectJson, e.model_dump(mode="json")) for e in m.effects],
                "validation": [cast(CheckJson, c.model_dump(mode="json")) for c in m.validation],
            }
            if m.variant:
                self._description["variant"] = m.variant
            if self.held_out:
                self._description["refitted_without"] = self.held_out
        return self._description

    def distinct_steps(self, state: HiddenState, clients: Sequence[str], scenario: str) -> list[Heard]:
        """Silence, and every set of clients with every affect the words can be read as."""
        return [SILENCE] + [heard_as(g, words="...", affect=a) for g in client_sets(clients) for a in AFFECTS]


def offline_simulator(name: str, model: FittedModel | OfflineSimulator | str | None = None) -> OfflineSimulator | None:
    """The offline simulator called ``name`` (``None`` for a model simulator); ``model``: the fitted
    model, its file (the bundled default when ``None``), or the simulator itself."""
    if model is not None and not isinstance(model, (FittedModel, str)):
        return model
    if name == SCRIPTED:
        return Scripted()
    if name == FITTED:
        if isinstance(model, FittedModel):
            return Fitted(model)
        return Fitted(load_model(model), str(model) if model is not None else None)
    return None
