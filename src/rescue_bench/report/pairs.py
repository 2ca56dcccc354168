"""People check the closed loop: blind pairwise ratings of episodes, and how far the simulator agrees.

The closed-loop arm of the rating study (``rescue agreement sample`` / ``score`` on ``rescue sim
eval`` folders, practice exports included):

* :func:`draw_pairs`: pairs of episodes **from the same start** played by two different agents (one
  simulator, one objective), stratified by scenario and agent pair, seeded; each pair holds what a
  rater reads (the real session up to the start, then each continuation: the agent's turns and the
  simulated clients' replies) and nothing that says who played it or how it scored. Pairs whose J
  is tied, or unscored, or whose continuations read the same, tell people's and the simulator's
  preferences nothing apart and are not drawn (counted). :func:`projected_half_width` is how wide
  the agreement interval will be for the pairs drawn and the raters planned.
* :func:`score_pairs`: the people's preferences (``rescue review export-ratings``) against the
  runs. The simulator's agreement with people is the share of rated pairs, ties apart, where the
  person preferred the episode with the higher J (J read from the records' metrics), with a
  percentile cluster-bootstrap interval over clips (within each scenario), beside chance, a
  preference for side A, a preference for the continuation in which the agent said more, and the
  ceiling the raters' own disagreement leaves (each pair's majority); the agents ranked by people
  (Bradley-Terry, :mod:`rescue_bench.metrics.pairwise`) beside their J (Kendall's tau, scipy);
  agreement among raters (Krippendorff's alpha, :func:`rescue_bench.metrics.reliability`); where a
  judge rated the agents' turns, the judge's agreement with people on the same pairs.

``rescue agreement score ... --out D`` writes ``D/agreement.json`` (:class:`PairAgreement`) and the
section's tables; ``rescue report RUN... D`` shows the section beside the runs it scored.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from rescue_bench.judge_ratings import PairLine, PairRatingRow, PairSide, PairTurn, read_pair_ratings, read_pair_sample
from rescue_bench.labels import POOLED, SUMMARY_SCENARIOS, THERAPIST
from rescue_bench.metrics.agreement import FEW_CLUSTERS
from rescue_bench.report import render as R
from rescue_bench.report import tables as T
from rescue_bench.report.runs import ReportInputError, Run, run_data_paths
from rescue_bench.sim.episode import SIM_TASK
from rescue_bench.sim.objective import MIN_CLIPS_FOR_INTERVAL, TIE

AGREEMENT_JSON = "agreement.json"
KIND: Literal["closed_loop_pairs"] = "closed_loop_pairs"
"""``kind`` of ``agreement.json`` written by ``rescue agreement score`` for closed-loop ratings."""


# ------------------------------------------------------------------------------------------------
# the runs and their episodes
# ------------------------------------------------------------------------------------------------


def run_key(run: Run) -> str:
    """How a sample and a ratings file name a run: its folder's name."""
    return run.path.resolve().name


def _played(record: dict[str, Any]) -> tuple[Any, ...]:
    """What an episode was played under: the simulator (and its model), the horizon, gamma, lambda."""
    model = record.get("simulator_model") or {}
    metrics = record.get("metrics") or {}
    return (record.get("simulator"), model.get("sha256"), record.get("horizon"), metrics.get("gamma"), metrics.get("lambda"))


def _played_text(key: tuple[Any, ...]) -> str:
    simulator, sha, horizon, gamma, lam = key
    return f"{simulator}{f' {sha[:12]}' if sha else ''}, horizon {horizon}, gamma {gamma}, lambda {lam}"


def closed_loop_runs(runs: Sequence[Run]) -> dict[str, Run]:
    """The runs by their folder's name, checked: closed-loop runs, one agent each and no agent twice,
    every episode played under one simulator and objective (else J is not comparable)."""
    named: dict[str, Run] = {}
    agents: dict[str, str] = {}
    first: tuple[Any, ...] | None = None
    first_path: Path | None = None
    for run in runs:
        records = run.records.get(SIM_TASK) or []
        if not records:
            raise ReportInputError(run.path, "not a closed-loop run (no results/sim.jsonl): pairs compare `rescue sim eval` runs")
        name = run_key(run)
        if name in named:
            raise ReportInputError(run.path, f"two runs in folders named {name!r}: a sample names runs by their folder's name, so rename one")
        if run.model in agents:
            raise ReportInputError(run.path, f"{agents[run.model]} and this run are both agent {run.model!r}: give one run per agent")
        keys = {_played(r) for r in records}
        if len(keys) > 1:
            raise ReportInputError(run.path / "results" / f"{SIM_TASK}.jsonl", "episodes played under different simulators or objectives")
        key = keys.pop()
        if first is None:
            first, first_path = key, run.path
        elif key != first:
            raise ReportInputError(
                run.path, f"played under {_played_text(key)}, not {_played_text(first)} like {first_path}: J compares agents under one simulator and objective"
            )
        named[name], agents[run.model] = run, str(run.path)
    return named


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _episodes(run: Run) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in run.records[SIM_TASK]}


