"""``--max-retries N`` means N retries on the wire: N + 1 requests for a call that keeps failing.

The attack: a server that answers every request with 503, counting what it receives. The OpenAI
client that inspect_ai's providers use retries twice on its own inside each of inspect_ai's
attempts, so ``--max-retries 0`` sent 3 requests and the default 5 sent 18 for one call. The
model under evaluation and the judge (another endpoint) are both counted.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.testing import FakeOpenAI, ValidAnswers

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out


def _eval(env: dict[str, str], *args: str):
    return CliRunner().invoke(app, ["eval", "--limit", "1", "--display", "none", "--no-bertscore", *args], env=env)


@pytest.mark.parametrize("retries", [0, 1])
def test_a_failing_call_is_sent_max_retries_plus_one_times(isolated_env, retries: int) -> None:
    with FakeOpenAI(ValidAnswers(), status=503) as server:
        result = _eval(
            {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x", "RESCUE_CACHE_DIR": str(isolated_env / "cache")},
            "--model", "openai/m", "--tasks", "itp", "--max-retries", str(retries), "--out", str(isolated_env / "run"),
        )
        assert result.exit_code == 2, result.output  # no answer: the run is failed
        assert server.stats.requests == retries + 1


def test_the_judges_failing_call_is_sent_max_retries_plus_one_times(isolated_env) -> None:
    with FakeOpenAI(ValidAnswers()) as model, FakeOpenAI(ValidAnswers(), status=503) as judge:
        result = _eval(
            {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "x", "JUDGE_BASE_URL": judge.base_url, "JUDGE_API_KEY": "x",
             "RESCUE_CACHE_DIR": str(isolated_env / "cache")},
            "--model", "openai/m", "--judge", "openai-api/judge/j", "--tasks", "er", "--max-retries", "1",
            "--out", str(isolated_env / "run"),
        )
        assert result.exit_code == 2, result.output  # the judge call failed: the run is failed
        assert model.stats.requests == 1 and judge.stats.requests == 2


def test_the_help_says_what_max_retries_counts() -> None:
    result = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200"})
    help_text = " ".join(result.output.replace("│", " ").split())  # the help's box, its lines joined
    assert "N retries send at most N + 1 requests" in help_text, help_text
