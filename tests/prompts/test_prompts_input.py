"""A prompt is built from the instance's model input alone: the gold and the bookkeeping never matter."""

from __future__ import annotations

from rescue_bench.data.load import load_clips
from rescue_bench.prompts import render, render_input
from rescue_bench.tasks import Instance, ModelInput, build_all

HIDDEN = {"gold", "id", "sample_id", "row", "n_rows"}


def test_model_input_is_the_instance_without_gold_and_bookkeeping():
    assert set(ModelInput.model_fields) == set(Instance.model_fields) - HIDDEN
    assert not HIDDEN & set(ModelInput.model_fields)


def test_prompt_does_not_depend_on_gold_or_bookkeeping():
    for task, items in build_all(load_clips(None)).items():
        for inst in items:
            changed = inst.model_copy(
                update={"gold": "SECRET", "id": "SECRET", "sample_id": "SECRET", "row": 10**6, "n_rows": 10**6}
            )
            prompt = render(inst)
            assert render(changed) == prompt == render_input(inst.model_input()), (task, inst.id)
            assert "SECRET" not in prompt.system + prompt.user


def test_model_input_dump_is_what_the_prompt_may_show():
    (inst, *_) = build_all(load_clips(None), ["ssp"])["ssp"]
    shown = inst.model_input().model_dump(exclude_none=True)
    assert list(shown) == [f for f in Instance.model_fields if f not in HIDDEN and getattr(inst, f) is not None]
    assert shown["support_target"] == inst.support_target
