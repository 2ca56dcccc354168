"""Shared parts of the closed loop's rating tests: real `rescue sim eval` runs of reference agents on
the demo, and synthetic raters who answer each pair of a sample by a rule."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rescue_bench.judge_ratings import read_pair_sample

AGENTS = ("attend", "group", "silent", "distressed")
HORIZON = 3


def make_runs(folder: Path, agents: Sequence[str] = AGENTS, *, prefix: str = "sim-", horizon: int = HORIZON) -> list[Path]:
    """One offline `rescue sim eval` run per reference agent on the demo (the fitted simulator),
    in ``folder/<prefix><agent>``."""
    from rescue_bench.engine.settings import SimSettings
    from rescue_bench.engine.sim import run_sim
    from rescue_bench.sim import SimOptions

    out = []
    for agent in agents:
        path = folder / f"{prefix}{agent}"
        run_sim(SimSettings(model=f"baseline/{agent}", options=SimOptions(horizon=horizon), out=str(path)), display="none")
        out.append(path)
    return out


def episode_J(runs: Sequence[Path]) -> dict[tuple[str, str], float | None]:
    """``{(run folder name, episode id): J}`` as the records hold it."""
    out = {}
    for run in runs:
        for line in (run / "results" / "sim.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            out[(run.name, record["id"])] = record["metrics"]["J"]
    return out


Rule = Callable[[float, float, np.random.Generator], str]
"""A rater: ``(J of side A, J of side B, rng) -> "A" | "B" | "tie"``."""


def higher(ja: float, jb: float, rng: np.random.Generator) -> str:
    return "A" if ja > jb else "B"


def lower(ja: float, jb: float, rng: np.random.Generator) -> str:
    return "B" if ja > jb else "A"


def coin(ja: float, jb: float, rng: np.random.Generator) -> str:
    return "A" if rng.random() < 0.5 else "B"


def synthetic_ratings(sample: Path, runs: Sequence[Path], rule: Rule, out: Path, *, raters: int = 3, seed: int = 0, refs: bool = True) -> Path:
    """Every rater answers every pair of ``sample`` by ``rule`` (each rater on their own draws);
    ``refs``: with the pairs' runs and episodes (as `rescue review export-ratings` writes), else
    only pair_id, rater, preferred."""
    J = episode_J(runs)
    rng = np.random.default_rng(seed)
    columns = ["pair_id", "a_run", "a_episode", "b_run", "b_episode", "rater", "preferred", "reason"] if refs else ["pair_id", "rater", "preferred"]
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for pair in read_pair_sample(sample):
            ja, jb = J[(pair.a.run, pair.a.episode)], J[(pair.b.run, pair.b.episode)]
            for k in range(raters):
                said = rule(ja, jb, rng)
                row = [pair.pair_id, pair.a.run, pair.a.episode, pair.b.run, pair.b.episode, f"r{k + 1}", said, "because"]
                writer.writerow(row if refs else [pair.pair_id, f"r{k + 1}", said])
    return out
