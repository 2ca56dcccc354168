"""The chain record: one per decision point, written to ``results/agent.jsonl``.

Pure functions shared by the engine's scorer, the report and any user script, as
:mod:`rescue_bench.scoring` is for the tasks: :func:`chain_record` turns a point and its step
results into a record; :func:`judge_requests` / :func:`with_judges` and :func:`bertscore_requests` /
:func:`with_bertscores` fill in what needs a model. :mod:`rescue_bench.agent.metrics` computes every
number of ``summary.json`` from these records alone.

Record fields: ``id, task ("agent"), sample_id, scenario, row, n_rows, state_mode, branch, gold`` (the
point's gold), ``candidates``, ``participants``, ``last_speaker``, ``steps`` (per step asked: raw,
prediction, valid, error), ``prediction`` (``when, whom, how, how_given_gold, pattern, turn,
recipients``), ``valid`` (every step asked gave a usable answer), ``error`` (the first problem),
``scores`` (below), ``single_ids``, and after judging ``judged`` (the keys of the judge calls made).

``scores``:

* ``emotions`` / ``stances``: one item per client (per source) with gold, state mode ``explicit``
  only. A client the state leaves out, or an unusable state, scores like an invalid ER/VP answer:
  intensity 1, and the floors of the judge (1) and BERTScore (0) when they are part of the run
  (:func:`with_judges`, :func:`with_bertscores`; :data:`rescue_bench.scoring.INVALID_JUDGE_SCORE`),
  else ``None``.
* ``pattern``: ``{"gold", "prediction", "correct"}`` where the gold has a pattern (explicit only).
* ``turn``: where the real therapist spoke (gold ``turn``) and the agent took the turn: judge
  scores against the real turn (``judge_real``) and, where the gold names target and strategy,
  against them (``judge_strategy``), and BERTScore against the real turn. A turn the agent owed
  but did not give in usable form takes the floors (1 / 1 / 0) of the judge and BERTScore that are
  part of the run.
* ``neglect_agent`` / ``neglect_therapist``: at points with a clearly most distressed client, whether
  the agent's (the real therapist's) recipients leave that client out, counted only where that one
  took the turn. An unusable target counts as leaving the client out (an invalid answer is wrong).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict, cast

from rescue_bench.agent.chain import StepJson
from rescue_bench.agent.points import AGENT_TASK, DecisionPoint
from rescue_bench.agent.prompts import turn_real_prompt, turn_strategy_prompt
from rescue_bench.metrics import intensity_score
from rescue_bench.prompts.render import Prompt, judge_prompt
from rescue_bench.records import Located
from rescue_bench.scoring import INVALID_BERTSCORE, INVALID_JUDGE_SCORE

FLOOR_JUDGE = INVALID_JUDGE_SCORE
FLOOR_BERTSCORE = INVALID_BERTSCORE


class EmotionGoldScore(TypedDict):
    """The gold an emotion is scored against."""

    emotion: str
    intensity: int


class EmotionScore(TypedDict):
    """One client's emotion in ``scores["emotions"]``: scored as an ER answer."""

    client: str
    gold: EmotionGoldScore
    prediction: Any
    valid: bool
    intensity_score: float
    judge_score: int | None
    score: float | None
    bertscore: float | None
    judge_flagged: NotRequired[bool]


class StanceScore(TypedDict):
    """One source's stances in ``scores["stances"]``: scored as a VP answer."""

    source: str
    gold: list[dict[str, str]]
    prediction: Any
    valid: bool
    judge_score: int | None
    bertscore: float | None
    judge_flagged: NotRequired[bool]


class PatternScore(TypedDict):
    """``scores["pattern"]``: the state's relation pattern against the gold one."""

    gold: str
    prediction: str | None
    correct: bool


class TurnScore(TypedDict, total=False):
    """``scores["turn"]``: the agent's turn judged against the real one (and the gold strategy)."""

    valid: bool
    judge_real: int | None
    judge_strategy: int | None
    bertscore: float | None
    judge_flagged: list[str]


TurnJudge = Literal["judge_real", "judge_strategy"]
"""The judge scores of ``scores["turn"]``."""


