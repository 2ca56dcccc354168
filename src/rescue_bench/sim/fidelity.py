"""Can a simulator be trusted? Its first step against what really happened next in the clip.

At every decision point of a clip (the agent's points), the simulator is given the real transcript
so far and the real therapist's move (the next row when it is the therapist's: its target and
strategy as STP and SSP read them, and its words; otherwise silence), then plays one step. That
step is compared with the next real client row:

* ``speaker_correct``: it let the same client speak (a simulator that passes the floor back is
  wrong); beside it the floor of always letting the client speak who spoke least recently
  (``alternation_correct``);
* ``bertscore``: BERTScore F1 of its turn against the real one (when both exist and BERTScore is
  installed);
* with a judge (``--judge``), ``judge_plausibility``: the judge's 1-5 rating of how plausible its
  turn is as that client's next turn in the session (:func:`plausibility_prompt`), and, under the
  very same prompt, ``judge_plausibility_real`` for the real next turn: the judge does not know
  which is which, and the real turn's rating is the ceiling the simulated one is read against. A
  step with no client turn (the floor passed back, an unusable answer) scores the floor, 1;
* its state after the step against that row's annotations: the speaker's intensity
  (``intensity_error``, absolute, 0-10) and valence (``valence_correct``, the annotation read by the
  lexicon), and the pattern (``pattern_correct``, against the first pattern annotated on the rows
  from the therapist's move to that client row).

The initial state itself is built from the annotations for every simulator (``rescue_bench.sim.cards``),
so it agrees with them by construction; what a simulator adds is the transition, measured here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from rescue_bench.data.models import Clip
from rescue_bench.labels import SUMMARY_SCENARIOS, THERAPIST, in_scenario, patterns, strategies
from rescue_bench.metrics import bootstrap_ci, mean_statistic
from rescue_bench.prompts.render import JUDGE_SYSTEM, Prompt, render_rows
from rescue_bench.sim.episode import Episode, EpisodeStart, episode_starts
from rescue_bench.sim.lexicon import valence
from rescue_bench.sim.options import SimOptions
from rescue_bench.sim.prompts import RECENT_ROWS
from rescue_bench.sim.scripted import SIMULATOR
from rescue_bench.tasks.er import integer_intensity, speaker_emotion
from rescue_bench.tasks.instance import RowView
from rescue_bench.tasks.stp import resolve_target, strategy_type

FIDELITY_TASK = "fidelity"
REAL_THERAPIST = "baseline/real_therapist"
"""The agent of a fidelity episode: the real therapist's next move, replayed."""
SCENARIOS3 = SUMMARY_SCENARIOS
PLAUSIBILITY_FLOOR = 1
"""The judge's rating of a step without a client turn (as an unusable agent turn scores)."""

PLAUSIBILITY_RUBRIC = (
    "Rate how plausible the candidate turn is as what the named client says next in this session, given the "
    "transcript and the therapist's last move: in character with how this client has spoken, consistent with what "
    "they have said and felt so far, and a believable reaction to what just happened. Fluent, polite or generic "
    "wording alone does not make a turn plausible.\n"
    "5 = entirely believable as this client's next turn; 4 = believable, one detail off; 3 = possible but generic or "
    "partly out of character; 2 = unlikely for this client at this moment; 1 = implausible."
)


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


def fidelity_cases(clips: Sequence[Clip], options: SimOptions, limit: int | None = None) -> list[tuple[EpisodeStart, dict[str, str], dict[str, Any]]]:
    """``(start, replayed move, real outcome)`` at every decision point that has a next client row."""
    every = options.model_copy(update={"per_clip": 10**9})
    out = []
    for clip in clips:
        starts, _ = episode_starts(clip, every)
        for start in starts:
            k = start.row - 1
            answers, i = _real_move(clip, k)
            if i is None:
                continue
            row = clip.rows[i]
            emotion = speaker_emotion(row)
            labels = patterns(clip.scenario)
            pattern = next((v for r in clip.rows[k + 1 : i + 1] for v in (r.cycle_state, r.pattern) if v in labels), None)
            spoken = [r.speaker for r in clip.rows[: k + 1] if r.speaker in clip.clients]
            last = {c: max([j for j, s in enumerate(spoken) if s == c], default=-1) for c in clip.clients}
            real = {
                "speaker": row.speaker,
                "text": row.text,
                "intensity": integer_intensity(emotion.intensity) if emotion else None,
                "valence": valence(emotion.emotion_description) if emotion else None,
                "pattern": pattern,
                "alternation": min(clip.clients, key=lambda c: (last[c], clip.clients.index(c))),
            }
            out.append((start, answers, real))
    return out[:limit] if limit else out


def judge_context(start: EpisodeStart, move: dict[str, Any]) -> list[RowView]:
    """The rows a plausibility judge sees: the transcript's last rows up to the point, then the real
    therapist's move when there was one (what the simulator saw, without its cards or state)."""
    rows = list(start.transcript)
    if move.get("intervened"):
        rows.append(RowView(row_index=len(rows) + 1, speaker=THERAPIST, target=[move["whom"]] if move.get("whom") else [], text=move.get("turn") or ""))
    return rows[-RECENT_ROWS:]


