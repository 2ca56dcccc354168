"""The fields of the closed loop's records, typed: an episode's line of ``results/sim.jsonl`` and its parts.

Records stay plain dicts at run time (the JSON objects the files hold, written byte for byte as they
are built, with no conversion cost), as :mod:`rescue_bench.records` does for the tasks' records:
these TypedDicts tell mypy which keys each part has, so the code that builds a record (the episode)
and the code that reads one (the objective, the floors, fidelity) are checked against one
declaration. A record read back from a file is the same dict; the functions that take one from
outside (:func:`rescue_bench.sim.objective.summarize`, ...) type it at that boundary.

No ``from __future__ import annotations`` here: the classes' required and optional keys are then
known at run time too (``__required_keys__``), which the tests compare with real records.
"""

from typing import NotRequired, TypedDict

from rescue_bench.agent.chain import StepJson
from rescue_bench.records import Located


class AgentAction(TypedDict):
    """What the agent did at a step (or what a constant policy does): its turn, if it took one."""

    intervened: bool
    whom: str | None
    """The target label it declared (a client, the group, a subgroup)."""
    how: str | None
    """The strategy label it declared."""
    turn: str | None
    """Its words."""
    recipients: list[str]
    """The clients its target stands for (none when it kept silent)."""


class HeardJson(TypedDict):
    """:class:`rescue_bench.sim.hearing.Heard` as a record holds it."""

    recipients: list[str]
    affect: str | None
    named: list[str]
    silent: bool


class ClientStateJson(TypedDict):
    emotion: str
    valence: str
    intensity: int


class StateJson(TypedDict):
    """:class:`rescue_bench.sim.state.HiddenState` as a record holds it."""

    emotions: dict[str, ClientStateJson]
    stances: dict[str, str]
    pattern: str


class StanceCardJson(TypedDict):
    target: str
    viewpoint: str
    attitude: str


class RoleCardJson(TypedDict):
    """:class:`rescue_bench.sim.cards.RoleCard` as a record holds it."""

    client: str
    emotion: str | None
    intensity: int | None
    stances: list[StanceCardJson]
    pattern: str
    utterance_types: list[str]
    tone: str | None
    revealed: list[str]


class ClientTurn(TypedDict):
    speaker: str
    text: str


class SimulatorOutcome(TypedDict):
    """How the simulator answered a step: an offline one always (``escalated``: the ``scripted``
    rules' flag), a model with every attempt's reply and error (``raw``, ``errors``) and the reason
    its last answer was unusable (``error``)."""

    valid: bool
    escalated: NotRequired[bool]
    raw: NotRequired[list[str | None]]
    errors: NotRequired[list[str | None]]
    error: NotRequired[str | None]


class EpisodeStep(TypedDict):
    """One step of an episode: the agent's move, how it was heard, the simulator's answer and the state after."""

    t: int
    point: str
    top_before: str | None
    """The most distressed client before the step (``None``: no one is)."""
    chain: dict[str, StepJson]
    action: AgentAction
    heard: NotRequired[HeardJson]
    """Every episode writes it; the readers fall back on ``action`` without it."""
    simulator: SimulatorOutcome
    client_turns: list[ClientTurn]
    agent_failed: bool
    excluded: bool
    state: StateJson | None
    utility: float | None
    distress: dict[str, float] | None
    max_distress: float | None
    reward: float | None
    judge_strategy: NotRequired[int]
    judge_flagged: NotRequired[bool]


class ReferenceJson(TypedDict):
    """:class:`rescue_bench.sim.floors.Reference` as a record holds it."""

    constant: dict[str, float]
    floor: float
    floor_policy: str
    optimum: float | None
    worst: float | None
    changeable: bool | None


class EpisodeOrigin(TypedDict):
    point: str
    row: int
    transcript_rows: int


class InferenceJson(TypedDict):
    """:class:`rescue_bench.sim.reader.Inference` (how well a reading holds on held-out rows) as JSON."""

    reading: str
    rows: int
    clips: int
    classes: dict[str, int]
    accuracy: float | None
    balanced_accuracy: float | None
    balanced_accuracy_ci: list[float] | None
    macro_f1: float | None
    majority: str | None
    majority_accuracy: float | None
    chance: float | None
    better_than_chance: bool
    used: bool
    note: str


class EffectJson(TypedDict):
    """:class:`rescue_bench.sim.fitted.Effect` (a contrast of two arms of units) as JSON."""

    name: str
    arms: list[str]
    n: list[int]
    observed: float | None
    fitted: float | None
    scripted: float | None


class SimulatorDescription(TypedDict, total=False):
    """Which simulator played an episode (a record's ``simulator_model``): a model simulator has its
    ``name`` only, the ``scripted`` smoke test says so, a ``fitted`` model names its file, digest and
    what it was fitted on and how well it holds."""

    name: str
    smoke_test: bool
    model: str
    sha256: str
    version: int
    fitted_on: str
    affect_used: bool
    readings: list[InferenceJson]
    effects: list[EffectJson]
    heldout: dict[str, float | int | None]
    refitted_without: str


EpisodeMetrics = TypedDict(
    "EpisodeMetrics",
    {
        "J": float | None,
        "scored": bool,
        "changeable": bool | None,
        "regret": float | None,
        "floor_J": float | None,
        "optimum_J": float | None,
        "worst_J": float | None,
        "gamma": float,
        "lambda": float,
        "initial_max_distress": float,
        "final_max_distress": float | None,
        "peak_max_distress": float | None,
        "initial_pattern": str,
        "final_pattern": str | None,
        "deescalated": bool | None,
        "neglect_hits": int,
        "neglect_turns": int,
        "group_turns": int,
        "left_out_hits": int,
        "left_out_steps": int,
        "attention_balance": float | None,
        "interventions": int,
        "steps": int,
        "excluded": bool,
        "excluded_steps": int,
        "invalid_agent_steps": int,
        "agent_failed_steps": int,
        "agent_calls": int,
        "invalid_simulator_steps": int,
        "simulator_calls": int,
        "simulator_failed_calls": int,
        "judge_sum": int,
        "judge_n": int,
        "run_floor_J": NotRequired[float | None],
    },
)
"""An episode's metrics (:func:`rescue_bench.sim.objective.episode_metrics`); ``run_floor_J`` is
added when a run is summarised (:func:`rescue_bench.sim.objective.with_run_floor`)."""


class Estimate(TypedDict):
    """A summary's number: the value over the records, its interval (``None``: none computed) and
    how many units it is over."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


class EpisodeBody(Located):
    """An episode's record before its metrics (what :func:`rescue_bench.sim.objective.episode_metrics` reads)."""

    n_rows: int
    start: EpisodeOrigin
    agent: str
    simulator: str
    simulator_model: SimulatorDescription
    chain_state: str
    horizon: int
    clients: list[str]
    group: str
    cards: dict[str, RoleCardJson]
    initial_state: StateJson
    steps: list[EpisodeStep]
    reference: ReferenceJson | None


class PracticePlay(TypedDict):
    """When a person played a practice episode (``rescue review export-practice``): ``order`` is its
    place among all the person's episodes in the order they began (1 first; a gap is an attempt not
    exported), ``began`` when, ``debrief_open`` whether they could already read scores and debriefs
    (``None``: not recorded)."""

    order: int
    began: str
    debrief_open: bool | None


class EpisodeRecord(EpisodeBody):
    """An episode's line of ``results/sim.jsonl``."""

    metrics: EpisodeMetrics
    gold: None
    valid: bool
    error: str | None
    practice: NotRequired[PracticePlay]
    """A person's practice episode only: when it was played."""
