"""Every baseline answers every instance of every task in the exact answer contract."""

from __future__ import annotations

import json

import pytest

from rescue_bench.baselines import BASELINES, predict_answers
from rescue_bench.baselines.common import NEUTRAL_EMOTION, NEUTRAL_INTENSITY, NEUTRAL_VIEWPOINT
from rescue_bench.data.load import demo_path
from rescue_bench.labels import TASKS
from rescue_bench.tasks import BuildOptions, build_all
from rescue_bench.tasks.instance import Instance
from tests.factories import mixed_clips, rounds_clip


def check_answer(inst: Instance, raw: str) -> None:
    """Assert that ``raw`` follows the answer contract of ``inst``'s task exactly."""
    obj = json.loads(raw)
    assert isinstance(obj, dict)
    if inst.task == "itp":
        assert obj.keys() == {"answer"} and obj["answer"] in ("yes", "no")
    elif inst.task in ("rpp", "stp", "ssp"):
        assert obj.keys() == {"ranking"}
        ranking = obj["ranking"]
        assert len(ranking) == min(3, len(inst.candidates))
        assert len(set(ranking)) == len(ranking)
        assert set(ranking) <= set(inst.candidates)
    elif inst.task == "er":
        assert obj.keys() == {"emotion", "intensity"}
        assert isinstance(obj["emotion"], str) and obj["emotion"].strip()
        assert type(obj["intensity"]) is int and 0 <= obj["intensity"] <= 10
    else:
        assert obj.keys() == {"viewpoints"}
        others = [p for p in inst.participants if p != inst.client] or ["Therapist"]
        views = obj["viewpoints"]
        assert [v["target"] for v in views] == others
        for v in views:
            assert v.keys() == {"target", "viewpoint"}
            assert isinstance(v["viewpoint"], str) and v["viewpoint"].strip()


def _check_all(instances: dict, folds: int = 5) -> None:
    for task, items in instances.items():
        assert items, f"no {task} instances to test"
        for method in BASELINES:
            answers = predict_answers(items, method, folds=folds)
            assert set(answers) == {i.id for i in items}, (task, method)
            for inst in items:
                check_answer(inst, answers[inst.id])


def test_contract_on_hand_made_clips() -> None:
    _check_all(build_all(mixed_clips()))


def test_contract_with_two_folds_and_audiovisual_mode() -> None:
    _check_all(build_all(mixed_clips(), options=BuildOptions(mode="audiovisual")), folds=2)


@pytest.mark.real
def test_contract_on_real_release_lines(real_data) -> None:
    from rescue_bench.data import load_clips

    _check_all(build_all(load_clips(sorted(real_data.glob("*.jsonl")))))


def test_contract_on_demo_set() -> None:
    path = demo_path()
    if not path.is_file():
        pytest.skip("demo set not written yet")
    from rescue_bench.data import load_clips

    instances = build_all(load_clips([path]))
    _check_all({task: items for task, items in instances.items() if items})


@pytest.mark.parametrize("method", BASELINES)
def test_one_clip_input_falls_back(method: str) -> None:
    """With no other clip there is nothing to learn from: candidate order or the neutral answer."""
    instances = build_all([rounds_clip("solo/clip", rounds=5)])
    for task in TASKS:
        answers = predict_answers(instances[task], method)
        for inst in instances[task]:
            check_answer(inst, answers[inst.id])
            if method == "random" or (method == "shortcut" and task == "itp"):  # neither learns from other clips
                continue
            obj = json.loads(answers[inst.id])
            if task == "itp":
                assert obj == {"answer": "yes"}
            elif task in ("rpp", "stp", "ssp"):
                assert obj == {"ranking": inst.candidates[:3]}
            elif task == "er":
                assert obj == {"emotion": NEUTRAL_EMOTION, "intensity": NEUTRAL_INTENSITY}
            else:
                assert obj == {"viewpoints": [{"target": "Bob" if inst.client == "Ann" else "Ann", "viewpoint": NEUTRAL_VIEWPOINT}]}


def test_random_one_clip_er_uses_neutral_phrase() -> None:
    items = build_all([rounds_clip("solo/clip", rounds=5)])["er"]
    answers = predict_answers(items, "random")
    assert {json.loads(a)["emotion"] for a in answers.values()} == {NEUTRAL_EMOTION}


def test_rejects_mixed_tasks_unknown_method_and_bad_folds() -> None:
    instances = build_all(mixed_clips())
    with pytest.raises(ValueError, match="one task"):
        predict_answers(instances["rpp"] + instances["ssp"], "majority")
    with pytest.raises(ValueError, match="unknown baseline"):
        predict_answers(instances["rpp"], "oracle")
    with pytest.raises(ValueError, match="folds"):
        predict_answers(instances["rpp"], "prior", folds=1)
    with pytest.raises(ValueError, match="duplicate"):
        predict_answers(instances["rpp"] + instances["rpp"][:1], "majority")
    assert predict_answers([], "supervised") == {}


def test_fewer_than_three_candidates() -> None:
    """A ranking over two candidates has two labels."""
    items = build_all(mixed_clips())["stp"]
    two = [i.model_copy(update={"candidates": i.candidates[:2]}) for i in items]
    two = [i for i in two if i.gold in i.candidates]
    for method in BASELINES:
        answers = predict_answers(two, method)
        for inst in two:
            check_answer(inst, answers[inst.id])
            assert len(json.loads(answers[inst.id])["ranking"]) == 2
