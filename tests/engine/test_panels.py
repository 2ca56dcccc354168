"""The inspect log of each task carries what our table says: every metric ``summary.json`` has for
the task, as inspect metrics with the same values, so ``inspect view`` shows what ``rescue eval``
prints; a value nobody computed (a judge mean without a judge) is left out, never 0, and no count
reads like a score. The console tables read at 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

TASKS = ("itp", "rpp", "stp", "ssp", "er", "vp")


def _metrics(out: Path) -> dict[str, dict[str, object]]:
    found = {}
    for path in (out / "logs").glob("*.eval"):
        log = read_eval_log(str(path), header_only=True)
        task = log.eval.task.split("/")[-1].removeprefix("rescue_")
        assert log.results is not None and log.results.scores, path
        found[task] = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
    return found


def test_the_log_carries_every_metric_of_the_summary(isolated_env: Path, eval_cli) -> None:
    out = isolated_env / "run"
    result = eval_cli("--model", "baseline/prior", "--out", str(out))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    logged = _metrics(out)
    assert set(logged) == set(TASKS)
    for task in TASKS:
        both = summary[task]["both"]
        metrics = {k: v for k, v in both.items() if k not in ("n", "n_invalid", "answered", "invalid_causes", "trimmed", "left_out")}
        for name, value in metrics.items():
            if value is None:  # nobody judged: not in the log, not 0
                assert name not in logged[task], (task, name, logged[task])
            else:
                assert logged[task].get(name) == pytest.approx(value), (task, name, logged[task].get(name), value)
        assert set(logged[task]) == {k for k, v in metrics.items() if v is not None}, (task, logged[task])
        assert not {"mean", "not_judged", "n", "n_invalid"} & set(logged[task])
    assert "bertscore" in logged["er"] and "bertscore" in logged["vp"]


def test_the_console_tables_read_at_80_columns(isolated_env: Path, eval_cli) -> None:
    result = eval_cli("--model", "baseline/prior", "--out", str(isolated_env / "run"), "--no-bertscore", "--tasks", "itp,stp,ssp,er")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert "…" not in result.stdout  # no header cut short (recall_a… three times)
    headers = [line for line in lines if line.lstrip().startswith("scenario")]
    assert all("R@1" in h and "R@2" in h and "R@3" in h for h in headers[1:3]), headers
    assert "not_judged" not in result.stdout


def test_demo_run_says_it_is_the_demo_and_what_to_run_next(isolated_env: Path, eval_cli) -> None:
    result = eval_cli("--tasks", "itp", "--out", str(isolated_env / "run"))
    assert result.exit_code == 0, result.output
    assert "synthetic demo" in result.output
    assert "--data" in result.output and "rescue eval" in result.output
