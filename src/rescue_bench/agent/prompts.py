"""The agent's prompts, step by step, and the judge prompts for its turns (the project's own words).

Layout, as for the tasks: a system message that depends only on the scenario, the cue mode and
whether the state step is asked (role, the steps, label definitions and boundary rules from
:mod:`rescue_bench.labels`), then one conversation: the first user message holds the clients, the
transcript and the first step's question; every later step is one short user message. Each call
therefore extends the previous one, so a provider's prefix cache serves all but the newest message.

Only :meth:`DecisionPoint.model_input` fields are rendered: cue-mode projections of the rows up to
the decision, the clients and the label sets. The one exception is the strategy-given-target branch
(:func:`how_given_target_question`), which names the gold target exactly as SSP does; it is a
separate conversation that the main chain never sees.
"""

from __future__ import annotations

import json
from functools import lru_cache

from rescue_bench.agent.points import DecisionPoint
from rescue_bench.labels import BOUNDARY_RULES, PATTERNS, STRATEGIES

# the tasks' framework text is reused, not restated: setting, cue note, definition lists
from rescue_bench.prompts.render import JUDGE_SYSTEM, SETTING, ChatMessage, Prompt, cue_note, definitions, render_rows

STEP_TITLES: dict[str, str] = {
    "state": "Step: the group's state.",
    "when": "Step: timing.",
    "whom_how": "Step: whom and how.",
    "turn": "Step: the turn.",
    "how_gold": "Step: strategy for a given target.",
}
"""The first line of every step's question: names the step for the reader of a log (and for the
scripted test models)."""

CONTRACT: dict[str, str] = {
    "state": (
        '{"emotions": [{"client": "<name>", "emotion": "<short phrase>", "intensity": <integer 0-10>}], '
        '"stances": [{"source": "<name>", "target": "<name>", "viewpoint": "<what source thinks of target>"}], '
        '"pattern": "<relation pattern label>"}'
    ),
    "when": '{"answer": "yes"} or {"answer": "no"}',
    "whom_how": '{"target": "<target>", "strategy": "<strategy label>"}',
    "turn": '{"turn": "<what the therapist says, one to three sentences>"}',
    "how_gold": '{"strategy": "<strategy label>"}',
}
"""The answer format of each step (parsed by :mod:`rescue_bench.agent.answers`)."""


@lru_cache(maxsize=32)
def system_prompt(scenario: str, mode: str, state: str) -> str:
    """The stable prefix of every call in ``scenario`` under cue ``mode`` and state mode ``state``."""
    steps = (
        "first you estimate the state of the group (what each client feels and how strongly, what each "
        "thinks of the other, which relation pattern is active), then you decide"
        if state == "explicit"
        else "you decide"
    )
    parts = [
        f"You are an expert couple and family therapist. You are the therapist in {SETTING[scenario]}.",
        (
            f"At a moment in the session you work through one decision in steps: {steps} whether to take the "
            "next turn now; if you do, whom to address and with which strategy; and finally what you say. "
            "Each step arrives as its own message. Answer every step with JSON only, in the form it asks for, "
            "and keep to your earlier answers unless the transcript contradicts them."
        ),
        cue_note(mode),
        definitions("Relation patterns between the clients", PATTERNS[scenario]),
        definitions("Therapist support strategies", STRATEGIES[scenario]),
        "Boundary rules:\n" + "\n".join(f"- {rule}" for rule in BOUNDARY_RULES),
    ]
    return "\n\n".join(parts)


def _pairs(clients: list[str]) -> str:
    pairs = [f"{a} -> {b}" for a in clients for b in clients if a != b]
    return ", ".join(pairs) or "(none: only one client)"


def state_question(point: DecisionPoint) -> str:
    return "\n".join(
        [
            STEP_TITLES["state"],
            "Before deciding anything, estimate where the group stands right now, from the transcript above.",
            f"- For each client ({', '.join(point.participants)}): what they feel inside right now, in one short "
            "phrase, and how strongly (0 = not at all, 10 = overwhelming).",
            f"- For each ordered pair of clients ({_pairs(point.participants)}): the stance of the first toward "
            "the second, in one short phrase.",
            f"- The relation pattern active right now, one of: {', '.join(point.patterns)}.",
            "Answer (JSON only): " + CONTRACT["state"],
        ]
    )


