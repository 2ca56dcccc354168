"""The floors under ``rescue eval``'s cost per call: a bare inspect_ai task and a bare async OpenAI client.

    python bench/floors.py inspect PROMPTS.jsonl [--no-log-samples] [--limit N]
    python bench/floors.py client PROMPTS.jsonl [--limit N]

Both send the prompts of ``PROMPTS.jsonl`` (one JSON list of chat messages per line, as the server
received them from a ``rescue eval`` run) to ``OPENAI_BASE_URL`` with at most ``--max-connections``
calls in flight, and nothing else:

- ``inspect``: a minimal inspect_ai task, one sample per prompt, the solver ``generate()`` alone, no
  scorer, no cache, inspect_ai's defaults for everything else (logs in a temporary folder); what any
  inspect_ai evaluation pays per call;
- ``client``: ``openai.AsyncOpenAI`` (the client inspect_ai uses underneath) called directly from one
  asyncio loop; what any Python client pays per call.

Run as child processes by ``bench/run.py``, which measures their CPU time with ``wait4``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

MODEL = "bench-model"


def read_prompts(path: Path, limit: int | None) -> list[list[dict[str, Any]]]:
    prompts = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return prompts[:limit] if limit else prompts


def bare_inspect(prompts: list[list[dict[str, Any]]], *, log_samples: bool, connections: int, display: str) -> int:
    """One inspect_ai task: a sample per prompt, ``generate()``, no scorer; returns the samples without error."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.solver import generate

    def message(m: dict[str, Any]) -> Any:
        return (ChatMessageSystem if m["role"] == "system" else ChatMessageUser)(content=m["content"])

    samples = [Sample(id=i, input=[message(m) for m in p]) for i, p in enumerate(prompts)]
    task = Task(dataset=MemoryDataset(samples), solver=generate(), name="bare")
    with tempfile.TemporaryDirectory(prefix="rescue-floor-") as logs:
        [log] = eval(
            task,
            model=f"openai/{MODEL}",
            model_base_url=os.environ["OPENAI_BASE_URL"],
            model_args={"responses_api": False},  # Chat Completions, as rescue eval talks to compatible servers
            max_connections=connections,
            log_dir=logs,
            log_samples=log_samples,
            display=display,  # type: ignore[arg-type]
        )
        return sum(1 for s in (log.samples or []) if s.error is None) if log_samples else len(prompts)


async def _bare_client(prompts: list[list[dict[str, Any]]], connections: int) -> int:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "x"))
    slots = asyncio.Semaphore(connections)

    async def one(messages: list[dict[str, Any]]) -> bool:
        async with slots:
            reply = await client.chat.completions.create(model=MODEL, messages=messages, temperature=0.0)  # type: ignore[arg-type]
            return bool(reply.choices[0].message.content)

    async with client:
        return sum(await asyncio.gather(*(one(p) for p in prompts)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("inspect", "client"))
    parser.add_argument("prompts", type=Path)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--max-connections", type=int, default=64)
    parser.add_argument("--no-log-samples", action="store_true")
    parser.add_argument("--display", default="none")
    args = parser.parse_args()
    prompts = read_prompts(args.prompts, args.limit)
    if args.kind == "inspect":
        ok = bare_inspect(prompts, log_samples=not args.no_log_samples, connections=args.max_connections, display=args.display)
    else:
        ok = asyncio.run(_bare_client(prompts, args.max_connections))
    print(json.dumps({"prompts": len(prompts), "answered": ok}))


if __name__ == "__main__":
    main()
