"""`rescue report` on synthetic run folders: tables, CIs, paired tests, figures, report.json, HTML."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.report import analysis as A
from rescue_bench.report.runs import load_runs
from rescue_bench.report.tables import MISSING, PAPER_COLUMNS, fmt, metric_kind
from rescue_bench.scoring import HEADLINE
from tests.factories import make_run

runner = CliRunner()
CHROMIUM = Path("/usr/bin/chromium")
GOOD, BAD = "openai/good-model", "openai/weak-model"


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    """Four runs: a clearly better model, a weak one, an identical copy of the good one (same model
    string, so names must be disambiguated) and a baseline; then `rescue report` over them."""
    root = tmp_path_factory.mktemp("runs")
    make_run(root / "good", GOOD, 0.85, answer_seed=1)
    make_run(root / "weak", BAD, 0.25, answer_seed=2)
    shutil.copytree(root / "good", root / "good_copy")
    make_run(root / "base", "baseline/majority", 0.4, answer_seed=3, judge=None, usage={})
    out = root / "report"
    result = runner.invoke(
        app,
        ["report", str(root / "base"), str(root / "good"), str(root / "weak"), str(root / "good_copy"),
         "--out", str(out), "--resamples", "1000", "--seed", "0"],
    )
    assert result.exit_code == 0, result.output
    return out


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _summary(report_dir: Path, folder: str) -> dict:
    return json.loads((report_dir.parent / folder / "summary.json").read_text())


@pytest.mark.slow
def test_tables_in_three_formats(report_dir: Path):
    for stem in ("table5", "table11_couple", "table11_family", "headline_ci", "invalid_rates", "usage"):
        for suffix in (".md", ".csv", ".tex"):
            path = report_dir / "tables" / f"{stem}{suffix}"
            assert path.is_file() and path.stat().st_size > 100, path
    tex = (report_dir / "tables" / "table5.tex").read_text()
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "\\textsuperscript{\\dag}" in tex
    md = (report_dir / "tables" / "table5.md").read_text()
    assert "†" in md and "not comparable" in md


def test_table_numbers_equal_summary_json(report_dir: Path):
    report = json.loads((report_dir / "report.json").read_text())
    names = {r["path"].rsplit("/", 1)[-1]: r["name"] for r in report["runs"]}
    for stem, scenario in (("table5", "both"), ("table11_couple", "couple"), ("table11_family", "family")):
        rows = {r["Model"]: r for r in _read_csv(report_dir / "tables" / f"{stem}.csv")}
        for folder, name in names.items():
            summary = _summary(report_dir, folder)
            row = rows[name]
            for col in PAPER_COLUMNS:
                header = f"{col.group} {col.label}"
                value = summary[col.task][scenario][col.metric]
                kind = metric_kind(col.task, col.metric)
                assert row[header] == fmt(value, kind), (stem, name, header)
                if value is None:
                    assert row[header] == MISSING
                else:
                    scale = 100.0 if kind == "pct" else 1.0
                    tol = 5.1e-5 if kind == "bert" else 5.1e-3  # half a unit of the last printed digit
                    assert float(row[header]) == pytest.approx(value * scale, abs=tol)


def test_row_order_and_paper_rows(report_dir: Path):
    rows = _read_csv(report_dir / "tables" / "table5.csv")
    groups = [r["Group"] for r in rows]
    models = [r["Model"] for r in rows]
    # runs, then baselines, then the paper's ten models and their average
    assert groups.index("Baselines") > max(i for i, g in enumerate(groups) if g == "This evaluation")
    assert models[groups.index("Baselines")] == "baseline/majority"
    paper = [r for r in rows if r["Group"].startswith("Paper")]
    assert len(paper) == 11 and paper[-1]["Model"] == "Average (paper)"
    assert paper[-1]["ITP F1"] == "82.62†" and paper[-1]["RPP Acc"] == "40.45" and paper[-1]["VP BERTScore"] == "0.8610"
    assert all(r["ITP P"].endswith("†") for r in paper)
    # the baseline has no judge: ER/VP judge columns are missing, shown as an en dash
    base = rows[groups.index("Baselines")]
    assert base["ER Judge (/5)"] == MISSING


def test_same_model_string_is_disambiguated(report_dir: Path):
    report = json.loads((report_dir / "report.json").read_text())
    names = [r["name"] for r in report["runs"]]
    assert len(set(names)) == len(names) == 4
    assert f"{GOOD} (good)" in names and f"{GOOD} (good_copy)" in names
    assert [r["baseline"] for r in report["runs"]] == [False, False, False, True]


def test_report_json_structure(report_dir: Path):
    report = json.loads((report_dir / "report.json").read_text())
    assert set(report) >= {"models", "tests", "clips", "clips_all", "counts", "majority_share", "per_label", "confusion", "position", "usage", "settings"}
    assert report["clips_all"] == {"couple": 12, "family": 4, "both": 16}
    assert report["settings"]["resamples"] == 1000
    for per_task in report["models"].values():
        assert set(per_task) == set(HEADLINE)
        for task, per_s in per_task.items():
            assert set(per_s) == {"couple", "family", "both"}
            for metrics in per_s.values():
                assert list(metrics) == list(HEADLINE[task])
                for entry in metrics.values():
                    assert {"value", "ci_low", "ci_high", "clips", "chance"} <= set(entry) <= {"value", "ci_low", "ci_high", "clips", "chance", "constant"}
    for t in report["tests"]:
        assert set(t) >= {"metric", "task", "scenario", "a", "b", "p_value", "p_holm", "n"}
        assert 0 < t["p_value"] <= t["p_holm"] <= 1
    maj = report["majority_share"][f"{GOOD} (good)"]["rpp"]["couple"]
    assert maj["label"] == "pursue_withdraw" and 0 < maj["share"] < 1
    assert report["usage"] and report["usage"][0]["total_tokens"] == 1540


def test_cis_contain_the_point_estimate(report_dir: Path):
    report = json.loads((report_dir / "report.json").read_text())
    checked = 0
    for per_task in report["models"].values():
        for per_s in per_task.values():
            for metrics in per_s.values():
                for e in metrics.values():
                    if e["value"] is None:
                        assert e["ci_low"] is None and e["ci_high"] is None
                        continue
                    assert e["ci_low"] - 1e-12 <= e["value"] <= e["ci_high"] + 1e-12
                    checked += 1
    assert checked > 200
    good = report["models"][f"{GOOD} (good)"]
    # the few family clips give intervals of visible width, and the clip counts are shown beside them
    for task, metric in (("rpp", "accuracy"), ("ssp", "recall_at_1"), ("er", "judge")):
        assert good[task]["family"][metric]["ci_high"] - good[task]["family"][metric]["ci_low"] > 0.05, (task, metric)
    header = (report_dir / "tables" / "headline_ci.csv").read_text().splitlines()[0]
    assert "Couple (12 clips; 95% CI covers ~92%)" in header and "Family (4 clips; 95% CI covers ~81%)" in header
    assert "Both (16 clips;" in header
    md = (report_dir / "tables" / "headline_ci.md").read_text()
    assert "majority-class share" in md
    # STP also shows the majority role's share, with the role named in each of the three scenarios
    role_row = next(line for line in md.splitlines() if "majority-role share" in line)
    assert role_row.count(" (individual)") + role_row.count(" (group)") == 3, role_row


def test_cis_shrink_with_more_clips(tmp_path: Path):
    small = load_runs([make_run(tmp_path / "small", GOOD, 0.6, n_couple=8, n_family=3)])[0]
    large = load_runs([make_run(tmp_path / "large", GOOD, 0.6, n_couple=120, n_family=30)])[0]
    width = {}
    for key, run in (("small", small), ("large", large)):
        cis = A.headline_cis(run.records, n_resamples=1000, seed=0)
        width[key] = {
            (t, m): (cis[t]["both"][m].ci_high or 0.0) - (cis[t]["both"][m].ci_low or 0.0)
            for t in HEADLINE for m in HEADLINE[t] if cis[t]["both"][m].value is not None
        }
    assert width["small"].keys() == width["large"].keys()
    for key in width["small"]:
        assert width["large"][key] < width["small"][key], key


def test_significance(report_dir: Path):
    report = json.loads((report_dir / "report.json").read_text())
    tests = report["tests"]
    good, copy, weak = f"{GOOD} (good)", f"{GOOD} (good_copy)", BAD

    def find(a, b, task, metric, scenario="both"):
        for t in tests:
            if t["task"] == task and t["metric"] == metric and t["scenario"] == scenario and {t["a"], t["b"]} == {a, b}:
                return t
        raise AssertionError((a, b, task, metric))

    for task, metric in (("rpp", "accuracy"), ("stp", "recall_at_1"), ("ssp", "mrr"), ("itp", "f1"), ("er", "judge"), ("vp", "judge")):
        t = find(good, weak, task, metric)
        assert t["p_holm"] < 0.01, t
        assert (t["diff"] > 0) == (t["a"] == good)
    for t in tests:
        if {t["a"], t["b"]} == {good, copy}:
            assert t["p_value"] > 0.5 and t["p_holm"] > 0.5 and t["diff"] == 0, t
    # Holm is applied per (task, metric, scenario) across the pairs: 6 pairs of 4 runs
    family = [t for t in tests if (t["task"], t["metric"], t["scenario"]) == ("rpp", "accuracy", "both")]
    assert len(family) == 6
    ordered = sorted(family, key=lambda t: t["p_value"])
    assert ordered[0]["p_holm"] == pytest.approx(min(1.0, 6 * ordered[0]["p_value"]))
    md = (report_dir / "tables" / "significance.md").read_text()
    assert "RPP accuracy, Both" in md and good in md


def test_per_label_confusion_invalid_usage(report_dir: Path):
    report = json.loads((report_dir / "report.json").read_text())
    name = f"{GOOD} (good)"
    per = report["per_label"][name]
    assert set(per) == {"rpp", "stp", "ssp"}
    rpp = per["rpp"]["couple"]
    assert sum(v["n"] for v in rpp.values()) == report["counts"][name]["rpp"]["couple"]["n"]
    conf = report["confusion"][name]["rpp"]["couple"]
    assert sum(map(sum, conf["matrix"])) == report["counts"][name]["rpp"]["couple"]["n"]
    # diagonal = correct top-1 answers, so it matches the accuracy
    diag = sum(conf["matrix"][i][conf["columns"].index(lab)] for i, lab in enumerate(conf["labels"]))
    acc = report["models"][name]["rpp"]["couple"]["accuracy"]["value"]
    assert diag == round(acc * report["counts"][name]["rpp"]["couple"]["n"])
    roles = report["confusion"][name]["stp_role"]["both"]
    assert roles["labels"] == ["group", "individual"]
    assert set(report["stp_roles"][name]["both"]) == {"group", "individual"}
    for text in ("per_label.md", "confusion.md"):
        assert (report_dir / "tables" / text).stat().st_size > 200
    invalid = _read_csv(report_dir / "tables" / "invalid_rates.csv")
    assert {r["Run"] for r in invalid} == set(report["counts"])


def test_figures_are_valid_pngs(report_dir: Path):
    figs = sorted((report_dir / "figures").glob("*.png"))
    names = {p.name for p in figs}
    # demo data (run.json settings.data is null): all data figures are drawn
    for expected in ("fig3_transitions_couple.png", "fig4_rpp_accuracy_by_position.png", "fig5_pattern_by_position_couple.png",
                     "fig6_relation_patterns.png", "fig7_strategies.png", "fig8_targets.png", "fig9_utterance_types.png",
                     "rpp_per_label_couple.png"):
        assert expected in names, names
    for path in figs:
        assert path.stat().st_size > 10_000, path
        with Image.open(path) as im:
            im.verify()
        with Image.open(path) as im:
            assert im.format == "PNG"
            w, h = im.size
            assert w >= 900 and h >= 300  # 6.5 in at 150 dpi
            arr = np.asarray(im.convert("L"), dtype=float)
            assert arr.std() > 5


def test_html_is_self_contained(report_dir: Path):
    text = (report_dir / "report.html").read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("data:image/png;base64,") == len(list((report_dir / "figures").glob("*.png")))
    lowered = text.lower()
    for bad in ("<script", "<link", "src=\"http", "href=\"http", "url(http", "@import"):
        assert bad not in lowered, bad
    assert "<table>" in text and "Table 5 layout" in text


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium not installed")
def test_html_renders_in_headless_chromium(report_dir: Path, tmp_path: Path):
    shot = tmp_path / "shot.png"
    cmd = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,1600",
        (report_dir / "report.html").resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert shot.is_file(), proc.stderr[-2000:]
    with Image.open(shot) as im:
        arr = np.asarray(im.convert("L"), dtype=float)
    assert arr.shape[0] >= 1000 and arr.shape[1] >= 1000
    assert arr.std() > 20
    assert (arr < 200).sum() > 20_000  # text and table rules, not a blank page
