"""What the closed loop's numbers are on the demo and the shared real lines, beside their floors.

    python bench/closed_loop.py            # the demo and the real lines (when ../shared is there)
    python bench/closed_loop.py --no-fit   # skip the model fitted on the real lines (the slow part)

For each setting (the default simulator on the demo and on the real lines; a model fitted on the
real lines, played on them), printed as Markdown tables:

* the reference agents (silent, group, attend, distressed, oracle): J, the normalised headline, and
  in how many variants of the simulator's assumptions each is above the run's best constant policy
  (:mod:`rescue_bench.sim.sensitivity`); the run's floor (its best constant policy), the optimum and
  the room per scenario;
* every pair of reference agents: in how many variants one is above the other, and whether it holds;
* constant agents that say warm, neutral, off-topic or hostile words to the group, a subgroup and one
  client (the words' stated assumptions at work);
* the simulator against its best floor on sessions it was not fitted on (its validation, as
  ``rescue sim fit`` stores it): for the model fitted on the real lines, each couple or family left out.

Nothing is written; the figures in docs/benchmarks.md come from this script.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REAL_DIR  # noqa: E402
from rescue_bench.data.load import load_clips  # noqa: E402
from rescue_bench.sim import Episode, SimOptions, StrategyPrior, episode_starts, run_offline, summarize  # noqa: E402
from rescue_bench.sim.fitted import FittedModel, load_model  # noqa: E402
from rescue_bench.sim.fitting import fit  # noqa: E402
from rescue_bench.sim.hearing import hear  # noqa: E402
from rescue_bench.sim.offline import Fitted  # noqa: E402
from rescue_bench.sim.sensitivity import add_sensitivity, compare_variants  # noqa: E402
from rescue_bench.sim.state import reward  # noqa: E402

AGENTS = ("oracle", "group", "distressed", "attend", "silent")
WORDS = {
    "warm": "{name}, I can see how much this is weighing on you. That sounds really painful, and it makes sense.",
    "neutral": "{name}, I want to understand what happened this week, step by step.",
    "off-topic": "{name}, the car park closes at six and the lift on the second floor is broken.",
    "hostile": "{name}, honestly, you are being ridiculous and selfish. Stop whining; nobody cares how you feel.",
}
OPTS = SimOptions()


def _fmt(x: float | None, spec: str = "+.3f") -> str:
    return "–" if x is None else format(x, spec)


def agents_table(clips: list, sim: Fitted) -> tuple[str, dict[str, list]]:
    prior = StrategyPrior(clips)
    starts = [s for clip in clips for s in episode_starts(clip, OPTS)[0]]
    runs = {}
    lines = ["| agent | J | normalised (couple / family) | above the floor in k of K variants |", "|---|---|---|---|"]
    for name in AGENTS:
        records = run_offline([Episode(s, agent=f"baseline/{name}", options=OPTS, prior=prior, simulator="fitted", model=sim) for s in starts])
        add_sensitivity(records, sim, gamma=OPTS.gamma, lam=OPTS.lam)
        runs[name] = records
        per = summarize(records, n_resamples=200)
        o = per["both"].sensitivity.above_floor if per["both"].sensitivity else None
        lines.append(
            f"| `baseline/{name}` | {_fmt(per['both'].metric('J').value)} | {_fmt(per['both'].metric('normalised').value)} "
            f"({_fmt(per['couple'].metric('normalised').value)} / {_fmt(per['family'].metric('normalised').value)}) | "
            f"{'–' if o is None else f'{o.above} of {o.variants}' + ('' if o.holds else ' (does not hold)')} |"
        )
    per = summarize(runs["group"], n_resamples=200)
    for s in ("couple", "family", "both"):
        e = per[s]
        lines.append(
            f"| floor, {s} (`{e.floor_policy}`) / optimum / room | {_fmt(e.metric('run_floor_J').value)} / {_fmt(e.metric('optimum_J').value)} "
            f"| room {_fmt(100 * e.metric('room').value if e.metric('room').value is not None else None, '.1f')}% | |"
        )
    return "\n".join(lines), runs


def pairs_table(runs: dict[str, list]) -> str:
    lines = ["| a | b | a above b in k of K variants | holds |", "|---|---|---|---|"]
    for i, a in enumerate(AGENTS):
        for b in AGENTS[i + 1 :]:
            o = compare_variants(runs[a], runs[b])
            lines.append(f"| {a} | {b} | {'–' if o is None else f'{o.above} of {o.variants}'} | {'–' if o is None else ('yes' if o.holds else 'no')} |")
    return "\n".join(lines)


def words_table(clips: list, sim: Fitted) -> str:
    lines = ["| reach | " + " | ".join(WORDS) + " |", "|---|" + "---|" * len(WORDS)]
    for reach in ("group", "subgroup", "one client"):
        row = []
        for words in WORDS.values():
            total = n = 0.0
            for clip in clips:
                clients = list(clip.clients)
                if reach == "subgroup" and len(clients) < 3:
                    continue
                recipients = {"group": clients, "subgroup": clients[:2], "one client": clients[:1]}[reach]
                name = "everyone" if reach == "group" else " and ".join(recipients)
                action = {"intervened": True, "whom": None, "how": "track", "turn": words.format(name=name), "recipients": recipients}
                heard = hear(action, clients, sim.read)
                for start in episode_starts(clip, OPTS)[0]:
                    state, j = start.initial, 0.0
                    for t in range(1, OPTS.horizon + 1):
                        state, _ = sim.step(state, heard, clients, start.scenario, t)
                        j += OPTS.gamma ** (t - 1) * reward(state, OPTS.lam)
                    total, n = total + j, n + 1
            row.append(_fmt(total / n if n else None))
        lines.append(f"| {reach} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def validation_table(model: FittedModel) -> str:
    lines = ["| measure | simulator | best floor | difference [95% CI] | verdict |", "|---|---|---|---|---|"]
    for c in model.validation:
        ci = f" [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}]" if c.ci else ""
        lines.append(f"| {c.label} | {_fmt(c.simulator, '.3f')} | {c.floor} {_fmt(c.floor_value, '.3f')} | {_fmt(c.difference)}{ci} | {c.verdict} |")
    return "\n".join(lines)


def report(title: str, clips: list, model: FittedModel) -> None:
    sim = Fitted(model)
    print(f"\n### {title}\n")
    t = time.perf_counter()
    table, runs = agents_table(clips, sim)
    print(table + "\n\n" + pairs_table(runs) + "\n\nConstant agents' J by the words they say:\n\n" + words_table(clips, sim))
    print(f"\nThe simulator ({model.source.name}) against its best floor on sessions it was not fitted on:\n\n" + validation_table(model))
    print(f"\n({time.perf_counter() - t:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-fit", action="store_true", help="skip the model fitted on the real lines")
    args = parser.parse_args()
    demo = load_clips(None)
    report("The default simulator on the demo", demo, load_model())
    files = sorted(str(p) for p in REAL_DIR.glob("*.jsonl")) if REAL_DIR.is_dir() else []
    if not files:
        print("\n(../shared/data/rescue_real not found: the real lines are left out)")
        return
    real = load_clips(files)
    report("The default simulator on the real lines", real, load_model())
    if not args.no_fit:
        t = time.perf_counter()
        model = fit(real, "the 8 shared real clips").model
        print(f"\n(fitted on the real lines in {time.perf_counter() - t:.0f} s)")
        report("A model fitted on the real lines, played on them", real, model)


if __name__ == "__main__":
    main()
