"""Closed-loop evaluation of the support agent: episodes whose clients answer back (the paper's
Appendix B, Eq. 12-14, instantiated).

The domain core, free of the evaluation engine: the hidden state with the objective's terms U and
d (``state``), role cards and the initial state from a clip's annotations (``cards``), what the
clients hear of a step (``hearing``) and how words are read (``reader``), the offline simulators
(``offline``: the default ``fitted``, counted from annotated sessions in ``fitted``, and the
``scripted`` smoke test in ``scripted``), the model simulator's prompt and parser (``prompts``), the
reference agents (``agents``), the episode as a state machine (``episode``), floors and the optimum
(``floors``), the objective and metrics (``objective``), the checks a simulator must pass
(``checks``), and the simulator's fidelity to the real sessions (``fidelity``). :mod:`rescue_bench.engine.sim` runs model agents and simulators on inspect_ai;
``rescue sim eval`` and ``rescue sim fidelity`` are the commands.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from rescue_bench.lazy import lazy_exports

if TYPE_CHECKING:
    from rescue_bench.sim.agents import REFERENCE_AGENTS, StrategyPrior, agent_kind, observed_distress
    from rescue_bench.sim.cards import RoleCard, initial_state, role_cards
    from rescue_bench.sim.episode import SIM_TASK, Episode, EpisodeStart, SimRequest, episode_starts, run_offline
    from rescue_bench.sim.fitted import FittedModel, load_model, write_model
    from rescue_bench.sim.fitting import fit
    from rescue_bench.sim.floors import constant_policies, episode_reference
    from rescue_bench.sim.hearing import hear
    from rescue_bench.sim.objective import METRICS, SimMetric, breakdown, episode_metrics, paired_comparison, summarize
    from rescue_bench.sim.offline import offline_simulator
    from rescue_bench.sim.options import DEFAULT_SIMULATOR, FITTED, OFFLINE_SIMULATORS, SCRIPTED, SimOptions
    from rescue_bench.sim.prompts import SIMULATOR_TITLE, parse_simulator
    from rescue_bench.sim.record import Heard
    from rescue_bench.sim.scripted import SIMULATOR, transition
    from rescue_bench.sim.state import ClientState, HiddenState, distress, objective, utility

__all__ = [
    "DEFAULT_SIMULATOR",
    "FITTED",
    "METRICS",
    "OFFLINE_SIMULATORS",
    "REFERENCE_AGENTS",
    "SCRIPTED",
    "SIMULATOR",
    "SIMULATOR_TITLE",
    "SIM_TASK",
    "ClientState",
    "Episode",
    "EpisodeStart",
    "FittedModel",
    "Heard",
    "HiddenState",
    "RoleCard",
    "SimMetric",
    "SimOptions",
    "SimRequest",
    "StrategyPrior",
    "agent_kind",
    "breakdown",
    "constant_policies",
    "distress",
    "episode_metrics",
    "episode_reference",
    "episode_starts",
    "fit",
    "hear",
    "initial_state",
    "load_model",
    "objective",
    "observed_distress",
    "offline_simulator",
    "paired_comparison",
    "parse_simulator",
    "role_cards",
    "run_offline",
    "summarize",
    "transition",
    "utility",
    "write_model",
]

# Lazy: every ``rescue`` command imports ``rescue_bench.sim.options`` for its option defaults, and
# that import must not load the episodes, the objective and numpy (``rescue --help`` stays fast). A
# name of the package is imported from its module on first use.
_MODULES = ("options", "record", "state", "scripted", "agents", "cards", "hearing", "fitted", "fitting", "offline", "floors", "episode", "objective", "prompts")
"""The package's modules, in the order a name is looked up in them."""


__getattr__ = lazy_exports(__name__, __all__, _MODULES)


class _Package(types.ModuleType):
    """This package as a module whose exports a submodule of the same name does not replace: the
    import system binds each submodule it loads on its package, and ``objective`` is both the
    objective function (``state``) and the module of the metrics (loaded later, and lazily now)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in __all__:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
