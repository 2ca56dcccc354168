"""Nothing outside its domain leaves the review database: export refuses a stored value the data
layer's rules refuse (an older database may hold one, saved before the save checked it), and the
agreement report counts and names the ratings it leaves out instead of dropping them silently."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select, update

from rescue_bench.data import Row, load_clips
from rescue_bench.review import access, store
from rescue_bench.review.agreement import RatedRow, agreement_report
from rescue_bench.review.db import Database, upgrade
from rescue_bench.review.errors import Invalid
from rescue_bench.review.models import Copy, RowValue, Segment, SegmentRow
from rescue_bench.review.users import add_user, get_user
from tests.review.helpers import COUPLE, DEMO


@pytest.fixture
def db(empty_db: str):
    database = Database(empty_db)
    upgrade(database)
    with database.write() as session:
        add_user(session, "admin", "password-1", "admin")
        add_user(session, "ann", "password-2", "annotator")
        store.import_clips(session, load_clips([DEMO]), file_name="demo.jsonl", sha256="0" * 64)
        access.assign(session, session.scalars(select(Segment).where(Segment.sample_id == COUPLE[0])).one(), get_user(session, "ann"), by=None)
    yield database
    database.dispose()


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
