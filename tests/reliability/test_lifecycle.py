"""Every run command has one lifecycle, tested as its misuse.

The five run commands (``rescue eval``, ``rescue agent eval``, ``rescue sim eval``, ``rescue sim
fidelity``, ``rescue annotate draft``), each against the loopback OpenAI-compatible server:

- a rejected API key (401) and a dead server (a closed port): exit 2 with one ``error:`` line naming
  the cause, ``run.json`` of the command's ``kind`` says ``failed`` with counts and that line, and
  the same command finishes the run once the server answers;
- a folder holding another kind of run: refused with one line, the folder left byte for byte, and
  nothing sent;
- bad data over an earlier run's folder, even with ``--overwrite``: refused before the folder is
  touched (byte for byte);
- the seed given is sent with every request and recorded.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.testing import DraftResponder, FakeOpenAI, ValidAnswers
from rescue_bench.testing.agent import AgentAnswers
from tests.sim.helpers import LoopAnswers

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()
BUDGET = ("--max-retries", "1", "--timeout", "5", "--display", "none")
"""A small retry budget (one retry), so a failing server fails a run in seconds."""


@dataclass(frozen=True)
class Command:
    """One run command: its arguments for a run folder, its ``kind``, a server that answers it."""

    kind: str
    args: Callable[[Path, Path, Path | None], list[str]]
    """(run folder, assets, data or None) -> the arguments of ``rescue``."""
    answers: Callable[[], Any]


def _data(data: Path | None) -> list[str]:
    return ["--data", str(data)] if data is not None else []


COMMANDS = {
    "eval": Command(
        "eval",
        lambda out, assets, data: ["eval", "--model", "openai/fake-model", "--tasks", "itp", "--limit", "2", "--no-bertscore",
                                   "--out", str(out), *_data(data)],
        ValidAnswers,
    ),
    "agent": Command(
        "agent",
        lambda out, assets, data: ["agent", "eval", "--model", "openai/fake-model", "--limit", "2", "--no-single-task",
                                   "--no-bertscore", "--out", str(out), *_data(data)],
        AgentAnswers,
    ),
    "sim": Command(
        "sim",
        lambda out, assets, data: ["sim", "eval", "--model", "openai/fake-agent", "--limit", "2", "--horizon", "1",
                                   "--out", str(out), *_data(data)],
        LoopAnswers,
    ),
    "fidelity": Command(
        "sim_fidelity",
        lambda out, assets, data: ["sim", "fidelity", "--simulator", "openai/fake-sim", "--limit", "2", "--no-bertscore",
                                   "--out", str(out), *_data(data)],
        LoopAnswers,
    ),
    "draft": Command(
        "draft",
        lambda out, assets, data: ["annotate", "draft", str(data or assets), "--model", "openai/fake-drafter", "--limit", "1",
                                   "--run-dir", str(out)],
        DraftResponder,
    ),
}
NAMES = list(COMMANDS)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """An assets folder with one subtitles-only segment (what ``annotate draft`` reads)."""
    from rescue_bench.annotate import prepare
    from rescue_bench.testing.media import COUPLE, make_segment

    src = tmp_path_factory.mktemp("segments")
    make_segment(src, "couple/s01_seg02_textonly", COUPLE, video=None)
    assets = tmp_path_factory.mktemp("assets") / "assets"
    prepare(src, assets)
    return assets


@pytest.fixture()
def assets(prepared: Path, tmp_path: Path) -> Path:
    import shutil

    dest = tmp_path / "assets"
    shutil.copytree(prepared, dest)
    return dest


@pytest.fixture()
def env(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RESCUE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("INSPECT_CACHE_DIR", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")


def _run(name: str, out: Path, assets: Path, url: str, data: Path | None = None, *extra: str):
    args = [*COMMANDS[name].args(out, assets, data), *BUDGET, *extra]
    return runner.invoke(app, args, env={"OPENAI_BASE_URL": url})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens there


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _run_json(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def _assert_failed(result, out: Path, kind: str, cause: str) -> dict[str, Any]:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = _errors(result.output)
    assert len(lines) == 1, result.output
    assert cause in lines[0].lower(), lines[0]
    run = _run_json(out)
    assert run["kind"] == kind and run["status"] == "failed", run
    assert run["counts"] and run["failure"] and cause in run["failure"].lower()
    assert run["failure"] in lines[0]
    return run


def _assert_success(result, out: Path, kind: str) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    run = _run_json(out)
    assert run["kind"] == kind and run["status"] == "success" and run["failure"] is None, run
    return run


@pytest.mark.parametrize("name", NAMES)
def test_a_rejected_key_fails_the_run_and_the_same_command_resumes(name: str, tmp_path: Path, env, assets: Path) -> None:
    out, command = tmp_path / "run", COMMANDS[name]
    with FakeOpenAI(command.answers(), status=401) as server:
        result = _run(name, out, assets, server.base_url)
    _assert_failed(result, out, command.kind, "authentication")
    with FakeOpenAI(command.answers()) as good:
        again = _run(name, out, assets, good.base_url)
    _assert_success(again, out, command.kind)


@pytest.mark.parametrize("name", NAMES)
def test_a_dead_server_fails_the_run(name: str, tmp_path: Path, env, assets: Path) -> None:
    out, command = tmp_path / "run", COMMANDS[name]
    result = _run(name, out, assets, f"http://127.0.0.1:{_closed_port()}/v1")
    _assert_failed(result, out, command.kind, "connection")


@pytest.mark.parametrize("name", NAMES)
def test_a_folder_holding_another_kind_of_run_is_refused_untouched(name: str, tmp_path: Path, env, assets: Path) -> None:
    out = tmp_path / "other"
    other = (["sim", "eval", "--model", "baseline/attend", "--limit", "2", "--horizon", "1"] if name == "eval"
             else ["eval", "--model", "baseline/majority", "--tasks", "itp", "--limit", "2"])
    made = runner.invoke(app, [*other, "--out", str(out), "--display", "none"])
    assert made.exit_code == 0, made.output
    before = _snapshot(out)
    with FakeOpenAI(COMMANDS[name].answers()) as server:
        result = _run(name, out, assets, server.base_url)
        assert server.stats.requests == 0
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "holds a different run: kind" in lines[0] and "--overwrite" in lines[0], result.output
    assert _snapshot(out) == before


def _bad_data(name: str, tmp_path: Path, assets: Path) -> Path:
    """Data that fails to load: a clip without its fields; for the draft, an assets folder whose
    manifest is not JSON."""
    if name == "draft":
        import shutil

        bad = tmp_path / "bad-assets"
        shutil.copytree(assets, bad)
        next(bad.rglob("manifest.json")).write_text("{not json", encoding="utf-8")
        return bad
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "x"}\n', encoding="utf-8")
    return bad


@pytest.mark.parametrize("name", NAMES)
def test_bad_data_over_an_earlier_runs_folder_leaves_it_byte_for_byte(name: str, tmp_path: Path, env, assets: Path) -> None:
    out, command = tmp_path / "run", COMMANDS[name]
    with FakeOpenAI(command.answers()) as server:
        _assert_success(_run(name, out, assets, server.base_url), out, command.kind)
        before = _snapshot(out)
        drafts = (assets / "drafts.jsonl").read_bytes() if name == "draft" else None
        result = _run(name, out, assets, server.base_url, _bad_data(name, tmp_path, assets), "--overwrite")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.strip()
    assert _snapshot(out) == before
    if drafts is not None:
        assert (assets / "drafts.jsonl").read_bytes() == drafts


@pytest.mark.parametrize("name", NAMES)
def test_a_missing_api_key_is_refused_before_the_folder_is_claimed(name: str, tmp_path: Path, env, assets: Path, monkeypatch) -> None:
    """A provider that cannot be set up (no API key) is one line and exit 2 before any claim: an
    earlier run's folder stays byte for byte (never left "running"), and a new folder is not made."""
    out, command = tmp_path / "run", COMMANDS[name]
    with FakeOpenAI(command.answers()) as server:
        _assert_success(_run(name, out, assets, server.base_url), out, command.kind)
    before = _snapshot(out)
    monkeypatch.delenv("OPENAI_API_KEY")
    # another endpoint: inspect_ai keeps the models it made in this process, per endpoint
    with FakeOpenAI(command.answers()) as server:
        result = _run(name, out, assets, server.base_url, None, "--overwrite")
        fresh = _run(name, tmp_path / "new", assets, server.base_url)
        assert server.stats.requests == 0
    for r in (result, fresh):
        assert r.exit_code == 2, r.output
        assert "Traceback" not in r.output
        lines = _errors(r.output)
        assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0], r.output
    assert _snapshot(out) == before
    assert not (tmp_path / "new" / "run.json").exists()


