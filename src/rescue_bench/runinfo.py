"""``run.json``, typed: one model that every writer builds and every reader parses.

A run folder's ``run.json`` records what a run was (kind, model, judge, settings, data, versions,
usage) and how it went (status, counts, the one-line cause of a failure). Every run command
(``rescue eval``, ``rescue agent eval``, ``rescue sim eval``, ``rescue sim fidelity``, ``rescue
annotate draft``) writes it through the engine's run lifecycle (:mod:`rescue_bench.engine.runfolder`),
which assembles the keys every kind shares in one place; ``rescue review export-practice`` and the
agent's single-task ablation (``single/run.json``) write records of their own kinds. The engine (the
folder a run resumes in) and the report read it. They all go through :class:`RunInfo` and its kinds
here, so a key has one name, one type and one meaning:

- ``kind`` names the run (:data:`RunKind`; a ``rescue eval`` file of an earlier version has none, its
  ``identity`` may say ``eval``), and each kind has its model (:data:`KINDS`) with its own keys.
- ``status`` is ``running`` (written before the first call), ``success`` or ``failed``; the
  inspect logs' own statuses are ``log_statuses`` (earlier closed-loop files kept them in
  ``status``: they are read into ``log_statuses``).
- Every key is optional with a default: a ``run.json`` of an earlier version that lacks newer keys
  (published runs) still reads, and :meth:`RunInfo.dump` writes only the keys a writer set, so no
  key appears that the writer did not mean to write.
- Unknown keys pass through (``extra="allow"``): rewriting a file loses nothing.
- Keys are written in each kind's :attr:`~RunInfo.ORDER`, unknown keys after them.

:func:`read_run_info` is the one place that parses a ``run.json`` file. A process that wrote one
does not read it back: the run drivers return the :class:`RunResult` (the summary and this info).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from rescue_bench.errors import RescueError
from rescue_bench.fileio import atomic_write_json, loads
from rescue_bench.summary import LeftOutRecord, Ordered, RunSummary

RUN_JSON = "run.json"
"""The file name of a run's info in its folder."""

RunKind = Literal["eval", "agent", "sim", "sim_fidelity", "draft", "single_task_ablation"]
"""What wrote a ``run.json``: the five run commands, and the agent's single-task ablation."""
RunStatus = Literal["running", "success", "failed"]
"""A run's ``status``: one meaning for every kind."""
Counts = dict[str, int | dict[str, int]]
"""``run.json``'s ``counts``: numbers by name, and numbers by cause under a name (``invalid``)."""


