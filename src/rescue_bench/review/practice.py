"""The practice page's services: a logged-in person plays the therapist in a closed-loop episode.

The person acts exactly as an agent of ``rescue sim eval`` does, through the same chain
(:class:`rescue_bench.sim.Episode` with an offline simulator, state mode ``none``: the ``fitted``
default, which hears the words, unless the catalogue names the ``scripted`` smoke test):
at each step they keep listening or take the turn, and then choose whom (a client, a pair or
subgroup, or the group), which strategy, and the words. Their choices are the chain's answers in its
own JSON, so the episode's record and metrics (J, distress, neglect, ...) come from the same code
as every agent's, and the exported episodes are a ``rescue sim eval`` run (agent ``human/<user>``).

What is stored, and why:

- ``practice_starts``: the catalogue an admin imports (``rescue review import-practice``): each
  episode start (:class:`rescue_bench.sim.EpisodeStart`: transcript, role cards, initial hidden
  state) with the options it is played under and the simulator its new episodes play. Cards and
  states stay on the server: no view below shows them while an episode is played.
- ``practice_models``: the fitted models the catalogue plays, stored whole by their sha256.
- ``practice_episodes``: one person's attempt: the start, the simulator (and model) it plays, and the
  list of actions so far. Nothing is kept in a worker's memory but the parsed models: every request
  replays the episode from its start and actions (the offline simulators are deterministic), so
  ``serve --workers N`` serves any step from any worker. A step names its number; the update is
  conditional on the stored count, so two tabs submitting the same step cannot both apply (the
  second gets 409).
- the finished record (the line ``results/sim.jsonl`` gets), written when the last step is taken.

Once an episode is over the person gets a debrief (:func:`debrief`): the score's scale, this
episode's floor (the best constant policy, named) and optimum, the normalised score, and the episode
step by step (:func:`rescue_bench.sim.breakdown`): who was most distressed before each move, what the
move was, how the clients heard it, what it did, and whether it left the most distressed client out.

Scores and debriefs teach the simulator (which moves it rewards), and a person who has read them
plays the next start as someone who has: they open only once the person has finished every start of
the catalogue (:func:`debrief_state`), and each episode records whether they were open when it began
(``debrief_open``). The export keeps each person's play order (``practice`` in each record:
:class:`rescue_bench.sim.record.PracticePlay`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from rescue_bench.labels import HUMAN_PREFIX, PATTERNS, STRATEGIES, THERAPIST
from rescue_bench.review.errors import Invalid, NotFound, ReviewError
from rescue_bench.review.models import AuditEntry, PracticeEpisode, PracticeModel, PracticeStart, User, utcnow
from rescue_bench.sim import (
    DEFAULT_SIMULATOR,
    FITTED,
    OFFLINE_SIMULATORS,
    SCRIPTED,
    SIM_TASK,
    Episode,
    EpisodeStart,
    FittedModel,
    SimOptions,
    breakdown,
    episode_starts,
    load_model,
    offline_simulator,
    summarize,
)
from rescue_bench.sim.floors import SILENT, policy_action
from rescue_bench.sim.objective import TIE
from rescue_bench.sim.offline import Fitted, OfflineSimulator
from rescue_bench.sim.reader import GROUP_WORDS
from rescue_bench.sim.record import Heard
from rescue_bench.sim.state import PATTERN_VALUE
from rescue_bench.summary import SimSummary, summary_json

MAX_TURN_CHARS = 1_000
"""The longest turn a person may type (the chain takes a bare turn up to this length, too)."""
PRACTICE_STATE: Literal["none"] = "none"
"""People act without the state step (as the reference agents do): they are asked what they do."""
SCORE_KEYS: tuple[str, ...] = (
    "J",
    "final_max_distress",
    "peak_max_distress",
    "initial_max_distress",
    "deescalated",
    "neglect_hits",
    "neglect_turns",
    "group_turns",
    "left_out_hits",
    "left_out_steps",
    "attention_balance",
    "interventions",
    "steps",
)
"""The metrics the page shows once an episode is over (never the per-step states or patterns)."""


Number = int | float
"""A number of a record, passed through as stored (an int stays an int in the JSON the API answers)."""


class SimulatorSummary(BaseModel):
    """Which simulator plays: its name, the model's name and sha256 (fitted), whether it is the smoke test."""

    name: str
    model: str | None
    sha256: str | None
    smoke_test: bool


class StartSummary(BaseModel):
    """A start of the catalogue as a person sees it."""

    id: int
    scenario: str
    clients: list[str]
    rows: int
    horizon: int
    simulator: SimulatorSummary


class EpisodeSummary(BaseModel):
    """One of a person's episodes in their list (``J``: the score once it is over)."""

    id: int
    start: int
    steps: int
    finished: bool
    J: Number | None
    simulator: str