class ChainScores(TypedDict):
    """A chain record's ``scores`` (see the module doc)."""

    emotions: list[EmotionScore]
    stances: list[StanceScore]
    pattern: NotRequired[PatternScore]
    turn: NotRequired[TurnScore]
    neglect_agent: NotRequired[bool | None]
    neglect_therapist: NotRequired[bool | None]


class EmotionGoldJson(TypedDict):
    """A client's gold emotion in a record's ``gold["emotions"]``."""

    emotion: str
    intensity: int
    row: int


class StanceGoldJson(TypedDict):
    """One gold stance in a record's ``gold["stances"]``."""

    target: str
    viewpoint: str
    row: int


class PointGoldJson(TypedDict):
    """A record's ``gold``: the point's :class:`~rescue_bench.agent.points.PointGold` as JSON."""

    when: str
    whom: str | None
    how: str | None
    pattern: str | None
    turn: str | None
    recipients: list[str] | None
    emotions: dict[str, EmotionGoldJson]
    stances: dict[str, list[StanceGoldJson]]
    levels: dict[str, int]
    distressed: str | None


class ChainCandidates(TypedDict):
    """A record's ``candidates``: the labels the point offered."""

    targets: list[str]
    strategies: list[str]
    patterns: list[str]


class ChainPrediction(TypedDict):
    """A record's ``prediction``: the chain's usable answers (``None`` where a step gave none)."""

    when: str | None
    whom: str | None
    how: str | None
    how_given_gold: str | None
    pattern: str | None
    turn: str | None
    recipients: list[str] | None


class JudgedChain(TypedDict, total=False):
    judged: list[str]
    """The keys of the judge calls made (:func:`with_judges`)."""


class AgentRecord(JudgedChain, Located):
    """One chain record: a line of ``results/agent.jsonl`` (fields: the module doc)."""

    n_rows: int
    state_mode: str
    branch: bool
    gold: PointGoldJson
    candidates: ChainCandidates
    participants: list[str]
    last_speaker: str
    steps: dict[str, StepJson]
    prediction: ChainPrediction
    valid: bool
    error: str | None
    scores: ChainScores
    single_ids: dict[str, str]


def _result(results: Mapping[str, Any], step: str) -> StepJson | None:
    value = results.get(step)
    if value is None:
        return None
    return cast(StepJson, value) if isinstance(value, Mapping) else value.to_dict()


def recipients_of(whom: str | None, point: DecisionPoint) -> list[str]:
    """The clients a target label stands for: every client for the group label, else the name."""
    if whom is None:
        return []
    return list(point.participants) if whom == point.group else [whom]


