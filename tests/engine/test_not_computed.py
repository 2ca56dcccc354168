"""A score nobody computed is empty everywhere: ``summary.json``, the console table, the inspect
log's metrics and the report's Table 5 and 11; never the floor an unusable answer takes when a
judge (or BERTScore) is part of the run.

The attack: a model whose every ER and VP answer is unusable, run without ``--judge`` and without
BERTScore. The floors of an unusable answer (judge 1, BERTScore 0) were written into every record,
so the run showed "judge 1.00" and "BERTScore 0.0000" although no judge and no BERTScore ran.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.testing import FakeOpenAI
from rescue_bench.testing.answers import is_judge

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

UNUSABLE = "I am not sure what to say here."


def _unusable_but_judged(messages):
    return (200, '{"score": 4}') if is_judge(messages) else (200, UNUSABLE)


def _run(eval_cli, server: FakeOpenAI, out: Path, cache: Path, *extra: str):
    return eval_cli(
        "--model", "openai/m", "--tasks", "er,vp", "--limit", "3", "--no-bertscore", "--max-retries", "1", "--out", str(out), *extra,
        env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x", "RESCUE_CACHE_DIR": str(cache)},
    )


def _table_row(path: Path, run: str) -> dict[str, str]:
    """The row of ``run`` (its model, the second column) in a report table's CSV, by column name."""
    header, *rows = list(csv.reader(path.open(encoding="utf-8")))
    return dict(zip(header, next(r for r in rows if r[1] == run)))


def test_unusable_answers_without_a_judge_show_no_judge_score_anywhere(isolated_env: Path, eval_cli) -> None:
    out = isolated_env / "run"
    with FakeOpenAI(_unusable_but_judged) as server:
        result = _run(eval_cli, server, out, isolated_env / "cache")
        assert result.exit_code == 0, result.output
        judged_out = isolated_env / "judged"
        judged = _run(eval_cli, server, judged_out, isolated_env / "cache", "--judge", "openai/j")
        assert judged.exit_code == 0, judged.output
    summary = json.loads((out / "summary.json").read_text())
    for task, names in (("er", ("judge", "score", "bertscore")), ("vp", ("judge", "bertscore"))):
        assert summary[task]["both"]["invalid_rate"] == 1.0
        assert {n: summary[task]["both"][n] for n in names} == dict.fromkeys(names), task
    # the console: ER's row for both scenarios shows its intensity score and "-" for what nobody computed
    er_rows = result.output.split("ER", 1)[1].split("VP", 1)[0]
    both = next(line for line in er_rows.splitlines() if line.strip().startswith("both"))
    assert "1.00" not in both.replace(" 1.0000 ", " ") and "0.0000" not in both, both
    assert both.count("-") >= 3, both
    # the inspect log: no judge score and no BERTScore among the task's metrics (left out, not 0)
    seen = set()
    for path in (out / "logs").glob("*.eval"):
        log = read_eval_log(str(path), header_only=True)
        seen.add(log.eval.task.rsplit("_", 1)[-1])
        assert log.results is not None
        metrics = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
        if log.eval.task.endswith(("_er", "_vp")):
            assert not {"judge", "bertscore", "not_judged"} & set(metrics) and metrics["invalid_rate"] == 1.0, metrics
    assert {"er", "vp"} <= seen, seen
    # the report's Table 5: the judge and BERTScore cells of the run are empty
    report = isolated_env / "report"
    made = CliRunner().invoke(app, ["report", str(out), "--out", str(report), "--resamples", "20"])
    assert made.exit_code == 0, made.output
    row = _table_row(report / "tables" / "table5.csv", "openai/m")
    judge_cells = {k: v for k, v in row.items() if k.startswith(("ER ", "VP "))}
    assert len(judge_cells) == 4 and set(judge_cells.values()) == {"–"}, judge_cells

    # the control: with a judge in the run, every unusable answer takes the judge's floor, as the paper scores it
    judged_summary = json.loads((judged_out / "summary.json").read_text())
    assert judged_summary["er"]["both"]["judge"] == 1.0 and judged_summary["vp"]["both"]["judge"] == 1.0
    assert judged_summary["er"]["both"]["bertscore"] is None  # no BERTScore in that run either


STATE_SCORES = ("emotion_judge", "emotion_score", "emotion_bertscore", "stance_judge", "stance_bertscore")
"""The agent's state metrics that need the judge or BERTScore."""


def _agent(server: FakeOpenAI, out: Path, cache: Path, *extra: str):
    return CliRunner().invoke(
        app,
        ["agent", "eval", "--model", "openai/m", "--limit", "3", "--no-single-task", "--no-bertscore", "--display", "none",
         "--max-retries", "1", "--out", str(out), *extra],
        env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x", "RESCUE_CACHE_DIR": str(cache)},
    )


def test_an_unusable_agent_state_without_a_judge_shows_no_state_score(isolated_env: Path) -> None:
    """The same attack on ``rescue agent eval``: its state table showed judge 1.00 and BERTScore 0.0000."""
    out, judged_out = isolated_env / "agent", isolated_env / "judged"
    with FakeOpenAI(_unusable_but_judged) as server:
        result = _agent(server, out, isolated_env / "cache")
        assert result.exit_code == 0, result.output
        judged = _agent(server, judged_out, isolated_env / "cache", "--judge", "openai/j")
        assert judged.exit_code == 0, judged.output
    both = json.loads((out / "summary.json").read_text())["agent"]["both"]
    assert both["invalid_state"] == 1.0
    assert {name: both[name] for name in STATE_SCORES} == dict.fromkeys(STATE_SCORES)
    assert both["emotion_intensity"] == 1.0  # no model needed: the floor of an unusable state
    lines = [line for line in result.output.splitlines() if line.strip().startswith(("emotion: judge", "stances: judge", "emotion: BERT"))]
    assert len(lines) == 3 and all("1.00" not in line and "0.0000" not in line for line in lines), lines
    # the control: a judge in the run gives an unusable state the judge's floor
    judged_both = json.loads((judged_out / "summary.json").read_text())["agent"]["both"]
    assert judged_both["emotion_judge"] == 1.0 and judged_both["stance_judge"] == 1.0
    assert judged_both["emotion_bertscore"] is None
