"""The baseline chain: the offline baselines composed into the agent's chain, so every number has a floor.

Each step is answered by the baseline method (``majority``, ``random``, ``prior``, ``supervised``,
:mod:`rescue_bench.baselines`) trained on the *task* that asks the same question, with the same
clip-grouped folds and never with a gold of the point's own clip:

=========  ==========================================================================================
step       answered by
=========  ==========================================================================================
state      RPP (the pattern), ER (each client's emotion), VP (each client's stances), each asked
           about the decision point as that task would be
when       ITP on the point's own ITP instance (the decision points *are* ITP's boundaries)
whom_how   STP for the target, then SSP told the baseline's own target
turn       a therapist turn of the other clips (below)
how_gold   SSP told the gold target (SSP's own instance)
=========  ==========================================================================================

A step asked about a point where its task has no gold instance (STP at a point whose next row is a
client's, an ER question about a client who did not speak) is a *query*: an instance built with the
tasks' own :func:`~rescue_bench.tasks.instance.make_instance`, answered by the method trained on the
task's gold instances of the other clips (:func:`answer_queries`); queries never train anything.

The turn: ``majority`` says the most frequent therapist turn of the other clips, ``random`` a
uniformly drawn one, ``prior`` one drawn by frequency, ``supervised`` the real turn of the most
similar decision point (TF-IDF cosine over the shown transcript) in the other clips. With nothing to
learn from, :data:`FALLBACK_TURN`.

The answers are raw JSON text in the chain's formats, fed to the same chain machine and scorer as a
model's, so a baseline run is written and reported exactly like a model run.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np

from rescue_bench.agent.options import AgentOptions
from rescue_bench.agent.points import DecisionPoint
from rescue_bench.baselines import BASELINES, predict_answers
from rescue_bench.baselines.api import LEAVE_ONE_CLIP_OUT
from rescue_bench.baselines.common import Guess, Method, answer_text, clip_splits, pool_for, ranked, rng_for, sort_key
from rescue_bench.baselines.counting import counting_method, draw
from rescue_bench.baselines.supervised import supervised_method
from rescue_bench.data.models import Clip
from rescue_bench.labels import ITP_LABELS, TASKS
from rescue_bench.parse import parse_er, parse_itp, parse_ranking, parse_vp
from rescue_bench.prompts.render import render, render_rows
from rescue_bench.tasks import BuildOptions, Instance, build_instances
from rescue_bench.tasks.instance import make_instance, project_row

FALLBACK_TURN = "Can you say a little more about what is happening for you right now?"
"""The baseline turn when no other clip has a therapist turn to learn from."""
FOLDS = 5


def build_options(options: AgentOptions) -> BuildOptions:
    """The tasks' build options that show what the chain shows (cue mode, context window)."""
    return BuildOptions.for_run(options.mode, options.context)


def answer_queries(
    train: Sequence[Instance], queries: Sequence[Instance], method: str, *, seed: int = 0, folds: int = FOLDS
) -> dict[str, str]:
    """Raw answers of baseline ``method`` to ``queries``, learnt from the gold ``train`` instances.

    The folds are :func:`rescue_bench.baselines.predict_answers`' (leave-one-clip-out for
    ``majority``/``random``, else ``GroupKFold`` over clips); a query is answered in the fold that
    holds its clip out, from the same scenario's training instances when there are any. A query
    whose clip has no training instance learns from every training instance (none is its own).
    """
    if method not in BASELINES:
        raise ValueError(f"unknown baseline {method!r}; expected one of {', '.join(BASELINES)}")
    if not queries:
        return {}
    items = sorted(train, key=sort_key)
    if method == "supervised":
        fn = supervised_method({i.id: render(i).user for i in [*items, *queries]})
    else:
        fn = counting_method(method, False)
    guesses: dict[str, Guess] = {}
    held: set[str] = set()
    splits = clip_splits(items, None if method in LEAVE_ONE_CLIP_OUT else folds) if items else []
    for pool, test in splits:
        clips = {i.sample_id for i in test}
        held |= clips
        guesses.update(_by_scenario(fn, pool, [q for q in queries if q.sample_id in clips], seed))
    guesses.update(_by_scenario(fn, items, [q for q in queries if q.sample_id not in held], seed))
    return {q.id: answer_text(q, guesses[q.id]) for q in queries}