def episode_J(record: dict[str, Any]) -> float | None:
    """The episode's J as its record's metrics hold it (``None``: not scored)."""
    metrics = record.get("metrics") or {}
    value = metrics.get("J")
    if value is None or metrics.get("scored") is False or not math.isfinite(value):
        return None
    return float(value)


def continuation(record: dict[str, Any]) -> list[PairTurn]:
    """What a rater reads of an episode after its start: at each step the therapist's turn (to whom,
    the words) or that they kept listening, then the simulated clients' replies. Never the declared
    strategy, the state, a score or the agent's name."""
    turns: list[PairTurn] = []
    for step in record["steps"]:
        action = step["action"]
        if action["intervened"] and action.get("turn") is not None:
            turns.append(PairTurn(speaker=THERAPIST, to=[action["whom"]] if action.get("whom") else [], text=action["turn"]))
        else:
            turns.append(PairTurn(speaker=THERAPIST, listening=True))
        turns += [PairTurn(speaker=t["speaker"], text=t["text"]) for t in step.get("client_turns") or []]
    return turns


def therapist_words(turns: Sequence[PairTurn]) -> int:
    """How many words the therapist says in a continuation."""
    return sum(len(t.text.split()) for t in turns if t.speaker == THERAPIST and not t.listening)


# ------------------------------------------------------------------------------------------------
# the sample
# ------------------------------------------------------------------------------------------------


class DrawCounts(BaseModel):
    """What the draw found: candidate pairs, and the pairs of episodes it left out and why."""

    candidates: int = 0
    drawn: int = 0
    starts: int = 0
    clips: int = 0
    tied_J: int = 0
    unscored: int = 0
    same_words: int = 0
    one_run: int = 0
    """Starts only one of the runs played."""
    by_scenario: dict[str, int] = Field(default_factory=dict)


class _Clips:
    """The clips the runs were played on, for the real session up to each start (``--data``, else
    the data each run recorded; read once per data set)."""

    def __init__(self, data: Sequence[str | Path] | None):
        self.data = [str(p) for p in data] if data else None
        self.loaded: dict[tuple[str, ...] | None, dict[str, Any]] = {}

    def of(self, run: Run) -> tuple[dict[str, Any], str]:
        from rescue_bench.data.load import load_clips

        paths = self.data
        if paths is None:
            recorded = run_data_paths(run)
            if recorded is not None:
                found = []
                for p in recorded:
                    candidates = [Path(p), run.path / p, run.path.parent / p]
                    hit = next((c for c in candidates if c.exists()), None)
                    if hit is None:
                        raise ReportInputError(run.path / "run.json", f"the data it was run on is not found ({p}): pass --data")
                    found.append(str(hit))
                paths = found
        key = None if paths is None else tuple(paths)
        if key not in self.loaded:
            self.loaded[key] = {c.sample_id: c for c in load_clips(paths)}
        return self.loaded[key], ", ".join(paths) if paths else "the bundled demo"


def context(record: dict[str, Any], run: Run, clips: _Clips) -> list[PairTurn]:
    """The real session up to the episode's start (dialogue: speaker, to whom, words)."""
    from rescue_bench.tasks.instance import project_row

    found, where = clips.of(run)
    clip = found.get(record["sample_id"])
    if clip is None:
        raise ReportInputError(run.path, f"episode {record['id']}: clip {record['sample_id']!r} is not in {where} (the data it was run on): pass --data")
    if len(clip.rows) != record["n_rows"]:
        raise ReportInputError(
            run.path, f"episode {record['id']}: clip {record['sample_id']!r} has {len(clip.rows)} rows in {where}, the run played {record['n_rows']}: pass --data"
        )
    shown = record["start"]["transcript_rows"]
    views = [project_row(r, i + 1, "dialogue") for i, r in enumerate(clip.rows[:shown])]
    return [PairTurn(speaker=v.speaker, to=list(v.target), text=v.text) for v in views]


@dataclass(frozen=True)
class _Candidate:
    episode: str
    scenario: str
    first: str
    second: str