class ToneReading(BaseModel):
    """How well the fitted model's reading of tone did on held-out sessions."""

    balanced_accuracy: float | None
    chance: float | None
    rows: int
    clips: int


class Listening(BaseModel):
    """What a simulator listens to (:func:`listening`); ``fitted_on`` / ``fitted_clips``: a fitted
    model's only (left unset, and so out of the answer, for the scripted smoke test)."""

    name: str
    smoke_test: bool
    group_words: list[str]
    model: str | None
    sha256: str | None
    fitted_on: str | None = None
    fitted_clips: int | None = None
    reads_tone: bool
    reads_label: bool
    tone: ToneReading | None
    tone_effect: dict[str, Number]


class TranscriptRow(BaseModel):
    """One transcript row as the page shows it; ``heard``: set on the person's own turns only."""

    row: int
    speaker: str
    to: list[str]
    text: str
    simulated: bool
    you: bool
    heard: Heard | None = None
    """How the clients heard the person's own turn (silent: the turn had no words in it)."""


class Score(BaseModel):
    """The metrics the page shows once an episode is over (:data:`SCORE_KEYS`), as the record holds them."""

    J: Number | None
    final_max_distress: Number | None
    peak_max_distress: Number | None
    initial_max_distress: Number | None
    deescalated: bool | Number | None
    neglect_hits: Number | None
    neglect_turns: Number | None
    group_turns: Number | None
    left_out_hits: Number | None
    left_out_steps: Number | None
    attention_balance: Number | None
    interventions: Number | None
    steps: Number | None


class PatternNote(BaseModel):
    definition: str
    value: Number


class Debrief(BaseModel):
    """A finished episode explained (:func:`debrief`)."""

    model_config = ConfigDict(serialize_by_alias=True)

    J: Number | None
    gamma: Number
    lam: Number = Field(validation_alias=AliasChoices("lam", "lambda"), serialization_alias="lambda")
    horizon: int
    step_range: list[Number]
    scale: list[Number]
    worst: Number | None
    optimum: Number | None
    floor: Number | None
    floor_policy: str | None
    floor_words: str | None
    floor_says: str | None
    constant_policies: int
    normalised: Number | None
    normalised_note: str | None
    steps: list[dict[str, Any]] = Field(description="the episode step by step (rescue_bench.sim.breakdown)")
    patterns: dict[str, PatternNote]


class EpisodeView(BaseModel):
    """What a person sees of their episode (:func:`view`): never a role card or an annotation's text;
    the hidden state only in the debrief, once the episode is over. Answered without the fields left
    unset (``response_model_exclude_unset``): a turn's ``heard`` is on the person's own turns only."""

    id: int
    scenario: str
    clients: list[str]
    group: Any
    horizon: int
    step: int
    done: bool
    simulator: Listening = Field(description="what the simulator listens to (practice.listening)")
    transcript: list[TranscriptRow] = Field(description="rows so far; each of your turns with `heard`: how the clients heard it")
    targets: list[str]
    strategies: list[str]
    strategy_help: dict[str, str]
    score: Score | None
    debrief: Debrief | None = Field(description="once the episode is over: the scale, floor, optimum and the steps (practice.debrief)")
    debrief_open: bool = Field(description="scores and debriefs are shown: you have finished every start of the catalogue")
    starts_left: int = Field(description="starts you have not finished yet (scores and debriefs open at 0)")

    def page_data(self) -> dict[str, Any]:
        """The view as the page embeds it (the JSON the API answers)."""
        return self.model_dump(mode="json", exclude_unset=True)


@dataclass(frozen=True)
class Choice:
    """A person's answers to the chain at one step (speak or not, whom, how, the words), stored in the
    episode's ``actions`` (JSON) as these four keys. The action record the episode makes of them is
    :class:`rescue_bench.sim.record.AgentAction`, as for any agent."""

    speak: bool
    whom: str | None = None
    how: str | None = None
    turn: str | None = None


class BadStoredOptions(ReviewError):
    """A start stored with options this version refuses (a non-finite or out-of-range lambda from an
    older version): refused with how to repair it, never a 500."""

    status = 409

    def __init__(self, start_id: int, problem: str):
        super().__init__(f"practice start {start_id} was imported with options this version refuses ({problem}): an admin repairs it with `rescue review import-practice`")


class StepTaken(ReviewError):
    """A step that is not the next one (a second tab, a double click): refused, never applied twice."""

    status = 409

    def __init__(self) -> None:
        super().__init__("this step was already taken (in another tab?): reload the episode")


# ------------------------------------------------------------------------------------------------
# the catalogue
# ------------------------------------------------------------------------------------------------


PRACTICE_PER_CLIP = 1
"""Starts per clip a catalogue takes unless asked for more: people play a few episodes, so one start
per clip spreads them over the clips (``SimOptions.per_clip``, 2, is for evaluation runs)."""


