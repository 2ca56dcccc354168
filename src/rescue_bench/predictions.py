"""Scoring answers you already have: raw answer texts by instance id, to result records.

``rescue eval`` and ``inspect eval rescue_bench/<task>`` call the model and score each answer as it
arrives. :func:`score_answers` is the same scoring for answers made anywhere else (your own
inference loop, a fine-tuned model's batch output, a file from a colleague): the same parsers, the
same result record (:func:`rescue_bench.scoring.base_record`), so :func:`rescue_bench.scoring.summarize`
gives the numbers ``summary.json`` would.

ER and VP are scored by a judge model. Without one, an ER/VP answer keeps ``judge_score`` ``None``
(ER's ``intensity_score`` needs no judge and is set), valid or not, and the judged means are ``None``
in the summary: missing, never the floor, never 0 and never the answering model grading itself. Pass ``judge``, a function
that sends chat messages to the judge model of your choice and returns its reply, to score them as
``rescue eval --judge`` does: the same prompt and rubric (the default 1-5 rubric), the same reply
parser, the same single re-ask of a reply that does not parse, then the floor score 1 with
``judge_flagged``; an invalid answer gets the floor 1 without a call. BERTScore is left ``None`` on
this route.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rescue_bench.contract import judge_format
from rescue_bench.parse import parse_judge
from rescue_bench.prompts import judge_prompt
from rescue_bench.records import ResultRow
from rescue_bench.scoring import base_record, with_judge
from rescue_bench.task_table import INVALID_JUDGE_SCORE, rule
from rescue_bench.tasks import Instance

__all__ = ["Judge", "score_answers"]

Judge = Callable[[list[dict[str, str]]], str]
"""A judge model: chat messages in, the reply text out.

The messages are ``{"role": ..., "content": ...}`` dicts (a ``system`` message, then ``user`` and
``assistant`` turns), the shape of the OpenAI chat API, so a client's call fits in one line. Send them
at temperature 0, as ``rescue eval`` does, so a score does not depend on a draw.
"""


def score_answers(
    instances: Sequence[Instance], answers: Mapping[str, str | None], *, judge: Judge | None = None
) -> list[ResultRow]:
    """Score raw answers to ``instances``: one result record per instance, in the order given.

    Parameters
    ----------
    instances
        The instances that were asked (:func:`rescue_bench.tasks.build_instances`), of one task or
        several.
    answers
        The model's raw answer text by instance id (``Instance.id``), exactly as the model wrote it:
        each is parsed as ``rescue eval`` parses a reply. An instance without an answer (absent, or
        ``None``) is scored as an invalid answer ("no answer"): counted as wrong, never dropped.
    judge
        A :data:`Judge` for ER and VP: called for each valid ER/VP answer (twice when its first reply
        does not parse). ``None``: no judge score (see the module's documentation).

    Returns
    -------
    list of dict
        The result records (:class:`rescue_bench.records.ResultRow`), the lines ``results/<task>.jsonl``
        holds: ``id``, ``task``, ``gold``, ``prediction``, ``valid``, ``error``, ``raw`` ..., and ER/VP's
        scores. :func:`rescue_bench.scoring.summarize` turns them into the summary.

    Raises
    ------
    ValueError
        An answer's id is not the id of any of ``instances`` (answers of other data or other build
        options), named in the message.
    TypeError
        An answer is not text (a parsed JSON object, say): pass the raw reply.

    Examples
    --------
    >>> from rescue_bench import build_instances, load_clips, summarize
    >>> instances = build_instances(load_clips(), "itp")
    >>> answers = {i.id: '{"answer": "yes"}' for i in instances[:80]}  # the last 14 get no answer
    >>> records = score_answers(instances, answers)
    >>> records[0]["prediction"], records[0]["valid"], records[-1]["error"]
    ('yes', True, 'no answer')
    >>> summary = summarize(records)["itp"]["both"]
    >>> summary["n"], round(summary["invalid_rate"], 3)
    (94, 0.149)

    ER's intensity score (5 minus the distance to the gold intensity) needs no judge; its judge score
    does:

    >>> er = build_instances(load_clips(), "er")[:2]
    >>> [i.gold["intensity"] for i in er]
    [5, 7]
    >>> reply = '{"emotion": "hurt and tense", "intensity": 5}'
    >>> unjudged = score_answers(er, {i.id: reply for i in er})
    >>> [(r["intensity_score"], r["judge_score"], r["score"]) for r in unjudged]
    [(5.0, None, None), (3.0, None, None)]
    >>> def my_judge(messages):  # stands in for a call to the judge model of your choice
    ...     return '{"score": 4}'
    >>> judged = score_answers(er, {i.id: reply for i in er}, judge=my_judge)
    >>> [(r["judge_score"], r["score"]) for r in judged]
    [(4, 4.5), (4, 3.5)]
    """
    known = {i.id for i in instances}
    unknown = [key for key in answers if key not in known]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise ValueError(
            f"an answer's id {unknown[0]!r}{more} is not the id of any instance given; "
            "were the answers made on other data or with other build options?"
        )
    records: list[ResultRow] = []
    for instance in instances:
        raw = answers.get(instance.id)
        if raw is not None and not isinstance(raw, str):
            raise TypeError(f"the answer to {instance.id!r} is a {type(raw).__name__}, not text: pass the model's raw reply")
        record = base_record(instance.model_dump(mode="json", exclude={"context", "current"}), raw)
        if judge is not None and rule(instance.task).judged:
            # a valid answer is judged; an invalid one takes the judge's floor without a call
            score, flagged = _judge_score(judge, record, instance.client) if record["valid"] else (None, False)
            record = with_judge(record, score, flagged)
        records.append(record)
    return records


def _judge_score(judge: Judge, record: ResultRow, client: str | None) -> tuple[int, bool]:
    """``(score, flagged)`` of a valid ER/VP record, asked as the engine's judge asks
    (:func:`rescue_bench.engine.judge.ask_judge` and ``judge_score``): one re-ask, then the floor, flagged."""
    prompt = judge_prompt(record["task"], record["gold"], record["prediction"], client)
    messages = [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]
    reply = judge(list(messages))
    parsed = parse_judge(reply)
    if not parsed.valid:
        reask = judge_format("default").reask
        if reask is None:  # every judge format of the contract declares its re-ask
            raise ValueError("the answer contract declares no re-ask for the default judge rubric")
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": reask}]
        parsed = parse_judge(judge(list(messages)))
    return (int(parsed.prediction), False) if parsed.valid else (INVALID_JUDGE_SCORE, True)
