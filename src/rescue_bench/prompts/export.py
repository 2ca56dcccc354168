"""Exporting instances as training data: one chat example per instance (``rescue tasks export``).

A chat example is what a model would see at evaluation time, followed by the gold answer written in
the task's answer contract (:mod:`rescue_bench.contract`)::

    {"id", "task", "sample_id", "scenario", "fold",
     "messages": [{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", ...}]}

The system and user messages are exactly :func:`rescue_bench.prompts.render` of the instance, so a
model fine-tuned on these examples is prompted at test time by ``rescue eval`` with the same text.
The assistant message is the gold in the contract's JSON (one line, ``ensure_ascii=False``):

* ITP: ``{"answer": "yes"}`` or ``{"answer": "no"}``.
* RPP, STP, SSP: ``{"ranking": [gold]}``. The contract asks for the three most likely labels, but the
  data holds one known label per instance, and a second and third choice would have to be invented;
  so the gold is the single entry, at rank 1 (the scorer accepts rankings shorter than three).
* ER: ``{"emotion": <gold description>, "intensity": <gold 0-10>}``.
* VP: ``{"viewpoints": [{"target", "viewpoint"}, ...]}``, every gold item in annotation order (the
  ``source`` is the client the question names, so it is not repeated).

Folds: ``fold`` is ``int(sha256(sample_id)[:16 hex], 16) % folds``, a stable hash of the clip id. It
depends on the clip id alone, not on which clips, tasks, cue mode or context are exported, so every
instance of a clip has the same fold in every task and every export: training on folds ``!= k`` and
testing on fold ``k`` never shows the model a test clip, even across tasks. The price is that fold
sizes are only balanced on average (a GroupKFold would balance them exactly, but its assignment
changes with the set of clips and their sizes, so folds from two exports could disagree). The
offline baselines' internal cross-validation (GroupKFold per task) is a separate mechanism.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, TypedDict

from rescue_bench.contract import answer_object
from rescue_bench.labels import RANKED_TASKS
from rescue_bench.prompts.render import ChatMessage, render
from rescue_bench.tasks.instance import Instance

FORMATS: tuple[str, ...] = ("chat",)
"""Export formats ``rescue tasks export --format`` accepts."""

DEFAULT_FOLDS = 5


def clip_fold(sample_id: str, folds: int = DEFAULT_FOLDS) -> int:
    """The fold (``0..folds-1``) of clip ``sample_id``: a stable hash of the id, modulo ``folds``."""
    if folds < 1:
        raise ValueError(f"folds must be at least 1, got {folds}")
    digest = hashlib.sha256(sample_id.encode("utf-8")).hexdigest()
    return int(digest[:16], 16) % folds


def gold_answer(instance: Instance) -> dict[str, Any]:
    """The gold of ``instance`` as the answer object its task's contract asks for."""
    task, gold = instance.task, instance.gold
    # a ranking task's gold is one label: the answer ranks it first and alone (see the module doc)
    return answer_object(task, [gold] if task in RANKED_TASKS else gold)


def gold_answer_text(instance: Instance) -> str:
    """:func:`gold_answer` as the assistant would write it: compact JSON on one line."""
    return json.dumps(gold_answer(instance), ensure_ascii=False)


class ChatExample(TypedDict):
    """One line of an exported ``<task>.jsonl``."""

    id: str
    task: str
    sample_id: str
    scenario: str
    fold: int
    messages: list[ChatMessage]


def chat_example(instance: Instance, folds: int = DEFAULT_FOLDS) -> ChatExample:
    """One chat example: the rendered prompt, then the gold answer as the assistant's turn."""
    prompt = render(instance)
    return {
        "id": instance.id,
        "task": instance.task,
        "sample_id": instance.sample_id,
        "scenario": instance.scenario,
        "fold": clip_fold(instance.sample_id, folds),
        "messages": [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
            {"role": "assistant", "content": gold_answer_text(instance)},
        ],
    }


def chat_examples(instances: Iterable[Instance], folds: int = DEFAULT_FOLDS) -> list[ChatExample]:
    """A chat example per instance, in input order (see the module doc for the format and the folds).

    Raises ``ValueError`` when ``folds < 2`` (one fold leaves nothing to train on).
    """
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}")
    return [chat_example(inst, folds) for inst in instances]
