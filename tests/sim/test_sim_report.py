"""`rescue report` on closed-loop and fidelity folders: the section, its tables with floor and ceiling
rows, the paired comparisons, the simulator's checks and fidelity, and the trajectory figures,
recomputed from the records."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.sim import paired_comparison

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()


def _sim(tmp_path, agent: str, *args: str):
    out = tmp_path / agent.replace("/", "_")
    result = runner.invoke(app, ["sim", "eval", "--model", agent, "--out", str(out), "--display", "none", *args])
    assert result.exit_code == 0, result.output
    return out


def test_report_shows_sim_runs_floors_ceiling_comparisons_checks_and_fidelity(tmp_path):
    runs = {agent: _sim(tmp_path, agent, "--horizon", "3") for agent in ("baseline/attend", "baseline/group")}
    fid = tmp_path / "fid"
    assert runner.invoke(app, ["sim", "fidelity", "--out", str(fid), "--no-bertscore", "--display", "none"]).exit_code == 0
    rep = tmp_path / "rep"
    result = runner.invoke(app, ["report", *map(str, runs.values()), str(fid), "--out", str(rep), "--resamples", "200", "--correction", "bh"])
    assert result.exit_code == 0, result.output
    report = json.loads((rep / "report.json").read_text())
    sim = report["sim"]
    assert [r["name"] for r in sim["runs"]] == ["baseline/attend", "baseline/group"]
    records = {a: [json.loads(x) for x in (p / "results" / "sim.jsonl").read_text().splitlines()] for a, p in runs.items()}
    [check] = sim["checks"]
    expected = paired_comparison(records["baseline/attend"], records["baseline/group"])
    assert check["delta"] == expected["delta"] and check["p_value"] == expected["p_value"] and check["p_bh"] == check["p_value"]  # one comparison
    group = sim["metrics"]["baseline/group"]["both"]
    # a constant policy never scores above the floor; on the demo warm words to everyone are the optimum: no headline
    assert group["normalised"]["value"] is None or group["normalised"]["value"] <= 1e-9
    assert group["run_floor_J"]["value"] <= group["optimum_J"]["value"]
    both = (rep / "tables" / "sim_both.md").read_text()
    for row in ("normalised J (headline)", "floor: J of the run's best constant policy", "ceiling: J of the optimum", "regret", "floor policy", "interval"):
        assert row in both, row
    for name in ("sim_distress.png", "sim_trajectory_1.png", "sim_trajectory_2.png"):
        assert (rep / "figures" / name).stat().st_size > 0
    for name in ("sim_comparisons.md", "sim_fidelity.md"):
        assert (rep / "tables" / name).is_file()
    model_tables = list((rep / "tables").glob("sim_model_*.md"))
    table = model_tables[0].read_text() if len(model_tables) == 1 else ""
    assert "effect (intensity): hostile words inflame" in table and "assumed" in table and "learned" in table
    assert "vs its best floor, out of sample: next speaker" in table and "affect" in table
    checks = next((rep / "tables").glob("sim_checks_*.md")).read_text()
    assert "words: empathic vs insulting" in checks and "pass" in checks
    fidelity = (rep / "tables" / "sim_fidelity.md").read_text()
    assert "floor: the client who spoke least recently" in fidelity and "does not beat" in fidelity
    html = (rep / "report.html").read_text()
    assert "Closed-loop evaluation" in html and "Paired comparisons" in html and "Simulator checks" in html
    assert report["runs"] == []  # no six-task rows for closed-loop runs


def test_the_report_warns_when_a_run_leaves_little_to_win(tmp_path):
    none = _sim(tmp_path, "baseline/group")  # the default simulator: warm words to everyone are the optimum
    room = _sim(tmp_path, "baseline/attend", "--simulator", "scripted")  # the scripted rules leave room: no warning
    rep = tmp_path / "rep"
    assert runner.invoke(app, ["report", str(none), str(room), "--out", str(rep), "--resamples", "50"]).exit_code == 0
    sim = json.loads((rep / "report.json").read_text())["sim"]
    warned = [w for w in sim["warnings"] if "little to win" in w]
    assert [w.split(":")[0] for w in warned] == ["baseline/group"]  # one warning for the run without room, each scenario named
    assert all(f"{s} 0.0%" in warned[0] for s in ("couple", "family", "both"))
    assert "room: the optimum above the run's floor" in (rep / "tables" / "sim_both.md").read_text()


def test_intervals_need_three_clips_and_say_why(tmp_path):
    out = _sim(tmp_path, "baseline/attend", "--horizon", "2")
    rep = tmp_path / "rep"
    assert runner.invoke(app, ["report", str(out), "--out", str(rep), "--resamples", "200"]).exit_code == 0
    metrics = json.loads((rep / "report.json").read_text())["sim"]["metrics"]["baseline/attend"]
    family = metrics["family"]  # the demo's three family clips: an interval, with its measured coverage
    assert family["clips"] == 3 and family["J"]["ci_low"] is not None and "covers ~76%" in family["interval"]
    two = runner.invoke(app, ["sim", "eval", "--model", "baseline/attend", "--limit", "4", "--horizon", "2", "--out", str(tmp_path / "two"), "--display", "none"])
    assert two.exit_code == 0, two.output
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())["sim"]["couple"]
    assert summary["clips"] == 2 and summary["J"]["ci_low"] is None and summary["interval"].startswith("no interval: 2 clips")


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


def test_every_simulator_a_user_runs_gets_its_fidelity_and_checks_or_a_warning(tmp_path):
    attend = _sim(tmp_path, "baseline/attend", "--horizon", "2")
    scripted = _sim(tmp_path, "baseline/oracle", "--horizon", "2", "--simulator", "scripted")
    fid = tmp_path / "fid"
    assert runner.invoke(app, ["sim", "fidelity", "--out", str(fid), "--no-bertscore", "--display", "none"]).exit_code == 0
    fid_scripted = tmp_path / "fid_scripted"
    assert runner.invoke(app, ["sim", "fidelity", "--simulator", "scripted", "--out", str(fid_scripted), "--no-bertscore",
                               "--display", "none"]).exit_code == 0

    def report(*folders):
        rep = tmp_path / f"rep{len(list(tmp_path.iterdir()))}"
        result = runner.invoke(app, ["report", *map(str, folders), "--out", str(rep), "--resamples", "200"])
        assert result.exit_code == 0, result.output
        return json.loads((rep / "report.json").read_text())["sim"], (rep / "report.html").read_text()

    sim, html = report(attend)  # one run alone: no fidelity, no checks
    [cov] = sim["coverage"]
    assert cov["simulator"] == "fitted" and cov["fidelity"] == [] and cov["checks"] == []
    assert any("fitted" in w and "rescue sim fidelity" in w for w in sim["warnings"])
    assert "rescue sim fidelity" in html
    sim, html = report(attend, scripted, fid, fid_scripted)
    covs = {c["simulator"]: c for c in sim["coverage"]}
    assert covs["fitted"]["checks"] == covs["fitted"]["fidelity"] and covs["scripted"]["checks"] == covs["scripted"]["fidelity"]
    assert not any("no fidelity run" in w for w in sim["warnings"])
    # the scripted smoke test reads the label and not the words: the report says so
    assert any(w.startswith("simulator scripted fails the check 'label") for w in sim["warnings"])
    assert any(w.startswith("simulator scripted fails the check 'words") for w in sim["warnings"])
    assert not any(w.startswith("simulator fitted fails the check 'label") for w in sim["warnings"])
    assert any("scripted does not beat" in w for w in sim["warnings"])
    assert "Simulator fidelity" in html and "Simulator checks" in html