def chain_record(
    point: DecisionPoint, results: Mapping[str, Any], state_mode: str, branch: bool = True
) -> AgentRecord:
    """The judge-free record of ``point`` from its step results (``StepResult`` or their dicts).

    ``branch`` says whether the strategy-given-gold-target branch was asked at all (an option).
    """
    steps = {s: r for s in ("state", "when", "whom_how", "turn", "how_gold") if (r := _result(results, s)) is not None}
    gold = point.gold

    def pred(step: str) -> Any:
        r = steps.get(step)
        return r["prediction"] if r is not None and r["valid"] else None

    when = pred("when")
    intervened = when == "yes"
    whom_how = steps.get("whom_how")
    act = (whom_how["prediction"] if whom_how is not None else None) or {}  # a usable part counts even if the other is not
    whom = act.get("whom") if intervened else None
    how = act.get("how") if intervened else None
    state = pred("state") if state_mode == "explicit" else None
    turn = pred("turn") if intervened else None
    recipients = recipients_of(whom, point) if intervened else None
    prediction: ChainPrediction = {
        "when": when,
        "whom": whom,
        "how": how,
        "how_given_gold": pred("how_gold"),
        "pattern": state["pattern"] if state else None,
        "turn": turn,
        "recipients": recipients,
    }
    scores: ChainScores = {"emotions": [], "stances": []}
    if state_mode == "explicit":
        for client, g in gold.emotions.items():
            p = (state or {}).get("emotions", {}).get(client)
            emotion_gold: EmotionGoldScore = {"emotion": g.emotion, "intensity": g.intensity}
            if p is None:
                item = EmotionScore(
                    client=client, gold=emotion_gold, prediction=p, valid=False, intensity_score=float(FLOOR_JUDGE),
                    judge_score=None, score=None, bertscore=None,
                )
            else:
                item = EmotionScore(
                    client=client, gold=emotion_gold, prediction=p, valid=True, intensity_score=intensity_score(p["intensity"], g.intensity),
                    judge_score=None, score=None, bertscore=None,
                )
            scores["emotions"].append(item)
        for source, items in gold.stances.items():
            p = (state or {}).get("stances", {}).get(source)
            stance_gold = [{"target": s.target, "viewpoint": s.viewpoint} for s in items]
            if p:
                entry = StanceScore(source=source, gold=stance_gold, prediction=p, valid=True, judge_score=None, bertscore=None)
            else:
                entry = StanceScore(source=source, gold=stance_gold, prediction=None, valid=False, judge_score=None, bertscore=None)
            scores["stances"].append(entry)
        if gold.pattern is not None:
            scores["pattern"] = {"gold": gold.pattern, "prediction": prediction["pattern"], "correct": prediction["pattern"] == gold.pattern}
    if gold.turn is not None and intervened:
        # a turn owed but not given in usable form takes the floors of the judge and BERTScore
        t: TurnScore = {"valid": turn is not None, "judge_real": None, "bertscore": None}
        if gold.whom is not None and gold.how is not None:
            t["judge_strategy"] = None
        scores["turn"] = t
    if gold.distressed is not None:
        scores["neglect_agent"] = (gold.distressed not in recipients) if recipients is not None else None
        scores["neglect_therapist"] = (
            gold.distressed not in gold.recipients if gold.when == "yes" and gold.recipients is not None else None
        )
    asked = [r for r in steps.values()]
    errors = [f"{s}: {r['error']}" for s, r in steps.items() if not r["valid"]]
    return {
        "id": point.id,
        "task": AGENT_TASK,
        "sample_id": point.sample_id,
        "scenario": point.scenario,
        "row": point.row,
        "n_rows": point.n_rows,
        "state_mode": state_mode,
        "branch": branch,
        "gold": cast(PointGoldJson, gold.model_dump(mode="json")),
        "candidates": {"targets": point.targets, "strategies": point.strategies, "patterns": point.patterns},
        "participants": point.participants,
        "last_speaker": point.last_speaker,
        "steps": steps,
        "prediction": prediction,
        "valid": bool(asked) and all(r["valid"] for r in asked),
        "error": errors[0] if errors else (None if asked else "no step was answered"),
        "scores": scores,
        "single_ids": point.single_ids,
    }


# --------------------------------------------------------------------------------------------------
# judges
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeRequest:
    """One judge call a record needs: where its score goes and the prompt (1-5 answer)."""

    key: str
    prompt: Prompt


def judge_requests(point: DecisionPoint, record: AgentRecord) -> list[JudgeRequest]:
    """The judge calls of ``record``: valid emotions (ER rubric), stances (VP rubric), the turn."""
    out = []
    scores = record["scores"]
    for i, emotion in enumerate(scores["emotions"]):
        if emotion["valid"]:
            out.append(JudgeRequest(f"emotions/{i}", judge_prompt("er", emotion["gold"], emotion["prediction"], emotion["client"])))
    for i, stance in enumerate(scores["stances"]):
        if stance["valid"]:
            out.append(JudgeRequest(f"stances/{i}", judge_prompt("vp", stance["gold"], stance["prediction"], stance["source"])))
    turn = scores.get("turn")
    if turn and turn["valid"]:
        text = record["prediction"]["turn"] or ""  # a valid turn has its text
        gold = point.gold
        out.append(JudgeRequest("turn/judge_real", turn_real_prompt(point, gold.turn or "", text)))
        if "judge_strategy" in turn:
            out.append(JudgeRequest("turn/judge_strategy", turn_strategy_prompt(point, gold.how or "", gold.whom or "", text)))
    return out


