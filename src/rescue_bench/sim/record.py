"""The fields of the closed loop's records, typed: an episode's line of ``results/sim.jsonl`` and its parts.

Records stay plain dicts at run time (the JSON objects the files hold, written byte for byte as they
are built, with no conversion cost), as :mod:`rescue_bench.records` does for the tasks' records:
these TypedDicts tell mypy which keys each part has, so the code that builds a record (the episode)
and the code that reads one (the objective, the floors, fidelity) are checked against one
declaration. A record read back from a file is the same dict; the functions that take one from
outside (:func:`rescue_bench.sim.objective.summarize`, ...) type it at that boundary.

No ``from __future__ import annotations`` here: the classes' required and optional keys are then
known at run time too (``__required_keys__``), which the tests compare with real records. They are
``typing_extensions`` TypedDicts, which pydantic validates on Python 3.11 too (the practice page's
answers hold a :class:`Heard`).
"""

from typing import NotRequired

from typing_extensions import TypedDict

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


class Heard(TypedDict):
    """One step as the clients heard it (:mod:`rescue_bench.sim.hearing`): the one type of it, in
    the simulators, the episode's record and the practice page's answers. ``words`` and ``strategy``
    (the declared label, which only the ``scripted`` smoke test reads) are absent from records
    written before they were kept."""

    recipients: list[str]
    """The clients the words were said to, in client order (none: silence)."""
    affect: str | None
    """The reader's affect of the words (``None``: silence, or a simulator that does not read it)."""
    named: list[str]
    silent: bool
    words: NotRequired[str | None]
    strategy: NotRequired[str | None]


class ClientStateJson(TypedDict):
    emotion: str
    valence: str
    intensity: float
    valence_p: NotRequired[dict[str, float]]


class StateJson(TypedDict):
    """:class:`rescue_bench.sim.state.HiddenState` as a record holds it (an expected state with its
    distributions)."""

    emotions: dict[str, ClientStateJson]
    stances: dict[str, str]
    pattern: str
    pattern_p: NotRequired[dict[str, float]]


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
    heard: NotRequired[Heard]
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
    """:class:`rescue_bench.sim.fitted.EffectEstimate` (learned with its interval, at its floor, or assumed) as JSON."""

    name: str
    component: str
    status: str
    value: float | None
    ci: list[float] | None
    units: int | None
    note: str


class CheckJson(TypedDict):
    """:class:`rescue_bench.sim.fitted.Check` (the simulator against its best floor out of sample) as JSON."""

    measure: str
    label: str
    simulator: float | None
    floor: str
    floor_value: float | None
    difference: float | None
    ci: list[float] | None
    points: int
    clips: int
    verdict: str


class SimulatorDescription(TypedDict, total=False):
    """Which simulator played an episode (a record's ``simulator_model``): a model simulator has its
    ``name`` only, the ``scripted`` smoke test says so, a ``fitted`` model names its file, digest and
    what it was fitted on, its effects (learned, at a floor, or assumed) and how it did against its
    floors on sessions it was not fitted on (``validation``)."""

    name: str
    smoke_test: bool
    model: str
    sha256: str
    version: int
    fitted_on: str
    affect_used: bool
    readings: list[InferenceJson]
    effects: list[EffectJson]
    validation: list[CheckJson]
    variant: str
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


class VariantJ(TypedDict):
    """An episode under one variant of the simulator's assumptions (:mod:`rescue_bench.sim.sensitivity`):
    the agent's J (its recorded steps replayed; ``None`` for an excluded episode) and every constant policy's."""

    J: float | None
    constant: dict[str, float]


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
    sensitivity: NotRequired[dict[str, VariantJ]]
    """Under a ``fitted`` simulator: the episode under every variant of its assumptions, by variant name."""
    practice: NotRequired[PracticePlay]
    """A person's practice episode only: when it was played."""
