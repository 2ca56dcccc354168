"""Rendering instances and judge requests into chat prompts (pure functions)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypedDict

from rescue_bench.contract import FORMATS, JUDGE_SCALE, TARGET_SCALE, VIEWPOINT_SCALE, judge_format
from rescue_bench.labels import BOUNDARY_RULES, GROUP_LABELS, PATTERNS, RANKED_TASKS, STRATEGIES, TASK_NAMES, TaskName
from rescue_bench.tasks.instance import Instance, ModelInput, RowView

ANSWER_CONTRACT: dict[str, str] = {name: answer_format.example for name, answer_format in FORMATS.items()}
"""The answer format of each task and judge as the model is shown it (from :mod:`rescue_bench.contract`)."""

SETTING = {
    "couple": "a couples-therapy session with two partners and a therapist",
    "family": "a family-therapy session with several family members and a therapist",
}
"""The session each scenario's prompts describe (the tasks' and the support agent's)."""

_CHOICES: dict[str, str] = {"rpp": "Labels", "stp": "Candidates", "ssp": "Strategies"}
"""How the user message names the candidates a ranking task chooses from."""
_SYSTEM_NOTE: dict[str, str] = {
    "stp": "Targets are the clients' names, or '{group}' when the turn addresses all clients together. The therapist is never a target.",
}
"""A task's own rule in its system message (``{group}``: the scenario's group label)."""

_QUESTION = {
    "itp": (
        "The transcript stops right after the last row above. Should the therapist take the next turn now "
        "(yes), or keep listening and let the clients continue (no)?"
    ),
    "rpp": (
        "The therapist is about to speak next. Which relation pattern organises the interaction at this point? "
        "Rank the three most likely labels from the list."
    ),
    "stp": (
        "The therapist is about to speak next. Whom should the therapist's next turn address? "
        "Rank the three most likely targets from the candidates."
    ),
    "ssp": (
        "The therapist is about to speak next, addressing {target}. Which support strategy should that turn use? "
        "Rank the three most likely strategies from the list."
    ),
    "er": (
        "Focus on {client}'s turn marked CURRENT. What does {client} feel inside right now, and how strongly "
        "(0 = not at all, 10 = overwhelming)? Describe the feeling in one short phrase."
    ),
    "vp": (
        "Focus on {client}'s turn marked CURRENT. What does {client} think of each other participant they "
        "express a view about (their stance toward that person)? Give one entry per participant."
    ),
}

_TASK_GUIDE = {
    "itp": (
        "Decide whether this is a good moment for the therapist to intervene. Therapists usually step in to "
        "slow an escalation, to follow up a disclosure, to redirect, or when a client turns to them; they "
        "usually hold back while clients are productively talking to each other."
    ),
    "rpp": "Identify the relational pattern between the clients that is active just before the therapist speaks.",
    "stp": (
        "Decide whom the therapist should address next: one client by name, or all clients together with the "
        "group label."
    ),
    "ssp": "Decide which therapeutic strategy the therapist's next turn should use toward the given target.",
    "er": "Infer a client's internal emotional state from what they say and how they say it.",
    "vp": "Infer a client's viewpoints and attitudes toward the other people in the session.",
}


def definitions(title: str, labels: dict[str, str]) -> str:
    """A titled list of labels with their definitions, as every prompt shows them."""
    lines = [f"{title}:"]
    lines += [f"- {name}: {text}" for name, text in labels.items()]
    return "\n".join(lines)


@lru_cache(maxsize=64)
def system_prompt(task: TaskName, scenario: str, mode: str) -> str:
    """The stable prefix of ``task`` in ``scenario`` under cue ``mode``: same for every instance."""
    parts = [
        f"You are an expert couple and family therapist assisting with research on {SETTING[scenario]}.",
        f"Task: {TASK_NAMES[task]}. {_TASK_GUIDE[task]}",
        cue_note(mode),
    ]
    # Every task sees the scenario's whole framework: the relation patterns and strategies are the
    # shared clinical vocabulary of the benchmark, and one long stable prefix is cheap to cache.
    parts.append(definitions("Relation patterns between the clients", PATTERNS[scenario]))
    parts.append(definitions("Therapist support strategies", STRATEGIES[scenario]))
    parts.append("Boundary rules:\n" + "\n".join(f"- {rule}" for rule in BOUNDARY_RULES))
    if task in _SYSTEM_NOTE:
        parts.append(_SYSTEM_NOTE[task].format(group=GROUP_LABELS[scenario]))
    parts.append(
        "Answer with JSON only, no other text, in exactly this form:\n" + ANSWER_CONTRACT[task]
        + ("\nUse labels exactly as listed." if task in RANKED_TASKS else "")
    )
    return "\n\n".join(parts)


