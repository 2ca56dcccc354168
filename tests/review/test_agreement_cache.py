"""The agreement report is computed once per state of the database: a page load after nothing changed
reuses it (1,000 bootstrap resamples take seconds), any save, review or adjudication recomputes it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from rescue_bench.data import load_clips
from rescue_bench.review import access, agreement, edits, store
from rescue_bench.review.db import Database, upgrade
from rescue_bench.review.models import Segment
from rescue_bench.review.users import add_user, get_user
from tests.review.helpers import COUPLE, DEMO, save


@pytest.fixture
def db(empty_db: str) -> Iterator[Database]:
    database = Database(empty_db)
    upgrade(database)
    with database.write() as session:
        for name in ("ann", "ben"):
            add_user(session, name, "password-2", "annotator")
        store.import_clips(session, load_clips([DEMO]), file_name="demo.jsonl", sha256="0" * 64)
    yield database
    database.dispose()


def _seg(session: Any) -> Segment:
    return session.scalars(select(Segment).where(Segment.sample_id == COUPLE[0])).one()


def _independent(db: Database, _ids: list[str]) -> None:
    with db.write() as s:
        seg = _seg(s)
        access.set_mode(s, seg, "independent", by=None)
        for name in ("ann", "ben"):
            access.assign(s, seg, get_user(s, name), by=None)


def _save(db: Database, who: str, _sample: str, position: int, fields: dict[str, Any], reviewed: bool = True) -> None:
    with db.write() as s:
        user, seg = get_user(s, who), _seg(s)
        version = edits.read_row(s, user, seg, position).version
        save(s, user, seg, position, version=version, fields=fields, reviewed=reviewed)


def test_the_report_is_reused_until_the_database_changes(db: Database, monkeypatch: pytest.MonkeyPatch):
    computed: list[int] = []
    real = agreement.agreement_report

    def counting(*args: Any, **kwargs: Any) -> dict[str, Any]:
        computed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(agreement, "agreement_report", counting)
    _independent(db, [COUPLE[0]])
    _save(db, "ann", COUPLE[0], 2, {"relation_pattern": "attack_attack"})
    _save(db, "ben", COUPLE[0], 2, {"relation_pattern": "withdraw_withdraw"})
    with db.read() as s:
        first = agreement.database_report(s, n_resamples=20, use_bertscore=False)
    with db.read() as s:
        again = agreement.database_report(s, n_resamples=20, use_bertscore=False)
    assert len(computed) == 1 and again == first
    with db.read() as s:
        agreement.database_report(s, n_resamples=30, use_bertscore=False)  # other settings: computed
    assert len(computed) == 2
    # a save by an annotator changes the figures: recomputed
    _save(db, "ben", COUPLE[0], 2, {"relation_pattern": "attack_attack"})
    with db.read() as s:
        after = agreement.database_report(s, n_resamples=20, use_bertscore=False)
    assert len(computed) == 3 and after != first
    # even a review without a value change
    _save(db, "ann", COUPLE[0], 3, {}, reviewed=True)
    with db.read() as s:
        agreement.database_report(s, n_resamples=20, use_bertscore=False)
    assert len(computed) == 4
