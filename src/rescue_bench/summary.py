"""``summary.json``, typed: one model per run kind, validated where the file is written or read.

A run folder's ``summary.json`` holds the run's numbers per scenario (couple, family, both). Its
shape depends on the run's kind:

- :class:`EvalSummary` (``rescue eval``): ``{task: {scenario: {metric: value, "n", "answered",
  "invalid_rate", "invalid_causes", "trimmed"}}}`` (:func:`rescue_bench.scoring.summarize`), and
  with ``--lenient`` ``"left_out"``, the instances it left out.
- :class:`AgentSummary` (``rescue agent eval``): ``{"agent": {scenario: {metric: value, "n",
  "invalid_rate", "support"}}}``.
- :class:`SimSummary` (``rescue sim eval``, ``rescue review export-practice``): ``{"sim": {scenario:
  {"episodes", "clips", "floor_policy", "interval", metric: {"value", "ci_low", "ci_high", "n"}}}}``.
- :class:`FidelitySummary` (``rescue sim fidelity``): ``{"fidelity": {scenario: {"points", "clips",
  metric: {...}, "beaten_by"}}, "checks": [...]}``.

Each scenario's entry names its fixed keys as fields; its metrics (their names come from the task
table and the metric lists) are the model's extra keys, typed, and read through ``metrics``. The
keys are written in the order they were given (the producer's order), so a file written through
these models is byte for byte the dict it was made from. :func:`parse_summary` picks the kind from
the file's top-level keys.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    RootModel,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

Number = int | float
"""A metric's value: a count stays a whole number in the file (``n_invalid``), a share a float."""


class Ordered(BaseModel):
    """An object of a JSON file whose keys are written back in the order they were read (keys set
    afterwards follow); unknown keys are kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    _order: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        made = handler(data)
        if isinstance(data, dict) and isinstance(made, Ordered):
            made._order = [str(k) for k in data]
        return made

    @model_serializer(mode="wrap")
    def _in_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        first = {k: data[k] for k in self._order if k in data}
        return {**first, **{k: v for k, v in data.items() if k not in first}}


class Interval(BaseModel):
    """A metric with its confidence interval over clips (``n``: what it averages)."""

    model_config = ConfigDict(extra="allow")

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None


class LeftOutRecord(Ordered):
    """An instance ``rescue eval --lenient`` left out because its gold is outside its closed set or
    range (:class:`rescue_bench.tasks.LeftOut`): the id it would have had, where, and why."""

    id: str
    sample_id: str
    scenario: str
    row: int
    field: str
    reason: str


class EvalEntry(Ordered):
    """One scenario of one task of ``rescue eval``'s summary: the task's metrics, and its answers."""

    __pydantic_extra__: dict[str, Number | None] = Field(init=False)  # the task's metrics
    n: int = 0
    answered: int | None = None
    """Replies the model sent (usable or not): ``n`` less the prompts refused as too long (absent in
    summaries of earlier versions)."""
    invalid_rate: float | None = None
    invalid_causes: dict[str, int] = Field(default_factory=dict)
    trimmed: int = 0
    left_out: list[LeftOutRecord] | None = Field(default=None, exclude_if=lambda value: value is None)
    """``--lenient``: the instances of this task and scenario left out for an invalid gold (not in
    ``n``); absent from the file of a run without ``--lenient``, whose summary recomputes from
    ``results/`` alone."""

    @property
    def metrics(self) -> dict[str, Number | None]:
        """The task's metrics, by name (``summary.json``'s other keys)."""
        return dict(self.__pydantic_extra__ or {})

    def metric(self, name: str) -> Number | None:
        return (self.__pydantic_extra__ or {}).get(name)


class EvalSummary(RootModel[dict[str, dict[str, EvalEntry]]]):
    """``summary.json`` of ``rescue eval``: ``{task: {scenario: entry}}``."""

    KIND: ClassVar[str] = "eval"


class AgentEntry(Ordered):
    """One scenario of the agent chain's summary: the chain's metrics, points and their support."""

    __pydantic_extra__: dict[str, Number | None] = Field(init=False)
    n: int = 0
    invalid_rate: float | None = None
    support: dict[str, int] = Field(default_factory=dict)

    def metric(self, name: str) -> Number | None:
        return (self.__pydantic_extra__ or {}).get(name)


class AgentSummary(Ordered):
    """``summary.json`` of ``rescue agent eval``: ``{"agent": {scenario: entry}}``."""

    KIND: ClassVar[str] = "agent"
    agent: dict[str, AgentEntry]


class OrderHolds(BaseModel):
    """How often one mean J lies above another over the variants of a simulator's assumptions, and
    whether their order is the same in every variant (:mod:`rescue_bench.sim.sensitivity`)."""

    above: int
    below: int = 0
    variants: int
    holds: bool
    """Above in every variant, below in every variant, or tied in every variant."""


class VariantRow(BaseModel):
    """One variant of a scenario's sensitivity: the agent's mean J, and the best constant policy's."""

    variant: str
    J: float | None
    floor_J: float | None
    floor_policy: str | None