def practice_options(**changes: Any) -> SimOptions:
    """The options a catalogue is imported with: the closed loop's (``SimOptions``: its defaults and
    ranges), with ``changes``, :data:`PRACTICE_PER_CLIP`, the dialogue cue mode and no state step."""
    return SimOptions(**{"per_clip": PRACTICE_PER_CLIP, **changes, "state": PRACTICE_STATE, "mode": "dialogue"})


def _problem(options_json: str) -> tuple[SimOptions | None, list[str], str]:
    """The stored options of a start, or ``None``, the fields this version refuses and why."""
    try:
        return SimOptions.model_validate_json(options_json), [], ""
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        fields = sorted({str(e["loc"][0]) for e in errors if e["loc"]})
        return None, fields, "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in errors)


def stored_options(row: PracticeStart) -> SimOptions:
    """The options a start is played under, or :class:`BadStoredOptions`."""
    options, _fields, problem = _problem(row.options)
    if options is None:
        raise BadStoredOptions(row.id, problem)
    return options


@dataclass(frozen=True)
class Repair:
    """What :func:`repair_start` changed in one start: the refused option fields that took the
    import's values, the stored keys this version does not know (dropped), the episodes rescored."""

    replaced: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    rescored: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.replaced or self.dropped)


def repair_start(session: Session, row: PracticeStart, options: SimOptions) -> Repair:
    """Replace the refused fields of a start's stored options with those of ``options`` and drop the
    stored keys this version does not know (the rest is kept, so its episodes replay as they were
    played), then rescore its finished episodes under them. Nothing changes for valid options."""
    found, fields, _ = _problem(row.options)
    if found is not None:
        return Repair()
    try:
        stored = json.loads(row.options)
    except ValueError:  # not even JSON: every field takes the import's value
        stored = None
    if not isinstance(stored, dict):
        stored, fields = {}, list(SimOptions.model_fields)
    known = set(SimOptions.model_fields)
    dropped = tuple(sorted(k for k in stored if k not in known))
    replaced = tuple(sorted(f for f in set(fields) if f in known))
    kept = {k: v for k, v in stored.items() if k in known and k not in replaced}
    fixed = SimOptions.model_validate({**kept, **{f: getattr(options, f) for f in replaced}})
    row.options = fixed.model_dump_json()
    start = EpisodeStart.model_validate_json(row.start)
    rescored = 0
    for episode, username in session.execute(
        select(PracticeEpisode, User.username).join(User, User.id == PracticeEpisode.user_id).where(PracticeEpisode.start_id == row.id, PracticeEpisode.finished.is_(True))
    ):
        after = replay(start, fixed, agent_name(username), stored_actions(episode.actions), simulator_of(session, episode.simulator, episode.model_sha256))
        episode.record = json.dumps(after.record(), ensure_ascii=False)
        rescored += 1
    return Repair(replaced, dropped, rescored)


DEFAULT_MODEL_NAME = "default"
"""The name runs give the bundled fitted model (``simulator_model.model`` of ``rescue sim eval``)."""


def catalogue_model(session: Session, simulator: str, model: str | Path | None = None) -> str | None:
    """The sha256 of the fitted model a catalogue plays (``model``: its file, the bundled one when
    ``None``), stored whole in ``practice_models`` if it is not there yet; ``None`` for ``scripted``."""
    if simulator not in OFFLINE_SIMULATORS:
        raise Invalid(f"the practice page plays an offline simulator: one of {', '.join(OFFLINE_SIMULATORS)}", "simulator")
    if simulator == SCRIPTED:
        if model is not None:
            raise Invalid("--sim-model is a fitted model: the scripted smoke test has none", "sim_model")
        return None
    try:
        fitted = load_model(model)
    except ValueError as exc:
        raise Invalid(str(exc), "sim_model") from None
    sha = fitted.sha256()
    if session.get(PracticeModel, sha) is None:
        session.add(PracticeModel(sha256=sha, name=DEFAULT_MODEL_NAME if model is None else str(model), model=fitted.model_dump_json()))
        session.flush()
    return sha


@dataclass(frozen=True)
class Imported:
    """What an import did: starts added, already there, of those switched to the import's simulator,
    and starts repaired (stored with options this version refuses)."""

    added: int
    kept: int
    switched: int
    repaired: int
    simulator: str
    model_sha256: str | None
    rescored: int = 0
    """Finished episodes of the repaired starts, rescored under their repaired options."""
    repaired_fields: tuple[str, ...] = ()
    """The option fields that took the import's values, in any repaired start."""
    dropped_keys: tuple[str, ...] = ()
    """Stored option keys this version does not know, dropped from the repaired starts."""

    def repair_line(self) -> str:
        """What the import repaired, in one line (empty when nothing)."""
        if not self.repaired:
            return ""
        parts = []
        if self.repaired_fields:
            parts.append(f"{', '.join(self.repaired_fields)} took this import's values")
        if self.dropped_keys:
            parts.append(f"unknown key(s) {', '.join(self.dropped_keys)} dropped")
        return (
            f"repaired {self.repaired} start(s) stored with options this version refuses ({'; '.join(parts)}); "
            f"{self.rescored} finished episode(s) rescored"
        )

    def simulator_line(self) -> str:
        if self.simulator == SCRIPTED:
            return "the clients are the scripted smoke test (fixed rules that read the declared strategy, not the words)"
        return f"the clients are the fitted model {self.model_sha256}, which hears the words"


