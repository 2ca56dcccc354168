"""Label sets of RESCUE-Bench: the one place every label, definition and boundary rule lives.

Names are exact (SPEC section 2). Definitions and boundary rules are written by this project, in its
own words, and are what the prompts show the model. Everything else (builders, parsers, validators,
baselines, reports) imports from here, so a label can never differ between two places.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeVar, get_args

Scenario = Literal["couple", "family"]
SCENARIOS: tuple[Scenario, ...] = ("couple", "family")

POOLED = "both"
"""The pooled scenario (couple and family clips together, the paper's "Both" column): the key of the
pooled numbers in summaries, reports, the agent's and the simulator's metrics."""
SUMMARY_SCENARIOS: tuple[str, ...] = (*SCENARIOS, POOLED)
"""The scenarios every summary reports: each one, then the pooled one."""

_R = TypeVar("_R", bound=Mapping[str, Any])


def in_scenario(records: Iterable[_R], scenario: str) -> list[_R]:
    """The records of ``scenario`` (its ``"scenario"`` field); :data:`POOLED` keeps all of them."""
    return list(records) if scenario == POOLED else [r for r in records if r["scenario"] == scenario]

THERAPIST = "Therapist"
GROUP_LABELS: dict[str, str] = {"couple": "Couple", "family": "Family"}
"""The group label of each scenario: a speaker or target that stands for all clients at once."""

NON_CLIENT_SPEAKERS = frozenset({THERAPIST, *GROUP_LABELS.values()})

# --------------------------------------------------------------------------------------------------
# Relation patterns (RPP)
# --------------------------------------------------------------------------------------------------

COUPLE_PATTERNS: dict[str, str] = {
    "pursue_withdraw": (
        "One partner presses for contact, answers or change (criticising, demanding, protesting) while "
        "the other pulls back (deflecting, going quiet, shutting down); each move feeds the other."
    ),
    "attack_attack": (
        "Both partners are on the offensive at once: blame, criticism or contempt is met with "
        "counter-blame, and the exchange escalates."
    ),
    "withdraw_withdraw": (
        "Both partners disengage: short, flat or evasive turns, little emotional contact, the "
        "conversation stalls rather than escalates."
    ),
    "repair_softening": (
        "An early, still fragile loosening of the negative cycle: a bid to repair, an admission, a "
        "softer tone or a tentative reach toward the other, not yet a settled shared stance."
    ),
    "constructive_alignment": (
        "A sustained shared stance: both partners listen, acknowledge each other and work on the "
        "problem together over several turns."
    ),
    "mixed_transition": (
        "The interaction visibly shifts between patterns within the window (e.g. from attack to "
        "withdrawal); used only when a change is observed, never as a fallback for uncertainty."
    ),
}

FAMILY_PATTERNS: dict[str, str] = {
    "escalation_conflict": (
        "Two or more family members escalate: accusations, raised voices or counter-attacks build on "
        "each other."
    ),
    "pursue_withdraw": (
        "One family member presses another for contact or change while the other avoids, deflects or "
        "shuts down."
    ),
    "mutual_disengagement": (
        "Members disengage from each other: flat, minimal or avoidant exchanges with little emotional "
        "contact."
    ),
    "cross_generational_coalition": (
        "A parent and a child (or another cross-generation pair) side together against another member, "
        "crossing the generational boundary."
    ),
    "boundary_hierarchy_strain": (
        "Roles, authority or boundaries are contested or confused: a child parents, a parent abdicates, "
        "or members intrude on each other's roles."
    ),
    "repair_softening": (
        "An early, still fragile loosening: an apology, acknowledgement or softer bid between members, "
        "not yet a settled shared stance."
    ),
    "cooperative_family_alliance": (
        "A sustained shared stance: members support each other and work together on the problem over "
        "several turns."
    ),
    "mixed_transition": (
        "The interaction visibly shifts between patterns within the window; used only when a change is "
        "observed, never as a fallback for uncertainty."
    ),
}

PATTERNS: dict[str, dict[str, str]] = {"couple": COUPLE_PATTERNS, "family": FAMILY_PATTERNS}

# --------------------------------------------------------------------------------------------------
# Support strategies (SSP)
# --------------------------------------------------------------------------------------------------

COUPLE_STRATEGIES: dict[str, str] = {
    "track": "Describe the interaction pattern as it unfolds, naming the moves without changing their meaning.",
    "reframe": "Offer a new meaning for a behaviour or pattern (e.g. anger as fear of losing the other).",
    "evoke": "Deepen one partner's own emotional experience: slow down, explore and heighten what they feel.",
    "enact": "Ask the partners to speak to each other directly in the session, to try a new interaction live.",
    "join": "Make one partner's emotion understandable and receivable for the other; build the therapeutic bond.",
    "detach": "Help the partners step back and see the problem as a shared external 'it' rather than each other.",
    "repair": "Address a rupture: acknowledge hurt, invite an apology, or mend the alliance.",
    "counterbalance": "Give voice to the partner who is less heard, balancing the floor between them.",
    "safeguard": "Protect urgently: stop escalation, contempt or harm, and restore safety.",
    "goal_align": "Clarify or agree on what the couple wants from therapy and from each other.",
}

FAMILY_STRATEGIES: dict[str, str] = {
    "join": "Connect with a family member's experience so they feel understood and engaged.",
    "track": "Describe the family's sequence of interaction as it happens, without changing its meaning.",
    "counterbalance": "Give voice to a member who is less heard or outweighed by the others.",
    "enact": "Ask members to talk to each other directly in the session to try a different interaction.",
    "boundary": "Reorganise roles and boundaries: restore hierarchy, separate subsystems, block intrusions.",
    "reframe": "Offer a new meaning for a behaviour or pattern in the family.",
    "repair": "Address a rupture between members or with the therapist; invite acknowledgement or apology.",
    "safeguard": "Protect urgently: stop escalation, blame or harm, and restore safety.",
}

STRATEGIES: dict[str, dict[str, str]] = {"couple": COUPLE_STRATEGIES, "family": FAMILY_STRATEGIES}

BOUNDARY_RULES: tuple[str, ...] = (
    "mixed_transition is never a fallback for uncertainty: choose it only when a shift between patterns is observed.",
    "repair_softening is an early, fragile loosening; constructive_alignment / cooperative_family_alliance "
    "require a sustained shared stance over several turns.",
    "track names a pattern without changing its meaning; reframe changes its meaning.",
    "evoke deepens one person's emotion; join makes that emotion receivable by the other person.",
    "In families, track describes the interaction; boundary reorganises roles and hierarchy.",
    "counterbalance gives a less-heard person voice; safeguard protects urgently against harm or escalation.",
)

UTTERANCE_TYPE_DEFINITIONS: dict[str, str] = {
    "accusation": "Blames or criticises another person for what they did or who they are (\"you always...\").",
    "defense": "Protects oneself against a reproach: explains, justifies, denies or answers with a counter-point.",
    "disclosure": "Shares one's own present feelings, needs or fears, making oneself open to the other.",
    "request": "Asks another person for something: a change, an action, an answer or reassurance.",
    "recollection": "Tells what happened in a past episode, recounting events rather than feelings now.",
    "reflection": "Steps back to think aloud about oneself, the relationship or a pattern, with some insight.",
    "repair": "Tries to mend the bond: an apology, an admission, or a softer bid toward the other.",
    "withdrawal": "Pulls back from the exchange: a short, evasive or shut-down turn that avoids engaging.",
    "validation": "Acknowledges the other's feelings or point of view as understandable or legitimate.",
    "other": "None of the above (e.g. logistics, small talk, a factual answer to a practical question).",
}
"""The utterance type of a client row (SPEC section 1), with its definition (this project's wording)."""

UTTERANCE_TYPES: tuple[str, ...] = tuple(UTTERANCE_TYPE_DEFINITIONS)

ITP_LABELS: tuple[str, ...] = ("yes", "no")

# --------------------------------------------------------------------------------------------------
# The vocabulary of the toolkit, as types: settings, build options and instances use these, so
# pydantic validates what a command line or a config file says.
# --------------------------------------------------------------------------------------------------

CueMode = Literal["dialogue", "audio", "visual", "audiovisual"]
"""Which annotated cues the model sees (SPEC section 4)."""
CUE_MODES: tuple[CueMode, ...] = get_args(CueMode)

EvalMode = Literal["dialogue", "audio", "visual", "audiovisual", "video"]
"""Every ``rescue eval --mode``: the cue modes, and ``video``."""
EVAL_MODES: tuple[EvalMode, ...] = get_args(EvalMode)
VIDEO_MODE: EvalMode = "video"
"""The raw-video evaluation mode: the dialogue cues plus each shown row's video clip (needs the clips,
``rescue eval --mode video --assets ASSETS``). Not a cue mode: it adds recordings, not annotations."""


def cue_mode(mode: str) -> CueMode:
    """The cue mode whose annotated fields an evaluation mode shows (``video`` shows ``dialogue``'s)."""
    return "dialogue" if mode == VIDEO_MODE else mode  # type: ignore[return-value]


TaskName = Literal["itp", "rpp", "stp", "ssp", "er", "vp"]
"""The six tasks, in the paper's order."""
TASKS: tuple[TaskName, ...] = get_args(TaskName)
TASK_NAMES: dict[TaskName, str] = {
    "itp": "intervention time prediction",
    "rpp": "relation pattern prediction",
    "stp": "support target prediction",
    "ssp": "support strategy prediction",
    "er": "emotion recognition",
    "vp": "viewpoint prediction",
}

LABELLED_TASKS: tuple[TaskName, ...] = ("itp", "rpp", "stp", "ssp")
"""Tasks whose gold is a label from a closed set (scored by matching, no judge)."""
RANKED_TASKS: tuple[TaskName, ...] = ("rpp", "stp", "ssp")
"""Tasks answered with a ranked list of candidate labels (the 3 most likely, in order)."""
BINARY_TASKS: tuple[TaskName, ...] = ("itp",)
"""Tasks answered yes or no (scored with the positive class's precision, recall and F1)."""
JUDGED_TASKS: tuple[TaskName, ...] = ("er", "vp")
"""Tasks answered in free text and scored by a judge model (plus BERTScore)."""

Rubric = Literal["default", "authors"]
"""The VP judge rubric: the benchmark's 1-5 score, or the authors' 0-2 target + 0-4 viewpoint."""
RUBRICS: tuple[Rubric, ...] = get_args(Rubric)

BASELINE_PREFIX = "baseline/"
"""Model names starting with this are the offline baselines (``baseline/majority`` ...)."""


def is_baseline(model: str) -> bool:
    """Whether ``model`` names an offline baseline rather than a model behind an API."""
    return model.startswith(BASELINE_PREFIX)


HUMAN_PREFIX = "human/"
"""Agent names of people (the practice page's ``human/<username>``): no model behind an API."""


def is_human(model: str) -> bool:
    """Whether ``model`` names a person who played the closed loop on the practice page."""
    return model.startswith(HUMAN_PREFIX)


def group_label(scenario: str) -> str:
    """The group label (``Couple`` / ``Family``) of a scenario."""
    return GROUP_LABELS[scenario]


def patterns(scenario: str) -> tuple[str, ...]:
    """The scenario's relation-pattern labels in the SPEC's order."""
    return tuple(PATTERNS[scenario])


def strategies(scenario: str) -> tuple[str, ...]:
    """The scenario's strategy labels in the SPEC's order."""
    return tuple(STRATEGIES[scenario])


def is_client(speaker: str | None) -> bool:
    """A client is a named speaker that is not the therapist nor a group speaker."""
    name = (speaker or "").strip()
    return bool(name) and name not in NON_CLIENT_SPEAKERS
