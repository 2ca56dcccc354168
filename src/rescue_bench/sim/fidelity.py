"""Can a simulator be trusted? Its steps against what really happened next in the clip.

At every decision point of a clip (the agent's points), the simulator is given the real transcript
so far and the real therapist's move (the next row when it is the therapist's: its target and
strategy as STP and SSP read them, and its words; otherwise silence), then plays one step. That
step is compared with what the session annotates next, and every comparison has a floor given the
same inputs as the simulator (the transcript so far, the state at the start, the real move):

* **next speaker** (``speaker_correct``: a simulator that passes the floor back is wrong), beside
  three floors: the last client keeps the floor (``floor_last_correct``), the client the move
  addressed alone, else the last client (``floor_addressed_correct``), the client who spoke least
  recently (``floor_least_recent_correct``); each played by the ``fitted`` simulator's own floor
  rule on the step as the simulator heard it (:func:`speaker_floors`);
* **the state**: the speaker's intensity at the next client row (``intensity_error``, absolute,
  0-10) and every client's intensity annotated after the move, before the therapist's next move
  (``intensity_error_all``, the mean over those clients), their valence (``valence_correct``, the
  annotation read by the lexicon) and the pattern (``pattern_correct``: the first pattern annotated
  from the move to the next client row). The floor of each is **no change** (``..._floor``): the
  state at the start, which every simulator starts from;
* ``multistep``: for an offline simulator, the real moves of the next :data:`MULTISTEP` decision
  points played one after the other from the same start, and every client's annotated intensity
  after the s-th move against the simulator's state then (``error``) and against the start
  (``floor``);
* ``bertscore`` of the turn against the real one; with a judge (``--judge``) its plausibility and,
  under the very same prompt, the real turn's (the judge's ceiling on these sessions).

A step without a usable simulator answer has no state: its comparisons are left out (``None``) and
it is counted (``valid`` false), never scored as the state it started from.

The ``fitted`` simulator is measured on clips it was not fitted on: on the clips of its own model
each case is played by a model refitted without that clip (:func:`simulators_for`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypedDict, cast

from rescue_bench.data.models import Clip
from rescue_bench.labels import SUMMARY_SCENARIOS, THERAPIST, in_scenario, patterns, strategies
from rescue_bench.metrics import bootstrap_ci, mean_statistic
from rescue_bench.prompts.render import JUDGE_SYSTEM, Prompt, render_rows
from rescue_bench.sim.episode import Episode, EpisodeStart, episode_starts
from rescue_bench.sim.fitted import SPEAKER_FLOORS, FittedModel
from rescue_bench.sim.hearing import SILENCE, heard_as
from rescue_bench.sim.lexicon import valence
from rescue_bench.sim.objective import MIN_CLIPS_FOR_INTERVAL
from rescue_bench.sim.offline import Fitted, OfflineSimulator
from rescue_bench.sim.options import FITTED, SimOptions
from rescue_bench.sim.prompts import RECENT_ROWS
from rescue_bench.sim.record import AgentAction, ClientStateJson, EpisodeRecord, EpisodeStep, SimulatorDescription, StateJson
from rescue_bench.sim.scripted import SIMULATOR
from rescue_bench.sim.units import annotation, boundaries, choose_speaker, real_move, speaker_features, window_end
from rescue_bench.summary import FidelityEntry, FloorCheck, Interval
from rescue_bench.tasks.er import integer_intensity, speaker_emotion
from rescue_bench.tasks.instance import RowView
from rescue_bench.tasks.stp import resolve_target, strategy_type

FIDELITY_TASK = "fidelity"
REAL_THERAPIST = "baseline/real_therapist"
"""The agent of a fidelity episode: the real therapist's next move, replayed."""
SCENARIOS3 = SUMMARY_SCENARIOS
PLAUSIBILITY_FLOOR = 1
"""The judge's rating of a step without a client turn (as an unusable agent turn scores)."""
MULTISTEP = 3
"""Moves an offline simulator plays one after the other from each point (multi-step fidelity)."""

PLAUSIBILITY_RUBRIC = (
    "Rate how plausible the candidate turn is as what the named client says next in this session, given the "
    "transcript and the therapist's last move: in character with how this client has spoken, consistent with what "
    "they have said and felt so far, and a believable reaction to what just happened. Fluent, polite or generic "
    "wording alone does not make a turn plausible.\n"
    "5 = entirely believable as this client's next turn; 4 = believable, one detail off; 3 = possible but generic or "
    "partly out of character; 2 = unlikely for this client at this moment; 1 = implausible."
)