def with_judges(record: AgentRecord, judged: Mapping[str, tuple[int | None, bool]]) -> AgentRecord:
    """``record`` of a run with a judge, with its judge scores: ``judged[key] = (score, flagged)``. A
    judge that never gave a valid score (``None``) counts as 1 and the item is flagged, as for
    ER/VP; an unusable emotion, stance or turn takes the judge's floor without a call."""
    scores = _copy_scores(record["scores"])
    out: AgentRecord = {**record, "scores": scores, "judged": sorted(judged)}
    for emotion in scores["emotions"]:
        if not emotion["valid"]:
            emotion["judge_score"], emotion["score"] = FLOOR_JUDGE, (FLOOR_JUDGE + emotion["intensity_score"]) / 2
    for stance in scores["stances"]:
        if not stance["valid"]:
            stance["judge_score"] = FLOOR_JUDGE
    turn = scores.get("turn")
    if turn and not turn["valid"]:
        turn["judge_real"] = FLOOR_JUDGE
        if "judge_strategy" in turn:
            turn["judge_strategy"] = FLOOR_JUDGE
    for key, (value, flagged) in judged.items():
        score = FLOOR_JUDGE if value is None else int(value)
        flagged = flagged or value is None
        part, name = key.split("/", 1)
        if part == "turn":
            turn = scores["turn"]
            turn[cast(TurnJudge, name)] = score
            if flagged:
                turn.setdefault("judge_flagged", []).append(name)
            continue
        if part == "emotions":
            emotion = scores["emotions"][int(name)]
            emotion["judge_score"] = score
            emotion["judge_flagged"] = flagged
            emotion["score"] = (score + emotion["intensity_score"]) / 2
        else:
            stance = scores["stances"][int(name)]
            stance["judge_score"] = score
            stance["judge_flagged"] = flagged
    return out


def _copy_scores(scores: ChainScores) -> ChainScores:
    out = scores.copy()
    out["emotions"] = [i.copy() for i in scores.get("emotions", [])]
    out["stances"] = [i.copy() for i in scores.get("stances", [])]
    if "turn" in scores and scores["turn"] is not None:
        out["turn"] = scores["turn"].copy()
    return out


# --------------------------------------------------------------------------------------------------
# BERTScore
# --------------------------------------------------------------------------------------------------


def bertscore_requests(record: AgentRecord) -> list[tuple[str, str, str]]:
    """``(key, prediction, reference)`` texts for BERTScore: emotion descriptions, stance
    viewpoints joined in order (as VP), and the turn against the real therapist turn."""
    out = []
    scores = record["scores"]
    for i, emotion in enumerate(scores["emotions"]):
        if emotion["valid"]:
            out.append((f"emotions/{i}", emotion["prediction"]["emotion"], emotion["gold"]["emotion"]))
    for i, stance in enumerate(scores["stances"]):
        if stance["valid"]:
            pred = "; ".join(v["viewpoint"] for v in stance["prediction"])
            gold = "; ".join(v["viewpoint"] for v in stance["gold"])
            out.append((f"stances/{i}", pred, gold))
    turn = scores.get("turn")
    if turn and turn["valid"]:
        out.append(("turn", record["prediction"]["turn"] or "", record["gold"]["turn"] or ""))
    return out


def with_bertscores(record: AgentRecord, values: Mapping[str, float]) -> AgentRecord:
    """``record`` of a run that computes BERTScore, with the F1 of each key of
    :func:`bertscore_requests`; an unusable emotion, stance or turn takes BERTScore's floor."""
    scores = _copy_scores(record["scores"])
    out: AgentRecord = {**record, "scores": scores}
    for item in (*scores["emotions"], *scores["stances"]):
        if not item["valid"]:
            item["bertscore"] = FLOOR_BERTSCORE
    turn = scores.get("turn")
    if turn and not turn["valid"]:
        turn["bertscore"] = FLOOR_BERTSCORE
    for key, value in values.items():
        if key == "turn":
            scores["turn"]["bertscore"] = value
            continue
        part, index = key.split("/", 1)
        if part == "emotions":
            scores["emotions"][int(index)]["bertscore"] = value
        else:
            scores["stances"][int(index)]["bertscore"] = value
    return out
