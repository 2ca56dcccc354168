"""The answer contract: the JSON every task and judge asks the model for, declared once.

Each task (and each judge rubric) asks for a small JSON object. This module is the one place that
says which keys that object has, which synonyms of them the parsers tolerate, which score scales its
numbers live on, the example the model is shown, and what a judge is told when its reply does not
parse. Everything that writes or reads the format takes it from here: the prompts
(:mod:`rescue_bench.prompts`) show :attr:`AnswerFormat.example`, the parsers
(:mod:`rescue_bench.parse`) look up :attr:`Key.accepted` and check :class:`Scale` ranges, the
engine's judge re-asks with :attr:`AnswerFormat.reask`, and the chat export, the offline baselines
and the test answer models build answers with :func:`answer_object`.

=================  ================================================================  ===========
format             answer                                                            used by
=================  ================================================================  ===========
``itp``            ``{"answer": "yes" | "no"}``                                      ITP
``rpp/stp/ssp``    ``{"ranking": [three labels, most likely first]}``                RPP, STP, SSP
``er``             ``{"emotion": "...", "intensity": 0-10}``                         ER
``vp``             ``{"viewpoints": [{"target": "...", "viewpoint": "..."}]}``       VP
``judge``          ``{"score": 1-5}``                                                ER and VP judge
``judge_authors``  ``{"target_score": 0-2, "viewpoint_score": 0-4}``                 VP, ``--vp-rubric authors``
=================  ================================================================  ===========

Pure and dependency-free apart from :mod:`rescue_bench.labels` (the ITP answers).

>>> answer_object("er", {"emotion": "hurt", "intensity": 7})
{'emotion': 'hurt', 'intensity': 7}
>>> judge_format("authors").reask.startswith("Your reply was not a valid score.")
True
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rescue_bench.labels import ITP_LABELS, RUBRICS, Rubric

__all__ = [
    "ANSWER",
    "EMOTION",
    "FORMATS",
    "INTENSITY",
    "INTENSITY_SCALE",
    "JUDGE_FORMATS",
    "JUDGE_SCALE",
    "RANKING",
    "RANKING_ITEM",
    "RANK_SIZE",
    "RUBRICS",
    "SCORE",
    "TARGET_SCALE",
    "TARGET_SCORE",
    "VIEWPOINT",
    "VIEWPOINTS",
    "VIEWPOINT_SCALE",
    "VIEWPOINT_SCORE",
    "VP_TARGET",
    "AnswerFormat",
    "Key",
    "Scale",
    "answer_object",
    "answer_text",
    "judge_format",
]


@dataclass(frozen=True)
class Key:
    """A key of an answer object: the name the model is asked for, and tolerated synonyms.

    Parsers compare keys ignoring case and surrounding space, and prefer an object holding
    :attr:`name` over one that only holds a synonym.
    """

    name: str
    synonyms: tuple[str, ...] = ()

    @property
    def accepted(self) -> tuple[str, ...]:
        """Every key a parser reads, the contract's own name first."""
        return (self.name, *self.synonyms)


@dataclass(frozen=True)
class Scale:
    """An inclusive integer range ``lo..hi`` a number of the answer must lie in."""

    lo: int
    hi: int

    def __str__(self) -> str:
        return f"{self.lo}-{self.hi}"

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.lo <= value <= self.hi


@dataclass(frozen=True)
class AnswerFormat:
    """One answer format: its keys, the example the model is shown, its scales and its re-ask."""

    name: str
    keys: tuple[Key, ...]
    """The top-level keys of the answer object, in the order shown."""
    example: str
    """The format as the model sees it (placeholders in ``<...>``)."""
    scales: Mapping[str, Scale] = field(default_factory=dict)
    """The scale of each numeric key, by key name."""
    item_keys: tuple[Key, ...] = ()
    """Keys of the objects inside the answer's list (VP items; ranking items written as objects)."""
    reask: str | None = None
    """Judges only: the message sent once when a reply does not parse."""


# -- keys ------------------------------------------------------------------------------------------

