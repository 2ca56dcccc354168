"""Every number of a run against a real model, checked against the server's own request log.

SmolLM2-135M-Instruct behind llama-cpp-python's server (:mod:`tests.llm.helpers`): the counts of a
run add up and match the requests the server answered and refused; a score nobody computed stays
empty, and no judge request reaches the server without ``--judge``; ``--max-retries N`` is N
retries on the wire (a proxy in front of the server fails the first attempts); the dry run's
expected calls and prompt tokens are within 25% of what the run then sent, and no request is sent
twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.event import ModelEvent
from inspect_ai.log import read_eval_log

from rescue_bench.data.load import demo_path
from tests.factories import read_records
from tests.llm.helpers import FailingProxy, LlamaServers, LocalModel

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]

SMALL_CTX = 1024
"""The window that refuses most of a family clip's prompts with every earlier row."""


def _run(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def _family_clip(folder: Path) -> Path:
    line = next(x for x in demo_path().read_text(encoding="utf-8").splitlines() if '"family"' in x)
    path = folder / "family.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    return path


def _wire_requests(out: Path) -> tuple[list[str], int]:
    """The body of every call the run's logs say went on the wire (answered from no cache; without
    the client's per-request id header), and the attempts those calls made (retries included)."""
    bodies, attempts = [], 0
    for path in sorted(out.glob("**/*.eval")):
        for sample in read_eval_log(str(path)).samples or []:
            for event in sample.events:
                if isinstance(event, ModelEvent) and event.cache != "read" and event.call is not None:
                    request = {k: v for k, v in event.call.request.items() if k != "extra_headers"}
                    bodies.append(json.dumps(request, sort_keys=True))
                    attempts += 1 + (event.retries or 0)
    return bodies, attempts


def test_on_a_small_window_the_counts_add_up_the_estimate_holds_and_no_request_goes_twice(llama: LlamaServers, isolated_env: Path) -> None:
    small = llama.server(SMALL_CTX)
    out, cache = isolated_env / "run", isolated_env / "cache"
    args = ("eval", "--model", small.model, "--tasks", "rpp", "--context", "-1", "--data", str(_family_clip(isolated_env)),
            "--max-tokens", "32", "--display", "none", "--no-bertscore", "--max-connections", "4", "--on-overflow", "trim",
            "--context-window", str(SMALL_CTX), "--out", str(out))
    before = small.requests()
    dry = small.rescue(*args, "--dry-run", cache=cache)
    assert dry.exit_code == 0, dry.output
    assert small.requests() == before  # the dry run sent nothing
    refused_before = small.refused()
    result = small.rescue(*args, cache=cache)
    assert result.exit_code == 0, result.output
    sent, refused = small.requests() - before, small.refused() - refused_before
    run = _run(out)
    counts = run["counts"]
    records = read_records(out)
    # item 1: every instance answered, refused or without an answer, and the server agrees
    assert refused > 0 and counts["without_answer"] == 0
    assert counts["answered"] + counts["overflow"] + counts["without_answer"] == counts["instances"] == len(records)
    assert counts["usable"] + sum(counts["invalid"].values()) == counts["answered"]
    assert counts["answered"] == sum(1 for r in records if r["raw"] is not None)
    # item 5: no request went twice, and every attempt the server saw is in the run's logs
    wire, attempts = _wire_requests(out)
    assert attempts == sent and len(set(wire)) == len(wire)
    # ... and the dry run expected what was sent, within 25%
    model = run["estimate"]["by_role"]["model"]
    calls = len(wire)  # the calls made (a retried attempt is the same call)
    assert 0.75 <= calls / model["expected_calls"] <= 1.25, (calls, model)
    used = run["usage_by_role"]["model"]["input_tokens"]
    assert 0.75 <= used / model["prompt_tokens"] <= 1.25, (used, model)
    assert calls <= model["calls"] and run["usage_by_role"]["model"]["output_tokens"] <= model["max_output_tokens"]


def test_without_a_judge_no_judge_score_and_no_judge_request(local_model: LocalModel, isolated_env: Path) -> None:
    out = isolated_env / "run"
    before = local_model.requests()
    result = local_model.rescue(
        "eval", "--model", local_model.model, "--tasks", "er,vp", "--limit", "2", "--max-tokens", "64", "--no-bertscore",
        "--display", "none", "--out", str(out), cache=isolated_env / "cache",
    )
    assert result.exit_code == 0, result.output
    records = read_records(out)
    assert local_model.requests() - before == len(records) == 4  # the model's calls, and no judge call
    summary = json.loads((out / "summary.json").read_text())
    for task, names in (("er", ("judge", "score", "bertscore")), ("vp", ("judge", "bertscore"))):
        assert all(summary[task][s][n] is None for s in summary[task] for n in names if summary[task][s]["n"]), task
    assert all(r["judge_score"] is None and r["bertscore"] is None for r in records)  # valid or not
    for path in (out / "logs").glob("*.eval"):
        log = read_eval_log(str(path), header_only=True)
        assert log.results is not None
        assert "judge" not in {name for s in log.results.scores for name in s.metrics}


@pytest.mark.parametrize(("retries", "fail"), [(2, 2), (1, 2)])
def test_max_retries_is_the_retries_on_the_wire(local_model: LocalModel, isolated_env: Path, retries: int, fail: int) -> None:
    """A proxy fails the first ``fail`` attempts: N retries make N + 1 attempts in all, and the server
    answers the call once when an attempt gets through."""
    before = local_model.requests()
    with FailingProxy(local_model.base_url, fail) as proxy:
        env = {**local_model.env(isolated_env / "cache"), "OPENAI_BASE_URL": proxy.base_url}
        from typer.testing import CliRunner

        from rescue_bench.cli import app

        result = CliRunner().invoke(
            app,
            ["eval", "--model", local_model.model, "--tasks", "itp", "--limit", "1", "--max-tokens", "16", "--max-retries", str(retries),
             "--no-cache", "--display", "none", "--no-bertscore", "--out", str(isolated_env / "run")],
            env=env,
        )
        received = proxy.received
    through = retries + 1 > fail
    assert received == min(retries + 1, fail + 1)
    assert local_model.requests() - before == (1 if through else 0)
    assert result.exit_code == (0 if through else 2), result.output