def import_starts(
    session: Session, clips: Sequence[Any], options: SimOptions, simulator: str = DEFAULT_SIMULATOR, model: str | Path | None = None
) -> Imported:
    """Add every clip's episode starts (``options.per_clip`` each), whose new episodes play
    ``simulator`` (and the fitted ``model``: its file, the bundled one when ``None``). A start
    already in the catalogue keeps its transcript, cards and options (episodes point to it); when it
    names another simulator or model, its new episodes play this one (episodes begun keep theirs).
    A start whose stored options this version refuses is repaired with ``options``
    (:func:`repair_start`). Returns the counts and the simulator with its model's sha256."""
    if options.state != PRACTICE_STATE:
        raise Invalid("practice episodes use state mode 'none'", "state")
    sha = catalogue_model(session, simulator, model)
    have = {row.key: row for row in session.scalars(select(PracticeStart))}
    added = skipped = switched = repaired = rescored = 0
    fields: set[str] = set()
    dropped: set[str] = set()
    for row in session.scalars(select(PracticeStart).order_by(PracticeStart.id)):
        done = repair_start(session, row, options)
        if done.changed:
            repaired += 1
            rescored += done.rescored
            fields.update(done.replaced)
            dropped.update(done.dropped)
    for clip in clips:
        for start in episode_starts(clip, options)[0]:
            if start.id in have:
                row = have[start.id]
                skipped += 1
                if (row.simulator, row.model_sha256) != (simulator, sha):
                    row.simulator, row.model_sha256 = simulator, sha
                    switched += 1
                continue
            row = PracticeStart(
                key=start.id, sample_id=start.sample_id, scenario=start.scenario,
                start=start.model_dump_json(), options=options.model_dump_json(), simulator=simulator, model_sha256=sha,
            )
            have[start.id] = row
            session.add(row)
            added += 1
    return Imported(added, skipped, switched, repaired, simulator, sha, rescored, tuple(sorted(fields)), tuple(sorted(dropped)))


def _simulator_summary(session: Session, name: str, sha: str | None) -> SimulatorSummary:
    model = session.get(PracticeModel, sha) if sha else None
    return SimulatorSummary(name=name, model=model.name if model else None, sha256=sha, smoke_test=name == SCRIPTED)


def _start_summary(session: Session, row: PracticeStart, options: SimOptions) -> StartSummary:
    start = EpisodeStart.model_validate_json(row.start)
    return StartSummary(
        id=row.id,
        scenario=row.scenario,
        clients=start.clients,
        rows=len(start.transcript),
        horizon=options.horizon,
        simulator=_simulator_summary(session, row.simulator, row.model_sha256),
    )


def list_starts(session: Session) -> list[StartSummary]:
    """The catalogue as a person may see it: scenario, clients, transcript length, horizon, simulator
    (a start whose stored options this version refuses is left out until it is repaired)."""
    rows = session.scalars(select(PracticeStart).order_by(PracticeStart.id))
    return [_start_summary(session, r, options) for r in rows if (options := _problem(r.options)[0]) is not None]


@dataclass(frozen=True)
class DebriefState:
    """Whether ``user`` may read scores and debriefs: once they have finished every start of the
    catalogue (``left`` is how many they have not)."""

    open: bool
    left: int


def debrief_state(session: Session, user: User) -> DebriefState:
    """:class:`DebriefState` of ``user`` now (the catalogue as :func:`list_starts` shows it)."""
    starts = {r.id for r in session.scalars(select(PracticeStart)) if _problem(r.options)[0] is not None}
    finished = set(
        session.scalars(select(PracticeEpisode.start_id).where(PracticeEpisode.user_id == user.id, PracticeEpisode.finished.is_(True)))
    )
    left = len(starts - finished)
    return DebriefState(bool(starts) and left == 0, left)