class Observed(TypedDict):
    """A client's annotated feeling after a move."""

    valence: str
    intensity: int


class RealMove(TypedDict):
    """A real therapist's move as the clients heard it (:func:`rescue_bench.sim.fitted.real_move`)."""

    recipients: Sequence[str]
    words: str
    strategy: str | None


class LaterMove(TypedDict):
    k: int
    """The 0-based row after which the move came."""
    move: RealMove
    observed: dict[str, Observed]


class RealOutcome(TypedDict):
    """What really happened after a fidelity point (a fidelity record's ``gold``): the next client
    turn, its speaker's feeling, the pattern, every client's
    feeling after the move and the next real moves with theirs (multi-step fidelity)."""

    speaker: str
    text: str | None
    intensity: int | None
    valence: str | None
    pattern: str | None
    observed: dict[str, Observed]
    later: list[LaterMove]


class MultiStep(TypedDict):
    n: int
    error: float
    floor: float


class SimulatedTurn(TypedDict):
    speaker: str | None
    text: str | None
    state: StateJson | None


class FlaggedJudge(TypedDict, total=False):
    judge_flagged: list[str]
    """The plausibility keys whose judge never gave a valid score (they count the floor)."""


class FidelityRecord(FlaggedJudge):
    """One line of ``results/fidelity.jsonl`` (the engine fills ``bertscore`` and the judge's ratings)."""

    id: str
    task: str
    sample_id: str
    scenario: str
    row: int
    gold: RealOutcome
    valid: bool
    error: str | None
    prediction: SimulatedTurn
    simulator: str
    simulator_model: SimulatorDescription | None
    move: AgentAction
    speaker_correct: bool | None
    floor_last_correct: bool
    floor_addressed_correct: bool
    floor_least_recent_correct: bool
    intensity_error: float | None
    intensity_error_floor: float | None
    intensity_error_all: float | None
    intensity_error_all_floor: float | None
    valence_correct: bool | None
    valence_correct_floor: bool | None
    pattern_correct: bool | None
    pattern_correct_floor: bool | None
    multistep: dict[str, MultiStep] | None
    bertscore: float | None
    judge_plausibility: float | None
    judge_plausibility_real: float | None


PlausibilityKey = Literal["judge_plausibility", "judge_plausibility_real"]
"""The judge's ratings of a fidelity record: the simulated next turn and the real one."""


def _real_move(clip: Clip, k: int) -> tuple[dict[str, str], int | None]:
    """The replayed chain answers of the real move after 0-based row ``k``, and the 0-based index of
    the next client row (``None`` when the clip has none)."""
    rows = clip.rows
    nxt = rows[k + 1] if k + 1 < len(rows) else None
    if nxt is not None and nxt.is_therapist:
        whom = resolve_target(nxt, clip.group_label) or clip.group_label
        how = strategy_type(nxt) if strategy_type(nxt) in strategies(clip.scenario) else None
        answers = {
            "when": json.dumps({"answer": "yes"}),
            "whom_how": json.dumps({"target": whom, "strategy": how}),
            "turn": json.dumps({"turn": nxt.text or "..."}, ensure_ascii=False),
        }
    else:
        answers = {"when": json.dumps({"answer": "no"})}
    client = next((i for i in range(k + 1, len(rows)) if rows[i].is_client and rows[i].speaker in clip.clients), None)
    return answers, client


def observed_after(clip: Clip, k: int) -> dict[str, Observed]:
    """Every client's first annotation after the move that follows 0-based row ``k``, before the
    therapist's next move (the window of the fitted simulator's units): ``{client: {"intensity", "valence"}}``."""
    _, _, _, at = real_move(clip, k)
    end = window_end(clip.rows, at if at is not None else k)
    out: dict[str, Observed] = {}
    for j in range(k + 1, end):
        for c in clip.clients:
            if c not in out and (a := annotation(clip.rows[j], c)) is not None:
                out[c] = {"valence": a[0], "intensity": a[1]}
    return out