@pytest.mark.parametrize("name", ["eval", "sim"])
def test_the_key_check_is_not_fooled_by_a_model_made_earlier_in_the_process(
    name: str, tmp_path: Path, env, assets: Path, monkeypatch
) -> None:
    """inspect_ai keeps the models it made in a process: the same endpoint again (a Python session,
    or a test server given the same port) must still find the key gone before the claim."""
    out, command = tmp_path / "run", COMMANDS[name]
    with FakeOpenAI(command.answers()) as server:
        _assert_success(_run(name, out, assets, server.base_url), out, command.kind)
        before = _snapshot(out)
        monkeypatch.delenv("OPENAI_API_KEY")
        result = _run(name, out, assets, server.base_url, None, "--overwrite")
    assert result.exit_code == 2, result.output
    assert any("OPENAI_API_KEY" in line for line in _errors(result.output)), result.output
    assert _snapshot(out) == before


@pytest.mark.parametrize("name", NAMES)
def test_an_error_after_the_claim_leaves_the_run_failed_with_its_cause_never_running(
    name: str, tmp_path: Path, env, assets: Path, monkeypatch
) -> None:
    """Whatever goes wrong once the folder is claimed (here the key vanishes past a check that was
    fooled) ends the run as failed, with the one line, and the same command resumes."""
    import rescue_bench.engine.runfolder as runfolder

    out, command = tmp_path / "run", COMMANDS[name]
    monkeypatch.setattr(runfolder, "check_providers", lambda settings: None)
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeOpenAI(command.answers()) as server:
        result = _run(name, out, assets, server.base_url)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    run = _run_json(out)
    assert run["status"] == "failed" and "OPENAI_API_KEY" in run["failure"], run
    assert _errors(result.output) == [f"error: {run['failure']}"]  # the command and run.json say the same line
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with FakeOpenAI(command.answers()) as server:
        _assert_success(_run(name, out, assets, server.base_url), out, command.kind)