def when_question(point: DecisionPoint) -> str:
    return "\n".join(
        [
            STEP_TITLES["when"],
            "The transcript stops right after its last row. Do you take the next turn now (yes), or keep "
            "listening and let the clients continue (no)?",
            "Answer (JSON only): " + CONTRACT["when"],
        ]
    )


def whom_how_question(point: DecisionPoint) -> str:
    return "\n".join(
        [
            STEP_TITLES["whom_how"],
            f"You take the turn. Whom do you address: one client by name, or '{point.group}' for all of them "
            "together? And with which strategy?",
            "Targets: " + ", ".join(point.targets),
            "Strategies: " + ", ".join(point.strategies),
            "Answer (JSON only, labels exactly as listed): " + CONTRACT["whom_how"],
        ]
    )


def turn_question(point: DecisionPoint) -> str:
    return "\n".join(
        [
            STEP_TITLES["turn"],
            "Now say it: write what you say to them at this moment, in one to three sentences, as spoken.",
            "Answer (JSON only): " + CONTRACT["turn"],
        ]
    )


def how_given_target_question(point: DecisionPoint, target: str) -> str:
    """The branch question: the strategy toward a given target (SSP's question; names the target)."""
    return "\n".join(
        [
            STEP_TITLES["how_gold"],
            f"Suppose your next turn addresses {target}. Which strategy should that turn use?",
            "Strategies: " + ", ".join(point.strategies),
            "Answer (JSON only, a label exactly as listed): " + CONTRACT["how_gold"],
        ]
    )


QUESTIONS = {"state": state_question, "when": when_question, "whom_how": whom_how_question, "turn": turn_question}


def opening(point: DecisionPoint) -> str:
    """The part of the first user message before the first question: clients and transcript."""
    return "\n".join(
        [
            f"Clients in this session: {', '.join(point.participants) or '(unknown)'}.",
            "Transcript (newest last):",
            render_rows(point.context),
        ]
    )


# --------------------------------------------------------------------------------------------------
# judges of the turn
# --------------------------------------------------------------------------------------------------

TURN_REAL_RUBRIC = (
    "Rate how close the candidate therapist turn comes to what the real therapist said at this moment: the "
    "same person or people addressed, the same therapeutic move, and compatible substance. Wording does not "
    "matter.\n"
    "5 = same addressee, same move, same substance; 4 = same addressee and move, different detail; "
    "3 = partly the same (the right move toward someone else, or the right person with another move); "
    "2 = little in common; 1 = unrelated, or it would work against what the therapist did."
)

TURN_STRATEGY_RUBRIC = (
    "Rate whether the candidate therapist turn carries out the given strategy toward the given target.\n"
    "5 = clearly that strategy, clearly addressed to that target; 4 = that strategy toward that target, less "
    "clearly; 3 = partly (that strategy toward someone else, or a neighbouring move toward that target); "
    "2 = mostly another move; 1 = not at all."
)


def turn_real_prompt(point: DecisionPoint, real: str, candidate: str) -> Prompt:
    """Judge request: the candidate turn against the real therapist turn (1-5)."""
    addressed = ", ".join(point.gold.recipients or []) or "(not annotated)"
    body = (
        f"{TURN_REAL_RUBRIC}\n\nTranscript before the turn (newest last):\n{render_rows(point.context)}\n\n"
        f"Real therapist turn (addressed to: {addressed}): {real}\nCandidate turn: {candidate}"
    )
    return Prompt(JUDGE_SYSTEM, body)


def turn_strategy_prompt(point: DecisionPoint, strategy: str, target: str, candidate: str) -> Prompt:
    """Judge request: does the candidate turn do ``strategy`` toward ``target``? (1-5)."""
    definition = STRATEGIES[point.scenario].get(strategy, "")
    body = (
        f"{TURN_STRATEGY_RUBRIC}\n\nTranscript before the turn (newest last):\n{render_rows(point.context)}\n\n"
        f"Strategy: {strategy}: {definition}\nTarget: {target}"
        f"{' (all clients together)' if target == point.group else ''}\nCandidate turn: {candidate}"
    )
    return Prompt(JUDGE_SYSTEM, body)


def judge_texts() -> str:
    """Every agent judge rubric, for the fingerprint recorded in run.json."""
    return json.dumps([JUDGE_SYSTEM, TURN_REAL_RUBRIC, TURN_STRATEGY_RUBRIC])


def message(role: str, content: str) -> ChatMessage:
    return {"role": role, "content": content}
