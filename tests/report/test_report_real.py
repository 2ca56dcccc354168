"""End to end on the real release lines: two offline baseline runs, then `rescue report` over them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.report.tables import PAPER_COLUMNS, fmt, metric_kind
from rescue_bench.scoring import HEADLINE

runner = CliRunner()

pytestmark = [pytest.mark.real, pytest.mark.slow]


@pytest.fixture(scope="module")
def real_report(tmp_path_factory, real_data) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("real")
    runs = {}
    for name in ("majority", "random"):
        out = root / name
        result = runner.invoke(
            app,
            ["eval", "--model", f"baseline/{name}", "--data", str(real_data), "--no-bertscore", "--display", "none", "--out", str(out)],
            env={"RESCUE_CACHE_DIR": str(root / "cache")},
        )
        assert result.exit_code == 0, result.output
        runs[name] = out
    report = root / "report"
    # no --data: the data figures use the data recorded in run.json
    result = runner.invoke(app, ["report", str(runs["majority"]), str(runs["random"]), "--out", str(report)])
    assert result.exit_code == 0, result.output
    return report, runs


def test_outputs_exist(real_report):
    report, _ = real_report
    for stem in ("table5", "table11_couple", "table11_family", "headline_ci"):
        for suffix in (".md", ".csv", ".tex"):
            assert (report / "tables" / f"{stem}{suffix}").stat().st_size > 200
    figs = list((report / "figures").glob("*.png"))
    assert len(figs) >= 4
    for f in figs:
        with Image.open(f) as im:
            assert im.format == "PNG" and im.size[0] >= 900
    html = (report / "report.html").read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == len(figs)
    assert (report / "report.json").is_file()


def test_consistent_with_the_runs(real_report, real_data):
    report, runs = real_report
    data = json.loads((report / "report.json").read_text())
    assert [r["model"] for r in data["runs"]] == ["baseline/majority", "baseline/random"]
    assert all(r["baseline"] for r in data["runs"])
    couple = sum(1 for _ in (real_data / "couple_samples.jsonl").open())
    family = sum(1 for _ in (real_data / "family_samples.jsonl").open())
    assert data["data"]["clips"] == {"couple": couple, "family": family}
    assert set(data["data"]["transitions"]) == {"couple", "family"}
    for name, folder in runs.items():
        model = f"baseline/{name}"
        summary = json.loads((folder / "summary.json").read_text())
        for task, per in summary.items():
            for scenario, metrics in per.items():
                for metric in HEADLINE[task]:
                    entry = data["models"][model][task][scenario][metric]
                    assert entry["value"] == pytest.approx(metrics[metric]) if metrics[metric] is not None else entry["value"] is None
                    if entry["value"] is not None:
                        assert entry["ci_low"] - 1e-12 <= entry["value"] <= entry["ci_high"] + 1e-12
                assert data["counts"][model][task][scenario]["n"] == metrics["n"]
        with (report / "tables" / "table5.csv").open(encoding="utf-8") as fh:
            row = next(r for r in csv.DictReader(fh) if r["Model"] == model)
        for col in PAPER_COLUMNS:
            assert row[f"{col.group} {col.label}"] == fmt(summary[col.task]["both"][col.metric], metric_kind(col.task, col.metric))
    # the two baselines answered the same instances: every headline metric with a value is tested
    assert data["tests"] and all(t["n"] > 0 for t in data["tests"])
    assert {t["scenario"] for t in data["tests"]} == {"couple", "family", "both"}