@pytest.mark.parametrize("name", NAMES)
def test_every_command_sends_and_records_the_seed(name: str, tmp_path: Path, env, assets: Path) -> None:
    out, command = tmp_path / "run", COMMANDS[name]
    with FakeOpenAI(command.answers(), record_bodies=True) as server:
        result = _run(name, out, assets, server.base_url, None, "--seed", "7")
        bodies = server.stats.bodies
    run = _assert_success(result, out, command.kind)
    assert bodies and all(body.get("seed") == 7 for body in bodies), [b.get("seed") for b in bodies]
    assert run["settings"]["seed"] == 7


FIRE = "the GPU is on fire"


def _always_500(messages: list[dict[str, Any]]) -> tuple[int, str]:
    return 500, FIRE


@pytest.mark.parametrize("name", NAMES)
def test_a_server_that_always_fails_ends_the_run_with_its_message(name: str, tmp_path: Path, env, assets: Path) -> None:
    """Retries are bounded by default (here one, to be quick): the run ends failed, and its one line
    carries the server's own message."""
    out, command = tmp_path / "run", COMMANDS[name]
    with FakeOpenAI(_always_500) as server:
        result = _run(name, out, assets, server.base_url)
    run = _assert_failed(result, out, command.kind, "")
    assert FIRE in _errors(result.output)[0] and FIRE in run["failure"]
    assert run["limits"]["max_retries"] == 1


