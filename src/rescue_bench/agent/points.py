"""Decision points of the support agent and their gold.

A decision point is one of the boundaries ITP uses (:func:`rescue_bench.tasks.itp.build_itp`: after
row k, balanced per clip), every one of them. The agent sees the rows up to k (the ITP instance's
context, projected by cue mode, so no annotation reaches it) and never row k+1, the row it predicts.

The gold of a point (never shown to the agent):

* ``when``: ITP's gold (``yes`` when row k+1 is the therapist's).
* ``whom`` / ``how`` / ``pattern``: STP's, SSP's and RPP's gold of row k+1, exactly when those tasks
  make an instance of that row (same rules, same functions); ``turn``: what the therapist said there.
* ``recipients``: the clients the real therapist's turn addressed (strategy target, else row target;
  the group label means every client), for the neglect rate.
* ``emotions``: per client, the latest emotion annotated in the recent rows (first item for that
  person in a row with a description and an integer 0-10 intensity, as ER takes it);
  ``levels``: per client, the highest such intensity in the recent rows.
* ``stances``: per ordered pair of clients (source, target), the viewpoints annotated in the latest
  recent row that has any for that pair (VP's items, restricted to client-to-client).
* ``distressed``: the client whose level is at least ``neglect_min`` and exceeds every other
  annotated client's by at least ``neglect_margin`` (needs two annotated clients).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.agent.options import AgentOptions
from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import RANKED_TASKS, TASKS, THERAPIST, TaskName, patterns, strategies
from rescue_bench.tasks.er import integer_intensity
from rescue_bench.tasks.instance import CueMode, RowView, instance_id
from rescue_bench.tasks.itp import build_itp
from rescue_bench.tasks.options import BuildOptions
from rescue_bench.tasks.stp import resolve_target, strategy_type, target_candidates

AGENT_TASK: Final = "agent"
"""The task name of chain records (``results/agent.jsonl``) and the prefix of point ids."""

SINGLE_TASKS: tuple[TaskName, ...] = TASKS
"""Each step of the chain is one benchmark task, scored alone in the single-task ablation: all six."""


class EmotionGold(BaseModel):
    model_config = ConfigDict(extra="forbid")

    emotion: str
    intensity: int
    row: int
    """1-based row of the annotation."""


class StanceGold(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str
    viewpoint: str
    row: int


class PointGold(BaseModel):
    """Everything a decision point is scored on (see the module doc). Never shown to the agent."""

    model_config = ConfigDict(extra="forbid")

    when: Literal["yes", "no"]
    whom: str | None = None
    how: str | None = None
    pattern: str | None = None
    turn: str | None = None
    recipients: list[str] | None = None
    emotions: dict[str, EmotionGold] = Field(default_factory=dict)
    stances: dict[str, list[StanceGold]] = Field(default_factory=dict)
    levels: dict[str, int] = Field(default_factory=dict)
    distressed: str | None = None


class DecisionPoint(BaseModel):
    """One decision of the agent: what it may see, and the gold it is scored against."""

    model_config = ConfigDict(extra="forbid")

    id: str
    sample_id: str
    scenario: Literal["couple", "family"]
    row: int
    """1-based row k, the last row shown (as the ITP instance's ``row``)."""
    n_rows: int
    participants: list[str]
    group: str
    targets: list[str]
    """Whom the agent may address: STP's candidates of the clip (clients, group label, ...)."""
    strategies: list[str]
    patterns: list[str]
    mode: CueMode = "dialogue"
    context: list[RowView] = Field(default_factory=list)
    last_speaker: str = ""
    """Speaker of row k (bookkeeping for the ER/VP pairing; row k itself is shown when context > 0)."""
    gold: PointGold
    single_ids: dict[str, str] = Field(default_factory=dict)
    """Ids of the single-task instances on the same rows (ITP: the boundary; RPP, STP, SSP: row k+1;
    ER, VP: row k), for the chain-versus-single-task ablation. An id is listed whether or not that
    task makes an instance there; the ablation keeps the ones that exist."""

    def model_input(self) -> dict[str, Any]:
        """Everything a prompt may use: the point without its gold and bookkeeping."""
        return self.model_dump(exclude={"gold", "id", "sample_id", "row", "n_rows", "single_ids", "last_speaker"})


def _clean_names(values: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        v = v.strip() if isinstance(v, str) else ""
        if v and v != THERAPIST and v not in out:
            out.append(v)
    return out


def therapist_recipients(row: Row, clients: Sequence[str], group: str) -> list[str] | None:
    """The clients a therapist row addresses: its first strategy's target, else the row's target.

    The group label stands for every client; names that are not clients are ignored. ``None`` when
    no client can be named (the neglect rate then leaves the row out for the therapist).
    """
    items = row.support_strategy or []
    names = (_clean_names(items[0].target) if items else []) or _clean_names(row.target)
    if group in names:
        return list(clients)
    out = [n for n in names if n in clients]
    return out or None


def recent_emotions(
    rows: Sequence[Row], clients: Sequence[str], first: int = 1
) -> tuple[dict[str, EmotionGold], dict[str, int]]:
    """Each client's latest annotated emotion in ``rows`` (oldest first; the first is row ``first``,
    1-based) and their highest annotated intensity there."""
    latest: dict[str, EmotionGold] = {}
    levels: dict[str, int] = {}
    for number, row in enumerate(rows, start=first):
        seen: set[str] = set()
        for item in row.internal_emotion or []:
            person = (item.person or "").strip()
            description = (item.emotion_description or "").strip()
            intensity = integer_intensity(item.intensity)
            if person not in clients or person in seen or not description or intensity is None:
                continue
            seen.add(person)  # the first usable item of a person in a row, as ER takes it
            latest[person] = EmotionGold(emotion=description, intensity=intensity, row=number)
            levels[person] = max(levels.get(person, intensity), intensity)
    return latest, levels


def recent_stances(rows: Sequence[Row], clients: Sequence[str], first: int = 1) -> dict[str, list[StanceGold]]:
    """Per source client, the stances toward each other client from the latest row naming that pair
    (``rows`` oldest first; the first is row ``first``, 1-based)."""
    pairs: dict[tuple[str, str], list[StanceGold]] = {}
    for number, row in enumerate(rows, start=first):
        here: dict[tuple[str, str], list[StanceGold]] = {}
        for item in row.viewpoints_attitudes or []:
            source, target, viewpoint = ((v or "").strip() for v in (item.source, item.target, item.viewpoint))
            if source in clients and target in clients and source != target and viewpoint:
                here.setdefault((source, target), []).append(
                    StanceGold(target=target, viewpoint=viewpoint, row=number)
                )
        pairs.update(here)  # a later row replaces the pair's earlier stance
    out: dict[str, list[StanceGold]] = {}
    for source in clients:
        for target in clients:
            out.setdefault(source, []).extend(pairs.get((source, target), []))
    return {s: v for s, v in out.items() if v}


def most_distressed(levels: dict[str, int], margin: int, minimum: int) -> str | None:
    """The client clearly most distressed: level >= ``minimum`` and ``margin`` above every other
    annotated client's level; ``None`` when fewer than two clients are annotated or none stands out."""
    if len(levels) < 2:
        return None
    ranked = sorted(levels.items(), key=lambda kv: -kv[1])
    (top, level), (_, second) = ranked[0], ranked[1]
    return top if level >= minimum and level - second >= margin else None


def point_gold(clip: Clip, k: int, when: Literal["yes", "no"], options: AgentOptions) -> PointGold:
    """The gold of the boundary after 0-based row ``k`` of ``clip``."""
    clients = clip.clients
    group = clip.group_label
    nxt = clip.rows[k + 1]
    whom = how = pattern = turn = None
    recipients: list[str] | None = None
    if nxt.is_therapist:
        turn = nxt.text or None
        recipients = therapist_recipients(nxt, clients, group)
        if strategy_type(nxt):  # STP's rule (support_rows): a strategy type and a resolvable target
            whom = resolve_target(nxt, group)
        if whom is not None and strategy_type(nxt) in strategies(clip.scenario):
            how = strategy_type(nxt)
        if nxt.cycle_state in patterns(clip.scenario):
            pattern = nxt.cycle_state
    start = max(0, k - options.recent + 1)
    recent = clip.rows[start : k + 1]
    emotions, levels = recent_emotions(recent, clients, start + 1)
    return PointGold(
        when=when,
        whom=whom,
        how=how,
        pattern=pattern,
        turn=turn,
        recipients=recipients,
        emotions=emotions,
        levels=levels,
        stances=recent_stances(recent, clients, start + 1),
        distressed=most_distressed(levels, options.neglect_margin, options.neglect_min),
    )


def build_points(clip: Clip, options: AgentOptions | None = None) -> list[DecisionPoint]:
    """The decision points of ``clip``: ITP's boundaries, in row order, with their gold."""
    options = options or AgentOptions()
    itp = build_itp(clip, BuildOptions.for_run(options.mode, options.context))
    targets = target_candidates(clip)
    out = []
    for inst in itp:
        k = inst.row - 1
        gold = point_gold(clip, k, inst.gold, options)
        sid = clip.sample_id
        single = {"itp": inst.id, "er": instance_id("er", sid, k + 1), "vp": instance_id("vp", sid, k + 1)}
        for task in RANKED_TASKS:
            single[task] = instance_id(task, sid, k + 2)
        out.append(
            DecisionPoint(
                id=instance_id(AGENT_TASK, sid, k + 1),
                sample_id=sid,
                scenario=clip.scenario,
                row=inst.row,
                n_rows=len(clip.rows),
                participants=clip.clients,
                group=clip.group_label,
                targets=targets,
                strategies=list(strategies(clip.scenario)),
                patterns=list(patterns(clip.scenario)),
                mode=options.mode,
                context=inst.context,
                last_speaker=clip.rows[k].speaker,
                gold=gold,
                single_ids=single,
            )
        )
    return out


def build_all_points(clips: Sequence[Clip], options: AgentOptions | None = None) -> list[DecisionPoint]:
    """The decision points of every clip, clip by clip in input order."""
    return [p for clip in clips for p in build_points(clip, options)]
