"""Intervals that say what they are: the level named is the level computed, an interval from one clip
is unavailable (not certainty), every scenario column carries its clip count and a coverage note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.metrics import MIN_CLUSTERS_FOR_INTERVAL, coverage_note
from rescue_bench.report.analysis import MetricCI
from rescue_bench.report.tables import fmt_ci
from tests.factories import make_run

runner = CliRunner()


@pytest.fixture(scope="module")
def one_family_clip(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("intervals")
    make_run(root / "run", "openai/m", 0.6, n_couple=6, n_family=1, per_clip=4)
    out = root / "report"
    result = runner.invoke(app, ["report", str(root / "run"), "--out", str(out), "--resamples", "200", "--confidence", "0.9"])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_titles_follow_the_confidence_level(one_family_clip: Path):
    md = (one_family_clip / "tables" / "headline_ci.md").read_text(encoding="utf-8")
    assert "95%" not in md and "90%" in md.splitlines()[0]
    html = (one_family_clip / "report.html").read_text(encoding="utf-8")
    assert "Headline metrics with 90% bootstrap" in html and "with 95% bootstrap" not in html


def test_one_clip_gives_no_interval(one_family_clip: Path):
    assert MIN_CLUSTERS_FOR_INTERVAL == 2
    data = json.loads((one_family_clip / "report.json").read_text(encoding="utf-8"))
    (cis,) = data["models"].values()
    family = cis["itp"]["family"]["f1"]
    assert family["value"] is not None and family["ci_low"] is None and family["ci_high"] is None
    assert cis["itp"]["couple"]["f1"]["ci_low"] is not None
    md = (one_family_clip / "tables" / "headline_ci.md").read_text(encoding="utf-8")
    assert "no interval" in md
    header = next(line for line in md.splitlines() if line.startswith("| Task"))
    assert "Family (1 clip" in header and "Couple (6 clips" in header


def test_every_scenario_column_carries_a_coverage_note(one_family_clip: Path):
    md = (one_family_clip / "tables" / "headline_ci.md").read_text(encoding="utf-8")
    header = next(line for line in md.splitlines() if line.startswith("| Task"))
    assert "no interval" in header.split("|")[4]  # the family column, one clip
    assert "covers" in header.split("|")[3]  # the couple column: measured coverage with 6 clips
    assert "bench/bootstrap_coverage.py" in md


def test_coverage_note_by_hand():
    assert "no interval" in coverage_note(1, 0.95)
    assert coverage_note(2, 0.95) == "95% CI covers ~48%"
    assert coverage_note(17, 0.95) != coverage_note(2, 0.95)
    assert "not measured" in coverage_note(6, 0.8)


def test_fmt_ci_says_unavailable():
    assert fmt_ci(MetricCI(value=1.0, ci_low=None, ci_high=None, clips=1), "pct") == "100.00 [no interval: 1 clip]"
    assert fmt_ci(MetricCI(value=0.5, ci_low=0.4, ci_high=0.6), "pct") == "50.00 [40.00, 60.00]"


def test_cells_carry_their_chance_level(one_family_clip: Path):
    md = (one_family_clip / "tables" / "headline_ci.md").read_text(encoding="utf-8")
    stp_r3 = next(line for line in md.splitlines() if line.startswith("| STP | recall_at_3"))
    couple = stp_r3.split("|")[3]
    assert "chance 100.00" in couple  # two clients and the group label: any valid ranking has the gold in its top 3
    assert any(line.startswith("| ITP | f1 of always yes / always no") for line in md.splitlines())
    data = json.loads((one_family_clip / "report.json").read_text(encoding="utf-8"))
    (cis,) = data["models"].values()
    assert cis["stp"]["couple"]["recall_at_3"]["chance"] == pytest.approx(1.0)
    assert cis["itp"]["both"]["f1"]["constant"]["no"] == 0.0


@pytest.mark.slow
def test_tables_beside_the_paper_name_each_bertscore_backbone(tmp_path: Path):
    run = make_run(tmp_path / "run", "openai/m", 0.6, n_couple=3, n_family=2, per_clip=3)
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    info["bertscore_backbone"] = "/opt/models/all-MiniLM-L6-v2"
    (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    bare = make_run(tmp_path / "bare", "openai/n", 0.6, n_couple=3, n_family=2, per_clip=3, answer_seed=4)
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", str(run), str(bare), "--out", str(out), "--resamples", "50"])
    assert result.exit_code == 0, result.output
    for stem in ("table5", "table11_couple", "table11_family"):
        md = (out / "tables" / f"{stem}.md").read_text(encoding="utf-8")
        assert "BERTScore backbone" in md, stem
        assert "openai/m: all-MiniLM-L6-v2" in md and "openai/n: not recorded" in md
        assert "paper: not stated" in md