def my_episodes(session: Session, user: User) -> list[EpisodeSummary]:
    """The user's episodes, newest first; a score only once scores are open to them (:func:`debrief_state`)."""
    rows = session.scalars(select(PracticeEpisode).where(PracticeEpisode.user_id == user.id).order_by(PracticeEpisode.id.desc()))
    opened = debrief_state(session, user).open
    out = []
    for e in rows:
        score = json.loads(e.record)["metrics"]["J"] if e.record and opened else None
        if not isinstance(score, (int, float)) or not math.isfinite(score):
            score = None  # a record scored under refused options, until it is repaired
        out.append(EpisodeSummary(id=e.id, start=e.start_id, steps=e.steps, finished=e.finished, J=score, simulator=e.simulator))
    return out


# ------------------------------------------------------------------------------------------------
# an episode: replayed from its start and actions
# ------------------------------------------------------------------------------------------------


def agent_name(username: str) -> str:
    return HUMAN_PREFIX + username


def chain_answers(action: Choice) -> dict[str, str]:
    """A person's action as the chain's answers, in the JSON an agent writes (``CONTRACT``)."""
    return {
        "when": json.dumps({"answer": "yes" if action.speak else "no"}),
        "whom_how": json.dumps({"target": action.whom, "strategy": action.how}),
        "turn": json.dumps({"turn": action.turn}),
    }


def stored_actions(text: str) -> list[Choice]:
    """An episode's ``actions`` column (a JSON list of ``{speak, whom, how, turn}``) as actions."""
    return [Choice(a["speak"], a["whom"], a["how"], a["turn"]) for a in json.loads(text)]


def actions_json(actions: Sequence[Choice]) -> str:
    """The ``actions`` column of ``actions``."""
    return json.dumps([{"speak": a.speak, "whom": a.whom, "how": a.how, "turn": a.turn} for a in actions], ensure_ascii=False)


_FITTED: dict[str, Fitted] = {}
"""Parsed fitted models by sha256 (a worker parses each once; the stored model never changes)."""


def simulator_of(session: Session, name: str, sha: str | None) -> OfflineSimulator:
    """The offline simulator an episode plays: ``scripted``, or the stored fitted model ``sha``."""
    if name == SCRIPTED:
        sim = offline_simulator(SCRIPTED)
        assert sim is not None
        return sim
    if name != FITTED or sha is None:
        raise ReviewError(f"this practice episode names a simulator the page cannot play ({name})")
    if sha not in _FITTED:
        row = session.get(PracticeModel, sha)
        if row is None:
            raise ReviewError(f"the simulator model {sha[:12]} of this practice episode is not in the database")
        model = FittedModel.model_validate_json(row.model)
        if model.sha256() != sha:
            raise ReviewError(f"the stored simulator model {sha[:12]} does not match its sha256")
        _FITTED[sha] = Fitted(model, None if row.name == DEFAULT_MODEL_NAME else row.name)
    return _FITTED[sha]


def replay(start: EpisodeStart, options: SimOptions, agent: str, actions: Sequence[Choice], simulator: OfflineSimulator) -> Episode:
    """The episode after ``actions``: each one answers its step's chain requests, then the offline
    ``simulator`` (the episode's own) answers inside the episode. Deterministic: the same actions
    give the same episode."""
    episode = Episode(start, agent=agent, simulator=simulator.name, options=options, subgroups=True, model=simulator)
    for i, action in enumerate(actions):
        answers = chain_answers(action)
        while len(episode.steps) == i:
            request = episode.next_request()
            if request is None or request.role != "agent":
                raise RuntimeError(f"step {i + 1}: the episode asks for {request and request.role}, not the person")
            episode.answer(answers[request.step])
    return episode


def _get(session: Session, user: User, episode_id: int) -> tuple[PracticeEpisode, PracticeStart]:
    """The user's own episode and its start; anyone else's answers 404 like one that does not exist."""
    query = select(PracticeEpisode).where(PracticeEpisode.id == episode_id, PracticeEpisode.user_id == user.id)
    episode = session.scalars(query).first()
    if episode is None:
        raise NotFound("no such practice episode")
    start = session.get(PracticeStart, episode.start_id)
    assert start is not None
    return episode, start


def _loaded(session: Session, row: PracticeEpisode, start_row: PracticeStart, user: User) -> tuple[EpisodeStart, SimOptions, Episode]:
    start = EpisodeStart.model_validate_json(start_row.start)
    options = stored_options(start_row)
    sim = simulator_of(session, row.simulator, row.model_sha256)
    return start, options, replay(start, options, agent_name(user.username), stored_actions(row.actions), sim)


def _row(view: Any, n_start: int, position: int) -> TranscriptRow:
    """One transcript row as the page shows it: what the dialogue cue mode gives an agent."""
    return TranscriptRow(
        row=position,
        speaker=view.speaker,
        to=list(view.target),
        text=view.text,
        simulated=position > n_start,
        you=position > n_start and view.speaker == THERAPIST,
    )