def cue_note(mode: str) -> str:
    """The sentence telling the model which cues the rows show in ``mode``."""
    shown = {
        "dialogue": "speaker, addressees, what was said and overlapping background talk",
        "audio": "speaker, addressees, what was said, background talk and tone of voice",
        "visual": "speaker, addressees, what was said, background talk, and visible behaviour "
        "(posture, facial expression, self-directed and interaction behaviour)",
        "audiovisual": "speaker, addressees, what was said, background talk, tone of voice and visible behaviour",
    }[mode]
    return f"Each transcript row shows: {shown}."


def _cues(label: str, items: list[Any] | None, who: str) -> list[str]:
    return [f"  {label} ({getattr(i, who)}): {i.description}" for i in items or []]


def render_row(view: RowView, marker: str = "") -> str:
    """One row as transcript text; only the fields the cue mode kept are present."""
    to = ", ".join(view.target) if view.target else "-"
    lines = [f"[{view.row_index}]{marker} {view.speaker or 'Unknown'} -> {to}: {view.text}"]
    for talk in view.background:
        lines.append(f"  background ({talk.speaker} -> {', '.join(talk.target) or '-'}): {talk.content}")
    if view.tone:
        lines.append(f"  tone: {view.tone}")
    lines += _cues("posture", view.posture, "person")
    lines += _cues("face", view.face, "person")
    lines += _cues("self-directed", view.self_directed, "person")
    for cue in view.interaction or []:
        lines.append(f"  interaction ({cue.initiator} -> {', '.join(cue.target) or '-'}): {cue.description}")
    return "\n".join(lines)


def render_rows(rows: list[RowView]) -> str:
    """Rows in order, newest last."""
    return "\n".join(render_row(r) for r in rows) if rows else "(no earlier rows)"


