"""``rescue_bench.score_answers``: answers made anywhere, scored as ``rescue eval`` scores them.

The parity tests hold the Python route to the engine's: the records inspect_ai's scorer writes for
the same replies, and the engine's judge (its prompt, re-ask and floor) driven by the same replies.
"""

from __future__ import annotations

import asyncio

import pytest

import rescue_bench as rb


@pytest.fixture(scope="module")
def clips():
    return rb.load_clips()


def test_an_answer_to_no_instance_is_refused_by_its_id(clips):
    """Answers made on other data (or other build options) do not silently score as 'no answer'."""
    instances = rb.build_instances(clips, "itp")
    answers = {i.id: '{"answer": "no"}' for i in instances}
    answers["itp-000000000000"] = '{"answer": "yes"}'
    with pytest.raises(ValueError, match="'itp-000000000000' is not the id of any instance"):
        rb.score_answers(instances, answers)


def test_an_answer_that_is_not_text_is_refused(clips):
    instances = rb.build_instances(clips, "itp")[:3]
    with pytest.raises(TypeError, match=f"answer to '{instances[1].id}' is a dict, not text"):
        rb.score_answers(instances, {instances[0].id: '{"answer": "no"}', instances[1].id: {"answer": "yes"}})


def test_a_missing_answer_is_counted_wrong_never_dropped(clips):
    instances = rb.build_instances(clips, "rpp")
    gold_first = {i.id: f'{{"ranking": ["{i.gold}"]}}' for i in instances}
    del gold_first[instances[0].id], gold_first[instances[1].id]
    records = rb.score_answers(instances, gold_first)
    assert [r["id"] for r in records] == [i.id for i in instances]
    assert [r["error"] for r in records[:2]] == ["no answer", "no answer"] and not records[0]["valid"]
    both = rb.summarize(records)["rpp"]["both"]
    assert both["n"] == len(instances)
    assert both["accuracy"] == pytest.approx((len(instances) - 2) / len(instances))
    assert both["invalid_rate"] == pytest.approx(2 / len(instances))


def test_without_a_judge_the_judged_means_are_missing_not_zero(clips):
    instances = rb.build_instances(clips, "vp")
    answers = {i.id: '{"viewpoints": [{"target": "Therapist", "viewpoint": "trusts them"}]}' for i in instances}
    records = rb.score_answers(instances, answers)
    assert any(r["valid"] for r in records)
    assert all(r["judge_score"] is None for r in records if r["valid"])
    assert rb.summarize(records)["vp"]["both"]["judge"] is None


def test_the_records_are_those_of_the_inspect_route(clips, isolated_env):
    """The same replies give the same records as inspect_ai's scorer (``inspect eval rescue_bench/stp``)."""
    import inspect_ai

    logs = inspect_ai.eval("rescue_bench/stp", model="baseline/majority", limit=12, log_dir=str(isolated_env / "logs"), display="none")
    assert logs[0].status == "success"
    samples = logs[0].samples or []
    engine = {str(s.id): s.scores["rescue_scorer"].metadata["record"] for s in samples}
    replies = {str(s.id): s.output.completion for s in samples}
    assert len(engine) == 12
    instances = [i for i in rb.build_instances(clips, "stp") if i.id in engine]
    mine = rb.score_answers(instances, replies)
    assert {r["id"]: r for r in mine} == engine


def _engine_verdict(isolated_env, replies: list[str], record, client):
    """The engine's judge (``rescue_bench.engine.judge.judge_score``) on a mockllm judge that gives
    ``replies`` in turn: its ``(score, flagged)`` and the conversations it was sent."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from rescue_bench.engine.judge import judge_score

    seen: list[list[tuple[str, str]]] = []
    queue = list(replies)

    def answer(messages, tools, tool_choice, config):
        seen.append([(m.role, m.text) for m in messages])
        output = ModelOutput.from_content("mockllm/judge", queue.pop(0))
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no token counting
        return output

    judge = get_model("mockllm/judge", custom_outputs=answer)
    verdict = asyncio.run(judge_score(judge, record, client))
    return verdict, seen


@pytest.mark.parametrize(
    "replies",
    [
        ['{"score": 4}'],
        ["I would say it is close.", '{"score": 2}'],  # the re-ask
        ["close", "still not a score"],  # the floor, flagged
    ],
    ids=["valid", "re-asked", "floor"],
)
def test_the_judge_asks_as_the_engine_judge_asks(clips, isolated_env, replies):
    er = rb.build_instances(clips, "er")[0]
    answer = '{"emotion": "hurt and tense", "intensity": 4}'
    (unjudged,) = rb.score_answers([er], {er.id: answer})
    engine_verdict, engine_seen = _engine_verdict(isolated_env, replies, unjudged, er.client)

    mine_seen: list[list[tuple[str, str]]] = []
    queue = list(replies)

    def judge(messages):
        mine_seen.append([(m["role"], m["content"]) for m in messages])
        return queue.pop(0)

    (record,) = rb.score_answers([er], {er.id: answer}, judge=judge)
    assert mine_seen == engine_seen and len(mine_seen) == len(replies)
    assert (record["judge_score"], record["judge_flagged"]) == engine_verdict
    assert record["score"] == pytest.approx((engine_verdict[0] + record["intensity_score"]) / 2)


def test_the_judge_is_asked_only_for_valid_judged_answers(clips):
    calls = []

    def judge(messages):
        calls.append(messages)
        return '{"score": 5}'

    er = rb.build_instances(clips, "er")[:2]
    itp = rb.build_instances(clips, "itp")[:2]
    answers = {er[0].id: '{"emotion": "calm", "intensity": 2}', er[1].id: "no idea", itp[0].id: '{"answer": "yes"}'}
    records = rb.score_answers([*er, *itp], answers, judge=judge)
    assert len(calls) == 1
    assert [r.get("judge_score") for r in records] == [5, 1, None, None]  # the invalid ER answer: the floor, no call


def test_without_a_judge_an_all_unusable_task_has_no_judge_score_and_no_bertscore(clips):
    """The attack: every ER/VP answer unusable and no judge nor BERTScore in the run; the summary
    showed judge 1.00 and BERTScore 0.0 (the floors of an unusable answer), a score nobody computed."""
    instances = rb.build_instances(clips, "er")[:4] + rb.build_instances(clips, "vp")[:4]
    records = rb.score_answers(instances, {i.id: "I am not sure." for i in instances})
    summary = rb.summarize(records)
    for task, names in (("er", ("judge", "score", "bertscore")), ("vp", ("judge", "bertscore"))):
        for scenario, entry in summary[task].items():
            assert {name: entry[name] for name in names} == dict.fromkeys(names), (task, scenario)
    # the intensity score needs no model: an unusable answer scores its floor, computed
    assert summary["er"]["both"]["intensity"] == 1.0
    # the control: with a judge in the run every unusable answer takes the judge's floor (the paper's rule)
    judged = rb.summarize(rb.score_answers(instances, {i.id: "I am not sure." for i in instances}, judge=lambda m: '{"score": 4}'))
    assert judged["er"]["both"]["judge"] == 1.0 and judged["er"]["both"]["score"] == 1.0 and judged["vp"]["both"]["judge"] == 1.0
    assert judged["er"]["both"]["bertscore"] is None  # BERTScore is not part of this route