class _Open(BaseModel):
    """A part of ``run.json``: every key optional, unknown keys kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class GenerateRequest(Ordered):
    """The generation settings of a call: those a run means to send, or those its first call sent
    (then also ``model`` and the messages' ``roles``, and any other parameter that went on the wire)."""

    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    system_role: str | None = None
    model: str | None = None
    roles: list[str | None] | None = None


class RequestRecord(_Open):
    """``request`` / ``judge_request``: the generation settings meant beside those the first call sent."""

    intended: GenerateRequest | None = None
    sent: GenerateRequest | None = None
    sent_by: str | None = None


class Usage(Ordered):
    """Token usage of one model (or role): counts summed over calls, and the cost when the provider gives one."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    total_cost: float | None = None

    @classmethod
    def zero(cls) -> Usage:
        return cls(input_tokens=0, output_tokens=0, total_tokens=0)

    def counts(self) -> dict[str, int | float]:
        """Every number recorded (unknown counts of the provider too), by name."""
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if isinstance(v, int | float) and not isinstance(v, bool)}

    def __add__(self, other: Usage) -> Usage:
        mine, theirs = self.counts(), other.counts()
        return Usage.model_validate({k: mine.get(k, 0) + theirs.get(k, 0) for k in dict.fromkeys([*mine, *theirs])})

    def __sub__(self, other: Usage) -> Usage:
        mine, theirs = self.counts(), other.counts()
        return Usage.model_validate({k: v - theirs.get(k, 0) for k, v in mine.items()})


def merge_usage(parts: Sequence[dict[str, Usage]]) -> dict[str, Usage]:
    """Token usage per model (or role) summed over several parts (tasks' logs, workers)."""
    usage: dict[str, Usage] = {}
    for part in parts:
        for name, u in part.items():
            usage[name] = usage.get(name, Usage.zero()) + u
    return usage


class Limits(_Open):
    """``limits``: how long a call may retry, and the most tokens of each role's answer."""

    max_retries: int | None = None
    backoff: str | None = None
    attempt_timeout: int | None = None
    max_tokens: dict[str, int] = Field(default_factory=dict)


class GitRevision(_Open):
    """``git_revision``: the project's commit when run from a checkout, and whether its tree had changes."""

    commit: str | None = None
    dirty: bool | None = None


class RoleEstimate(Ordered):
    """One role's part of ``estimate``: calls at most and expected, the expected prompt, the output at most."""

    calls: int = 0
    expected_calls: int | None = None
    unusable_calls: int | None = None
    """The calls if every answer is unusable (the other end of what a run sends)."""
    unusable_prompt_tokens: int | None = None
    prompt_chars: int = 0
    prompt_tokens: int = 0
    max_output_tokens: int | None = 0


class Estimate(Ordered):
    """``estimate``: what a run was estimated to send before it started, per role, and how."""

    by_role: dict[str, RoleEstimate] = Field(default_factory=dict)
    chars_per_token: float | None = None
    notes: list[str] = Field(default_factory=list)


class RunIdentity(Ordered):
    """``identity``: what makes two runs the same run (the kind, the settings that change what is
    computed, the data's digests)."""

    kind: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    """The settings as JSON, compared key by key (any kind's settings)."""
    data: list[str] = Field(default_factory=list)

    def same(self, other: RunIdentity | None) -> bool:
        return other is not None and self.model_dump() == other.model_dump()

    def differences(self, new: RunIdentity) -> list[str]:
        """What differs from ``new``, one phrase per difference."""
        if self.kind != new.kind:
            return [f"kind {self.kind!r} vs {new.kind!r}"]
        diffs = []
        if self.data != new.data:
            diffs.append("data (other files or contents)")
        a, b = self.settings, new.settings
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                diffs.append(f"{key} {a.get(key)!r} vs {b.get(key)!r}")
        return diffs


class RecordedSettings(Ordered):
    """``settings``: the run's settings model as it was dumped (``rescue_bench.engine.settings``: every
    kind's own keys are kept); the keys the readers use are typed here, and older files lack some."""

    model: str | None = None
    judge: str | None = None
    data: list[str] | str | None = None
    limit: int | None = None
    mode: str | None = None
    context: int | None = None
    options: Ordered | None = None
    """The agent's or the closed loop's options (``AgentOptions``, ``SimOptions``)."""

    @property
    def data_paths(self) -> list[str] | None:
        """The ``--data`` paths (``None``: the bundled demo)."""
        if self.data is None:
            return None
        return [self.data] if isinstance(self.data, str) else [str(d) for d in self.data]


class BertscoreUse(_Open):
    """``bertscore``: whether BERTScore was asked for, whether it ran, and with which backbone."""

    requested: bool | None = None
    used: bool | None = None
    backbone: str | None = None


class WorkersChoice(_Open):
    """``workers_choice``: how the number of worker processes was chosen (``rescue eval``)."""

    requested: int | str | None = None
    cpus: int | None = None
    max_connections: int | None = None
    workers: int | None = None
    reason: str | None = None


class VideoReport(_Open):
    """``video``: the video mode's clips (``rescue eval --mode video``)."""

    assets: str | None = None
    instances: int | None = None
    evaluated: int | None = None
    missing_clips: int | None = None
    missing_file: str | None = None


class OverflowReport(_Open):
    """``overflow``: prompts longer than the model's context window (``rescue eval``), and what became of them."""

    policy: str | None = None
    """``--on-overflow``: ``wrong``, ``trim`` or ``fail``."""
    instances: int = 0
    overflow: int = 0
    """Instances whose prompt did not fit (with ``trim``: not even with every droppable row left out),
    scored as wrong answers."""
    trimmed: int = 0
    """Instances whose prompt fit once its oldest context rows were left out (``trim``)."""
    per_task: dict[str, dict[str, dict[str, int]]] = Field(default_factory=dict)
    """``{task: {scenario: {"instances", "overflow", "trimmed"}}}`` for couple, family and both."""


class AgentCalls(_Open):
    """``calls`` of an agent run: calls asked for, per chain step, judge and single tasks."""

    points: int | None = None
    chain_steps: dict[str, int] = Field(default_factory=dict)
    chain_total: int = 0
    chain_judge: int = 0
    single_task: int = 0
    single_task_judge: int = 0


class SimCalls(_Open):
    """``calls`` of a closed-loop run: agent and simulator calls, in total and per episode, and the judge's."""

    episodes: int | None = None
    agent_total: int = 0
    simulator_total: int = 0
    agent_per_episode: float = 0.0
    simulator_per_episode: float = 0.0
    judge: int | None = None


class FidelityCalls(_Open):
    """``calls`` of a fidelity run: the simulator's calls and the judge's prompts."""

    simulator_total: int | None = None
    judge: int | None = None


class DraftSegments(_Open):
    """``segments`` of a draft run: those it drafted, those that got no draft (and why), and those
    whose current draft it kept."""

    written: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    """Segment id: the one-line reason (HTTP status and the server's message)."""
    kept: list[str] = Field(default_factory=list)
    reasons: dict[str, str] = Field(default_factory=dict)
    """Why each segment of the run needed a draft."""
    earlier: list[str] = Field(default_factory=list)
    """Failed segments whose earlier clip stays in the drafts file."""


class DraftCalls(_Open):
    """``calls`` of a draft run: requests answered, re-asks among them, and what was drafted."""

    calls: int = 0
    reasked: int = 0
    windows: int = 0
    rows: int = 0
    problems: int = 0


class RunInfo(_Open):
    """The keys every kind of ``run.json`` may have (each optional: see the module doc)."""

    ORDER: ClassVar[tuple[str, ...]] = ()
    """The order the keys are written in (by their names in the file); unknown keys follow."""

    kind: RunKind | None = None
    status: RunStatus | None = None
    """``running`` (written before the first call), ``success`` or ``failed``."""
    counts: Counts | None = None
    """What the run did and what failed (instances, answered, calls failed ...), per kind; ``rescue
    eval``'s add up (:class:`rescue_bench.scoring.AnswerCounts`), its unusable answers by cause."""
    failure: str | None = None
    """The one line of a failed run (``None`` when it succeeded)."""
    identity: RunIdentity | None = None
    """What makes two runs the same run (:func:`rescue_bench.engine.runfolder.run_identity`)."""
    settings: RecordedSettings | None = None
    """The run's settings as the engine's settings model dumps them."""
    limits: Limits | None = None
    """How long a call may retry (``max_retries``, ``backoff``, ``attempt_timeout``) and the most
    tokens of each role's answer (``max_tokens``: model, judge, simulator)."""
    model: str | None = None
    judge: str | None = None
    judge_prompt_sha: str | None = None
    request: RequestRecord | None = None
    judge_request: RequestRecord | None = None
    data_files: list[dict[str, str]] | None = None
    git_revision: GitRevision | None = None
    clips: int | None = None
    bertscore: BertscoreUse | None = None
    bertscore_backbone: str | None = None
    usage: dict[str, Usage] | None = None
    """Token usage per model (``input_tokens``, ``output_tokens``, ``total_tokens``, ``total_cost``)."""
    usage_by_role: dict[str, Usage] | None = None
    """The same per role (``model``, ``judge``, ``simulator``, ``drafter``), apart even when two roles
    are one model."""
    estimate: Estimate | None = None
    """What the run was estimated to send before it started (:mod:`rescue_bench.engine.dryrun`):
    per role, ``calls`` at most, ``prompt_tokens`` estimated, ``max_output_tokens``."""
    versions: dict[str, str] | None = None
    created: str | None = None
    log_statuses: list[str | None] | None = None
    """The statuses of the inspect logs the run wrote."""

    @model_validator(mode="before")
    @classmethod
    def _log_statuses_of_earlier_files(cls, data: Any) -> Any:
        """An earlier closed-loop ``run.json`` kept the inspect logs' statuses in ``status``."""
        if isinstance(data, dict) and isinstance(data.get("status"), list):
            statuses = data["status"]
            data = {k: v for k, v in data.items() if k != "status"}
            data.setdefault("log_statuses", statuses)
        return data

    @property
    def model_name(self) -> str | None:
        """The model of the run: ``model``, else the one in ``settings`` (older files)."""
        return self.model or (self.settings.model if self.settings is not None else None)

    @property
    def identity_kind(self) -> str | None:
        """The kind the run's identity names."""
        return None if self.identity is None else self.identity.kind

    @model_serializer(mode="wrap")
    def _ordered(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        first = {k: data[k] for k in type(self).ORDER if k in data}
        return {**first, **{k: v for k, v in data.items() if k not in first}}

    def dump(self) -> dict[str, Any]:
        """The JSON object of ``run.json``: the keys set (by the writer or the file read), in :attr:`ORDER`."""
        return self.model_dump(by_alias=True, exclude_unset=True)

    def write(self, folder: str | Path) -> None:
        """Write ``folder/run.json`` atomically (strict JSON)."""
        atomic_write_json(Path(folder) / RUN_JSON, self.dump())


COMMON_ORDER = (
    "kind", "status", "counts", "failure", "identity", "settings", "limits", "model", "judge", "judge_prompt_sha", "request",
    "judge_request", "data_files", "git_revision", "clips",
)
"""The keys every run command writes first, in this order (then its kind's own keys)."""
TAIL_ORDER = (
    "bertscore", "bertscore_backbone", "calls", "estimate", "usage", "usage_by_role", "versions", "created", "log_statuses",
)
"""The keys written last."""


class EvalRunInfo(RunInfo):
    """``run.json`` of ``rescue eval``."""

    ORDER = (*COMMON_ORDER, "context_windows", "workers", "workers_choice", *TAIL_ORDER, "video", "overflow", "left_out")
    context_windows: dict[str, int] | None = None
    workers: int | None = None
    workers_choice: WorkersChoice | None = None
    video: VideoReport | None = None
    overflow: OverflowReport | None = None
    left_out: dict[str, list[LeftOutRecord]] | None = None
    """Per task, the instances ``--lenient`` left out because their gold is outside its closed set or
    range (every task of the run, empty lists too; absent without ``--lenient``)."""


class AgentRunInfo(RunInfo):
    """``run.json`` of ``rescue agent eval``."""

    ORDER = (*COMMON_ORDER, "points", *TAIL_ORDER)
    points: int | None = None
    calls: AgentCalls | None = None


class AblationRunInfo(RunInfo):
    """``single/run.json``: the single-task ablation of an agent run, a ``rescue eval`` folder of its own."""

    ORDER = ("kind", "ablation_of", "model", "judge", "settings", "bertscore_backbone", "created")
    ablation_of: str | None = None


class SimRunInfo(RunInfo):
    """``run.json`` of ``rescue sim eval`` (and of ``rescue review export-practice``, with ``source``)."""

    ORDER = (*COMMON_ORDER, "simulator_request", "source", "agent", "simulator", "gamma", "lambda", "horizon", "episodes", *TAIL_ORDER)
    simulator_request: RequestRecord | None = None
    source: str | None = None
    """Who wrote the folder when not ``rescue sim eval`` (the practice export)."""
    agent: str | None = None
    simulator: str | None = None
    gamma: float | None = None
    lam: float | None = Field(default=None, validation_alias="lambda", serialization_alias="lambda")
    """``lambda`` in the file (a Python keyword here)."""
    horizon: int | None = None
    episodes: int | None = None
    calls: SimCalls | None = None


class FidelityRunInfo(RunInfo):
    """``run.json`` of ``rescue sim fidelity``."""

    ORDER = (*COMMON_ORDER, "simulator_request", "simulator", "points", *TAIL_ORDER)
    simulator_request: RequestRecord | None = None
    simulator: str | None = None
    points: int | None = None
    calls: FidelityCalls | None = None


class DraftRunInfo(RunInfo):
    """``run.json`` of ``rescue annotate draft`` (in its run folder, beside its logs)."""

    ORDER = (*COMMON_ORDER, "assets", "drafts", "media", "segments", "calls", *TAIL_ORDER)
    assets: str | None = None
    drafts: str | None = None
    """The drafts file the run merged into."""
    media: str | None = None
    segments: DraftSegments | None = None
    calls: DraftCalls | None = None


AnyRunInfo = EvalRunInfo | AgentRunInfo | AblationRunInfo | SimRunInfo | FidelityRunInfo | DraftRunInfo

KINDS: dict[str, type[RunInfo]] = {
    "eval": EvalRunInfo,
    "agent": AgentRunInfo,
    "single_task_ablation": AblationRunInfo,
    "sim": SimRunInfo,
    "sim_fidelity": FidelityRunInfo,
    "draft": DraftRunInfo,
}
"""Each kind's model; a ``run.json`` names its kind in ``kind`` or (``rescue eval``, a run that has
not finished yet) in ``identity.kind``; one that names none is read as ``rescue eval``'s."""


class RunInfoError(RescueError, ValueError):
    """A ``run.json`` that is no JSON object or whose keys have the wrong type (one line: file and key)."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path = str(path)
        self.message = message
        self.line = line
        super().__init__(f"{path}{'' if line is None else f':{line}'}: {message}")


def kind_of(value: dict[str, Any]) -> type[RunInfo]:
    """The model of a ``run.json`` object (see :data:`KINDS`)."""
    identity = value.get("identity")
    kind = value.get("kind") or (identity.get("kind") if isinstance(identity, dict) else None)
    return KINDS.get(kind, EvalRunInfo) if isinstance(kind, str) else EvalRunInfo


def parse_run_info(value: Any, path: str | Path = RUN_JSON) -> RunInfo:
    """A ``run.json`` object, as its kind's model; :class:`RunInfoError` naming ``path`` and the key at fault."""
    if not isinstance(value, dict):
        raise RunInfoError(path, "expected a JSON object")
    try:
        return kind_of(value).model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise RunInfoError(path, f"{where}: {error['msg']}") from None


def read_run_info(folder_or_file: str | Path) -> RunInfo:
    """The ``run.json`` of a run folder (or the file itself): the one reader of the file.

    ``OSError`` when it cannot be read, :class:`RunInfoError` (a ``ValueError``) when it is not strict
    JSON, not an object, or a key has the wrong type."""
    path = Path(folder_or_file)
    if path.is_dir():
        path = path / RUN_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RunInfoError(path, f"not UTF-8 text ({exc.reason})") from None
    try:
        value = loads(text)
    except json.JSONDecodeError as exc:
        raise RunInfoError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except ValueError as exc:  # NaN, Infinity, a number that overflows
        raise RunInfoError(path, f"malformed JSON: {exc}") from None
    return parse_run_info(value, path)


InfoT = TypeVar("InfoT", bound=RunInfo)
SummaryT = TypeVar("SummaryT", bound=RunSummary)


@dataclass(frozen=True)
class RunResult(Generic[InfoT, SummaryT]):
    """What a run driver returns: the summary it wrote and its ``run.json``, so the command that ran it
    prints from them without reading the folder back."""

    summary: SummaryT
    info: InfoT
    let_through: tuple[object, ...] = ()
    """``rescue eval --lenient``: the data's content errors (``rescue_bench.data.load.Problem``) let
    through, which the command warns about."""
