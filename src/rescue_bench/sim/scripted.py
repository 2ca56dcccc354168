"""The offline ``scripted`` simulator: a deterministic transition F and template client turns.

Given the state before a step and the agent's action (silence, or a turn addressed to some clients
with a strategy), one step does, in order (docs/decisions.md, "Closed-loop evaluation"):

1. ``top``: the most distressed client before the step (:func:`rescue_bench.sim.state.most_distressed`);
   ``fits``: the strategy is one of :data:`FITS` for the active pattern.
2. Each addressed client calms: alone by 2 intensity points when the strategy fits, else 1; as part
   of a pair, subgroup or the group by 1 when it fits, else 0.
3. ``top`` left out (silence included) escalates: +1 intensity, and a neutral or positive valence
   turns negative.
4. A negative client calmed to intensity 2 or below turns neutral.
5. With a fitting strategy each addressed client's stance toward every other client warms one step
   (:data:`rescue_bench.sim.state.STANCES`); an escalating ``top``'s stances cool one step.
6. The pattern moves one step along :data:`TOWARD` when the strategy fits and ``top`` was addressed
   (or no one was distressed); one step along :data:`AWAY` when ``top`` escalated to distress 0.7
   or more; else it stays.
7. One client speaks: the one addressed alone; of a group, its most distressed after the step;
   after silence (or a turn to no client) the client who, in the clip's real transcript up to the
   start, most often spoke right after the last client speaker (adjacent rows: the clip's own
   turn-taking; :func:`habitual_follower`), and when the transcript shows none (or a tie), the
   client who spoke least recently. The turn is a
   template (:func:`client_turn`) chosen by the speaker's valence, intensity band and coldest
   stance; it uses only fixed phrases and client names, never annotation text.

The rules are the project's own and deliberately simple: a smoke test of the harness, not a theory
of how clients react. They read the strategy label the agent declares (a fitting label calms), which
no client could hear: the report's checks show it (the label check fails). The default simulator is
``fitted`` (:mod:`rescue_bench.sim.fitted`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rescue_bench.sim.options import SCRIPTED
from rescue_bench.sim.record import Heard
from rescue_bench.sim.state import (
    STANCES,
    ClientState,
    HiddenState,
    distress,
    most_distressed,
    pair_key,
)

SIMULATOR = SCRIPTED

FITS: dict[str, dict[str, frozenset[str]]] = {
    "couple": {
        "pursue_withdraw": frozenset({"evoke", "join", "enact", "track", "reframe"}),
        "attack_attack": frozenset({"track", "reframe", "detach", "safeguard", "counterbalance"}),
        "withdraw_withdraw": frozenset({"evoke", "enact", "join", "track"}),
        "repair_softening": frozenset({"repair", "join", "enact", "goal_align"}),
        "constructive_alignment": frozenset({"goal_align", "repair", "join", "track"}),
        "mixed_transition": frozenset({"track", "reframe", "counterbalance", "join"}),
    },
    "family": {
        "escalation_conflict": frozenset({"track", "safeguard", "boundary", "counterbalance", "reframe"}),
        "pursue_withdraw": frozenset({"join", "enact", "track", "reframe"}),
        "mutual_disengagement": frozenset({"join", "enact", "track"}),
        "cross_generational_coalition": frozenset({"boundary", "counterbalance", "reframe", "track"}),
        "boundary_hierarchy_strain": frozenset({"boundary", "reframe", "counterbalance", "track"}),
        "repair_softening": frozenset({"repair", "join", "enact"}),
        "cooperative_family_alliance": frozenset({"join", "repair", "track"}),
        "mixed_transition": frozenset({"track", "reframe", "counterbalance", "join"}),
    },
}
"""Strategies that fit each pattern (from the label definitions: de-escalate conflict by tracking
and reframing, deepen and connect a distanced pattern, consolidate a repair)."""

TOWARD: dict[str, str] = {
    "attack_attack": "mixed_transition",
    "pursue_withdraw": "mixed_transition",
    "withdraw_withdraw": "mixed_transition",
    "escalation_conflict": "mixed_transition",
    "mutual_disengagement": "mixed_transition",
    "cross_generational_coalition": "mixed_transition",
    "boundary_hierarchy_strain": "mixed_transition",
    "mixed_transition": "repair_softening",
    "repair_softening": "",  # the scenario's constructive state (below)
    "constructive_alignment": "constructive_alignment",
    "cooperative_family_alliance": "cooperative_family_alliance",
}
CONSTRUCTIVE_OF = {"couple": "constructive_alignment", "family": "cooperative_family_alliance"}
AWAY: dict[str, dict[str, str]] = {
    "couple": {
        "constructive_alignment": "repair_softening",
        "repair_softening": "mixed_transition",
        "mixed_transition": "pursue_withdraw",
        "pursue_withdraw": "attack_attack",
        "withdraw_withdraw": "withdraw_withdraw",
        "attack_attack": "attack_attack",
    },
    "family": {
        "cooperative_family_alliance": "repair_softening",
        "repair_softening": "mixed_transition",
        "mixed_transition": "escalation_conflict",
        "pursue_withdraw": "escalation_conflict",
        "cross_generational_coalition": "escalation_conflict",
        "boundary_hierarchy_strain": "escalation_conflict",
        "mutual_disengagement": "mutual_disengagement",
        "escalation_conflict": "escalation_conflict",
    },
}
AWAY_DISTRESS = 0.7
"""``top`` escalating to at least this distress pushes the pattern away from repair."""


def toward(pattern: str, scenario: str) -> str:
    nxt = TOWARD.get(pattern, pattern)
    return CONSTRUCTIVE_OF[scenario] if nxt == "" else nxt


def away(pattern: str, scenario: str) -> str:
    return AWAY[scenario].get(pattern, pattern)


def fits(strategy: str | None, pattern: str, scenario: str) -> bool:
    return strategy is not None and strategy in FITS[scenario].get(pattern, frozenset())


def _shift(value: str, steps: int) -> str:
    i = min(max(STANCES.index(value) + steps, 0), len(STANCES) - 1)
    return STANCES[i]


def transition(state: HiddenState, heard: Heard, clients: Sequence[str], scenario: str) -> tuple[HiddenState, bool]:
    """The state after ``action`` (rules 1-6 of the module doc) and whether ``top`` escalated."""
    top = most_distressed(state, list(clients))
    fit = fits(heard.get("strategy"), state.pattern, scenario)
    emotions = {c: s.model_copy() for c, s in state.emotions.items()}
    stances = dict(state.stances)
    alone = len(heard["recipients"]) == 1
    for c in heard["recipients"]:
        s = emotions[c]
        drop = (2 if fit else 1) if alone else (1 if fit else 0)
        intensity = max(0, s.intensity - drop)
        vale = "neutral" if s.valence == "negative" and intensity <= 2 and drop > 0 else s.valence
        emotions[c] = ClientState(emotion=s.emotion if vale == s.valence else "calmer", valence=vale, intensity=intensity)
    escalated = top is not None and top not in heard["recipients"]
    if escalated:
        assert top is not None
        s = emotions[top]
        emotions[top] = ClientState(
            emotion=s.emotion if s.valence == "negative" else "upset", valence="negative", intensity=min(10, s.intensity + 1)
        )
    if fit:
        for c in heard["recipients"]:
            for other in clients:
                if other != c:
                    stances[pair_key(c, other)] = _shift(stances[pair_key(c, other)], +1)
    if escalated:
        for other in clients:
            if other != top:
                stances[pair_key(top, other)] = _shift(stances[pair_key(top, other)], -1)  # type: ignore[arg-type]
    pattern = state.pattern
    if fit and (top is None or top in heard["recipients"]):
        pattern = toward(pattern, scenario)
    elif escalated and distress(emotions[top]) >= AWAY_DISTRESS:  # type: ignore[index]
        pattern = away(pattern, scenario)
    return HiddenState(emotions=emotions, stances=stances, pattern=pattern), escalated


def habitual_follower(last: str | None, real: Sequence[str], clients: Sequence[str]) -> list[str]:
    """The clients who most often spoke in the row right after a row of ``last`` in ``real`` (the
    speakers of the clip's real rows, oldest first; a therapist row in between breaks the pair), all
    of them when tied; empty when ``last`` was never followed by a client."""
    counts = dict.fromkeys(clients, 0)
    for a, b in zip(real, real[1:]):
        if a == last and b in counts:
            counts[b] += 1
    best = max(counts.values(), default=0)
    return [c for c in clients if best and counts[c] == best]


def next_speaker(
    after: HiddenState, heard: Heard, top_before: str | None, escalated: bool, clients: Sequence[str], spoken: Sequence[str],
    *, real: Sequence[str] = (),
) -> str:
    """Rule 7: who speaks after the step (``spoken``: speakers of the transcript so far, real and
    simulated, oldest first; ``real``: speakers of the clip's real rows up to the start).

    ``top_before`` and ``escalated`` no longer choose the speaker (an escalated client left out
    speaks when the clip's turn-taking gives them the floor); they stay for callers that pass them.
    """
    if len(heard["recipients"]) == 1:
        return heard["recipients"][0]
    if heard["recipients"]:
        return max(heard["recipients"], key=lambda c: (distress(after.emotions[c]), -list(clients).index(c)))
    last_turn = {c: -1 for c in clients}
    for i, c in enumerate(spoken):
        if c in last_turn:
            last_turn[c] = i
    last = max((c for c in clients if last_turn[c] >= 0), key=lambda c: last_turn[c], default=None)
    followers = habitual_follower(last, real, clients)
    if len(followers) == 1:
        return followers[0]
    return min(followers or clients, key=lambda c: (last_turn[c], list(clients).index(c)))


HIGH = "I can't keep doing this. I'm really upset and hurt, and I feel so alone in this."
MID = "I'm frustrated and worried about where this is going."
LOW = "I'm a little tense about this."
NEUTRAL = "Okay. I think I can hear that."
POSITIVE = "That actually helps. I feel heard."
TOWARD_OTHER = {
    "hostile": "{other}, you never listen to me.",
    "guarded": "{other}, I don't know if I can believe you.",
    "neutral": "",
    "warm": "{other}, I know you're trying.",
}


def client_turn(speaker: str, state: HiddenState, clients: Sequence[str]) -> str:
    """The template turn of ``speaker`` in ``state`` (fixed phrases and names only)."""
    s = state.emotions[speaker]
    if s.valence == "negative":
        base = HIGH if s.intensity >= 7 else MID if s.intensity >= 4 else LOW
    else:
        base = POSITIVE if s.valence == "positive" else NEUTRAL
    others = [c for c in clients if c != speaker]
    if not others:
        return base
    coldest = min(others, key=lambda o: (STANCES.index(state.stances[pair_key(speaker, o)]), list(clients).index(o)))
    tail = TOWARD_OTHER[state.stances[pair_key(speaker, coldest)]].format(other=coldest)
    return f"{base} {tail}".strip()