def fidelity_cases(clips: Sequence[Clip], options: SimOptions, limit: int | None = None) -> list[tuple[EpisodeStart, dict[str, str], RealOutcome]]:
    """``(start, replayed move, real outcome)`` at every decision point that has a next client row."""
    every = options.model_copy(update={"per_clip": 10**9})
    out = []
    for clip in clips:
        starts, _ = episode_starts(clip, every)
        later = boundaries(clip)
        for start in starts:
            k = start.row - 1
            answers, i = _real_move(clip, k)
            if i is None:
                continue
            row = clip.rows[i]
            emotion = speaker_emotion(row)
            labels = patterns(clip.scenario)
            pattern = next((v for r in clip.rows[k + 1 : i + 1] for v in (r.cycle_state, r.pattern) if v in labels), None)
            moves = [m for m in later if m >= k][:MULTISTEP]
            real: RealOutcome = {
                "speaker": row.speaker,
                "text": row.text,
                "intensity": integer_intensity(emotion.intensity) if emotion else None,
                "valence": valence(emotion.emotion_description) if emotion else None,
                "pattern": pattern,
                "observed": observed_after(clip, k),
                "later": [
                    {"k": m, "move": _move(*real_move(clip, m)[:3]), "observed": observed_after(clip, m)}
                    for m in moves
                ],
            }
            out.append((start, answers, real))
    return out[:limit] if limit else out


def _move(recipients: Sequence[str], words: str, strategy: str | None) -> RealMove:
    return {"recipients": recipients, "words": words, "strategy": strategy}


def judge_context(start: EpisodeStart, move: AgentAction) -> list[RowView]:
    """The rows a plausibility judge sees: the transcript's last rows up to the point, then the real
    therapist's move when there was one (what the simulator saw, without its cards or state)."""
    rows = list(start.transcript)
    if move.get("intervened"):
        whom = move.get("whom")
        rows.append(RowView(row_index=len(rows) + 1, speaker=THERAPIST, target=[whom] if whom else [], text=move.get("turn") or ""))
    return rows[-RECENT_ROWS:]


def plausibility_prompt(context: Sequence[RowView], speaker: str, turn: str) -> Prompt:
    """Judge request: is ``turn`` a plausible next turn of ``speaker`` after ``context``? (1-5). The same
    form for a simulated and a real turn, so the judge cannot tell them apart by the prompt."""
    body = (
        f"{PLAUSIBILITY_RUBRIC}\n\nTranscript before the turn (newest last):\n{render_rows(list(context))}\n\n"
        f"Next speaker: {speaker}\nCandidate turn: {turn}"
    )
    return Prompt(JUDGE_SYSTEM, body)


def plausibility_requests(start: EpisodeStart, record: FidelityRecord) -> dict[PlausibilityKey, Prompt | None]:
    """``{"judge_plausibility": prompt or None (no client turn: the floor), "judge_plausibility_real": prompt}``
    for one fidelity record (as :func:`fidelity_record` made it)."""
    context = judge_context(start, record["move"])
    pred, gold = record["prediction"], record["gold"]
    simulated = plausibility_prompt(context, pred["speaker"], pred["text"]) if pred["speaker"] and pred["text"] else None
    return {"judge_plausibility": simulated, "judge_plausibility_real": plausibility_prompt(context, gold["speaker"], gold["text"] or "")}


def judge_texts() -> str:
    """The plausibility rubric, for the fingerprint recorded in run.json."""
    return json.dumps([JUDGE_SYSTEM, PLAUSIBILITY_RUBRIC])


def fidelity_episode(
    start: EpisodeStart, answers: dict[str, str], simulator: str, options: SimOptions, sim: OfflineSimulator | None = None
) -> Episode:
    """One step of ``simulator`` (``sim``: the offline simulator of the start's clip) after the real move."""
    one = options.model_copy(update={"horizon": 1, "state": "none"})
    return Episode(start, agent=REAL_THERAPIST, simulator=simulator, options=one, replay=answers, model=sim, floors=False)


def multistep(sim: OfflineSimulator, start: EpisodeStart, real: RealOutcome) -> dict[str, MultiStep]:
    """The real moves of the next points played one after the other from the start: per step s,
    every client's annotated intensity after the s-th move against the simulator's state then and
    against the start (mean absolute error, over the clients annotated)."""
    clients = start.clients
    state = start.initial
    out: dict[str, MultiStep] = {}
    for s, later in enumerate(real["later"], 1):
        move = later["move"]
        words = move["words"] or None
        heard = heard_as(move["recipients"], words=words, affect=sim.read(words) if words else None, strategy=move["strategy"])
        state, _ = sim.step(state, heard, clients, start.scenario, s)
        seen = [c for c in clients if c in later["observed"]]
        if not seen:
            continue
        truth = [later["observed"][c]["intensity"] for c in seen]
        out[str(s)] = {
            "n": len(seen),
            "error": sum(abs(state.emotions[c].intensity - t) for c, t in zip(seen, truth)) / len(seen),
            "floor": sum(abs(start.initial.emotions[c].intensity - t) for c, t in zip(seen, truth)) / len(seen),
        }
    return out


