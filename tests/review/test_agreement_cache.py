"""The agreement report is computed once per state of the database: a page load after nothing changed
reuses it (1,000 bootstrap resamples take seconds), any save, review or adjudication recomputes it."""

from __future__ import annotations

from typing import Any

import pytest

from rescue_bench.review import agreement
from tests.review.helpers import COUPLE
from tests.review.test_overlap_services import _independent, _save, db  # noqa: F401  (the db fixture)


def test_the_report_is_reused_until_the_database_changes(db: Any, monkeypatch: pytest.MonkeyPatch):  # noqa: F811
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