def test_the_default_retries_are_finite_and_recorded(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "baseline/majority", "--tasks", "itp", "--limit", "2", "--out", str(out), "--display", "none"])
    assert result.exit_code == 0, result.output
    limits = _run_json(out)["limits"]
    assert limits["max_retries"] == 5 and "backoff" in limits
    assert limits["max_tokens"] == {"model": 1024}


def test_once_a_wave_of_calls_has_failed_no_more_are_sent(tmp_path: Path, env) -> None:
    """Against a server that fails every call, a run stops sending once as many calls in a row as it
    has connections have failed after their retries: 2 connections, 24 instances, each with its own
    prompt (so the prompts the server saw are the calls sent)."""
    out = tmp_path / "run"
    with FakeOpenAI(_always_500, record_prompts=True) as server:
        result = runner.invoke(
            app,
            ["eval", "--model", "openai/fake-model", "--tasks", "itp,ssp", "--limit", "12", "--max-connections", "2",
             "--workers", "1", "--no-bertscore", "--out", str(out), *BUDGET],
            env={"OPENAI_BASE_URL": server.base_url},
        )
        calls = len(set(server.stats.prompt_chars))
    run = _assert_failed(result, out, "eval", "")
    assert run["counts"]["without_answer"] == 24
    assert calls <= 2 * 2, calls  # at most two waves of two calls; all 24 without the circuit


@pytest.mark.parametrize("name", NAMES)
def test_dry_run_sends_nothing_writes_nothing_and_prints_the_calls(name: str, tmp_path: Path, env, assets: Path) -> None:
    out = tmp_path / "run"
    drafts = sorted(p.name for p in assets.iterdir())
    with FakeOpenAI(COMMANDS[name].answers()) as server:
        result = _run(name, out, assets, server.base_url, None, "--dry-run", "--price-in", "2.5", "--price-out", "10")
        assert server.stats.requests == 0
    assert result.exit_code == 0, result.output
    assert not out.exists()
    assert sorted(p.name for p in assets.iterdir()) == drafts  # no drafts file, no run folder in the assets
    text = " ".join(result.output.split())
    assert "nothing sent" in text and "calls (at most)" in text and "estimated cost:" in text
    total = next(line for line in result.output.splitlines() if line.strip().startswith("total"))
    assert any(ch.isdigit() and ch != "0" for ch in total), total  # something would be sent


def test_the_eval_dry_run_counts_one_call_per_instance_and_two_per_judged_answer(tmp_path: Path, env) -> None:
    from rescue_bench.engine.run import estimate_eval
    from rescue_bench.engine.settings import EvalSettings
    from rescue_bench.prompts.render import render

    settings = EvalSettings(model="openai/fake-model", judge="openai/fake-judge", tasks=["itp", "er"], limit=3, out=str(tmp_path / "x"))
    dry = estimate_eval(settings)
    parts = {p.part: p for p in dry.parts}
    assert (parts["itp"].calls, parts["er"].calls, parts["er judge"].calls) == (3, 3, 6)
    from rescue_bench.engine.plan import plan_run

    itp = next(t for t in plan_run(settings).tasks if t.name == "itp")
    assert parts["itp"].prompt_chars == sum(len(render(i).system) + len(render(i).user) for i in itp.chosen)
    assert dry.by_role()["model"]["max_output_tokens"] == 6 * settings.max_tokens
    cost_in, cost_out = dry.cost(1.0, 2.0)
    assert cost_in == pytest.approx(dry.prompt_tokens / 1e6) and cost_out == pytest.approx(2.0 * dry.max_output_tokens / 1e6)
    assert not (tmp_path / "x").exists()


