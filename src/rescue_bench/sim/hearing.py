"""What the clients hear at a step: the only view of the agent's action an offline simulator gets.

The agent's chain answers when, whom and how and writes a turn. The clients hear the turn: its words
and whom it is said to. So a step is heard as

* **silence** when the agent did not take the turn, or took it with no usable words (an empty or
  unusable turn, or one with no word in it such as "." or "...", reaches nobody: it is not a free
  action);
* otherwise the words, said to the **recipients**: the clients of the declared target together with
  every client the words name (:func:`rescue_bench.sim.reader.named_clients`); with neither, the
  whole group (the turn is said to the room). Recipients are kept in client order, so the order in
  which a turn names people changes nothing;
* the words' **affect** as the simulator's reader reads it.

The declared strategy label is kept for the record and for the ``scripted`` smoke test only; the
``fitted`` simulator and the model simulator never see it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rescue_bench.sim.reader import named_clients
from rescue_bench.sim.record import AgentAction, Heard

REACHES: tuple[str, ...] = ("silence", "alone", "subgroup", "group", "left_out")
"""How a step can reach a client (:func:`reach`); the words reach the first four's clients
addressed (``alone``, ``subgroup``, ``group``)."""
ADDRESSED: frozenset[str] = frozenset({"alone", "subgroup", "group"})
"""The reaches of a client the words were said to."""


SILENCE: Heard = {"recipients": [], "affect": None, "named": [], "silent": True, "words": None, "strategy": None}
"""A step heard as silence."""


def heard_as(
    recipients: Sequence[str] = (), *, words: str | None = None, affect: str | None = None, named: Sequence[str] = (), strategy: str | None = None
) -> Heard:
    """A :class:`Heard` (silence when no client was addressed)."""
    return {"recipients": list(recipients), "affect": affect if recipients else None, "named": list(named), "silent": not recipients,
            "words": words if recipients else None, "strategy": strategy if recipients else None}


def reach(heard: Heard, client: str, clients: Sequence[str]) -> str:
    """How the step reached ``client`` (:data:`REACHES`): ``alone``, in a ``subgroup`` (with others,
    not everyone), with the whole ``group``, ``left_out`` (others were addressed) or ``silence``."""
    recipients = heard["recipients"]
    if not recipients:
        return "silence"
    if client not in recipients:
        return "left_out"
    if len(recipients) == 1:
        return "alone"
    return "group" if len(recipients) >= len(clients) else "subgroup"


def move_of(heard: Heard) -> str:
    """``silence``, ``one`` client or ``several`` reached."""
    return "silence" if not heard["recipients"] else "one" if len(heard["recipients"]) == 1 else "several"


def has_words(text: str | None) -> bool:
    """Whether ``text`` holds anything a listener hears as words: a letter or a digit (".", "..." or
    a dash alone do not)."""
    return any(ch.isalnum() for ch in text or "")


def hear(action: AgentAction, clients: Sequence[str], read: Callable[[str], str | None] | None = None) -> Heard:
    """The step ``action`` (the episode's action record: ``intervened``, ``recipients``, ``how``,
    ``turn``) as the clients hear it; ``read`` gives the words' affect."""
    words = (action.get("turn") or "").strip()
    if not action.get("intervened") or not has_words(words):
        return SILENCE
    named = named_clients(words, clients)
    declared = set(action.get("recipients") or [])
    recipients = [c for c in clients if c in declared or c in named] or list(clients)
    return heard_as(recipients, words=words, affect=read(words) if read else None, named=named, strategy=action.get("how"))
