"""A correction across every significance test of the report, not only across run pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.metrics import benjamini_hochberg
from rescue_bench.report import analysis as A
from tests.factories import make_run

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()


def test_benjamini_hochberg_by_hand():
    # sorted 0.01, 0.03, 0.04 (m = 3): 3*0.01/1 = 0.03, 3*0.03/2 = 0.045, 3*0.04/3 = 0.04 -> step-up min
    assert benjamini_hochberg({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "b": 0.04, "c": 0.04})
    assert benjamini_hochberg({}) == {}
    with pytest.raises(ValueError):
        benjamini_hochberg({"a": float("nan")})


def test_report_wide_adjustment_counts_every_test():
    def test(task: str, metric: str, scenario: str, p_value: float | None) -> A.PairedTest:
        return A.PairedTest(metric=metric, task=task, scenario=scenario, a="x", b="y", p_value=p_value, n=1, clips=1,
                            value_a=0.0, value_b=0.0, diff=0.0)

    tests = [
        test("itp", "f1", "both", 0.01),
        test("rpp", "accuracy", "couple", 0.02),
        test("stp", "mrr", "family", 0.5),
        test("ssp", "mrr", "family", None),
    ]
    A.adjust_report_wide(tests)
    # Holm over the three defined p-values: 3*0.01, max(0.03, 2*0.02), max(0.04, 0.5)
    assert [t.p_report_holm for t in tests] == pytest.approx([0.03, 0.04, 0.5, None])
    assert [t.p_report_bh for t in tests] == pytest.approx([0.03, 0.03, 0.5, None])


@pytest.mark.parametrize(("correction", "text"), [("holm", "Holm over all"), ("bh", "Benjamini-Hochberg over all")])
def test_report_option_picks_the_p_value_shown(tmp_path: Path, correction: str, text: str):
    make_run(tmp_path / "a", "openai/a", 0.8, n_couple=4, n_family=2, per_clip=3, answer_seed=1)
    make_run(tmp_path / "b", "openai/b", 0.3, n_couple=4, n_family=2, per_clip=3, answer_seed=2)
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out), "--resamples", "100",
                                 "--correction", correction])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["settings"]["correction"] == correction
    key = f"p_report_{correction}"
    shown = [t for t in data["tests"] if t[key] is not None]
    assert shown and all(t[key] >= t["p_value"] for t in shown)
    md = (out / "tables" / "significance.md").read_text(encoding="utf-8") if (out / "tables" / "significance.md").exists() else \
        (out / "significance.md").read_text(encoding="utf-8")
    assert text in md and f"{len(shown)} tests" in md