def draw_pairs(
    runs: Sequence[Run], *, n: int, seed: int = 0, data: Sequence[str | Path] | None = None
) -> tuple[list[PairLine], DrawCounts]:
    """Up to ``n`` pairs of episodes from the same start played by two of ``runs`` (agents),
    stratified by scenario and agent pair (proportionally, at least one per stratum when ``n``
    allows), drawn and ordered by ``seed``; each pair's sides are put in A/B order at random. A pair
    whose J is tied or unscored, or whose continuations read the same, is not drawn (counted)."""
    from rescue_bench.report.agreement import _allocate

    named = closed_loop_runs(runs)
    if len(named) < 2:
        raise ReportInputError(next(iter(named.values())).path if named else Path("."), "pairs need two or more closed-loop runs (agents)")
    episodes = {name: _episodes(run) for name, run in named.items()}
    names = list(named)
    counts = DrawCounts()
    strata: dict[tuple[str, str, str], list[_Candidate]] = {}
    starts: set[str] = set()
    for episode in sorted({e for per in episodes.values() for e in per}):
        holders = [name for name in names if episode in episodes[name]]
        if len(holders) < 2:
            counts.one_run += 1
            continue
        starts.add(episode)
        for i, first in enumerate(holders):
            for second in holders[i + 1 :]:
                a, b = episodes[first][episode], episodes[second][episode]
                if (a["start"], a["n_rows"], a["sample_id"]) != (b["start"], b["n_rows"], b["sample_id"]):
                    raise ReportInputError(named[second].path, f"episode {episode} starts elsewhere than in {named[first].path}: were the runs made on the same data?")
                ja, jb = episode_J(a), episode_J(b)
                if ja is None or jb is None:
                    counts.unscored += 1
                elif abs(ja - jb) <= TIE:
                    counts.tied_J += 1
                elif continuation(a) == continuation(b):
                    counts.same_words += 1
                else:
                    strata.setdefault((a["scenario"], first, second), []).append(_Candidate(episode, a["scenario"], first, second))
    counts.starts = len(starts)
    counts.candidates = sum(len(v) for v in strata.values())
    rng = np.random.default_rng(seed)
    keys = sorted(strata)
    allocation = _allocate(n, {k: len(strata[k]) for k in keys}, at_least_one=True)
    chosen: list[_Candidate] = []
    for key in keys:
        k = allocation.get(key, 0)
        if k:
            picks = rng.choice(len(strata[key]), size=k, replace=False)
            chosen.extend(strata[key][i] for i in sorted(picks.tolist()))
    clips = _Clips(data)
    pairs: list[PairLine] = []
    for number, i in enumerate(rng.permutation(len(chosen)).tolist(), start=1):
        c = chosen[i]
        sides = [c.first, c.second]
        if rng.random() < 0.5:
            sides.reverse()
        records = [episodes[s][c.episode] for s in sides]
        shown = records[0]
        pairs.append(
            PairLine(
                pair_id=f"pair-{number:04d}",
                a=PairSide(run=sides[0], episode=c.episode, turns=continuation(records[0])),
                b=PairSide(run=sides[1], episode=c.episode, turns=continuation(records[1])),
                scenario=shown["scenario"],
                sample_id=shown["sample_id"],
                start_row=shown["row"],
                context=context(shown, named[sides[0]], clips),
            )
        )
    counts.drawn = len(pairs)
    counts.clips = len({p.sample_id for p in pairs})
    counts.by_scenario = dict(Counter(p.scenario for p in pairs))
    return pairs, counts


class Projection(BaseModel):
    """How wide the agreement interval will be (half its width, as a share), at 50% agreement (the
    widest for a share) and with no rated pair tied: with every rater judging on their own, with
    raters who always agree with each other, and if every pair of one clip were judged alike."""

    pairs: int
    raters: int
    clips: int
    confidence: float
    independent: float | None
    agreeing: float | None
    by_clip: float | None


def projected_half_width(pairs: int, raters: int, clips: int, confidence: float = 0.95) -> Projection:
    """:class:`Projection` of a share's interval: ``z * sqrt(0.25 / units)`` with the units pairs x
    raters, pairs, or clips (the normal approximation the percentile bootstrap follows at these
    sizes); ``None`` where there are too few clips for any interval."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)

    def half(units: int) -> float | None:
        return z * math.sqrt(0.25 / units) if units and clips >= MIN_CLIPS_FOR_INTERVAL else None

    return Projection(
        pairs=pairs, raters=raters, clips=clips, confidence=confidence,
        independent=half(pairs * raters), agreeing=half(pairs), by_clip=half(clips),
    )


# ------------------------------------------------------------------------------------------------
# the score
# ------------------------------------------------------------------------------------------------


class Share(BaseModel):
    """A share over ratings with its cluster-bootstrap interval over clips (``None``: not computed)."""

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ratings: int = 0
    pairs: int = 0
    clips: int = 0
    interval: str = ""


class ScoredRun(BaseModel):
    """A run the ratings were scored against."""

    run: str
    agent: str
    path: str
    episodes: int
    scored_episodes: int
    mean_J: float | None
    results_sha256: str
    """SHA-256 of the run's ``results/sim.jsonl`` when it was scored (the report warns when it changed)."""


class AgentRank(BaseModel):
    """One agent: its Bradley-Terry strength from people's preferences, beside its J."""

    run: str
    agent: str
    strength: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    rank_people: int | None = None
    wins: float = 0.0
    losses: float = 0.0
    ties: int = 0
    support_mean: float | None = None
    support_n: int = 0
    mean_J: float | None = None
    rank_J: int | None = None


class RankCorrelation(BaseModel):
    """Kendall's tau-b between people's strengths and the agents' mean J."""

    agents: int
    tau: float | None = None
    p_value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    note: str = ""


class RaterRow(BaseModel):
    rater: str
    ratings: int
    ties: int
    with_J: Share


class Floors(BaseModel):
    """What the simulator's agreement stands beside, on the same ratings: chance, the constant
    preference for side A, a preference for the continuation in which the agent said more words
    (0.5 where both say as many), and the ceiling left by the raters' own disagreement (each pair's
    majority: the best any preference scores on these ratings)."""

    chance: float = 0.5
    side_a: float | None = None
    more_words: float | None = None
    ceiling: float | None = None