def _by_scenario(fn: Method, pool: Sequence[Instance], tests: Sequence[Instance], seed: int) -> dict[str, Guess]:
    out: dict[str, Guess] = {}
    for scenario in sorted({t.scenario for t in tests}):
        out.update(fn(pool_for(list(pool), scenario), [t for t in tests if t.scenario == scenario], seed))
    return out


def _query(clip: Clip, task: str, position: int, bopts: BuildOptions, key: str, **fields: Any) -> Instance:
    """A gold-free instance of ``task`` about 0-based row ``position``, with a query id."""
    inst = make_instance(clip, task, position, None, bopts.window(task), bopts.mode, **fields)  # type: ignore[arg-type]
    return inst.model_copy(update={"id": f"query-{task}-{key}"})


def _top1(raw: str, candidates: Sequence[str]) -> str | None:
    parsed = parse_ranking(raw, list(candidates), k=1)
    return parsed.prediction[0] if parsed.valid else None


def baseline_turns(
    points: Sequence[DecisionPoint], queries: Sequence[DecisionPoint], method: str, *, seed: int = 0, folds: int = FOLDS
) -> dict[str, str]:
    """The baseline turn of each query point, learnt from the real turns of ``points`` in other clips."""
    train = sorted((p for p in points if p.gold.turn), key=lambda p: (p.sample_id, p.row, p.id))
    out: dict[str, str] = {}
    held: set[str] = set()
    splits = clip_splits(train, None if method in LEAVE_ONE_CLIP_OUT else folds) if train else []  # type: ignore[arg-type]
    for pool, test in splits:
        clips = {p.sample_id for p in test}
        held |= clips
        out.update(_turns(method, pool, [q for q in queries if q.sample_id in clips], seed))
    out.update(_turns(method, train, [q for q in queries if q.sample_id not in held], seed))
    return out


