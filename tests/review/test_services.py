"""The review services as plain functions over a Session (both backends), and the pure helpers."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select, update

from rescue_bench import labels
from rescue_bench.data import Row, load_clips
from rescue_bench.review import access, edits, store
from rescue_bench.review.agreement import RatedRow, agreement_report
from rescue_bench.review.assets import Assets, Manifest, RowSubtitles, RowText, subtitles
from rescue_bench.review.db import (
    Database,
    DatabaseError,
    check_schema,
    current_revision,
    head_revision,
    normalize_url,
    shown_url,
    upgrade,
)
from rescue_bench.review.errors import Conflict, Invalid, Locked, NotFound, Throttled
from rescue_bench.review.fields import FIELDS, choices, compact
from rescue_bench.review.models import AuditEntry, Copy, LoginThrottle, RowValue, Segment, SegmentRow
from rescue_bench.review.security import SessionSigner, ThrottlePolicy, csrf_matches, hash_password, verify_password
from rescue_bench.review.users import add_user, authenticate, get_user
from tests.review.helpers import COUPLE, DEMO, save

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def db(empty_db: str):
    database = Database(empty_db)
    upgrade(database)
    with database.write() as session:
        add_user(session, "admin", "password-1", "admin")
        add_user(session, "ann", "password-2", "annotator")
        add_user(session, "ben", "password-3", "annotator")
        store.import_clips(session, load_clips([DEMO]), file_name="demo.jsonl", sha256="0" * 64, now=T0)
        seg = session.scalars(select(Segment).where(Segment.sample_id == COUPLE[0])).one()
        access.assign(session, seg, get_user(session, "ann"), by=None)
    yield database
    database.dispose()


def _seg(session, sample_id=COUPLE[0]) -> Segment:
    return session.scalars(select(Segment).where(Segment.sample_id == sample_id)).one()


def test_schema_is_at_head_and_serve_refuses_an_old_or_empty_database(empty_db: str):
    database = Database(empty_db)
    with pytest.raises(DatabaseError, match="no review schema"):
        check_schema(database)
    assert upgrade(database) == (None, head_revision())
    check_schema(database)
    assert current_revision(database) == head_revision()
    assert upgrade(database) == (head_revision(), head_revision())  # idempotent
    database.dispose()


def test_save_conflict_and_audit_chain(db: Database):
    with db.write() as s:
        ann, seg = get_user(s, "ann"), _seg(s)
        state = save(s, ann, seg, 3, version=0, fields={"tone_of_voice": "calm"}, now=T0)
        assert state.version == 1 and state.row["tone_of_voice"] == "calm" and state.status == "edited"
    with db.write() as s, pytest.raises(Conflict) as err:
        save(s, get_user(s, "admin"), _seg(s), 3, version=0, fields={"tone_of_voice": "loud"})
    assert err.value.current.version == 1 and err.value.current.row["tone_of_voice"] == "calm"
    with db.write() as s:
        state = save(s, get_user(s, "admin"), _seg(s), 3, version=1, fields={"tone_of_voice": "loud"}, reviewed=True)
        assert state.version == 2 and state.reviewed and state.reviewed_by == "admin"
    with db.read() as s:
        seg = _seg(s)
        entries = [e for e in reversed(edits.audit_entries(s, segment=seg, row=access.get_row(s, seg, 3)))]
        edits_only = [(e.user, e.old, e.new, e.version) for e in entries if e.action == "edit"]
        draft_tone = json.loads(access.get_row(s, seg, 3).draft_json)["tone_of_voice"]
        assert edits_only == [("ann", draft_tone, "calm", 1), ("admin", "calm", "loud", 2)]
        assert [e.action for e in entries][-1] == "review"


def test_reverting_to_the_draft_clears_edited_and_absent_keys_are_audited_as_absent(db: Database):
    with db.write() as s:
        ann, seg = get_user(s, "ann"), _seg(s)
        draft = json.loads(access.get_row(s, seg, 2).draft_json)
        save(s, ann, seg, 2, version=0, fields={"utterance_type": "request"})
        back = save(s, ann, seg, 2, version=1, fields={"utterance_type": draft["utterance_type"]})
        assert back.edited is False and back.status == "pending" and back.version == 2
        assert "made_up_key" not in draft
    # a key the row does not have yet: its old value is recorded as absent, not as null, and export
    # writes the key only once someone set it
    from rescue_bench.data import Clip

    mini = Clip.model_validate({"sample_id": "mini/one", "scenario": "couple", "rows": [{"row_index": 1, "primary_speaker": "A"}]})
    with db.write() as s:
        store.import_clips(s, [mini], file_name="mini.jsonl", sha256="2" * 64)
        seg = _seg(s, "mini/one")
        save(s, get_user(s, "admin"), seg, 1, version=0, fields={"relation_pattern": "attack_attack"}, reviewed=True)
    with db.read() as s:
        seg = _seg(s, "mini/one")
        entry = next(e for e in edits.audit_entries(s, segment=seg) if e.action == "edit")
        assert entry.old_absent and entry.old is None and entry.new == "attack_attack"
        exported = next(c for c in store.export_clips(s) if c.sample_id == "mini/one").to_json()
        assert exported["rows"] == [{"row_index": 1, "primary_speaker": "A", "relation_pattern": "attack_attack"}]


def test_access_rules_in_services(db: Database):
    with db.read() as s:
        ben = get_user(s, "ben")
        seg = _seg(s)
        with pytest.raises(NotFound):
            access.get_segment(s, ben, seg.key)
        with pytest.raises(NotFound):
            edits.read_row(s, ben, seg, 1)
        assert s.scalars(access.visible_segments(ben)).all() == []
        assert [x.sample_id for x in s.scalars(access.visible_segments(get_user(s, "ann")))] == [COUPLE[0]]


def test_discarded_segments_are_locked_and_left_out_of_export(db: Database):
    with db.write() as s:
        ann, seg = get_user(s, "ann"), _seg(s)
        with pytest.raises(Invalid):
            edits.set_status(s, ann, seg, "discarded", "   ")
        edits.set_status(s, ann, seg, "discarded", "duplicate of another clip")
        with pytest.raises(Locked):
            save(s, ann, seg, 1, version=0, fields={"tone_of_voice": "x"})
    with db.read() as s:
        ids = [c.sample_id for c in store.export_clips(s)]
        assert COUPLE[0] not in ids and len(ids) == 8
        assert COUPLE[0] in [c.sample_id for c in store.export_clips(s, include_discarded=True)]


def test_import_refuses_duplicates_unless_skipped(db: Database):
    clips = load_clips([DEMO])
    with db.write() as s, pytest.raises(Invalid, match="already in the review database"):
        store.import_clips(s, clips, file_name="again.jsonl", sha256="1" * 64)
    with db.write() as s:
        summary = store.import_clips(s, clips, file_name="again.jsonl", sha256="1" * 64, skip_existing=True)
        assert summary.segments == 0 and len(summary.skipped) == 9


def test_validate_fields_names_the_field():
    edits.validate_fields({"tone_of_voice": "x", "internal_emotion": [{"person": "A", "intensity": 3}]})
    with pytest.raises(Invalid) as err:
        edits.validate_fields({"relation_pattern_evidence_rows": [1, "2"]})
    assert err.value.field == "relation_pattern_evidence_rows"
    with pytest.raises(Invalid, match="unknown field"):
        edits.validate_fields({"sample_id": "x"})


@pytest.mark.slow
def test_login_throttling_policy_with_an_injected_clock(db: Database):
    policy = ThrottlePolicy(user_free_failures=3, ip_free_failures=100, base_delay=2.0, max_delay=10.0)
    with db.write() as s:
        for i in range(3):
            assert authenticate(s, "ben", "nope", client_ip="10.0.0.1", policy=policy, now=T0 + timedelta(seconds=i)) is None
        assert authenticate(s, "ben", "nope", client_ip="10.0.0.1", policy=policy, now=T0 + timedelta(seconds=3)) is None
        row = s.get(LoginThrottle, "user:ben@10.0.0.1")
        assert row.failures == 4 and row.locked_until == T0 + timedelta(seconds=5)  # 3 s + 2 s
        with pytest.raises(Throttled) as err:
            authenticate(s, "ben", "password-3", client_ip="10.0.0.1", policy=policy, now=T0 + timedelta(seconds=4))
        assert 0 < err.value.retry_after <= 1.0
        assert authenticate(s, "ben", "nope", client_ip="10.0.0.1", policy=policy, now=T0 + timedelta(seconds=6)) is None
        assert s.get(LoginThrottle, "user:ben@10.0.0.1").locked_until == T0 + timedelta(seconds=10)  # doubling: 4 s
        for k in range(6):
            authenticate(s, "ben", "nope", client_ip="10.0.0.1", policy=policy, now=T0 + timedelta(seconds=100 + 20 * k))
        last = s.get(LoginThrottle, "user:ben@10.0.0.1")
        assert (last.locked_until - last.last_failure_at).total_seconds() == 10.0  # capped
        user = authenticate(s, "ben", "password-3", client_ip="10.0.0.1", policy=policy, now=T0 + timedelta(seconds=1000))
        assert user is not None and s.get(LoginThrottle, "user:ben@10.0.0.1") is None
        assert s.get(LoginThrottle, "ip:10.0.0.1").failures == 11  # the address's count is kept


def test_passwords_cookies_and_csrf():
    h = hash_password("s3cret-pass")
    assert h.startswith("$argon2id$") and "s3cret" not in h
    assert verify_password(h, "s3cret-pass") and not verify_password(h, "other") and not verify_password(None, "x")
    signer = SessionSigner("k" * 40, max_age=3600)
    token, data = signer.issue(7, 2)
    back = signer.read(token)
    assert back == data and csrf_matches(back, data.csrf) and not csrf_matches(back, data.csrf + "x") and not csrf_matches(back, None)
    assert signer.read(token[:-2] + "xx") is None
    assert SessionSigner("other-secret" * 4, 3600).read(token) is None


def test_urls_are_normalised_and_passwords_masked():
    assert normalize_url(None).get_backend_name() == "sqlite"
    assert normalize_url("my.db").database == "my.db"
    pg = normalize_url("postgres://u:hunter2@h/db")
    assert pg.drivername == "postgresql+psycopg"
    assert "hunter2" not in shown_url(pg) and "***" in shown_url(pg)
    with pytest.raises(DatabaseError):
        normalize_url("mysql://u@h/db")


def test_editor_fields_cover_the_release_row_and_choices_come_from_labels():
    assert {f.name for f in FIELDS} == set(Row.model_fields) == set(edits.EDITABLE_FIELDS)
    c = choices("family", ["Ana", "Luis", "Therapist"])
    assert c.names == ("Ana", "Luis", labels.THERAPIST, "Family")
    assert c.patterns == labels.patterns("family") and c.strategies == labels.strategies("family")
    assert c.utterance_types == labels.UTTERANCE_TYPES
    assert compact(None) == "(empty)" and compact([]) == "(none)"
    assert compact([{"person": "A", "intensity": 3, "emotion_description": ""}]) == "person: A; intensity: 3"


def test_subtitles_by_time_overlap_with_a_dialogue_fallback():
    rows = [
        {"start_time": 0.0, "end_time": 5.0, "primary_speaker": "Therapist", "dialogue_cleaned": "one"},
        {"start_time": 5.0, "end_time": 9.0, "primary_speaker": "Ana", "dialogue_cleaned": "two"},
        {"primary_speaker": "Luis", "dialogue_cleaned": "three (no times)"},
    ]
    cues = [{"cue": 1, "start": 0.5, "end": 4.9, "text": "a"}, {"cue": 2, "start": 4.9, "end": 5.2, "speaker": "Ana", "text": "b"}, {"cue": 3, "start": 9.0, "end": 12.0, "text": "c"}]
    manifest = Manifest(segment_id="s/1", scenario="couple", participants=["Ana", "Luis"], video=None, duration=12.0, cues=cues)
    texts = [RowText.of(r) for r in rows]
    subs = subtitles(texts, 2, manifest)
    assert [s.position for s in subs] == [1, 2, 3] and subs[1].current
    assert [l.text for l in subs[0].lines] == ["a", "b"]
    assert [l.text for l in subs[1].lines] == ["b"]  # [9, 12) does not overlap [5, 9]
    assert subs[2].source == "dialogue" and subs[2].lines[0].text == "three (no times)"
    assert [l.text for l in subtitles(texts, 1, None)[0].lines] == ["one"]
    # a row the caller did not read shows no times, speaker or subtitles
    assert subtitles([texts[0], None], 2, None)[1] == RowSubtitles(2, True, "", None, None, [], "dialogue")


def test_assets_stay_inside_their_folder(tmp_path: Path):
    root = tmp_path / "assets"
    (root / "a" / "b" / "rows").mkdir(parents=True)
    (root / "a" / "b" / "rows" / "1.mp4").write_bytes(b"x")
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", root / "a" / "b" / "rows" / "2.mp4")
    os.symlink(root / "a" / "b" / "rows" / "1.mp4", root / "a" / "b" / "rows" / "3.mp4")  # inside: fine
    outside = {"segment_id": "a/b", "scenario": "couple", "participants": [], "video": "../secret.txt", "duration": 1.0, "cues": []}
    (root / "a" / "b" / "manifest.json").write_text(json.dumps(outside))
    (root / "bad").mkdir()
    (root / "bad" / "manifest.json").write_text("{not json")
    assets = Assets(root)
    assert assets.row_clip("a/b", 1) is not None
    assert assets.row_clip("a/b", 2) is None
    assert assets.row_clip("a/b", 3) is not None
    assert assets.manifest("a/b").manifest is not None and assets.video("a/b") is None  # read, then refused
    assert assets.safe_file("..", "secret.txt") is None
    assert assets.safe_file(str(tmp_path / "secret.txt")) is None
    assert assets.safe_file("a/../../secret.txt") is None
    assert assets.safe_file("a\x00b") is None
    assert assets.manifest("../..").manifest is None
    assert assets.manifest("bad").problem and "not valid JSON" in assets.manifest("bad").problem
    assert Assets(None).row_clip("a/b", 1) is None


def test_export_round_trip_of_the_real_release_lines(empty_db: str, tmp_path: Path, real_data: Path):
    files = sorted(real_data.glob("*.jsonl"))
    database = Database(empty_db)
    upgrade(database)
    with database.write() as s:
        # the published release has quirks the strict rules refuse (evidence row 0): imported leniently
        store.import_clips(s, load_clips(files), file_name="real", sha256="0" * 64, strict=False)
    with database.read() as s:
        first = "".join(store.export_lines(s))
    out = tmp_path / "first.jsonl"
    out.write_text(first, encoding="utf-8")
    assert [json.loads(line) for line in first.splitlines()] == [c.to_json() for c in load_clips(files)]
    database.dispose()
    second_db = Database(f"sqlite:///{tmp_path / 'second.db'}")
    upgrade(second_db)
    with second_db.write() as s:
        store.import_clips(s, load_clips([out]), file_name="first", sha256="0" * 64, strict=False)
    with second_db.read() as s:
        assert "".join(store.export_lines(s)) == first
    second_db.dispose()


def test_audit_entries_record_cli_imports(db: Database):
    with db.read() as s:
        n = len(s.scalars(select(AuditEntry).where(AuditEntry.action == "import")).all())
        assert n == 9


# ------------------------------------------------------------------------------------------------
# nothing outside its domain leaves: export refuses a stored value the data layer's rules refuse (an
# older app saved one), and agreement counts and names the ratings it leaves out
# ------------------------------------------------------------------------------------------------


def test_export_refuses_a_stored_value_outside_its_domain_naming_it(db: Database):
    with db.write() as session:  # a value an older app saved: an intensity of 6.5, marked reviewed
        seg = session.scalars(select(Segment).where(Segment.sample_id == COUPLE[0])).one()
        row = session.scalars(select(SegmentRow).where(SegmentRow.segment_id == seg.id, SegmentRow.position == 2)).one()
        value = json.loads(row.draft_json)
        value["internal_emotion"] = [{"person": value["primary_speaker"], "emotion_description": "tense", "intensity": 6.5}]
        final = session.scalars(select(Copy).where(Copy.segment_id == seg.id, Copy.kind == "final")).one()
        session.execute(update(RowValue).where(RowValue.row_id == row.id, RowValue.copy_id == final.id).values(value_json=json.dumps(value), reviewed=True, version=1))
    with db.read() as session, pytest.raises(Invalid) as caught:
        store.export_clips(session)
    message = str(caught.value)
    assert f"clip {COUPLE[0]}, row 2, field internal_emotion[0].intensity: intensity 6.5 is not a whole number 0-10" in message
    assert caught.value.field == "internal_emotion[0].intensity"


def _row(intensity, person="Dana") -> Row:
    return Row.model_validate({"primary_speaker": person, "internal_emotion": [{"person": person, "emotion_description": "x", "intensity": intensity}]})


def test_agreement_counts_and_names_the_ratings_it_leaves_out():
    rows = [
        RatedRow("seg/a", "couple", 4, {"ann": _row(6.5), "ben": _row(5)}),
        RatedRow("seg/b", "couple", 2, {"ann": _row(7), "ben": _row(-3)}),
        RatedRow("seg/c", "couple", 3, {"ann": _row(2), "ben": _row(3)}),
    ]
    report = agreement_report(rows, [], n_resamples=0, use_bertscore=False)
    intensity = next(f for f in report.fields if f.field == "intensity" and f.scope == "all")
    assert intensity.units == 1 and intensity.left_out == 2
    note = next(n for n in intensity.notes if "left out" in n)
    assert note.startswith("2 rating(s) left out, outside the field's domain")
    assert "seg/a row 4 Dana: ann's intensity 6.5 is not a whole number 0-10" in note and "seg/b row 2 Dana: ben's intensity -3 is outside 0-10" in note