class PairAgreement(BaseModel):
    """Everything ``rescue agreement score`` reports of closed-loop ratings (``agreement.json``)."""

    kind: Literal["closed_loop_pairs"] = KIND
    ratings_file: str
    sample_file: str | None = None
    resamples: int
    seed: int
    confidence: float
    simulator: str
    runs: list[ScoredRun]
    pairs: int
    raters: list[str]
    ratings: int
    unrated: int
    excluded: dict[str, int]
    """Ratings left out of the agreement: ``people_tie`` (the rater saw no difference),
    ``tied_J`` (the simulator sees none), ``unscored`` (an episode without J)."""
    agreement: dict[str, Share]
    """The simulator's agreement with people per scenario (``couple``, ``family``, ``both``)."""
    floors: Floors
    judge: Share | None = None
    judge_excluded: dict[str, int] = Field(default_factory=dict)
    ranking: list[AgentRank]
    tau: RankCorrelation
    alpha: dict[str, Any]
    """Krippendorff's alpha among raters (nominal: A, B, tie), :class:`rescue_bench.metrics.agreement.ReliabilityJson`."""
    per_rater: list[RaterRow]
    warnings: list[str] = Field(default_factory=list)
    created: str = ""


@dataclass(frozen=True)
class _Rated:
    """One rating with the pair's two episodes."""

    pair: str
    rater: str
    preferred: str
    clip: str
    scenario: str
    runs: tuple[str, str]
    records: tuple[dict[str, Any], dict[str, Any]]
    support: tuple[int | None, int | None]


def _interval_note(clips: int, confidence: float) -> str:
    from rescue_bench.metrics import level_text, measured_coverage

    if clips < MIN_CLIPS_FOR_INTERVAL:
        return f"no interval: {clips} clip{'s' if clips != 1 else ''} (an interval needs {MIN_CLIPS_FOR_INTERVAL})"
    share = measured_coverage(clips, confidence)
    return f"{level_text(confidence)} CI covers ~{round(100 * share)}% at {clips} clips" if share is not None else "coverage not measured"


def _share(items: Sequence[dict[str, Any]], *, n_resamples: int, confidence: float, seed: int, pooled: bool) -> Share:
    """The mean of ``value`` over ``items`` (each with ``clip``, ``scenario``, ``pair``), with its
    percentile cluster-bootstrap interval over clips (``pooled``: within each scenario)."""
    from rescue_bench.metrics import bootstrap_ci, mean_statistic

    clips = len({i["clip"] for i in items})
    out = Share(ratings=len(items), pairs=len({i["pair"] for i in items}), clips=clips, interval=_interval_note(clips, confidence))
    if not items:
        return out
    out.value = float(np.mean([i["value"] for i in items]))
    if clips >= MIN_CLIPS_FOR_INTERVAL and n_resamples > 0:
        low, high = bootstrap_ci(
            items, mean_statistic(lambda i: i["value"]), "clip", n_resamples=n_resamples, confidence=confidence, seed=seed,
            strata="scenario" if pooled else None,
        )
        if not (math.isnan(low) or math.isnan(high)):
            out.ci_low, out.ci_high = float(low), float(high)
    return out


def _by_scenario(items: Sequence[dict[str, Any]], **kwargs: Any) -> dict[str, Share]:
    return {
        s: _share([i for i in items if s == POOLED or i["scenario"] == s], pooled=s == POOLED, **kwargs) for s in SUMMARY_SCENARIOS
    }


def _references(rows: Sequence[PairRatingRow], sample: Path | None, path: Path) -> dict[str, tuple[str, str, str, str]]:
    """Each pair's runs and episodes ``(a_run, a_episode, b_run, b_episode)``, from the ratings file
    or the sample (which must agree)."""
    from_sample = {p.pair_id: (p.a.run, p.a.episode, p.b.run, p.b.episode) for p in read_pair_sample(sample, for_raters=False)} if sample else {}
    out: dict[str, tuple[str, str, str, str]] = {}
    for row in rows:
        given = (row["a_run"], row["a_episode"], row["b_run"], row["b_episode"])
        known = from_sample.get(row["pair_id"])
        if all(given):
            if known is not None and known != given:
                raise ReportInputError(path, f"pair {row['pair_id']!r} names other runs or episodes than the sample {sample} does", row["line"])
            ref = given
        elif known is not None:
            ref = known
        elif sample is not None:
            raise ReportInputError(path, f"pair {row['pair_id']!r} is not in the sample {sample}", row["line"])
        else:
            raise ReportInputError(path, f"pair {row['pair_id']!r} names no runs and episodes (a_run, a_episode, b_run, b_episode): pass the sample with --sample", row["line"])
        if out.setdefault(row["pair_id"], ref) != ref:
            raise ReportInputError(path, f"pair {row['pair_id']!r} names other runs or episodes than on line {next(r['line'] for r in rows if r['pair_id'] == row['pair_id'])}", row["line"])
    return out