def view(session: Session, user: User, episode_id: int) -> EpisodeView:
    """What the person sees of their episode: what the simulator listens to, the transcript so far
    (each of their turns with how the clients heard it) and the choices of the next step; once it is
    over, the score and the debrief. Never a card or an annotation's text; the hidden state only in
    the debrief, once the episode is over."""
    row, start_row = _get(session, user, episode_id)
    start, options, episode = _loaded(session, row, start_row, user)
    return _view(row, start, options, episode, json.loads(row.record) if row.record else None, debrief_state(session, user))


def listening(sim: OfflineSimulator) -> Listening:
    """What ``sim`` listens to, for the page to say before the first step: whom the words reach
    (always: the chosen target and every client they name), their tone (``reads_tone``: the fitted
    model reads it, with a reader learned from the sessions when it beat chance on held-out ones,
    ``tone`` says how well, else with the project's marker lists; ``tone_effect``: what the model
    assumes each tone does to an addressed client's intensity per step), the declared strategy label
    (``reads_label``: the scripted smoke test only)."""
    name, smoke_test, group_words = sim.name, sim.name == SCRIPTED, list(GROUP_WORDS[:4])
    if not isinstance(sim, Fitted):
        return Listening(
            name=name, smoke_test=smoke_test, group_words=group_words, model=None, sha256=None, reads_tone=False, reads_label=True, tone=None, tone_effect={}
        )
    m = sim.model
    tone = next((r for r in m.readings if r.reading == "affect"), None)
    described = sim.describe()
    return Listening(
        name=name,
        smoke_test=smoke_test,
        group_words=group_words,
        model=described["model"],
        sha256=described["sha256"],
        fitted_on=m.source.name,
        fitted_clips=len(m.source.clips),
        reads_tone=True,
        reads_label=False,
        tone=None if tone is None or not m.affect_used else ToneReading(
            balanced_accuracy=tone.balanced_accuracy, chance=tone.chance, rows=tone.rows, clips=tone.clips
        ),
        tone_effect={a: m.assumed("intensity", a) for a in ("warm", "hostile")},
    )


def _view(
    row: PracticeEpisode, start: EpisodeStart, options: SimOptions, episode: Episode, record: dict[str, Any] | None, state: DebriefState
) -> EpisodeView:
    point = episode.live_point()
    n = len(start.transcript)
    transcript = [_row(v, n, i + 1) for i, v in enumerate(episode.transcript)]
    spoken = iter([st for st in episode.steps if st["action"]["intervened"]])
    for r in transcript:
        if r.you:
            r.heard = next(spoken)["heard"]  # each turn of theirs is one step they spoke at, in order (silent: no words in it)
    sim = episode.offline
    assert sim is not None
    score = debriefed = None
    if episode.done and state.open:
        record = record or episode.record()
        score = Score(**{k: record["metrics"][k] for k in SCORE_KEYS})
        debriefed = debrief(record)
    return EpisodeView(
        id=row.id,
        scenario=start.scenario,
        clients=start.clients,
        group=start.group,
        horizon=options.horizon,
        step=len(episode.steps) + (0 if episode.done else 1),
        done=episode.done,
        simulator=listening(sim),
        transcript=transcript,
        targets=[] if episode.done else list(point.targets),
        strategies=[] if episode.done else list(point.strategies),
        strategy_help={} if episode.done else {s: STRATEGIES[start.scenario].get(s, "") for s in point.strategies},
        score=score,
        debrief=debriefed,
        debrief_open=state.open,
        starts_left=state.left,
    )


# ------------------------------------------------------------------------------------------------
# the debrief: what the score means, and the episode step by step
# ------------------------------------------------------------------------------------------------


def policy_words(policy: str, clients: Sequence[str], group: str) -> str:
    """A constant policy of :mod:`rescue_bench.sim.floors` (``group+track``, ``silent``, ...) in plain words."""
    if policy == SILENT:
        return "always keep listening"
    rule, strategy = policy.split("+", 1)
    whom = {
        "group": f"everyone (the whole {group.lower()})",
        "first": f"{clients[0]} (the first listed client)",
        "last": f"{clients[-1]} (the last listed client)",
        "rotate": f"each client in turn ({', '.join(clients)})",
    }[rule]
    return f"always speak to {whom} with the same fixed sentence, declaring \u201c{strategy}\u201d"


def _floor_says(policy: str, clients: Sequence[str], group: str) -> str | None:
    """The fixed sentence a constant policy says at its first step (``None``: silence)."""
    return policy_action(policy, 1, clients, group)["turn"]


