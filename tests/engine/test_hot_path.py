"""What the speed work on ``rescue eval``'s hot path must keep: logs, cache keys, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.data.load import demo_path, load_clips
from rescue_bench.engine.inspect_tasks import SAMPLE_METADATA, instance_sample
from rescue_bench.tasks import BuildOptions, build_instances
from rescue_bench.testing import FakeOpenAI, ValidAnswers
from tests.factories import read_records

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()


def _eval(server: FakeOpenAI, data: Path, out: Path, cache: Path, *extra: str):
    return runner.invoke(
        app,
        ["eval", "--data", str(data), "--model", "openai/fake-model", "--judge", "openai/fake-judge", "--workers", "1",
         "--display", "none", "--no-bertscore", "--max-connections", "4", "--out", str(out), *extra],
        env={"OPENAI_BASE_URL": server.base_url, "RESCUE_CACHE_DIR": str(cache), "INSPECT_CACHE_DIR": None},
    )


def test_a_sample_carries_the_prompt_and_where_it_comes_from() -> None:
    instance = build_instances(load_clips(None), "rpp", BuildOptions())[0]
    sample = instance_sample(instance)
    assert sample.metadata == {key: getattr(instance, key) for key in SAMPLE_METADATA}
    assert set(sample.metadata) == {"task", "sample_id", "scenario", "row"}
    assert json.loads(str(sample.target)) == instance.gold
    system, user = sample.input  # type: ignore[misc]
    assert not user.metadata  # the prompt alone keys the response cache; the baseline finds the instance in its scope


def test_logs_open_with_every_sample_and_its_record(isolated_env: Path) -> None:
    """``inspect view`` reads what ``read_eval_log`` reads: every sample, its messages, its record."""
    from inspect_ai.log import read_eval_log

    out = isolated_env / "run"
    with FakeOpenAI(ValidAnswers()) as server:
        result = _eval(server, demo_path(), out, isolated_env / "cache", "--limit", "3", "--tasks", "rpp,vp")
        assert result.exit_code == 0, result.output
    records = {r["id"]: r for r in read_records(out)}
    logs = [read_eval_log(str(p)) for p in sorted((out / "logs").glob("*.eval"))]
    assert len(logs) == 2 and all(log.status == "success" for log in logs)
    seen = {}
    for log in logs:
        for sample in log.samples or []:
            seen[sample.id] = sample
            assert set(sample.metadata) == set(SAMPLE_METADATA)
            assert [m.role for m in sample.messages[:2]] == ["system", "user"] and sample.output.completion
            assert sample.scores["rescue_scorer"].metadata["record"] == records[sample.id]
    assert set(seen) == set(records) and len(records) == 6


def test_no_log_samples_still_writes_readable_headers(isolated_env: Path) -> None:
    from inspect_ai.log import read_eval_log

    out = isolated_env / "run"
    with FakeOpenAI(ValidAnswers()) as server:
        result = _eval(server, demo_path(), out, isolated_env / "cache", "--limit", "2", "--tasks", "itp", "--no-log-samples")
        assert result.exit_code == 0, result.output
    [log] = [read_eval_log(str(p)) for p in (out / "logs").glob("*.eval")]
    assert log.status == "success" and not log.samples and log.results is not None
    assert len(read_records(out)) == 2


def test_copies_of_a_clip_ask_each_request_once(isolated_env: Path) -> None:
    """Two instances whose prompts are the same (a clip copied under a new id) are one request: the
    response cache keys a request by what it sends; each instance still has its record."""
    line = demo_path().read_text(encoding="utf-8").splitlines()[0]
    clip = json.loads(line)
    copy = dict(clip, sample_id=clip["sample_id"] + "~copy")
    data = isolated_env / "copies.jsonl"
    data.write_text(json.dumps(clip) + "\n" + json.dumps(copy) + "\n", encoding="utf-8")
    instances = len(build_instances(load_clips([data]), "stp", BuildOptions()))
    assert instances >= 2
    with FakeOpenAI(ValidAnswers()) as server:
        result = _eval(server, data, isolated_env / "run", isolated_env / "cache", "--tasks", "stp")
        assert result.exit_code == 0, result.output
        assert server.stats.requests == instances // 2
    records = read_records(isolated_env / "run")
    assert len(records) == instances and len({r["sample_id"] for r in records}) == 2


def test_scoring_and_the_inspect_entry_point_do_not_import_scikit_learn() -> None:
    """scikit-learn (with scipy) costs about a second; a run needs it only to summarise."""
    code = (
        "import sys, inspect_ai, rescue_bench.engine._registry, rescue_bench.scoring, rescue_bench.engine.run; "
        "print(sorted(m for m in ('sklearn', 'scipy', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