class Sensitivity(BaseModel):
    """A scenario's sensitivity: the agent against the run's best constant policy in every variant of
    the simulator's assumptions, and whether that order holds."""

    variants: list[VariantRow]
    above_floor: OrderHolds | None


class SimEntry(Ordered):
    """One scenario of a closed-loop summary: its episodes and each metric with its interval."""

    __pydantic_extra__: dict[str, Interval] = Field(init=False)
    episodes: int = 0
    clips: int | None = None
    floor_policy: str | None = None
    interval: str | None = None
    sensitivity: Sensitivity | None = None
    """Under a ``fitted`` simulator: how the agent's place against its floor moves with the assumptions."""

    def metric(self, name: str) -> Interval:
        return (self.__pydantic_extra__ or {}).get(name) or Interval()


class SimSummary(Ordered):
    """``summary.json`` of ``rescue sim eval``: ``{"sim": {scenario: entry}}``."""

    KIND: ClassVar[str] = "sim"
    sim: dict[str, SimEntry]


class SimulatorCheck(Ordered):
    """One check of an offline simulator (:mod:`rescue_bench.sim.checks`): passed, and why."""

    check: str
    a: str | None = None
    """The agent that should score higher (or the same)."""
    b: str | None = None
    expect: str | None = None
    passed: bool
    why: str = ""


class FloorCheck(BaseModel):
    """The simulator against its best floor on one fidelity measure, out of sample: the difference,
    oriented so that positive is better, with its 95% interval (paired over decision points,
    resampling clips; none from fewer than 3 clips) and the verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    measure: str
    label: str
    simulator: float | None
    floor: str
    floor_value: float | None
    difference: float | None
    ci: tuple[float, float] | None
    points: int
    clips: int
    verdict: Literal["better", "no different", "worse", "no interval", "not measured"]


class FidelityEntry(Ordered):
    """One scenario of a fidelity summary: its points, each measure with its interval, the floors it
    does not beat, and the simulator against its best floors (``validation``)."""

    __pydantic_extra__: dict[str, Interval] = Field(init=False)
    points: int = 0
    clips: int | None = None
    beaten_by: dict[str, list[str]] = Field(default_factory=dict)
    validation: list[FloorCheck] = Field(default_factory=list)

    def metric(self, name: str) -> Interval:
        return (self.__pydantic_extra__ or {}).get(name) or Interval()


class FidelitySummary(Ordered):
    """``summary.json`` of ``rescue sim fidelity``: ``{"fidelity": {scenario: entry}, "checks": [...]}``."""

    KIND: ClassVar[str] = "sim_fidelity"
    fidelity: dict[str, FidelityEntry]
    checks: list[SimulatorCheck] = Field(default_factory=list)


RunSummary = EvalSummary | AgentSummary | SimSummary | FidelitySummary
"""A ``summary.json`` of any kind."""


def parse_summary(value: Any) -> RunSummary:
    """A ``summary.json`` object as its kind's model (by its top-level keys); ``pydantic.ValidationError``
    or ``ValueError`` when it does not fit."""
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    if "agent" in value:
        return AgentSummary.model_validate(value)
    if "sim" in value:
        return SimSummary.model_validate(value)
    if "fidelity" in value:
        return FidelitySummary.model_validate(value)
    return EvalSummary.model_validate(value)


def summary_json(summary: RunSummary) -> Any:
    """The JSON object of ``summary.json`` (the keys in the order they were given)."""
    return summary.model_dump(mode="json", by_alias=True)