ANSWER = Key("answer", ("prediction", "label", "intervene"))
"""ITP: ``"yes"`` or ``"no"``."""
RANKING = Key("ranking", ("labels", "prediction", "answer"))
"""RPP, STP, SSP: the labels, most likely first."""
RANKING_ITEM = Key("label", ("target", "strategy", "pattern", "name"))
"""A ranking item written as an object (``[{"label": "track"}, ...]``) carries its label here."""
EMOTION = Key("emotion", ("emotion_description",))
INTENSITY = Key("intensity")
VIEWPOINTS = Key("viewpoints")
VP_TARGET = Key("target")
"""The person a VP item is about."""
VIEWPOINT = Key("viewpoint")
SCORE = Key("score", ("rating",))
"""The 1-5 judge score."""
TARGET_SCORE = Key("target_score")
VIEWPOINT_SCORE = Key("viewpoint_score")

# -- scales ----------------------------------------------------------------------------------------

RANK_SIZE = 3
"""Ranking tasks ask for this many labels (SPEC section 4); parsers keep at most this many."""
INTENSITY_SCALE = Scale(0, 10)
JUDGE_SCALE = Scale(1, 5)
TARGET_SCALE = Scale(0, 2)
"""The authors' VP rubric: target correctness."""
VIEWPOINT_SCALE = Scale(0, 4)
"""The authors' VP rubric: viewpoint correctness."""

# -- examples --------------------------------------------------------------------------------------

_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _shape(*pairs: tuple[Key, str]) -> str:
    """An object as the model is shown it: ``{"key": value, ...}`` with values written as given."""
    return "{" + ", ".join(f"{json.dumps(key.name)}: {value}" for key, value in pairs) + "}"


def _ranking(task: str, noun: str, plural: str) -> AnswerFormat:
    slots = ", ".join([f'"<{noun}>"'] * RANK_SIZE)
    example = _shape((RANKING, f"[{slots}]")) + f"  ({_NUMBER_WORDS[RANK_SIZE]} {plural}, most likely first)"
    return AnswerFormat(task, (RANKING,), example, item_keys=(RANKING_ITEM,))


def _reask(template: str, where: str) -> str:
    return f"Your reply was not a valid score. Answer with JSON only, exactly {template} where {where}."


FORMATS: dict[str, AnswerFormat] = {
    "itp": AnswerFormat("itp", (ANSWER,), " or ".join(_shape((ANSWER, json.dumps(label))) for label in ITP_LABELS)),
    "rpp": _ranking("rpp", "label", "labels"),
    "stp": _ranking("stp", "target", "targets"),
    "ssp": _ranking("ssp", "strategy", "strategies"),
    "er": AnswerFormat(
        "er",
        (EMOTION, INTENSITY),
        _shape((EMOTION, '"<short description of what the client feels>"'), (INTENSITY, f"<integer {INTENSITY_SCALE}>")),
        scales={INTENSITY.name: INTENSITY_SCALE},
    ),
    "vp": AnswerFormat(
        "vp",
        (VIEWPOINTS,),
        _shape((VIEWPOINTS, "[" + _shape((VP_TARGET, '"<participant>"'), (VIEWPOINT, '"<what the client thinks of them>"')) + "]")),
        item_keys=(VP_TARGET, VIEWPOINT),
    ),
    "judge": AnswerFormat(
        "judge",
        (SCORE,),
        _shape((SCORE, f"<integer {JUDGE_SCALE}>")),
        scales={SCORE.name: JUDGE_SCALE},
        reask=_reask(_shape((SCORE, "N")), f"N is an integer from {JUDGE_SCALE.lo} to {JUDGE_SCALE.hi}"),
    ),
    "judge_authors": AnswerFormat(
        "judge_authors",
        (TARGET_SCORE, VIEWPOINT_SCORE),
        _shape((TARGET_SCORE, f"<{TARGET_SCALE}>"), (VIEWPOINT_SCORE, f"<{VIEWPOINT_SCALE}>")),
        scales={TARGET_SCORE.name: TARGET_SCALE, VIEWPOINT_SCORE.name: VIEWPOINT_SCALE},
        reask=_reask(
            _shape((TARGET_SCORE, "T"), (VIEWPOINT_SCORE, "V")),
            f"T is an integer from {TARGET_SCALE.lo} to {TARGET_SCALE.hi} "
            f"and V an integer from {VIEWPOINT_SCALE.lo} to {VIEWPOINT_SCALE.hi}",
        ),
    ),
}
"""Every answer format by name: the six tasks, then the two judge formats."""