SPEAKER_FLOOR_KEYS: dict[str, str] = {
    "the last client keeps the floor": "floor_last_correct",
    "the client addressed alone, else the last client": "floor_addressed_correct",
    "the least recent speaker": "floor_least_recent_correct",
}
"""The fidelity record's key of each speaker floor of :data:`rescue_bench.sim.fitted.SPEAKER_FLOORS`."""


def speaker_floors(start: EpisodeStart, step: EpisodeStep, speaker: str) -> dict[str, bool]:
    """Whether each speaker floor names the real next speaker, played by the simulator's own floors
    (:data:`rescue_bench.sim.fitted.SPEAKER_FLOORS`) on the very step the simulator heard: the same
    inputs, the same rule."""
    heard = step.get("heard") or SILENCE
    spoken = [row.speaker for row in start.transcript]
    features = speaker_features(heard, start.clients, spoken, spoken)
    out = {}
    for name, weights in SPEAKER_FLOORS.items():
        scores = [sum(w * f for w, f in zip(weights, row)) for row in features]
        out[SPEAKER_FLOOR_KEYS[name]] = choose_speaker(scores, start.clients, spoken) == speaker
    return out


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def fidelity_record(start: EpisodeStart, real: RealOutcome, episode: EpisodeRecord, sim: OfflineSimulator | None = None) -> FidelityRecord:
    """One line of ``results/fidelity.jsonl`` from the played episode's record
    (:meth:`rescue_bench.sim.Episode.typed_record`)."""
    step = episode["steps"][0]
    turn = step["client_turns"][0] if step["client_turns"] else None
    state = step["state"]
    valid = state is not None
    speaker = real["speaker"]
    before = start.initial.to_json()["emotions"]
    pred_state = state["emotions"].get(speaker) if state is not None else None
    seen = [c for c in start.clients if c in real["observed"]]
    floors = speaker_floors(start, step, speaker)

    def err(source: dict[str, ClientStateJson] | dict[str, Observed]) -> float | None:
        return _mean([abs(source[c]["intensity"] - real["observed"][c]["intensity"]) for c in seen]) if seen else None

    return {
        "id": f"{FIDELITY_TASK}/{start.sample_id}/{start.row}",
        "task": FIDELITY_TASK,
        "sample_id": start.sample_id,
        "scenario": start.scenario,
        "row": start.row,
        "gold": real,
        "valid": valid,
        "error": step["simulator"].get("error"),
        "prediction": {"speaker": turn["speaker"] if turn else None, "text": turn["text"] if turn else None, "state": state},
        "simulator": episode["simulator"],
        "simulator_model": episode.get("simulator_model"),
        "move": step["action"],
        "speaker_correct": bool(turn and turn["speaker"] == speaker) if valid else None,
        "floor_last_correct": floors["floor_last_correct"],
        "floor_addressed_correct": floors["floor_addressed_correct"],
        "floor_least_recent_correct": floors["floor_least_recent_correct"],
        "intensity_error": abs(pred_state["intensity"] - real["intensity"]) if pred_state and real["intensity"] is not None else None,
        "intensity_error_floor": abs(before[speaker]["intensity"] - real["intensity"]) if real["intensity"] is not None and speaker in before else None,
        "intensity_error_all": err(state["emotions"]) if state is not None else None,
        "intensity_error_all_floor": err(before),
        "valence_correct": (pred_state["valence"] == real["valence"]) if pred_state and real["valence"] is not None else None,
        "valence_correct_floor": (before[speaker]["valence"] == real["valence"]) if real["valence"] is not None and speaker in before else None,
        "pattern_correct": (state["pattern"] == real["pattern"]) if state is not None and real["pattern"] is not None else None,
        "pattern_correct_floor": (start.initial.pattern == real["pattern"]) if real["pattern"] is not None else None,
        "multistep": multistep(sim, start, real) if sim is not None else None,
        "bertscore": None,
        "judge_plausibility": None,
        "judge_plausibility_real": None,
    }