def debrief(record: dict[str, Any]) -> Debrief:
    """A finished episode explained (see the module doc): the scale of J, this episode's range
    (the worst and the best any sequence of moves reaches), its floor (the best constant policy, in
    words) and optimum, the normalised score, and the steps (:func:`rescue_bench.sim.breakdown`).
    The hidden state appears here as numbers (distress, valence, intensity) and pattern labels only:
    never a card's or an annotation's text."""
    m, ref = record["metrics"], record.get("reference") or {}
    clients, group, horizon = record["clients"], record["group"], record["horizon"]
    gamma, lam, J = m["gamma"], m["lambda"], m["J"]
    discount = sum(gamma**t for t in range(horizon))
    floor, optimum, worst = ref.get("floor"), ref.get("optimum"), ref.get("worst")
    normalised, why = None, None
    if J is None:
        why = "a step had no usable answer from the simulator, so this episode has no score"
    elif optimum is None or floor is None:
        why = "the best sequence of moves could not be searched for this episode (too many states)"
    elif ref.get("changeable") is False:
        why = "no sequence of moves changes J in this episode: every choice scores the same"
    elif optimum - floor <= TIE:
        why = "the best constant policy already reaches the optimum here: there is no room above it"
    else:
        normalised = (J - floor) / (optimum - floor)
    steps = breakdown(record)
    seen = [p for st in steps for p in (st["pattern_before"], st["pattern_after"]) if p]
    definitions = PATTERNS.get(record["scenario"], {})
    return Debrief(
        J=J,
        gamma=gamma,
        lam=lam,
        horizon=horizon,
        step_range=[-(1 + lam), 1.0],
        scale=[-(1 + lam) * discount, discount],
        worst=worst,
        optimum=optimum,
        floor=floor,
        floor_policy=ref.get("floor_policy"),
        floor_words=policy_words(ref["floor_policy"], clients, group) if ref.get("floor_policy") else None,
        floor_says=_floor_says(ref["floor_policy"], clients, group) if ref.get("floor_policy") else None,
        constant_policies=len(ref.get("constant") or {}),
        normalised=normalised,
        normalised_note=why,
        steps=[dict(step) for step in steps],  # JSON in the page's answer
        patterns={p: PatternNote(definition=definitions.get(p, ""), value=PATTERN_VALUE.get(p, 0.0)) for p in dict.fromkeys(seen)},
    )


def create(session: Session, user: User, start_id: int) -> int:
    """A new episode of the user at catalogue start ``start_id``; returns its id."""
    start = session.get(PracticeStart, start_id)
    if start is None:
        raise NotFound("no such practice start")
    stored_options(start)  # refused before an episode is made on it
    episode = PracticeEpisode(
        user_id=user.id, start_id=start_id, actions="[]", steps=0, finished=False, simulator=start.simulator, model_sha256=start.model_sha256,
        debrief_open=debrief_state(session, user).open,
    )
    session.add(episode)
    session.flush()
    return episode.id


def _action(speak: bool, whom: str | None, how: str | None, turn: str | None, targets: Sequence[str], strategies: Sequence[str]) -> Choice:
    if not speak:
        return Choice(False)
    if whom not in targets:
        raise Invalid(f"whom must be one of: {', '.join(targets)}", "whom")
    if how not in strategies:
        raise Invalid(f"strategy must be one of: {', '.join(strategies)}", "how")
    text = (turn or "").strip()
    if not text:
        raise Invalid("write what you say (the turn is empty)", "turn")
    if len(text) > MAX_TURN_CHARS:
        raise Invalid(f"the turn is longer than {MAX_TURN_CHARS} characters", "turn")
    return Choice(True, whom, how, text)


