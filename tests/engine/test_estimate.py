"""The dry run counts every mode that adds calls, and for a model whose answers are usable it is what
the run then sends.

The attack: ``--on-overflow trim`` against a small window. The estimate said one call per instance
and at most 32 output tokens each; the run made 3.6 calls per instance and used more output tokens
than the "at most". Here the loopback server's window counts tokens as the estimate does (4
characters each), so with ``--context-window`` the expected calls and prompt characters must equal
what the server received, per role, and the "at most" figures must hold.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.testing import ContextWindow, FakeOpenAI, ValidAnswers
from rescue_bench.testing.answers import is_judge

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

N_CTX = 1200
"""The window of the fake server, in its tokens (4 characters): some of the demo's prompts with every earlier row overflow."""


def _chars(body: dict) -> int:
    return sum(len(str(m.get("content", ""))) for m in body["messages"])


@pytest.mark.parametrize("policy", ["trim", "wrong"])
def test_with_the_window_known_the_estimate_is_what_the_server_received(isolated_env: Path, policy: str) -> None:
    window = ContextWindow(ValidAnswers(), N_CTX)
    out = isolated_env / "run"
    args = ["eval", "--model", "openai/m", "--judge", "openai/m", "--tasks", "rpp,er", "--context", "-1", "--on-overflow", policy,
            "--context-window", str(N_CTX), "--display", "none", "--no-bertscore", "--max-connections", "4", "--out", str(out)]
    with FakeOpenAI(window, record_bodies=True) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x", "RESCUE_CACHE_DIR": str(isolated_env / "cache")}
        dry = CliRunner().invoke(app, [*args, "--dry-run"], env=env)
        assert dry.exit_code == 0 and server.stats.requests == 0, dry.output
        result = CliRunner().invoke(app, args, env=env)
        assert result.exit_code == 0, result.output
        bodies = list(server.stats.bodies)
    assert window.refused > 0  # prompts did overflow
    estimate = json.loads((out / "run.json").read_text())["estimate"]["by_role"]
    for role, mine in (("model", lambda b: not is_judge(b["messages"])), ("judge", lambda b: is_judge(b["messages"]))):
        sent = [b for b in bodies if mine(b)]
        answered = [b for b in sent if window.tokens(b["messages"]) <= N_CTX]  # a refused prompt costs nothing
        assert estimate[role]["expected_calls"] == len(sent), role
        if role == "model":  # the very prompts
            assert estimate[role]["prompt_chars"] == sum(_chars(b) for b in answered)
        else:  # the judge's prompt holds the answer, which the gold stands in for
            assert estimate[role]["prompt_chars"] == pytest.approx(sum(_chars(b) for b in answered), rel=0.05)
        assert estimate[role]["calls"] >= len(sent), role  # at most
    # the dry run printed the same figures before anything was sent
    assert f"{sum(e['expected_calls'] for e in estimate.values()):,} calls" in " ".join(dry.output.split())
    usage = json.loads((out / "run.json").read_text())["usage_by_role"]
    assert all(usage[r]["output_tokens"] <= estimate[r]["max_output_tokens"] for r in usage)


def test_without_the_window_trim_still_bounds_the_calls(isolated_env: Path) -> None:
    """Without --context-window every prompt is expected to fit, and says so; the calls at most still
    count each prompt's trimming, so the run stays within them."""
    window = ContextWindow(ValidAnswers(), N_CTX)
    out = isolated_env / "run"
    args = ["eval", "--model", "openai/m", "--tasks", "rpp", "--context", "-1", "--on-overflow", "trim", "--max-tokens", "32",
            "--display", "none", "--no-bertscore", "--out", str(out)]
    with FakeOpenAI(window) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x", "RESCUE_CACHE_DIR": str(isolated_env / "cache")}
        dry = CliRunner().invoke(app, [*args, "--dry-run"], env=env)
        assert dry.exit_code == 0, dry.output
        result = CliRunner().invoke(app, args, env=env)
        assert result.exit_code == 0, result.output
        requests = server.stats.requests
    run = json.loads((out / "run.json").read_text())
    model = run["estimate"]["by_role"]["model"]
    instances = run["counts"]["instances"]
    assert model["expected_calls"] == instances < requests <= model["calls"]
    assert run["usage_by_role"]["model"]["output_tokens"] <= model["max_output_tokens"]
    assert "--context-window" in " ".join(dry.output.split())