FIDELITY_METRICS: tuple[tuple[str, str, str], ...] = (
    ("speaker_correct", "pct", "next speaker accuracy"),
    ("floor_last_correct", "pct", "  floor: the last client keeps the floor"),
    ("floor_addressed_correct", "pct", "  floor: the client addressed alone, else the last client"),
    ("floor_least_recent_correct", "pct", "  floor: the client who spoke least recently"),
    ("intensity_error", "error", "the speaker's intensity, absolute error (0-10)"),
    ("intensity_error_floor", "error", "  floor: no change"),
    ("intensity_error_all", "error", "every client's intensity after the move, absolute error"),
    ("intensity_error_all_floor", "error", "  floor: no change"),
    ("valence_correct", "pct", "the speaker's valence agreement"),
    ("valence_correct_floor", "pct", "  floor: no change"),
    ("pattern_correct", "pct", "pattern accuracy"),
    ("pattern_correct_floor", "pct", "  floor: no change"),
    *((f"multistep_{s}", "error", f"intensity after {s} real moves, absolute error") for s in range(1, MULTISTEP + 1)),
    *((f"multistep_{s}_floor", "error", "  floor: no change") for s in range(1, MULTISTEP + 1)),
    ("bertscore", "bert", "turn BERTScore F1 vs the real turn"),
    ("judge_plausibility", "judge", "judge plausibility of the turn (1-5)"),
    ("judge_plausibility_real", "judge", "judge plausibility of the real turn (1-5, the ceiling)"),
    ("invalid", "pct", "steps without a usable simulator answer (left out above)"),
)
FLOORS: dict[str, tuple[tuple[str, bool], ...]] = {
    "speaker_correct": (("floor_last_correct", True), ("floor_addressed_correct", True), ("floor_least_recent_correct", True)),
    "intensity_error": (("intensity_error_floor", False),),
    "intensity_error_all": (("intensity_error_all_floor", False),),
    "valence_correct": (("valence_correct_floor", True),),
    "pattern_correct": (("pattern_correct_floor", True),),
    **{f"multistep_{s}": ((f"multistep_{s}_floor", False),) for s in range(1, MULTISTEP + 1)},
}
"""Each measure's floors, with whether higher is better."""


def _value(record: FidelityRecord, key: str) -> float | None:
    if key == "invalid":
        return float(not record["valid"])
    if key.startswith("multistep_"):
        parts = key.split("_")
        step = (record.get("multistep") or {}).get(parts[1])
        return None if step is None else float(step["floor" if len(parts) == 3 else "error"])
    value = cast(dict[str, float | bool | None], record).get(key)
    return None if value is None else float(value)


def _reader(key: str) -> Callable[[FidelityRecord], float]:
    def read(record: FidelityRecord) -> float:
        value = _value(record, key)
        return math.nan if value is None else value

    return read


def summarize_fidelity(
    lines: Sequence[FidelityRecord] | Sequence[dict[str, Any]], *, n_resamples: int = 1000, seed: int = 0
) -> dict[str, FidelityEntry]:
    """Per scenario: every measure with its interval (``value``, ``ci_low``, ``ci_high``, ``n``),
    ``points`` and ``clips``, ``beaten_by`` (per measure, the floors the simulator does not beat:
    equal or better) and ``validation`` (:func:`validation`) of the lines of ``results/fidelity.jsonl``
    (as the engine made them, or as read from the file)."""
    records = [cast(FidelityRecord, r) for r in lines]
    out: dict[str, FidelityEntry] = {}
    for scenario in SCENARIOS3:
        chosen = in_scenario(records, scenario)
        estimates: dict[str, Interval] = {}
        for key, _, _ in FIDELITY_METRICS:
            have = [r for r in chosen if _value(r, key) is not None]
            if not have:
                estimates[key] = Interval(value=None, ci_low=None, ci_high=None, n=0)
                continue
            stat = mean_statistic(_reader(key), key)
            clips = len({r["sample_id"] for r in have})
            low = high = None
            if clips >= MIN_CLIPS_FOR_INTERVAL:
                strata = "scenario" if scenario not in ("couple", "family") else None
                lo, hi = bootstrap_ci(have, stat, "sample_id", n_resamples=n_resamples, seed=seed, strata=strata)
                low, high = float(lo), float(hi)
            estimates[key] = Interval(value=float(stat(have)), ci_low=low, ci_high=high, n=len(have))
        beaten_by = {
            key: [f for f, higher in floors if _not_beaten(estimates[key].value, estimates[f].value, higher)]
            for key, floors in FLOORS.items()
        }
        out[scenario] = FidelityEntry.model_validate(
            {"points": len(chosen), "clips": len({r["sample_id"] for r in chosen}), **estimates, "beaten_by": beaten_by,
             "validation": validation(chosen, n_resamples=n_resamples, seed=seed)}
        )
    return out