def _mean_J(run: Run) -> tuple[float | None, int]:
    values = [j for r in run.records[SIM_TASK] if (j := episode_J(r)) is not None]
    return (float(np.mean(values)) if values else None), len(values)


def _judge_mean(record: dict[str, Any]) -> float | None:
    metrics = record.get("metrics") or {}
    n = metrics.get("judge_n") or 0
    return metrics["judge_sum"] / n if n else None


def _ranks(values: dict[str, float | None]) -> dict[str, int]:
    """1 for the highest; ties share the better rank."""
    present = sorted((v for v in values.values() if v is not None), reverse=True)
    return {k: present.index(v) + 1 for k, v in values.items() if v is not None}


def score_pairs(
    ratings: str | Path,
    runs: Sequence[Run],
    *,
    sample: str | Path | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairAgreement:
    """The people's pairwise preferences (``ratings``) against the runs' episodes (see the module doc)."""
    from datetime import datetime, timezone

    from scipy.stats import kendalltau

    from rescue_bench.metrics import Comparison, Unit, bradley_terry, bradley_terry_resamples, reliability
    path = Path(ratings)
    rows, unrated = read_pair_ratings(path)
    if not rows:
        raise ReportInputError(path, "no rated pairs (every preferred cell is empty)")
    named = closed_loop_runs(runs)
    episodes = {name: _episodes(run) for name, run in named.items()}
    refs = _references(rows, Path(sample) if sample else None, path)
    rated: list[_Rated] = []
    for row in rows:
        a_run, a_episode, b_run, b_episode = refs[row["pair_id"]]
        pair_records = []
        for side, episode in ((a_run, a_episode), (b_run, b_episode)):
            if side not in named:
                raise ReportInputError(path, f"pair {row['pair_id']!r}: run {side!r} is not among the runs given ({', '.join(named)})", row["line"])
            if episode not in episodes[side]:
                raise ReportInputError(path, f"pair {row['pair_id']!r}: episode {episode!r} is not in run {side!r} ({named[side].path})", row["line"])
            pair_records.append(episodes[side][episode])
        if a_run == b_run or a_episode != b_episode:
            raise ReportInputError(path, f"pair {row['pair_id']!r} must compare two runs on one start", row["line"])
        first = pair_records[0]
        rated.append(
            _Rated(row["pair_id"], row["rater"], row["preferred"], first["sample_id"], first["scenario"], (a_run, b_run),
                   (pair_records[0], pair_records[1]), (row["support_a"], row["support_b"]))
        )
    kwargs: dict[str, Any] = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    excluded = {"people_tie": 0, "tied_J": 0, "unscored": 0}
    counted: list[tuple[_Rated, str]] = []  # with the side of the higher J
    for r in rated:
        ja, jb = episode_J(r.records[0]), episode_J(r.records[1])
        if ja is None or jb is None:
            excluded["unscored"] += 1
        elif abs(ja - jb) <= TIE:
            excluded["tied_J"] += 1
        elif r.preferred == "tie":
            excluded["people_tie"] += 1
        else:
            counted.append((r, "A" if ja > jb else "B"))

    def item(r: _Rated, value: float) -> dict[str, Any]:
        return {"clip": r.clip, "scenario": r.scenario, "pair": r.pair, "value": value}

    agreement = _by_scenario([item(r, float(r.preferred == higher)) for r, higher in counted], **kwargs)
    floors = Floors()
    if counted:
        floors.side_a = float(np.mean([r.preferred == "A" for r, _ in counted]))
        words = []
        for r, _ in counted:
            wa, wb = (therapist_words(continuation(rec)) for rec in r.records)
            words.append(0.5 if wa == wb else float((wa > wb) == (r.preferred == "A")))
        floors.more_words = float(np.mean(words))
        votes: dict[str, Counter[str]] = {}
        for r, _ in counted:
            votes.setdefault(r.pair, Counter())[r.preferred] += 1
        floors.ceiling = sum(max(v.values()) for v in votes.values()) / len(counted)
    # the judge: the episode whose turns it rated higher on average
    judge_items, judge_excluded = [], {"no_judged_turn": 0, "judge_tie": 0}
    judged_any = any(_judge_mean(rec) is not None for r in rated for rec in r.records)
    if judged_any:
        for r in rated:
            if r.preferred == "tie":
                continue
            ma, mb = (_judge_mean(rec) for rec in r.records)
            if ma is None or mb is None:
                judge_excluded["no_judged_turn"] += 1
            elif abs(ma - mb) <= TIE:
                judge_excluded["judge_tie"] += 1
            else:
                judge_items.append(item(r, float(r.preferred == ("A" if ma > mb else "B"))))
    judge = _share(judge_items, pooled=True, **kwargs) if judged_any else None
    # people's ranking of the agents (every rating: the simulator's ties and unscored episodes too)
    comparisons = [
        Comparison(r.runs[0], r.runs[1], {"A": 1.0, "B": 0.0, "tie": 0.5}[r.preferred], r.clip, r.scenario) for r in rated
    ]
    strengths = bradley_terry(comparisons)
    items, resampled = bradley_terry_resamples(comparisons, n_resamples=n_resamples, seed=seed)
    mean_j = {name: _mean_J(named[name]) for name in named}
    compared = [name for name in items if name in strengths]
    alpha_ = 1 - confidence
    ranking: list[AgentRank] = []
    people_rank = _ranks({k: strengths.get(k) for k in named})
    j_rank = _ranks({k: mean_j[k][0] for k in named})
    for name, run in named.items():
        wins = sum(c.outcome for c in comparisons if c.first == name) + sum(1 - c.outcome for c in comparisons if c.second == name)
        played = sum(1 for c in comparisons if name in (c.first, c.second))
        ties = sum(1 for c in comparisons if name in (c.first, c.second) and c.outcome == 0.5)
        supports = [s for r in rated for side, s in zip(r.runs, r.support) if side == name and s is not None]
        entry = AgentRank(
            run=name, agent=run.model, strength=strengths.get(name), rank_people=people_rank.get(name),
            wins=wins - ties / 2, losses=played - wins - ties / 2, ties=ties,
            support_mean=float(np.mean(supports)) if supports else None, support_n=len(supports),
            mean_J=mean_j[name][0], rank_J=j_rank.get(name),
        )
        if name in items and len(resampled):
            column = resampled[:, items.index(name)]
            column = column[~np.isnan(column)]
            if column.size and len({r.clip for r in rated}) >= MIN_CLIPS_FOR_INTERVAL:
                entry.ci_low, entry.ci_high = (float(v) for v in np.percentile(column, [100 * alpha_ / 2, 100 * (1 - alpha_ / 2)]))
        ranking.append(entry)
    ranking.sort(key=lambda e: (e.rank_people is None, e.rank_people or 0, e.run))
    # Kendall's tau between people's strengths and mean J
    both = [name for name in compared if mean_j[name][0] is not None]
    tau = RankCorrelation(agents=len(both))
    if len(both) >= 2:
        people = [strengths[n] for n in both]
        js = [mean_j[n][0] for n in both]
        found = kendalltau(people, js)
        tau.tau = None if math.isnan(found.statistic) else float(found.statistic)
        tau.p_value = None if math.isnan(found.pvalue) else float(found.pvalue)
        columns = [items.index(n) for n in both]
        draws = [kendalltau(row, js).statistic for row in resampled[:, columns] if not np.isnan(row).any()]
        draws = [d for d in draws if not math.isnan(d)]
        if draws and len({r.clip for r in rated}) >= MIN_CLIPS_FOR_INTERVAL:
            tau.ci_low, tau.ci_high = (float(v) for v in np.percentile(draws, [100 * alpha_ / 2, 100 * (1 - alpha_ / 2)]))
        if len(both) < 4:
            tau.note = f"{len(both)} agents: tau takes few values (with 2, only -1 or 1) and cannot be significant below 4 agents"
    else:
        tau.note = "fewer than two agents with both a people's strength and a J"
    # agreement among raters: each pair is a unit, its raters' answers the values (A, B, tie)
    units: dict[str, dict[str, str]] = {}
    clip_of: dict[str, str] = {}
    for r in rated:
        units.setdefault(r.pair, {})[r.rater] = r.preferred
        clip_of[r.pair] = r.clip
    alpha = reliability([Unit(clip_of[p], v, p) for p, v in units.items()], "nominal", **kwargs).to_json()
    per_rater = []
    for rater in sorted({r.rater for r in rated}):
        mine = [r for r in rated if r.rater == rater]
        per_rater.append(
            RaterRow(
                rater=rater, ratings=len(mine), ties=sum(r.preferred == "tie" for r in mine),
                with_J=_share([item(r, float(r.preferred == higher)) for r, higher in counted if r.rater == rater], pooled=True, **kwargs),
            )
        )
    warnings = []
    pooled = agreement[POOLED]
    if pooled.ci_low is None:
        warnings.append(f"the simulator's agreement with people has no interval: {pooled.interval}")
    if len({r.rater for r in rated}) < 2:
        warnings.append("one rater: no agreement among raters, and the ceiling is 100% by construction")
    simulator = _played_text(_played(next(iter(named.values())).records[SIM_TASK][0]))
    return PairAgreement(
        ratings_file=str(path),
        sample_file=str(sample) if sample else None,
        resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        simulator=simulator,
        runs=[
            ScoredRun(run=name, agent=run.model, path=str(run.path.resolve()), episodes=len(run.records[SIM_TASK]),
                      scored_episodes=mean_j[name][1], mean_J=mean_j[name][0],
                      results_sha256=_sha256(run.path / "results" / f"{SIM_TASK}.jsonl"))
            for name, run in named.items()
        ],
        pairs=len({r.pair for r in rated}),
        raters=sorted({r.rater for r in rated}),
        ratings=len(rated),
        unrated=unrated,
        excluded=excluded,
        agreement=agreement,
        floors=floors,
        judge=judge,
        judge_excluded=judge_excluded if judged_any else {},
        ranking=ranking,
        tau=tau,
        alpha=dict(alpha),
        per_rater=per_rater,
        warnings=warnings,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


# ------------------------------------------------------------------------------------------------
# tables, the section, the folder
# ------------------------------------------------------------------------------------------------


def _pct(share: Share | None) -> str:
    if share is None or share.value is None:
        return T.MISSING
    text = f"{100 * share.value:.1f}"
    if share.ci_low is not None and share.ci_high is not None:
        text += f" [{100 * share.ci_low:.1f}, {100 * share.ci_high:.1f}]"
    return text


def _plain_pct(value: float | None) -> str:
    return T.MISSING if value is None else f"{100 * value:.1f}"


def _num(value: float | None, fmt: str = "{:+.2f}") -> str:
    return T.MISSING if value is None else fmt.format(value)


def agreement_tables(result: PairAgreement, names: dict[str, str] | None = None) -> list[T.Table]:
    """The section's tables; ``names``: the report's display name of each scored run (by folder name)."""
    names = names or {}
    level = f"{100 * result.confidence:.0f}%"
    rows = [[f"simulator (higher J), {s}", _pct(sh), str(sh.ratings), str(sh.pairs), str(sh.clips), sh.interval]
            for s, sh in result.agreement.items()]
    f = result.floors
    rows += [
        ["chance", _plain_pct(f.chance), "", "", "", ""],
        ["always side A", _plain_pct(f.side_a), "", "", "", "the sample puts each pair's sides in A/B order at random"],
        ["the agent who said more", _plain_pct(f.more_words), "", "", "", "0.5 where both said as many words"],
        ["ceiling: each pair's majority", _plain_pct(f.ceiling), "", "", "", "the best any preference scores on these ratings"],
    ]
    if result.judge is not None:
        rows.append(["judge (higher mean turn rating)", _pct(result.judge), str(result.judge.ratings), str(result.judge.pairs),
                     str(result.judge.clips), result.judge.interval])
    ex = result.excluded
    headline = T.Table(
        name="agreement_people",
        title=f"People and the closed loop: share of rated pairs where people preferred the episode the simulator scores higher ({result.simulator})",
        header=[("", h) for h in ("preference", f"agrees with people, % [{level} CI]", "ratings", "pairs", "clips", "interval")],
        rows=rows,
        notes=[
            f"{result.ratings} ratings of {result.pairs} pairs by {len(result.raters)} rater(s); left out of the share: {ex['people_tie']} "
            f"the rater called a tie, {ex['tied_J']} with J tied, {ex['unscored']} with an unscored episode; {result.unrated} not rated yet.",
            f"Intervals: percentile cluster bootstrap over clips ({result.resamples} resamples; both scenarios: within each scenario); "
            f"none from fewer than {MIN_CLIPS_FOR_INTERVAL} clips.",
        ] + ([f"Judge: left out {result.judge_excluded.get('no_judged_turn', 0)} ratings with an episode without a judged turn and "
              f"{result.judge_excluded.get('judge_tie', 0)} with equal mean ratings."] if result.judge is not None else []),
    )
    rank_rows = []
    for e in result.ranking:
        strength = _num(e.strength)
        if e.ci_low is not None and e.ci_high is not None:
            strength += f" [{e.ci_low:+.2f}, {e.ci_high:+.2f}]"
        support = T.MISSING if e.support_mean is None else f"{e.support_mean:.2f} (n={e.support_n})"
        rank_rows.append([str(e.rank_people or T.MISSING), names.get(e.run, e.run), e.agent, strength, f"{e.wins:g} / {e.losses:g} / {e.ties}",
                          support, _num(e.mean_J, "{:.3f}"), str(e.rank_J or T.MISSING)])
    t = result.tau
    tau_text = f"Kendall's tau-b between people's strengths and mean J: {_num(t.tau)}"
    if t.ci_low is not None and t.ci_high is not None:
        tau_text += f" [{t.ci_low:+.2f}, {t.ci_high:+.2f}]"
    tau_text += f", p = {_num(t.p_value, '{:.3f}')} over {t.agents} agents" + (f" ({t.note})" if t.note else "")
    ranking = T.Table(
        name="agreement_ranking",
        title="Agents ranked by people (Bradley-Terry) beside their J",
        header=[("", h) for h in ("people's rank", "run", "agent", f"strength (log-odds) [{level} CI]", "wins / losses / ties",
                                  "supports the group, 1-5", "mean J (run)", "J rank")],
        rows=rank_rows,
        notes=[tau_text, "Strength: Bradley-Terry on every rating (a tie is half a win each way), a standard normal prior on each "
               "strength, centred; intervals refit on the same cluster-bootstrap resamples. Mean J over the run's scored episodes "
               "(on the same episodes, its order is the order of the run's normalised headline)."],
    )
    a = result.alpha
    alpha_text = _num(a.get("alpha"), "{:.3f}")
    if a.get("alpha_ci"):
        alpha_text += f" [{a['alpha_ci'][0]:.3f}, {a['alpha_ci'][1]:.3f}]"
    rater_rows = [["all raters", alpha_text, str(a.get("units", 0)), str(result.ratings), str(sum(r.ties for r in result.per_rater)), T.MISSING]]
    rater_rows += [[r.rater, T.MISSING, str(r.with_J.pairs), str(r.ratings), str(r.ties), _pct(r.with_J)] for r in result.per_rater]
    clips = a.get("segments", 0)
    rough = f" Only {clips} clips: the interval is rough." if 0 < clips < FEW_CLUSTERS else ""
    raters = T.Table(
        name="agreement_raters",
        title="Agreement among raters, and each rater with the simulator",
        header=[("", h) for h in ("rater", f"Krippendorff's alpha [{level} CI]", "pairs", "ratings", "ties", f"agrees with J, % [{level} CI]")],
        rows=rater_rows,
        notes=[f"Alpha (nominal: A, B, tie) over the {a.get('units', 0)} pairs rated by two or more raters, with its interval over "
               f"clips.{rough} Each rater's agreement with J leaves out their ties and pairs with J tied, like the share above."],
    )
    return [headline, ranking, raters]


def section_html(result: PairAgreement, names: dict[str, str] | None = None, warnings: Sequence[str] = ()) -> str:
    """The report section of one scored rating set."""
    import html

    e = html.escape
    scored = ", ".join(f"{names.get(r.run, r.run) if names else r.run} ({r.agent})" for r in result.runs)
    parts = [f"<p>Ratings <code>{e(result.ratings_file)}</code> scored against {e(scored)}.</p>"]
    parts += [f'<p class="warn">{e(w)}</p>' for w in [*result.warnings, *warnings]]
    parts += [R.to_html(t, heading="h4") for t in agreement_tables(result, names)]
    return "\n".join(parts)


def write_agreement(result: PairAgreement, out: str | Path) -> list[Path]:
    """``out/agreement.json`` and the section's tables (``out/tables/agreement_*``: Markdown, CSV,
    LaTeX) and ``out/agreement.html``."""
    from rescue_bench.fileio import atomic_write, atomic_write_json

    folder = Path(out)
    (folder / "tables").mkdir(parents=True, exist_ok=True)
    atomic_write_json(folder / AGREEMENT_JSON, result.model_dump(mode="json"))
    files = [folder / AGREEMENT_JSON]
    for table in agreement_tables(result):
        files += R.write_table(table, folder / "tables")
    page = R.html_document("People and the closed loop", [("agreement", "Agreement with people", section_html(result))])
    atomic_write(folder / "agreement.html", page)
    files.append(folder / "agreement.html")
    return files


def is_agreement_folder(path: str | Path) -> bool:
    return (Path(path) / AGREEMENT_JSON).is_file() and not (Path(path) / "summary.json").exists()


def load_agreement(path: str | Path) -> PairAgreement:
    """An ``agreement.json`` written by ``rescue agreement score`` (a folder or the file)."""
    from pydantic import ValidationError

    from rescue_bench.fileio import loads

    file = Path(path)
    if file.is_dir():
        file = file / AGREEMENT_JSON
    try:
        value = loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportInputError(file, f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReportInputError(file, f"malformed JSON: {exc}") from None
    if not isinstance(value, dict) or value.get("kind") != KIND:
        raise ReportInputError(file, f"not the agreement of closed-loop ratings (kind {KIND!r}) that `rescue agreement score --out` writes")
    try:
        return PairAgreement.model_validate(value)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        raise ReportInputError(file, f"field {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


class AgreementEntry(BaseModel):
    """A scored rating set as ``rescue report`` shows it: the folder it was read from, the result,
    the report's name of each run it scored, and what does not fit the report's runs."""

    folder: str
    result: PairAgreement
    names: dict[str, str]
    warnings: list[str]


def report_entry(folder: str | Path, runs: Sequence[Run]) -> AgreementEntry:
    """The agreement in ``folder`` beside the report's ``runs`` (:func:`beside_runs`)."""
    result = load_agreement(folder)
    names, warnings = beside_runs(result, runs)
    return AgreementEntry(folder=str(folder), result=result, names=names, warnings=warnings)


def report_tables(entries: Sequence[AgreementEntry]) -> list[T.Table]:
    """Every entry's tables, named apart when there are several."""
    out = []
    for k, entry in enumerate(entries, start=1):
        for table in agreement_tables(entry.result, entry.names):
            if len(entries) > 1:
                table.name = f"{table.name}_{k}"
            out.append(table)
    return out


def beside_runs(result: PairAgreement, runs: Sequence[Run]) -> tuple[dict[str, str], list[str]]:
    """The report's name of each run the ratings were scored against (by its folder), and warnings:
    a scored run not in the report, or whose episodes changed since."""
    by_path = {str(r.path.resolve()): r for r in runs if r.records.get(SIM_TASK)}
    names: dict[str, str] = {}
    warnings = []
    for scored in result.runs:
        run = by_path.get(scored.path)
        if run is None:
            warnings.append(f"ratings {result.ratings_file} were scored against {scored.path}, which is not among this report's runs")
            continue
        names[scored.run] = run.name
        if _sha256(run.path / "results" / f"{SIM_TASK}.jsonl") != scored.results_sha256:
            warnings.append(f"{run.name}: its episodes changed since the ratings were scored ({scored.path}); score them again")
    return names, warnings
