"""Overlap review from the command line, in subprocesses: overlap assignment, `rescue review agreement`,
export precedence and `--annotator`, the upgrade of a database without overlap tables by `init`, and the
questionnaire round trip `agreement sample` -> `import-ratings` -> rating -> `export-ratings` ->
`agreement score` (Table 12 beside the paper's figures, with human-human agreement)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.factories import run_instances, run_records, write_run
from tests.review.helpers import COUPLE, DEMO, rescue, save

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

ENV = {"RESCUE_REVIEW_PASSWORD": "a long password"}
A, B = "attack_attack", "withdraw_withdraw"


def _db(folder: Path):
    from rescue_bench.review.db import Database

    return Database(f"sqlite:///{folder / 'rescue_review.db'}")


def _save(db, who: str, sample_id: str, position: int, fields: dict) -> None:
    from rescue_bench.review import edits
    from rescue_bench.review.models import Segment
    from rescue_bench.review.users import get_user

    with db.write() as s:
        user = get_user(s, who)
        seg = s.scalars(select(Segment).where(Segment.sample_id == sample_id)).one()
        version = edits.read_row(s, user, seg, position).version
        save(s, user, seg, position, version=version, fields=fields, reviewed=True)


def _team(folder: Path, *names: str) -> None:
    assert rescue("review", "init", cwd=folder).returncode == 0
    assert rescue("review", "users", "add", "lead", "--role", "admin", cwd=folder, env=ENV).returncode == 0
    for name in names:
        assert rescue("review", "users", "add", name, cwd=folder, env=ENV).returncode == 0


def test_overlap_agreement_adjudication_and_export_from_the_command_line(tmp_path: Path):
    _team(tmp_path, "ann", "ben")
    assert rescue("review", "import", str(DEMO), cwd=tmp_path).returncode == 0
    out = rescue("review", "assign", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.startswith("error: give --user") and len(out.stderr.splitlines()) == 1
    out = rescue("review", "assign", "--overlap", "2", "--user", "ann", "--user", "ben", "--segment", COUPLE[0], "--segment", COUPLE[1], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "4 assignment(s) made over 2 segment(s); 2 switched to independent copies" in out.stdout
    assert "rows per annotator: ann 37, ben 37" in out.stdout  # 19 + 18 rows each
    assert rescue("review", "settings", "--reveal", "never", cwd=tmp_path).stdout.strip() == "reveal: never"
    assert rescue("review", "settings", "--reveal", "sometimes", cwd=tmp_path).returncode == 2
    # two annotators, two segments: the relation patterns of the services test (alpha 8/15, Cohen 1/2)
    db = _db(tmp_path)
    for (sid, pos), (a, b) in {(COUPLE[0], 2): (A, A), (COUPLE[0], 3): (A, B), (COUPLE[1], 2): (B, B), (COUPLE[1], 3): (B, B)}.items():
        for who, pattern in (("ann", a), ("ben", b)):
            _save(db, who, sid, pos, {"relation_pattern": pattern, "internal_emotion": [], "viewpoints_attitudes": []})
    out = rescue("review", "agreement", "--json", "--resamples", "200", "--no-bertscore", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    pattern = next(f for f in report["fields"] if f["field"] == "relation_pattern" and f["scope"] == "all")
    assert pattern["alpha"] == pytest.approx(8 / 15) and pattern["cohen_kappa"] == pytest.approx(0.5) and pattern["units"] == 4
    assert pattern["alpha_ci"] is not None and pattern["segments"] == 2
    table = rescue("review", "agreement", "--resamples", "100", "--no-bertscore", cwd=tmp_path)
    assert table.returncode == 0 and "relation_pattern" in table.stdout and "0.533" in table.stdout and "Draft vs human" in table.stdout
    # adjudicate one row, then export: the adjudicated value, the draft where two annotators are not
    # adjudicated, and each annotator's own version on request
    from rescue_bench.review import adjudication
    from rescue_bench.review.models import Segment
    from rescue_bench.review.users import get_user

    with db.write() as s:
        seg = s.scalars(select(Segment).where(Segment.sample_id == COUPLE[0])).one()
        adjudication.adjudicate_row(s, get_user(s, "lead"), seg, 3, version=0, take={"relation_pattern": "ben"})
    db.dispose()
    drafts = {json.loads(line)["sample_id"]: json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()}
    refused = rescue("review", "export", "--out", "final.jsonl", cwd=tmp_path)  # rows 2 of both segments await adjudication
    assert refused.returncode == 2 and f"2 segment(s) await adjudication (annotators reviewed rows nobody adjudicated): {COUPLE[0]}, {COUPLE[1]}" in refused.stderr
    assert not (tmp_path / "final.jsonl").exists()
    assert rescue("review", "export", "--out", "final.jsonl", "--mark-unadjudicated", cwd=tmp_path).returncode == 0
    final = {json.loads(line)["sample_id"]: json.loads(line) for line in (tmp_path / "final.jsonl").read_text(encoding="utf-8").splitlines()}
    assert final[COUPLE[0]]["rows"][2]["relation_pattern"] == B
    assert final[COUPLE[0]]["rows"][1] == drafts[COUPLE[0]]["rows"][1]
    assert final[COUPLE[0]]["review_status"] == "awaiting_adjudication"
    assert rescue("review", "export", "--annotator", "ann", "--out", "ann.jsonl", cwd=tmp_path).returncode == 0
    ann = [json.loads(line) for line in (tmp_path / "ann.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["sample_id"] for c in ann] == [COUPLE[0], COUPLE[1]] and ann[0]["rows"][2]["relation_pattern"] == A
    out = rescue("review", "export", "--annotator", "nobody", "--out", "x.jsonl", cwd=tmp_path)
    assert out.returncode == 2 and "no such user: nobody" in out.stderr


def test_init_upgrades_an_issue_12_database(tmp_path: Path):
    from alembic import command

    from rescue_bench.review.db import _alembic_config, head_revision

    db = _db(tmp_path)
    with db.engine.begin() as connection:
        command.upgrade(_alembic_config(connection), "0001")
    db.dispose()
    out = rescue("review", "init", cwd=tmp_path)
    assert out.returncode == 0 and f"schema 0001 -> {head_revision()}" in out.stdout
    assert "up to date" in rescue("review", "init", cwd=tmp_path).stdout


def test_questionnaire_round_trip_gives_table_12_with_human_human_agreement(tmp_path: Path):
    insts = [i for i in run_instances(6, 2, 4) if i["task"] in ("er", "vp")]
    run = write_run(tmp_path / "run", run_records(insts, 0.6, seed=2), "openai/secret-model-x")
    sample = tmp_path / "sample.csv"
    assert rescue("agreement", "sample", str(run), "--n", "8", "--out", str(sample), cwd=tmp_path).returncode == 0
    _team(tmp_path, "rita", "raj")
    out = rescue("review", "import-ratings", str(sample), "--name", "secret-model-x sample", "--rater", "rita", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "imported 8 item(s) (ER 4, VP 4) as Questionnaire 1" in out.stdout
    assert rescue("review", "raters", "secret-model-x sample", "--add", "raj", cwd=tmp_path).stdout.strip() == "secret-model-x sample: raj, rita"
    # rita agrees with the judge everywhere; raj is one point lower on the first three items
    with sample.open(encoding="utf-8") as fh:
        judged = [(r["id"], int(r["judge_score"])) for r in csv.DictReader(fh)]
    from rescue_bench.review import ratings
    from rescue_bench.review.users import get_user

    db = _db(tmp_path)
    with db.write() as s:
        rating_set = ratings.find_set(s, "secret-model-x sample")
        for position, (_, judge) in enumerate(judged, 1):
            ratings.rate(s, get_user(s, "rita"), rating_set, position, judge)
            raj = max(1, judge - 1) if position <= 3 else judge
            ratings.rate(s, get_user(s, "raj"), rating_set, position, raj)
    db.dispose()
    lowered = sum(1 for _, judge in judged[:3] if judge > 1)
    assert rescue("review", "export-ratings", "--out", "ratings.csv", cwd=tmp_path).returncode == 0
    lines = (tmp_path / "ratings.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id,task,sample_id,scenario,row,rater,human_score" and len(lines) == 1 + 16
    assert "judge" not in lines[0] and "secret-model-x" not in "".join(lines)
    result = rescue("agreement", "score", str(tmp_path / "ratings.csv"), str(run), "--json", str(tmp_path / "t12.json"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "paper T12" in result.stdout and "human-human" in result.stdout and "judge-rita" in result.stdout
    t12 = json.loads((tmp_path / "t12.json").read_text())
    assert t12["items"] == 8 and t12["ratings"] == 16 and t12["overall"]["n"] == 16
    assert t12["raters"]["rita"]["overall"]["exact"] == 1.0
    assert t12["raters"]["raj"]["overall"]["counts"]["diff1"] == lowered
    hh = t12["human_human"]["overall"]
    assert hh["pairs"] == 8 and hh["counts"]["exact"] == 8 - lowered and hh["mae"] == pytest.approx(lowered / 8)
    assert t12["paper_table12"]["samples"] == 200
    # two questionnaires: export-ratings asks which one
    assert rescue("review", "import-ratings", str(sample), "--name", "again", cwd=tmp_path).returncode == 0
    out = rescue("review", "export-ratings", "--out", "x.csv", cwd=tmp_path)
    assert out.returncode == 2 and "--set NAME" in out.stderr


def test_a_bad_sample_is_one_line_naming_file_and_line(tmp_path: Path):
    _team(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,task,gold,prediction\ner-1,er,sad,happy\nvp-2,itp,a,b\n", encoding="utf-8")
    out = rescue("review", "import-ratings", str(bad), cwd=tmp_path)
    assert out.returncode == 2 and "bad.csv:3: task must be er or vp" in out.stderr and "Traceback" not in out.stderr
    bad.write_text("id,task,gold\ner-1,er,sad\n", encoding="utf-8")
    out = rescue("review", "import-ratings", str(bad), cwd=tmp_path)
    assert out.returncode == 2 and "missing column(s) prediction" in out.stderr
    empty = tmp_path / "empty.csv"
    empty.write_text("id,task,gold,prediction\ner-1,er,,happy\n", encoding="utf-8")
    assert "empty gold" in rescue("review", "import-ratings", str(empty), cwd=tmp_path).stderr