def test_tokens_are_counted_per_role_even_when_the_judge_is_the_model(tmp_path: Path, env) -> None:
    """The model and its judge are one model here: ``usage`` merges them, ``usage_by_role`` does not,
    and the printed table shows both roles beside the estimate."""
    out = tmp_path / "run"
    with FakeOpenAI(ValidAnswers()) as server:
        result = runner.invoke(
            app,
            ["eval", "--model", "openai/fake-model", "--judge", "openai/fake-model", "--tasks", "er", "--limit", "3",
             "--no-bertscore", "--out", str(out), *BUDGET],
            env={"OPENAI_BASE_URL": server.base_url},
        )
    assert result.exit_code == 0, result.output
    run = _run_json(out)
    [model] = run["usage"].values()
    roles = run["usage_by_role"]
    assert set(roles) == {"model", "judge"} and all(roles[r]["input_tokens"] > 0 for r in roles)
    assert roles["model"]["input_tokens"] + roles["judge"]["input_tokens"] == model["input_tokens"]
    assert set(run["estimate"]["by_role"]) == {"model", "judge"}
    assert "Tokens per role" in result.output
    # the report sets the estimate beside what was used, per role
    report = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "report"), "--resamples", "50"])
    assert report.exit_code == 0, report.output
    usage = (tmp_path / "report" / "tables" / "usage.csv").read_text(encoding="utf-8").splitlines()
    judge = next(line for line in usage if ",judge," in line)
    estimated = run["estimate"]["by_role"]["judge"]
    assert str(roles["judge"]["input_tokens"]) in judge.replace(",", "").replace('"', "") or f"{roles['judge']['input_tokens']:,}" in judge
    assert f"{estimated['calls']:,}" in judge or str(estimated["calls"]) in judge


def test_the_simulator_has_its_own_tokens(tmp_path: Path, env) -> None:
    out = tmp_path / "run"
    with FakeOpenAI(LoopAnswers()) as server:
        result = runner.invoke(
            app,
            ["sim", "eval", "--model", "openai/fake-agent", "--simulator", "openai/fake-agent", "--limit", "2", "--horizon", "1",
             "--out", str(out), *BUDGET],
            env={"OPENAI_BASE_URL": server.base_url},
        )
    assert result.exit_code == 0, result.output
    roles = _run_json(out)["usage_by_role"]
    assert set(roles) == {"model", "simulator"} and roles["model"]["input_tokens"] > 0 and roles["simulator"]["input_tokens"] > 0


class _SimulatorFailsSometimes:
    """Agent and simulator answers (:class:`LoopAnswers`), but HTTP 500 for every simulator request of
    about half the episodes (by a hash of the request, so its retries fail too); counts the simulator
    requests answered."""

    def __init__(self) -> None:
        self.loop = LoopAnswers()
        self.answered_simulator = 0

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        import hashlib

        if LoopAnswers.is_simulator(messages):
            if hashlib.sha256(str(messages[1]["content"]).encode()).digest()[0] % 2 == 0:
                return 500, "the simulator is down"
            status, text = self.loop(messages)
            self.answered_simulator += status == 200
            return status, text
        return self.loop(messages)


@pytest.mark.parametrize("share", ["0.9", "0"])
def test_a_sim_run_counts_failed_steps_and_fails_above_the_share(share: str, tmp_path: Path, env) -> None:
    """Some simulator calls fail for good: below ``--max-failed-share`` the run succeeds with a warning
    and counts them; above it the run is failed like ``rescue eval``'s. Calls count answered ones only."""
    out = tmp_path / "run"
    responder = _SimulatorFailsSometimes()
    with FakeOpenAI(responder) as server:
        result = runner.invoke(
            app,
            ["sim", "eval", "--model", "baseline/attend", "--simulator", "openai/fake-sim", "--limit", "6", "--horizon", "2",
             "--max-failed-share", share, "--out", str(out), *BUDGET],
            env={"OPENAI_BASE_URL": server.base_url},
        )
    run = _run_json(out)
    counts = run["counts"]
    assert 0 < counts["failed_steps"] < counts["steps"] == 12 and counts["failed_simulator_calls"] > 0
    assert run["calls"]["simulator_total"] == responder.answered_simulator
    if share == "0.9":
        assert result.exit_code == 0 and run["status"] == "success", result.output
        warning = [line for line in result.output.splitlines() if line.startswith("warning:")]
        assert warning and f"{counts['failed_steps']} of 12 episode steps" in warning[0]
        assert (out / "summary.json").exists()
    else:
        _assert_failed(result, out, "sim", "")
        assert "--max-failed-share 0" in run["failure"] and not (out / "summary.json").exists()
