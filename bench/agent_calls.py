"""What `rescue agent eval` costs in calls and prompt text, measured on loopback.

    python bench/agent_calls.py                 # the bundled demo, state explicit and none
    python bench/agent_calls.py --data FILE     # any release file

The model is :class:`rescue_bench.testing.FakeOpenAI` answering every chain step validly
(:class:`rescue_bench.testing.agent.AgentAnswers`, the timing decision yes or no by a hash), the
judge a fixed score; a fresh response cache per run, no BERTScore. Printed per state mode: requests
by kind (chain steps, judge, single-task ablation), and the chain's prompt text: characters sent,
and characters *new* to each call (not a prefix of the conversation's previous call), i.e. what a
provider's prefix cache cannot serve. Nothing is written into the repository.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.testing import FakeOpenAI
from rescue_bench.testing.agent import AgentAnswers, step_of


class Counting:
    def __init__(self) -> None:
        self.inner = AgentAnswers()
        self.kinds: Counter[str] = Counter()
        self.chains: dict[str, list[str]] = {}

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        step = step_of(messages)
        if step is None:
            kind = "judge" if "careful rater" in str(messages[0]["content"]) else "single-task"
        else:
            kind = f"chain: {step}"
            if step != "how_gold":
                text = "\n".join(str(m["content"]) for m in messages)
                self.chains.setdefault(str(messages[1]["content"]), []).append(text)
        self.kinds[kind] += 1
        return self.inner(messages)


def measure(state: str, data: list[str]) -> dict[str, Any]:
    counting = Counting()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(counting) as server:
        os.environ.update(RESCUE_CACHE_DIR=str(Path(tmp) / "cache"), INSPECT_CACHE_DIR=str(Path(tmp) / "cache"), OPENAI_API_KEY="bench")
        args = ["agent", "eval", "--model", "openai/bench", "--judge", "openai/bench-judge", "--state", state,
                "--out", str(Path(tmp) / "out"), "--display", "none", "--no-bertscore", "--max-connections", "32"]
        for d in data:
            args += ["--data", d]
        result = CliRunner().invoke(app, args, env={"OPENAI_BASE_URL": server.base_url})
        if result.exit_code != 0:
            raise SystemExit(result.output)
        points = int(next(line for line in result.output.splitlines() if line.startswith("decision points:")).split("both ")[1].split(";")[0])
    sent = new = first = 0
    for calls in counting.chains.values():
        calls = sorted(calls, key=len)  # each call of one conversation extends the previous one
        first += len(calls[0])
        previous = ""
        for text in calls:
            sent += len(text)
            new += len(text) - (len(previous) if text.startswith(previous) else 0)
            previous = text
    return {"state": state, "points": points, "kinds": counting.kinds, "sent": sent, "new": new, "first": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", action="append", default=[], help="release file(s); default: the bundled demo")
    args = parser.parse_args()
    rows = [measure(state, args.data) for state in ("explicit", "none")]
    kinds = sorted({k for r in rows for k in r["kinds"]})
    print(f"{'':34}" + "".join(f"{'state ' + r['state']:>18}" for r in rows))
    print(f"{'decision points':34}" + "".join(f"{r['points']:>18}" for r in rows))
    for kind in kinds:
        print(f"{'requests, ' + kind:34}" + "".join(f"{r['kinds'][kind]:>18}" for r in rows))
    total = lambda r, pred: sum(v for k, v in r["kinds"].items() if pred(k))  # noqa: E731
    print(f"{'requests, chain (all steps)':34}" + "".join(f"{total(r, lambda k: k.startswith('chain')):>18}" for r in rows))
    print(f"{'requests, chain per point':34}" + "".join(f"{total(r, lambda k: k.startswith('chain')) / r['points']:>18.2f}" for r in rows))
    print(f"{'requests, everything':34}" + "".join(f"{sum(r['kinds'].values()):>18}" for r in rows))
    print(f"{'chain prompt chars sent':34}" + "".join(f"{r['sent']:>18,}" for r in rows))
    print(f"{'chain prompt chars new per call':34}" + "".join(f"{r['new']:>18,}" for r in rows))
    print(f"{'new chars / first calls chars':34}" + "".join(f"{r['new'] / r['first']:>18.2f}" for r in rows))
    print(f"{'sent chars / first calls chars':34}" + "".join(f"{r['sent'] / r['first']:>18.2f}" for r in rows))


if __name__ == "__main__":
    sys.exit(main())
