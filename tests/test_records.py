"""The typed result records (rescue_bench.records) say what the records really hold: every record the
scorer's functions make, per task, has each key its TypedDict requires and no key it does not declare
(so mypy checks code against the fields records have, and a new field must be declared)."""

from __future__ import annotations

from typing import Any

import pytest

from rescue_bench.engine.inspect_tasks import judge_failure
from rescue_bench.labels import TASKS
from rescue_bench.records import ERRecord, ITPRecord, ResultRow, RPPRecord, SSPRecord, STPRecord, VPRecord
from rescue_bench.scoring import base_record, with_authors_judge, with_judge
from tests.factories import run_instances

PER_TASK: dict[str, Any] = {"itp": ITPRecord, "rpp": RPPRecord, "stp": STPRecord, "ssp": SSPRecord, "er": ERRecord, "vp": VPRecord}


def _variants(inst: dict[str, Any]) -> list[dict[str, Any]]:
    """The records one instance can end as: invalid, valid, judged, judged by the authors' rubric, judge failed."""
    raws = {
        "itp": "yes", "rpp": '["a"]', "stp": '["a"]', "ssp": '["a"]',
        "er": '{"emotion": "uneasy", "intensity": 5}', "vp": '[{"target": "x", "viewpoint": "distant"}]',
    }
    out: list[dict[str, Any]] = [dict(base_record(inst, None)), dict(base_record(inst, "not an answer"))]
    record = base_record(inst, raws[inst["task"]])
    out.append(dict(record))
    if inst["task"] in ("er", "vp"):
        out.append(dict(with_judge(record, 4, flagged=True)))
        out.append(dict(judge_failure(record, RuntimeError("down"), authors=inst["task"] == "vp")))
    if inst["task"] == "vp":
        out.append(dict(with_authors_judge(record, {"target_score": 2, "viewpoint_score": 3})))
        out.append(dict(with_authors_judge(record, None)))
    return out


@pytest.mark.parametrize("task", TASKS)
def test_each_tasks_records_have_the_fields_their_typeddict_declares(task: str):
    kind = PER_TASK[task]
    declared = kind.__required_keys__ | kind.__optional_keys__
    instances = [i for i in run_instances(3, 2, 6) if i["task"] == task]
    assert instances
    for inst in instances:
        for record in _variants(inst):
            assert kind.__required_keys__ <= set(record), (task, kind.__required_keys__ - set(record))
            assert set(record) <= declared, (task, set(record) - declared)
            # a record of any task: the same keys are declared on the any-task row
            assert set(record) <= ResultRow.__required_keys__ | ResultRow.__optional_keys__
