"""``rescue eval --workers N``: the same output as one process, shared cache, clean failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.engine.channel import RunChannel
from rescue_bench.engine.settings import (
    EvalSettings,
    effective_workers,
    merge_usage,
    shard_connections,
    shard_of,
)
from rescue_bench.testing import FakeOpenAI
from tests.reliability.helpers import Responder, expected_counts

runner = CliRunner()
LIMIT = 12
"""Instances per task in the end-to-end runs (72 in all: enough to split, quick to run)."""


# --------------------------------------------------------------------------------------------------
# the pure parts
# --------------------------------------------------------------------------------------------------


@given(st.lists(st.integers(), max_size=60), st.integers(1, 9))
def test_shards_partition_the_instances(items: list[int], count: int) -> None:
    parts = [shard_of(items, k, count) for k in range(count)]
    assert sorted(x for p in parts for x in p) == sorted(items)
    assert sum(len(p) for p in parts) == len(items)  # disjoint: nothing evaluated twice
    assert max(map(len, parts)) - min(map(len, parts)) <= 1  # balanced


def test_shard_out_of_range() -> None:
    with pytest.raises(ValueError, match="shard 2 of 2"):
        shard_of([1, 2, 3], 2, 2)


def test_connections_are_shared_never_exceeded() -> None:
    assert shard_connections(64, 2) == 32
    assert shard_connections(7, 2) == 3  # 2 x 3 <= 7
    assert shard_connections(None, 4) is None  # inspect_ai's default, per worker
    for total in range(1, 40):
        for workers in range(1, total + 1):
            assert 1 <= shard_connections(total, workers) * workers <= total


def test_effective_workers() -> None:
    assert effective_workers(EvalSettings(model="openai/x", workers=4)) == 4
    assert effective_workers(EvalSettings(model="openai/x", workers=4, max_connections=2)) == 2
    assert effective_workers(EvalSettings(model="baseline/majority", workers=4)) == 1  # no calls to spread
    with pytest.raises(ValueError):
        EvalSettings(model="openai/x", workers=0)


def test_merge_usage_sums_per_model() -> None:
    a = {"m": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}
    b = {"m": {"input_tokens": 2, "output_tokens": 2, "total_tokens": 4, "total_cost": 0.5}, "j": {"input_tokens": 1}}
    assert merge_usage([a, b]) == {
        "m": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8, "total_cost": 0.5},
        "j": {"input_tokens": 1, "output_tokens": 0, "total_tokens": 0},
    }


def test_channel_reports_each_new_record_once() -> None:
    seen: list[int] = []
    channel = RunChannel(lambda: seen.append(1))
    channel.keep({"id": "a", "x": 1})
    channel.keep({"id": "b", "x": 2})
    channel.keep({"id": "a", "x": 3})  # a re-scored sample replaces its record, it is not a new one
    assert len(seen) == 2 and channel.records["a"] == {"id": "a", "x": 3}


# --------------------------------------------------------------------------------------------------
# end to end, against the loopback server
# --------------------------------------------------------------------------------------------------


def _eval(data: Path, server: FakeOpenAI, out: Path, cache: Path, *extra: str):
    return runner.invoke(
        app,
        [
            "eval", "--data", str(data), "--model", "openai/fake-model", "--judge", "openai/fake-judge",
            "--out", str(out), "--display", "none", "--no-bertscore", "--limit", str(LIMIT), *extra,
        ],
        env={"OPENAI_BASE_URL": server.base_url, "RESCUE_CACHE_DIR": str(cache), "INSPECT_CACHE_DIR": str(cache)},
    )


def test_two_workers_write_what_one_process_writes(isolated_env: Path, real_or_demo: Path) -> None:
    instances, judged = expected_counts(real_or_demo, LIMIT)
    one, two = isolated_env / "one", isolated_env / "two"
    with FakeOpenAI(Responder(garbage=0.2), latency=0.02) as server:
        first = _eval(real_or_demo, server, one, isolated_env / "cache-one", "--max-connections", "6")
        assert first.exit_code == 0, first.output
        single_requests = server.stats.requests
        # the six tasks run at once, model and judge calls share the bound
        assert server.stats.peak_in_flight <= 6

        server.stats.peak_in_flight = 0
        second = _eval(real_or_demo, server, two, isolated_env / "cache-two", "--max-connections", "6", "--workers", "2")
        assert second.exit_code == 0, second.output
        parallel_requests = server.stats.requests - single_requests
        assert server.stats.peak_in_flight <= 6  # --max-connections is the total over the workers

        # the same command again: every call comes from the shared response cache
        third = _eval(real_or_demo, server, two, isolated_env / "cache-two", "--max-connections", "6", "--workers", "2")
        assert third.exit_code == 0, third.output
        assert server.stats.requests == single_requests + parallel_requests

    assert parallel_requests == single_requests  # nothing evaluated twice, nothing left out
    assert single_requests <= instances + judged
    for name in ("itp", "rpp", "stp", "ssp", "er", "vp"):
        a = (one / "results" / f"{name}.jsonl").read_bytes()
        b = (two / "results" / f"{name}.jsonl").read_bytes()
        assert a == b, name
        assert len(a.splitlines()) == LIMIT
    assert json.loads((one / "summary.json").read_text()) == json.loads((two / "summary.json").read_text())
    assert any(not json.loads(line)["valid"] for f in (two / "results").glob("*.jsonl") for line in f.open())

    run = json.loads((two / "run.json").read_text())
    assert run["workers"] == 2 and run["settings"]["workers"] == 2
    assert len(run["status"]) == 12 and set(run["status"]) == {"success"}  # 6 tasks x 2 workers
    assert not (two / ".workers").exists()  # the hand-over files are removed after a clean run

    from inspect_ai.log import read_eval_log

    logs = [read_eval_log(str(p)) for p in sorted((two / "logs").glob("*.eval"))]
    per_task: dict[str, int] = {}
    for log in logs[-12:]:  # the last run's logs: each run writes one per task and worker
        per_task[log.eval.metadata["rescue_task"]] = per_task.get(log.eval.metadata["rescue_task"], 0) + len(log.samples or [])
    assert per_task == {name: LIMIT for name in ("itp", "rpp", "stp", "ssp", "er", "vp")}


def test_a_failing_worker_is_one_line_exit_2(isolated_env: Path) -> None:
    result = runner.invoke(
        app,
        ["eval", "--model", "nosuch/model", "--workers", "2", "--out", str(isolated_env / "run"),
         "--display", "none", "--no-bertscore", "--limit", "2"],
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ValueError: Model API nosuch") and "(worker " in lines[0]
    assert "Traceback" not in result.output


def test_bad_data_stops_before_any_worker(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "x"}\n', encoding="utf-8")
    result = runner.invoke(
        app, ["eval", "--model", "openai/x", "--workers", "2", "--data", str(bad), "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2
    assert str(bad) in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run" / ".workers").exists()