def _turns(method: str, pool: Sequence[Any], tests: Sequence[DecisionPoint], seed: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for scenario in sorted({t.scenario for t in tests}):
        chosen = [t for t in tests if t.scenario == scenario]
        own = pool_for(list(pool), scenario)
        texts = [p.gold.turn for p in own]
        if not texts:
            out.update({t.id: FALLBACK_TURN for t in chosen})
        elif method == "majority":
            out.update({t.id: ranked(Counter(texts))[0] for t in chosen})
        elif method == "random":
            distinct = sorted(set(texts))
            out.update({t.id: distinct[rng_for(seed, t.id).integers(len(distinct))] for t in chosen})
        elif method == "prior":
            counts = Counter(texts)
            out.update({t.id: draw(rng_for(seed, t.id), counts, 1)[0] for t in chosen})
        else:
            from sklearn.feature_extraction.text import TfidfVectorizer

            vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
            X = vectorizer.fit_transform([render_rows(p.context) for p in own])
            Xt = vectorizer.transform([render_rows(t.context) for t in chosen])
            nearest = np.asarray((Xt @ X.T).toarray().argmax(axis=1)).ravel()
            out.update({t.id: own[j].gold.turn for t, j in zip(chosen, nearest)})
    return out


def baseline_chain_answers(
    clips: Sequence[Clip],
    points: Sequence[DecisionPoint],
    method: str,
    options: AgentOptions | None = None,
    *,
    chosen: Sequence[DecisionPoint] | None = None,
    seed: int = 0,
) -> dict[str, dict[str, str]]:
    """``{point id: {step: raw answer}}`` of baseline ``method`` for the ``chosen`` points (default
    all ``points``), trained on every clip's gold but never on a point's own clip."""
    options = options or AgentOptions()
    chosen = list(points if chosen is None else chosen)
    bopts = build_options(options)
    by_clip = {c.sample_id: c for c in clips}
    train: dict[str, list[Instance]] = {t: build_instances(clips, t, bopts) for t in TASKS}

    when = predict_answers(train["itp"], method, seed=seed) if train["itp"] else {}
    stp_q = {
        p.id: _query(by_clip[p.sample_id], "stp", p.row, bopts, p.id, candidates=p.targets) for p in chosen
    }
    whom_raw = answer_queries(train["stp"], list(stp_q.values()), method, seed=seed)
    answers: dict[str, dict[str, str]] = {p.id: {} for p in chosen}
    speaking: dict[str, str] = {}
    for p in chosen:
        raw = when.get(p.single_ids["itp"]) or json.dumps({"answer": ITP_LABELS[0]})
        answers[p.id]["when"] = raw
        if parse_itp(raw).prediction == "yes":
            speaking[p.id] = _top1(whom_raw[stp_q[p.id].id], p.targets) or p.group
    ssp_own = {
        pid: _query(by_clip[p.sample_id], "ssp", p.row, bopts, pid, candidates=p.strategies, support_target=speaking[pid])
        for p in chosen
        if (pid := p.id) in speaking
    }
    ssp_gold = {
        p.id: _query(by_clip[p.sample_id], "ssp", p.row, bopts, f"{p.id}-gold", candidates=p.strategies, support_target=p.gold.whom)
        for p in chosen
        if p.gold.whom is not None and p.gold.how is not None
    }
    how_raw = answer_queries(train["ssp"], [*ssp_own.values(), *ssp_gold.values()], method, seed=seed)
    turns = baseline_turns(points, [p for p in chosen if p.id in speaking], method, seed=seed)
    for p in chosen:
        if p.id in speaking:
            how = _top1(how_raw[ssp_own[p.id].id], p.strategies)
            answers[p.id]["whom_how"] = json.dumps({"target": speaking[p.id], "strategy": how})
            answers[p.id]["turn"] = json.dumps({"turn": turns[p.id]}, ensure_ascii=False)
        if p.id in ssp_gold:
            answers[p.id]["how_gold"] = json.dumps({"strategy": _top1(how_raw[ssp_gold[p.id].id], p.strategies)})
    if options.state == "explicit":
        for p, state in zip(chosen, _states(by_clip, chosen, train, bopts, method, seed)):
            answers[p.id]["state"] = json.dumps(state, ensure_ascii=False)
    return answers


class EmotionGuess(TypedDict):
    client: str
    emotion: str
    intensity: float


class StanceGuess(TypedDict):
    source: str
    target: str
    viewpoint: str


class StateGuess(TypedDict):
    """The state step's answer a baseline gives (the shape the agent's state parser reads)."""

    emotions: list[EmotionGuess]
    stances: list[StanceGuess]
    pattern: str | None


def _states(
    by_clip: dict[str, Clip],
    chosen: Sequence[DecisionPoint],
    train: dict[str, list[Instance]],
    bopts: BuildOptions,
    method: str,
    seed: int,
) -> list[StateGuess]:
    """The baseline state of every chosen point: RPP's pattern, ER's emotion and VP's stances per client."""
    rpp_q, er_q, vp_q = {}, {}, {}
    for p in chosen:
        clip = by_clip[p.sample_id]
        k = p.row - 1
        rpp_q[p.id] = _query(clip, "rpp", k + 1, bopts, p.id, candidates=p.patterns)
        current = project_row(clip.rows[k], k + 1, bopts.mode)
        for c in p.participants:
            fields = {"current": current, "client": c}
            er_q[(p.id, c)] = _query(clip, "er", k, bopts, f"{p.id}-{c}", **fields)
            vp_q[(p.id, c)] = _query(clip, "vp", k, bopts, f"{p.id}-{c}", **fields)
    pattern = answer_queries(train["rpp"], list(rpp_q.values()), method, seed=seed)
    er = answer_queries(train["er"], list(er_q.values()), method, seed=seed)
    vp = answer_queries(train["vp"], list(vp_q.values()), method, seed=seed)
    out: list[StateGuess] = []
    for p in chosen:
        emotions: list[EmotionGuess] = []
        stances: list[StanceGuess] = []
        for c in p.participants:
            e = parse_er(er[er_q[(p.id, c)].id])
            if e.valid:
                emotions.append({"client": c, "emotion": e.prediction["emotion"], "intensity": e.prediction["intensity"]})
            v = parse_vp(vp[vp_q[(p.id, c)].id], [x for x in p.participants if x != c])
            for item in v.prediction or []:
                stances.append({"source": c, "target": item["target"], "viewpoint": item["viewpoint"]})
        out.append({"emotions": emotions, "stances": stances, "pattern": _top1(pattern[rpp_q[p.id].id], p.patterns)})
    return out

