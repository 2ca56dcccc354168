"""`rescue report` on closed-loop and fidelity folders: the section, its tables, the manipulation check
and the trajectory figures, recomputed from the records."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.sim import manipulation_check

runner = CliRunner()


def test_report_shows_sim_runs_the_manipulation_check_and_fidelity(tmp_path):
    runs = {}
    for agent in ("baseline/attend", "baseline/silent"):
        out = tmp_path / agent.replace("/", "_")
        assert runner.invoke(app, ["sim", "eval", "--model", agent, "--out", str(out), "--horizon", "3"]).exit_code == 0
        runs[agent] = out
    fid = tmp_path / "fid"
    assert runner.invoke(app, ["sim", "fidelity", "--out", str(fid), "--no-bertscore", "--display", "none"]).exit_code == 0
    rep = tmp_path / "rep"
    result = runner.invoke(app, ["report", str(runs["baseline/attend"]), str(runs["baseline/silent"]), str(fid), "--out", str(rep), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    report = json.loads((rep / "report.json").read_text())
    sim = report["sim"]
    assert [r["name"] for r in sim["runs"]] == ["baseline/attend", "baseline/silent"]
    records = {a: [json.loads(x) for x in (p / "results" / "sim.jsonl").read_text().splitlines()] for a, p in runs.items()}
    [check] = sim["checks"]
    expected = manipulation_check(records["baseline/attend"], records["baseline/silent"])
    assert check["delta"] == expected["delta"] and check["p_value"] == expected["p_value"] < 0.05
    j = sim["metrics"]["baseline/silent"]["both"]["J"]
    assert j["ci_low"] <= j["value"] <= j["ci_high"]
    [fidelity_run] = sim["fidelity_runs"]
    assert sim["fidelity"][fidelity_run["name"]]["both"]["points"] == fidelity_run["points"] > 0
    for name in ("sim_distress.png", "sim_trajectory_1.png", "sim_trajectory_2.png"):
        assert (rep / "figures" / name).stat().st_size > 0
    for name in ("sim_both.md", "sim_manipulation.md", "sim_fidelity.md"):
        assert (rep / "tables" / name).is_file()
    html = (rep / "report.html").read_text()
    assert "Closed-loop evaluation" in html and "Manipulation check" in html
    assert report["runs"] == []  # no six-task rows for closed-loop runs


def test_a_sim_record_without_its_fields_is_a_one_line_report_error(tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["sim", "eval", "--out", str(out), "--horizon", "1"]).exit_code == 0
    path = out / "results" / "sim.jsonl"
    lines = path.read_text().splitlines()
    broken = json.loads(lines[1])
    del broken["valid"]
    path.write_text("\n".join([lines[0], json.dumps(broken), *lines[2:]]) + "\n")
    result = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 2
    assert "sim.jsonl:2" in result.output and "valid" in result.output and "Traceback" not in result.output


def test_every_simulator_a_user_runs_gets_its_fidelity_and_manipulation_check_or_a_warning(tmp_path):
    attend, silent, fid = tmp_path / "attend", tmp_path / "silent", tmp_path / "fid"
    for agent, out in (("baseline/attend", attend), ("baseline/silent", silent)):
        assert runner.invoke(app, ["sim", "eval", "--model", agent, "--out", str(out), "--horizon", "2", "--display", "none"]).exit_code == 0
    assert runner.invoke(app, ["sim", "fidelity", "--out", str(fid), "--no-bertscore", "--display", "none"]).exit_code == 0

    def report(*folders):
        rep = tmp_path / f"rep{len(list(tmp_path.iterdir()))}"
        result = runner.invoke(app, ["report", *map(str, folders), "--out", str(rep), "--resamples", "200"])
        assert result.exit_code == 0, result.output
        return json.loads((rep / "report.json").read_text())["sim"], (rep / "report.html").read_text()

    sim, html = report(attend)  # one run alone: neither the fidelity nor a manipulation check
    [cov] = sim["coverage"]
    assert cov["simulator"] == "scripted" and cov["fidelity"] == [] and cov["checks"] == []
    assert any("scripted" in w and "rescue sim fidelity" in w for w in sim["warnings"])
    assert any("scripted" in w and "manipulation check" in w for w in sim["warnings"])
    assert "rescue sim fidelity" in html and "manipulation check" in html
    sim, html = report(attend, silent, fid)  # both present: no warning, the coverage names them
    [cov] = sim["coverage"]
    assert cov["fidelity"] == ["scripted"] and cov["checks"] == [["baseline/attend", "baseline/silent"]]
    assert sim["warnings"] == []
    assert "Simulator fidelity" in html and "Manipulation check" in html