def plausibility_prompt(context: Sequence[RowView], speaker: str, turn: str) -> Prompt:
    """Judge request: is ``turn`` a plausible next turn of ``speaker`` after ``context``? (1-5). The same
    form for a simulated and a real turn, so the judge cannot tell them apart by the prompt."""
    body = (
        f"{PLAUSIBILITY_RUBRIC}\n\nTranscript before the turn (newest last):\n{render_rows(list(context))}\n\n"
        f"Next speaker: {speaker}\nCandidate turn: {turn}"
    )
    return Prompt(JUDGE_SYSTEM, body)


def plausibility_requests(start: EpisodeStart, record: dict[str, Any]) -> dict[str, Prompt | None]:
    """``{"judge_plausibility": prompt or None (no client turn: the floor), "judge_plausibility_real": prompt}``
    for one fidelity record."""
    context = judge_context(start, record["move"])
    pred, gold = record["prediction"], record["gold"]
    simulated = plausibility_prompt(context, pred["speaker"], pred["text"]) if pred["speaker"] and pred["text"] else None
    return {"judge_plausibility": simulated, "judge_plausibility_real": plausibility_prompt(context, gold["speaker"], gold["text"] or "")}


def judge_texts() -> str:
    """The plausibility rubric, for the fingerprint recorded in run.json."""
    return json.dumps([JUDGE_SYSTEM, PLAUSIBILITY_RUBRIC])


def fidelity_episode(start: EpisodeStart, answers: dict[str, str], simulator: str, options: SimOptions) -> Episode:
    one = options.model_copy(update={"horizon": 1, "state": "none"})
    return Episode(start, agent=REAL_THERAPIST, simulator=simulator, options=one, replay=answers)


def fidelity_record(start: EpisodeStart, real: dict[str, Any], episode: dict[str, Any]) -> dict[str, Any]:
    """One line of ``results/fidelity.jsonl``."""
    step = episode["steps"][0]
    turn = step["client_turns"][0] if step["client_turns"] else None
    state = step["state"]
    speaker = real["speaker"]
    pred_state = state["emotions"].get(speaker)
    intensity_error = abs(pred_state["intensity"] - real["intensity"]) if pred_state and real["intensity"] is not None else None
    return {
        "id": f"{FIDELITY_TASK}/{start.sample_id}/{start.row}",
        "task": FIDELITY_TASK,
        "sample_id": start.sample_id,
        "scenario": start.scenario,
        "row": start.row,
        "gold": real,
        "valid": bool(step["simulator"].get("valid", True)),
        "error": step["simulator"].get("error"),
        "prediction": {"speaker": turn["speaker"] if turn else None, "text": turn["text"] if turn else None, "state": state},
        "simulator": episode["simulator"],
        "move": step["action"],
        "speaker_correct": bool(turn and turn["speaker"] == speaker),
        "alternation_correct": real["alternation"] == speaker,
        "intensity_error": intensity_error,
        "valence_correct": (pred_state["valence"] == real["valence"]) if pred_state and real["valence"] is not None else None,
        "pattern_correct": (state["pattern"] == real["pattern"]) if real["pattern"] is not None else None,
        "bertscore": None,
        "judge_plausibility": None,
        "judge_plausibility_real": None,
    }


FIDELITY_METRICS: tuple[tuple[str, str, str], ...] = (
    ("speaker_correct", "pct", "next speaker accuracy"),
    ("alternation_correct", "pct", "next speaker accuracy of the alternation floor"),
    ("bertscore", "bert", "turn BERTScore F1 vs the real turn"),
    ("judge_plausibility", "judge", "judge plausibility of the turn (1-5)"),
    ("judge_plausibility_real", "judge", "judge plausibility of the real turn (1-5, the ceiling)"),
    ("intensity_error", "error", "intensity absolute error (0-10)"),
    ("valence_correct", "pct", "valence agreement"),
    ("pattern_correct", "pct", "pattern accuracy"),
    ("invalid", "pct", "invalid simulator answers"),
)


def _value(record: dict[str, Any], key: str) -> float | None:
    if key == "invalid":
        return float(not record["valid"])
    value = record.get(key)
    return None if value is None else float(value)


def _reader(key: str) -> Callable[[dict[str, Any]], float]:
    def read(record: dict[str, Any]) -> float:
        value = _value(record, key)
        return math.nan if value is None else value

    return read


def summarize_fidelity(records: Sequence[dict[str, Any]], *, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """``{scenario: {metric: {"value", "ci_low", "ci_high", "n"}, "points", "clips"}}``."""
    out: dict[str, Any] = {}
    for scenario in SCENARIOS3:
        chosen = in_scenario(records, scenario)
        entry: dict[str, Any] = {"points": len(chosen), "clips": len({r["sample_id"] for r in chosen})}
        for key, _, _ in FIDELITY_METRICS:
            have = [r for r in chosen if _value(r, key) is not None]
            if not have:
                entry[key] = {"value": None, "ci_low": None, "ci_high": None, "n": 0}
                continue
            stat = mean_statistic(_reader(key), key)
            low, high = bootstrap_ci(have, stat, "sample_id", n_resamples=n_resamples, seed=seed)
            entry[key] = {"value": float(stat(have)), "ci_low": float(low), "ci_high": float(high), "n": len(have)}
        out[scenario] = entry
    return out


__all__ = [
    "FIDELITY_METRICS",
    "FIDELITY_TASK",
    "REAL_THERAPIST",
    "SIMULATOR",
    "fidelity_cases",
    "fidelity_episode",
    "fidelity_record",
    "plausibility_prompt",
    "plausibility_requests",
    "summarize_fidelity",
]