JUDGE_FORMATS: dict[Rubric, AnswerFormat] = {"default": FORMATS["judge"], "authors": FORMATS["judge_authors"]}
"""The judge's answer format per rubric (ER is always judged with ``"default"``)."""


def judge_format(rubric: Rubric | str = "default") -> AnswerFormat:
    """The answer format a judge under ``rubric`` is asked for (``ValueError`` for an unknown rubric)."""
    try:
        return JUDGE_FORMATS[rubric]  # type: ignore[index]
    except KeyError:
        raise ValueError(f"unknown rubric {rubric!r}; expected one of {', '.join(RUBRICS)}") from None


# -- building answers ------------------------------------------------------------------------------


def _integer(value: Any, scale: Scale, what: str) -> int:
    """``value`` as an int on ``scale``; integral numbers only (numpy integers included)."""
    if isinstance(value, bool):
        raise ValueError(f"{what} {value!r} is not an integer")
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{what} {value!r} is not an integer") from None
    if number not in scale:
        raise ValueError(f"{what} {number} is outside {scale}")
    return number


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} {value!r} is not a string")
    return value


def _yes_no(value: Any) -> dict[str, Any]:
    if value not in ITP_LABELS:
        raise ValueError(f"ITP answer {value!r} is not one of {', '.join(ITP_LABELS)}")
    return {ANSWER.name: value}


def _ranking_object(value: Any) -> dict[str, Any]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"a ranking must be a list of labels, got {value!r}")
    return {RANKING.name: [_text(v, "label") for v in value]}


def _emotion(value: Any) -> dict[str, Any]:
    return {
        EMOTION.name: _text(value[EMOTION.name], "emotion"),
        INTENSITY.name: _integer(value[INTENSITY.name], INTENSITY_SCALE, "intensity"),
    }


def _viewpoints(value: Any) -> dict[str, Any]:
    return {
        VIEWPOINTS.name: [
            {VP_TARGET.name: _text(v[VP_TARGET.name], "target"), VIEWPOINT.name: _text(v[VIEWPOINT.name], "viewpoint")}
            for v in value
        ]
    }


def _judge(value: Any) -> dict[str, Any]:
    return {SCORE.name: _integer(value, JUDGE_SCALE, "score")}


def _judge_authors(value: Any) -> dict[str, Any]:
    fmt = FORMATS["judge_authors"]
    return {key.name: _integer(value[key.name], fmt.scales[key.name], key.name) for key in fmt.keys}


_OBJECTS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "itp": _yes_no, "rpp": _ranking_object, "stp": _ranking_object, "ssp": _ranking_object,
    "er": _emotion, "vp": _viewpoints, "judge": _judge, "judge_authors": _judge_authors,
}
"""How each answer format (:data:`FORMATS`) writes a value as its answer object."""


def answer_object(name: str, value: Any) -> dict[str, Any]:
    """The answer object of format ``name`` (a task, ``"judge"`` or ``"judge_authors"``) for ``value``.

    ``value`` is what the format's parser returns as the prediction, so the object parses back to it:
    ITP ``"yes"``/``"no"``; RPP/STP/SSP a list of labels, most likely first; ER
    ``{"emotion": str, "intensity": int}``; VP a list of ``{"target": str, "viewpoint": str}``
    (other keys, e.g. the gold's ``source``, are left out); judge an int 1-5; the authors' rubric
    ``{"target_score": int, "viewpoint_score": int}``. Numbers must be integers on their scale.

    Raises ``ValueError`` for an unknown format or a value the format cannot carry.
    """
    if name not in _OBJECTS:
        raise ValueError(f"unknown answer format {name!r}; expected one of {', '.join(FORMATS)}")
    return _OBJECTS[name](value)


def answer_text(name: str, value: Any) -> str:
    """:func:`answer_object` as a model would write it: compact JSON on one line, non-ASCII kept."""
    return json.dumps(answer_object(name, value), ensure_ascii=False)