def act(
    session: Session, user: User, episode_id: int, step: int, *, speak: bool,
    whom: str | None = None, how: str | None = None, turn: str | None = None,
) -> EpisodeView:
    """Take step ``step`` (1-based: the step the page showed); returns the new view.

    A step that is not the next one (a second tab, a double click) is refused with 409 and the
    step is not applied."""
    row, start_row = _get(session, user, episode_id)
    start, options, episode = _loaded(session, row, start_row, user)
    if episode.done or step != row.steps + 1:
        raise StepTaken()
    point = episode.live_point()
    action = _action(speak, whom, how, turn, point.targets, point.strategies)
    actions = [*stored_actions(row.actions), action]
    assert episode.offline is not None
    after = replay(start, options, agent_name(user.username), actions, episode.offline)
    finished = after.record() if after.done else None
    record = json.dumps(finished, ensure_ascii=False) if finished else None
    changed = cast(CursorResult[Any], session.execute(
        update(PracticeEpisode)
        .where(PracticeEpisode.id == row.id, PracticeEpisode.steps == row.steps)
        .values(actions=actions_json(actions), steps=row.steps + 1, finished=after.done, record=record, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )).rowcount
    if changed != 1:
        raise StepTaken()
    return _view(row, start, options, after, finished, debrief_state(session, user))


# ------------------------------------------------------------------------------------------------
# export: the finished episodes as a `rescue sim eval` run
# ------------------------------------------------------------------------------------------------


def audit_export(session: Session, episodes: dict[str, int]) -> None:
    """An ``export`` entry in the audit log for each person whose practice episodes were taken out
    (``episodes``: username -> how many; people's own performance, accounted for like any export of
    annotations)."""
    for name, count in episodes.items():
        session.add(AuditEntry(at=utcnow(), user_id=None, action="export", note=f"practice: {count} episode(s) of {agent_name(name)}"))


def finished_records(session: Session, username: str | None = None, simulator: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{username: records}``: each person's *first* finished episode of every start (later
    attempts at a start they have seen scored are practice, and one episode id per run keeps the
    runs pairable by episode), in start order, each with when it was played (``practice``: its place
    in the order the person began their episodes, the time, and whether scores and debriefs were
    open to them then); ``simulator``: only episodes played against it."""
    query = select(PracticeEpisode, User.username).join(User, User.id == PracticeEpisode.user_id).order_by(PracticeEpisode.id)
    if username is not None:
        query = query.where(User.username == username)
    out: dict[str, dict[int, dict[str, Any]]] = {}
    began: dict[str, int] = {}
    for episode, name in session.execute(query):
        began[name] = order = began.get(name, 0) + 1  # every episode the person began counts, exported or not
        if not episode.finished or (simulator is not None and episode.simulator != simulator):
            continue
        assert episode.record is not None
        if episode.start_id in out.setdefault(name, {}):
            continue
        record = json.loads(episode.record)
        record["practice"] = {"order": order, "began": episode.created_at.isoformat(timespec="seconds"), "debrief_open": episode.debrief_open}
        out[name][episode.start_id] = record
    return {name: [by_start[k] for k in sorted(by_start)] for name, by_start in sorted(out.items()) if by_start}


@dataclass(frozen=True)
class PracticeRun:
    """One person's finished episodes as the ``rescue sim eval`` run the export writes to ``folder``:
    what they were played under (one simulator and model, horizon, gamma, lambda) and the digest of
    the starts they were played at (the run's data)."""

    username: str
    folder: Path
    records: list[dict[str, Any]]
    simulator: str
    sim_model: str | None
    """The fitted model's name as runs record it (``None``: the bundled one, or the scripted smoke test)."""
    horizon: int
    gamma: float
    lam: float
    starts_sha256: str

    @property
    def agent(self) -> str:
        return agent_name(self.username)

    @property
    def clips(self) -> int:
        return len({r["sample_id"] for r in self.records})


def practice_run(username: str, records: list[dict[str, Any]], folder: Path) -> PracticeRun:
    """One person's records as a :class:`PracticeRun` (in episode order), or :class:`Invalid` when
    they were played under different objectives or simulators (a run has one)."""
    import hashlib

    if not records:
        raise Invalid(f"{username} has no finished practice episode", "user")
    first = records[0]
    horizons = {r["horizon"] for r in records}
    gammas = {r["metrics"]["gamma"] for r in records}
    lams = {r["metrics"]["lambda"] for r in records}
    if len(horizons) > 1 or len(gammas) > 1 or len(lams) > 1:
        raise Invalid(f"{username}'s episodes were played under different horizons, gamma or lambda: export them from one catalogue", "user")
    played = sorted({f"{r['simulator']} {(r.get('simulator_model') or {}).get('sha256') or ''}".strip() for r in records})
    if len(played) > 1:
        raise Invalid(
            f"{username}'s episodes were played against different simulators ({'; '.join(played)}): export one with --simulator", "simulator"
        )
    records = sorted(records, key=lambda r: (r["sample_id"], r["row"]))
    model = (first.get("simulator_model") or {}).get("model")
    starts = json.dumps([[r["id"], r["initial_state"]] for r in records], sort_keys=True, ensure_ascii=False)
    return PracticeRun(
        username=username, folder=folder, records=records, simulator=first["simulator"],
        sim_model=None if model in (None, DEFAULT_MODEL_NAME) else model,
        horizon=first["horizon"], gamma=first["metrics"]["gamma"], lam=first["metrics"]["lambda"],
        starts_sha256=hashlib.sha256(starts.encode()).hexdigest(),
    )


RESULT_FILES = (Path("results") / f"{SIM_TASK}.jsonl", Path("summary.json"))
"""What :func:`write_results` writes, relative to its folder."""


def write_results(folder: Path, run: PracticeRun, *, seed: int = 0) -> dict[str, Any]:
    """Write :data:`RESULT_FILES`: ``folder/results/sim.jsonl`` and ``folder/summary.json`` (the
    files of ``rescue sim eval`` but ``run.json``, which the run lifecycle writes); returns the summary."""
    from rescue_bench.fileio import atomic_write_json, atomic_write_jsonl

    records, summary_file = (folder / f for f in RESULT_FILES)
    records.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_jsonl(records, run.records)
    summary = summary_json(SimSummary(sim=summarize(run.records, seed=seed)))
    atomic_write_json(summary_file, summary)
    return summary
