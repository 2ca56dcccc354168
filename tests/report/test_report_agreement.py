"""`rescue agreement`: judge-human agreement against hand-computed values, and the rating sample."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.report.agreement import SAMPLE_COLUMNS, agreement_stats, stratified_sample
from rescue_bench.report.runs import load_run
from tests.factories import run_instances, run_records, write_run

runner = CliRunner()

# Hand-made pairs (human, judge). ER: |d| = 0, 1, 0, 2, 0; VP: |d| = 1, 0, 0, 3.
ER_PAIRS = [(5, 5), (4, 5), (3, 3), (1, 3), (2, 2)]
VP_PAIRS = [(5, 4), (4, 4), (1, 1), (2, 5)]


@pytest.fixture()
def judged_run(tmp_path: Path) -> Path:
    insts = [i for i in run_instances(8, 2, 6) if i["task"] in ("er", "vp")]
    recs = run_records(insts, 0.5, seed=3, invalid_every=11)
    return write_run(tmp_path / "run", recs, "openai/m")


def _human_csv(path: Path, run_dir: Path, extra_rows: list[list[str]] | None = None) -> Path:
    run = load_run(run_dir)
    rows = [["id", "task", "human_score", "notes"]]
    for task, pairs in (("er", ER_PAIRS), ("vp", VP_PAIRS)):
        pool = [r for r in run.records[task] if r["valid"] and r["judge_score"] is not None]
        used: set[str] = set()
        for human, judge in pairs:
            rec = next(r for r in pool if r["judge_score"] == judge and r["id"] not in used)
            used.add(rec["id"])
            rows.append([rec["id"], task, str(human), "ok"])
    rows += extra_rows or []
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


def test_stats_by_hand():
    s = agreement_stats([h for h, _ in ER_PAIRS], [j for _, j in ER_PAIRS])
    assert s.n == 5 and s.exact == pytest.approx(3 / 5) and s.diff1 == pytest.approx(1 / 5)
    assert s.diff2 == pytest.approx(1 / 5) and s.mae == pytest.approx(3 / 5)
    pairs = ER_PAIRS + VP_PAIRS
    s = agreement_stats([h for h, _ in pairs], [j for _, j in pairs])
    assert s.counts == {"exact": 5, "diff1": 2, "diff2": 2, "diff2_exact": 1, "diff3_plus": 1}
    assert s.mae == pytest.approx(7 / 9)
    # quadratic kappa: 1 - sum (i-j)^2 O / sum (i-j)^2 E = 1 - (15/9) / (351/81) = 8/13
    assert s.kappa_quadratic == pytest.approx(8 / 13)
    # ordinal alpha: value counts 3,3,3,4,5; D_o = 2 * 197.5, D_e = 2 * 8343 / 17 -> 1 - 17 * 395 / 16686
    assert s.krippendorff_alpha_ordinal == pytest.approx(1 - 17 * 395 / 16686)


def test_stats_degenerate():
    s = agreement_stats([3, 3, 3], [3, 3, 3])
    assert s.exact == 1.0 and s.mae == 0.0
    assert s.kappa_quadratic is None and s.krippendorff_alpha_ordinal is None
    assert agreement_stats([], []).mae is None


def test_agreement_command(judged_run: Path, tmp_path: Path):
    human = _human_csv(tmp_path / "human.csv", judged_run, extra_rows=[["", "", "", ""]])
    out = tmp_path / "agreement.json"
    for args in (["agreement", str(human), str(judged_run)], ["agreement", "score", str(human), str(judged_run)]):
        result = runner.invoke(app, [*args, "--json", str(out)])
        assert result.exit_code == 0, result.output
        assert "overall" in result.output and "paper T12" in result.output
        data = json.loads(out.read_text())
        assert data["er"]["n"] == 5 and data["vp"]["n"] == 4 and data["overall"]["n"] == 9
        assert data["er"]["exact"] == pytest.approx(0.6) and data["vp"]["mae"] == pytest.approx(1.0)
        assert data["vp"]["diff2"] == pytest.approx(0.25) and data["vp"]["diff3_plus"] == pytest.approx(0.25)
        assert data["overall"]["kappa_quadratic"] == pytest.approx(8 / 13)
        assert data["paper_table12"]["samples"] == 200


def test_unrated_rows_are_skipped_and_counted(judged_run: Path, tmp_path: Path):
    run = load_run(judged_run)
    rec = next(r for r in run.records["er"] if r["judge_score"] is not None)
    path = tmp_path / "h.csv"
    path.write_text(f"id,task,human_score\n{rec['id']},er,\n{rec['id']}x,er,4\n", encoding="utf-8")
    result = runner.invoke(app, ["agreement", str(path), str(judged_run)])
    assert result.exit_code == 2 and "h.csv:3" in result.output  # unknown id, named by line
    path.write_text(f"id,task,human_score\n{rec['id']},er,\n", encoding="utf-8")
    result = runner.invoke(app, ["agreement", str(path), str(judged_run)])
    assert result.exit_code == 0 and "1 row(s) without a human score" in result.output


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("id,task\nx,er\n", "missing column(s) human_score"),
        ("id,task,human_score\n{id},er,6\n", "h.csv:2"),
        ("id,task,human_score\n{id},er,2.5\n", "integer 1-5"),
        ("id,task,human_score\n{id},itp,3\n", "task must be er or vp"),
        ("id,task,human_score\n{id},vp,3\n", "is a er record"),
        ("id,task,human_score\n{id},er,3\n{id},er,4\n", "duplicate id"),
    ],
)
def test_bad_ratings_file(judged_run: Path, tmp_path: Path, content: str, fragment: str):
    run = load_run(judged_run)
    rec = next(r for r in run.records["er"] if r["judge_score"] is not None)
    path = tmp_path / "h.csv"
    path.write_text(content.format(id=rec["id"]), encoding="utf-8")
    result = runner.invoke(app, ["agreement", str(path), str(judged_run)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and fragment in result.output


def test_missing_files(tmp_path: Path, judged_run: Path):
    result = runner.invoke(app, ["agreement", str(tmp_path / "none.csv"), str(judged_run)])
    assert result.exit_code == 2 and "none.csv" in result.output
    result = runner.invoke(app, ["agreement", "sample", str(tmp_path / "nope"), "--out", str(tmp_path / "s.csv")])
    assert result.exit_code == 2 and "nope" in result.output


def test_sample_is_stratified_and_seeded(judged_run: Path, tmp_path: Path):
    out = tmp_path / "sample.csv"
    result = runner.invoke(app, ["agreement", "sample", str(judged_run), "--n", "20", "--seed", "0", "--out", str(out)])
    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames) == SAMPLE_COLUMNS
        rows = list(reader)
    assert len(rows) == 20
    assert sum(r["task"] == "er" for r in rows) == 10 and sum(r["task"] == "vp" for r in rows) == 10
    assert all(r["human_score"] == "" for r in rows)
    assert len({r["id"] for r in rows}) == 20
    run = load_run(judged_run)
    by_id = {r["id"]: r for t in ("er", "vp") for r in run.records[t]}
    for r in rows:
        rec = by_id[r["id"]]
        assert rec["valid"] and rec["judge_score"] == int(r["judge_score"]) and rec["task"] == r["task"]
        assert r["gold"] and r["prediction"]
    # every judge score present among eligible records of a task appears in the sample
    for task in ("er", "vp"):
        present = {r["judge_score"] for r in run.records[task] if r["valid"] and r["judge_score"] is not None}
        assert {int(r["judge_score"]) for r in rows if r["task"] == task} == present
    again = stratified_sample(run, n=20, seed=0)
    assert [r["id"] for r in again] == [r["id"] for r in rows]
    assert [r["id"] for r in stratified_sample(run, n=20, seed=1)] != [r["id"] for r in rows]
    # asking for more than there is gives everything eligible
    eligible = sum(1 for r in by_id.values() if r["valid"] and r["judge_score"] is not None)
    assert len(stratified_sample(run, n=10_000, seed=0)) == eligible


def test_sample_round_trip_through_agreement(judged_run: Path, tmp_path: Path):
    out = tmp_path / "sample.csv"
    assert runner.invoke(app, ["agreement", "sample", str(judged_run), "--n", "12", "--out", str(out)]).exit_code == 0
    with out.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:  # a rater who always agrees with the judge
        r["human_score"] = r["judge_score"]
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(SAMPLE_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    result = runner.invoke(app, ["agreement", str(out), str(judged_run), "--json", str(tmp_path / "a.json")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["overall"]["n"] == 12 and data["overall"]["exact"] == 1.0 and data["overall"]["mae"] == 0.0
    assert data["overall"]["kappa_quadratic"] == pytest.approx(1.0)
    assert data["overall"]["krippendorff_alpha_ordinal"] == pytest.approx(1.0)


def test_only_scores_a_judge_gave_are_compared(tmp_path: Path):
    """An unusable answer (judge score 1 filled in, no judge call) and a judge that failed (flagged, or
    a judge_failed / judge_error field) say nothing about the judge: left out and counted."""
    insts = [i for i in run_instances(8, 2, 6) if i["task"] in ("er", "vp")]
    recs = run_records(insts, 0.5, seed=3, invalid_every=5)
    invalid = [r for r in recs if not r["valid"] and r["task"] == "er"][:2]
    valid = [r for r in recs if r["valid"] and r["task"] == "er" and r["judge_score"] is not None]
    flagged, failed, errored, kept = valid[0], valid[1], valid[2], valid[3]
    flagged.update(judge_score=1, judge_flagged=True)
    failed.update(judge_score=1, judge_failed=True)
    errored.update(judge_score=1, judge_error="connection refused")
    run_dir = write_run(tmp_path / "run", recs, "openai/m")
    assert all(r["judge_score"] == 1 for r in invalid)
    lines = ["id,task,human_score"] + [f"{r['id']},er,1" for r in (*invalid, flagged, failed, errored)]
    lines.append(f"{kept['id']},er,{6 - kept['judge_score'] if kept['judge_score'] != 3 else 1}")
    path = tmp_path / "h.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "a.json"
    result = runner.invoke(app, ["agreement", "score", str(path), str(run_dir), "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["er"]["n"] == 1 and data["er"]["exact"] == 0.0  # only the judged record, which disagrees
    assert data["excluded"] == {"invalid_answer": 2, "judge_failed": 3}
    assert "2 rating(s) of unusable answers" in result.output and "3 rating(s) whose judge call failed" in result.output