def _not_beaten(mine: float | None, floor: float | None, higher: bool) -> bool:
    if mine is None or floor is None:
        return False
    return mine <= floor + 1e-12 if higher else mine >= floor - 1e-12


CHECKS: tuple[tuple[str, str, bool], ...] = (
    ("speaker_correct", "next speaker", True),
    ("intensity_error_all", "every client's intensity after the move", False),
    ("valence_correct", "the speaker's valence", True),
    ("pattern_correct", "pattern", True),
    (f"multistep_{MULTISTEP}", f"intensity after {MULTISTEP} real moves", False),
)
"""The measures the simulator is checked on against its best floor: key, label, higher is better."""


class Paired(TypedDict):
    """One decision point of a check: its clip, the simulator's measure and its difference from the floor's."""

    sample_id: str
    d: float
    a: float


def validation(lines: Sequence[FidelityRecord] | Sequence[dict[str, Any]], *, n_resamples: int = 1000, seed: int = 0) -> list[FloorCheck]:
    """Each measure of :data:`CHECKS` against its best floor on ``lines`` (the floor with the best
    value there): the mean difference over the decision points both have, oriented so that positive
    means the simulator is better, with its 95% interval (paired per point, resampling clips; none
    from fewer than :data:`rescue_bench.sim.objective.MIN_CLIPS_FOR_INTERVAL` clips). ``better`` or
    ``worse`` when the interval excludes 0, ``no different`` when it covers it."""
    records = [cast(FidelityRecord, r) for r in lines]
    out: list[FloorCheck] = []
    for key, label, higher in CHECKS:
        floors = [f for f, _ in FLOORS[key]]
        best_floor: str | None = None
        best_value: float | None = None
        paired: list[Paired] = []
        for f in floors:
            pairs = [(a, b) for r in records if (a := _value(r, key)) is not None and (b := _value(r, f)) is not None]
            if not pairs:
                continue
            value = sum(b for _, b in pairs) / len(pairs)
            if best_value is None or (value > best_value if higher else value < best_value):
                best_floor, best_value = f, value
        if best_floor is None:
            out.append(FloorCheck(measure=key, label=label, simulator=None, floor="", floor_value=None, difference=None, ci=None,
                             points=0, clips=0, verdict="not measured"))
            continue
        sign = 1.0 if higher else -1.0
        for r in records:
            a, b = _value(r, key), _value(r, best_floor)
            if a is not None and b is not None:
                paired.append({"sample_id": r["sample_id"], "d": sign * (a - b), "a": a})
        clips = len({d["sample_id"] for d in paired})
        diff = sum(d["d"] for d in paired) / len(paired)
        ci = None
        verdict: Literal["better", "no different", "worse", "no interval", "not measured"] = "no interval"
        if clips >= MIN_CLIPS_FOR_INTERVAL:
            lo, hi = bootstrap_ci(paired, mean_statistic(lambda d: d["d"], "difference"), "sample_id", n_resamples=n_resamples, seed=seed)
            ci = (round(float(lo), 4), round(float(hi), 4))
            verdict = "better" if ci[0] > 0 else "worse" if ci[1] < 0 else "no different"
        out.append(
            FloorCheck(measure=key, label=label, simulator=round(sum(d["a"] for d in paired) / len(paired), 4), floor=best_floor,
                  floor_value=round(float(best_value), 4) if best_value is not None else None, difference=round(diff, 4), ci=ci,
                  points=len(paired), clips=clips, verdict=verdict)
        )
    return out


def validate_folds(clips: Sequence[Clip], models: dict[str, FittedModel], *, seed: int = 0) -> list[FloorCheck]:
    """:func:`validation` of a fit on its own sessions: every decision point of each clip played by
    ``models[sample_id]`` (a model fitted without the clip's couple or family)."""
    options = SimOptions(horizon=1, state="none")
    records = []
    for start, answers, real in fidelity_cases(clips, options):
        sim = Fitted(models[start.sample_id])
        episode = fidelity_episode(start, answers, FITTED, options, sim).typed_record()
        records.append(fidelity_record(start, real, episode, sim))
    return validation(records, seed=seed)


__all__ = [
    "FIDELITY_METRICS",
    "FIDELITY_TASK",
    "FLOORS",
    "REAL_THERAPIST",
    "SIMULATOR",
    "fidelity_cases",
    "fidelity_episode",
    "fidelity_record",
    "plausibility_prompt",
    "plausibility_requests",
    "summarize_fidelity",
    "validate_folds",
    "validation",
]