class ChatMessage(TypedDict):
    """One message of a chat request, as the OpenAI-style APIs and the engine take it."""

    role: str
    """``system``, ``user`` or ``assistant``."""
    content: str


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: the stable system prefix and the instance-specific user message."""

    system: str
    user: str


def render(instance: Instance) -> Prompt:
    """The chat prompt of ``instance``, as ``rescue eval`` sends it.

    Rendered from ``instance.model_input()`` alone (:func:`render_input`), so the gold, the id, the
    clip and the row never reach the model.

    Parameters
    ----------
    instance
        An instance (:func:`rescue_bench.tasks.build_instances`).

    Returns
    -------
    Prompt
        ``system``: the stable prefix of the task and scenario (instructions, label definitions, the
        answer contract); ``user``: the rows in order, then the question and the answer format. Send
        them as a system and a user message.

    Examples
    --------
    >>> from rescue_bench.data.load import load_clips
    >>> from rescue_bench.tasks import build_instances
    >>> prompt = render(build_instances(load_clips(), "stp")[0])
    >>> prompt.user.splitlines()[-2]
    'Candidates: Dana, Marcus, Couple'
    >>> prompt.system.endswith("Use labels exactly as listed.")
    True
    """
    return render_input(instance.model_input())


def render_input(seen: ModelInput) -> Prompt:
    """The prompt showing ``seen``; it has no gold, id, clip or row to leak (see :class:`ModelInput`)."""
    task, scenario = seen.task, seen.scenario
    participants = ", ".join(seen.participants) or "(unknown)"
    parts = [f"Clients in this session: {participants}.", "Transcript:", render_rows(seen.context)]
    if seen.current is not None:
        parts.append(render_row(seen.current, marker=" CURRENT"))
    question = _QUESTION[task].format(client=seen.client, target=seen.support_target)
    parts.append("Question: " + question)
    if task in _CHOICES:
        parts.append(f"{_CHOICES[task]}: " + ", ".join(seen.candidates))
    elif task == "vp":
        others = [p for p in seen.participants if p != seen.client]
        parts.append("Other participants: " + (", ".join(others) or "(none)") + ", Therapist")
    parts.append("Answer (JSON only): " + ANSWER_CONTRACT[task])
    return Prompt(system=system_prompt(task, scenario, seen.mode), user="\n".join(parts))


JUDGE_SYSTEM = (
    "You are a careful rater for a research benchmark on couple and family therapy. You compare a model's "
    f"answer with a reference annotation written by trained annotators and rate their agreement on a {JUDGE_SCALE} "
    "scale. Judge meaning, not wording: a paraphrase that says the same thing is fully correct.\n\n"
    "Answer with JSON only: " + judge_format("default").example
)

ER_RUBRIC = (
    "Rate how well the predicted emotion matches the reference emotion of the client.\n"
    "5 = same emotion and same nuance; 4 = same core emotion, minor difference in nuance; "
    "3 = related emotion, partly right; 2 = mostly different but with some overlap; 1 = unrelated or opposite.\n"
    "Ignore intensity; it is scored separately."
)

VP_RUBRIC = (
    "Rate how well the predicted viewpoints match the reference viewpoints of the client: the right people "
    "(targets) and the right stance toward each.\n"
    "5 = all reference viewpoints covered with the same stance; 4 = mostly right, a small miss; "
    "3 = about half right (right people but partly wrong stance, or one of several targets missed); "
    "2 = mostly wrong, a little overlap; 1 = wrong people or opposite stance."
)

JUDGE_RUBRICS: dict[TaskName, str] = {"er": ER_RUBRIC, "vp": VP_RUBRIC}
"""The 1-5 default rubric of each judged task (``labels.JUDGED_TASKS``), as the judge model is given it."""

VP_RUBRIC_AUTHORS = (
    f"Score two parts and add them: target correctness {TARGET_SCALE} ({TARGET_SCALE.hi} = exactly the reference "
    f"targets, 1 = partly, {TARGET_SCALE.lo} = none) and viewpoint correctness {VIEWPOINT_SCALE} "
    f"({VIEWPOINT_SCALE.hi} = same stance and content, {VIEWPOINT_SCALE.lo} = unrelated). "
    "Answer with JSON only: " + judge_format("authors").example
)


def judge_prompt(task: str, reference: Any, prediction: Any, client: str | None, rubric: str = "default") -> Prompt:
    """A judge request comparing ``prediction`` with ``reference`` for ER or VP.

    ``reference`` and ``prediction`` are a record's ``gold`` and ``prediction``, ``client`` the
    instance's ``client``. ``rubric="authors"`` (VP only) asks for the authors' 0-2 target + 0-4
    viewpoint scores instead of 1-5.

    >>> prompt = judge_prompt("er", {"emotion": "hurt", "intensity": 5}, {"emotion": "sad", "intensity": 4}, "Dana")
    >>> prompt.user.splitlines()[-3:]
    ['Client: Dana', 'Reference emotion: hurt', 'Predicted emotion: sad']
    """
    if task == "er":
        body = (
            f"{ER_RUBRIC}\n\nClient: {client}\nReference emotion: {reference['emotion']}\n"
            f"Predicted emotion: {prediction['emotion']}"
        )
        return Prompt(JUDGE_SYSTEM, body)
    ref = json.dumps([{"target": v["target"], "viewpoint": v["viewpoint"]} for v in reference], ensure_ascii=False)
    pred = json.dumps(prediction, ensure_ascii=False)
    if rubric == "authors":
        system = JUDGE_SYSTEM.split("\n\nAnswer with JSON only")[0]
        return Prompt(system, f"{VP_RUBRIC_AUTHORS}\n\nClient: {client}\nReference viewpoints: {ref}\nPredicted viewpoints: {pred}")
    return Prompt(JUDGE_SYSTEM, f"{VP_RUBRIC}\n\nClient: {client}\nReference viewpoints: {ref}\nPredicted viewpoints: {pred}")
