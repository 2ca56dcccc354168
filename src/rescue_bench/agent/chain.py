"""The agent's chain at one decision point, as a small state machine with no engine in it.

One conversation with several turns (not separate calls): the first user message carries the
transcript and the first question, and each later step is one more user message after the agent's
own previous answer. Why:

* the later steps are *conditioned on* the agent's own state estimate and decisions exactly as
  the model wrote them (its own words in its own turn), with no paraphrase by us in between;
* every call extends the previous one, so a provider's prefix cache (and vLLM's) serves all but the
  newest message: on the demo (``bench/agent_calls.py``) the text new to each call of a chain sums
  to 1.22x its first call, while 3.42x is sent in all. Separate calls could share the system prompt
  and transcript as a prefix too, but each would have to restate the earlier answers after it;
* inspect_ai's response cache keys on the whole conversation, so a re-run repeats no finished step.

Order: ``state`` (with ``state="explicit"``), ``when``, then, only when the agent takes the turn,
``whom_how`` and ``turn``. A step whose call gave no answer at all ends the chain (there is no
answer to continue from); an unusable ``when`` ends it too (the agent did not decide to speak); an
unusable ``whom_how`` does not (the agent speaks anyway, and its turn is still judged). Then, apart
from the main conversation and after it, the ``how_gold`` branch: the conversation up to the state
answer, followed by SSP's question with the gold target named, so strategy choice is measured
apart from target choice. The main chain never sees the gold target.

Drive it with any model::

    chain = Chain(point)
    while (request := chain.next_request()) is not None:
        chain.answer(ask_model(request.messages))
    chain.results  # step -> StepResult
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, TypedDict, cast

from rescue_bench.agent.answers import parse_step
from rescue_bench.agent.points import DecisionPoint
from rescue_bench.agent.prompts import QUESTIONS, how_given_target_question, message, opening, system_prompt
from rescue_bench.prompts.render import ChatMessage

STEPS: tuple[str, ...] = ("state", "when", "whom_how", "turn", "how_gold")
"""Every step, in the order they are asked."""

class StepJson(TypedDict):
    """A :class:`StepResult` as plain data (the engine's store, an episode step's ``chain``)."""

    raw: str | None
    prediction: Any
    """The parsed answer, shaped by its step (a label, ``{"whom", "how"}``, a turn, a state)."""
    valid: bool
    error: str | None


@dataclass(frozen=True)
class StepResult:
    """The outcome of one step: the raw reply, its parse, and why it is unusable (if it is)."""

    raw: str | None
    prediction: Any
    valid: bool
    error: str | None

    def to_dict(self) -> StepJson:
        return cast(StepJson, asdict(self))


@dataclass(frozen=True)
class Request:
    """One model call the chain needs: the step and the full conversation to send."""

    step: str
    messages: tuple[ChatMessage, ...]


class Chain:
    """The chain of one decision point (see the module doc)."""

    def __init__(self, point: DecisionPoint, state: str = "explicit", how_given_gold: bool = True) -> None:
        if state not in ("explicit", "none"):
            raise ValueError(f"state must be explicit or none, not {state!r}")
        self.point = point
        self.state = state
        self.how_given_gold = how_given_gold
        self.system = message("system", system_prompt(point.scenario, point.mode, state))
        self.main: list[ChatMessage] = [self.system]
        """The main conversation so far (questions and the agent's answers)."""
        self.results: dict[str, StepResult] = {}
        self._pending: Request | None = None
        self._done = False
        self._advance()

    # -- driving ---------------------------------------------------------------------------------
    def next_request(self) -> Request | None:
        """The call to make next, or ``None`` when the chain is complete."""
        return self._pending

    def answer(self, raw: str | None, error: str | None = None) -> None:
        """Give the reply to the pending request (``None`` with ``error`` when the call failed)."""
        request = self._pending
        if request is None:
            raise RuntimeError("no pending request: the chain is complete")
        if raw is None:
            result = StepResult(None, None, False, f"no answer: {error}" if error else "no answer")
        else:
            parsed = parse_step(request.step, raw, self.point)
            result = StepResult(raw, parsed.prediction, parsed.valid, parsed.error)
        self.results[request.step] = result
        if request.step != "how_gold":
            self.main = list(request.messages)
            if raw is not None:
                self.main.append(message("assistant", raw))
        self._advance()

    @property
    def done(self) -> bool:
        return self._pending is None

    def transcript(self) -> dict[str, StepJson]:
        """Every step's result as plain data, in step order (what the engine stores per sample)."""
        return {s: self.results[s].to_dict() for s in STEPS if s in self.results}

    # -- the plan --------------------------------------------------------------------------------
    def _question(self, step: str) -> Request:
        text = QUESTIONS[step](self.point)
        if len(self.main) == 1:  # the first question carries the transcript
            text = opening(self.point) + "\n\n" + text
        return Request(step, (*self.main, message("user", text)))

    def _main_next(self) -> str | None:
        """The next step of the main conversation, or ``None`` when it is over."""
        r = self.results
        if self.state == "explicit" and "state" not in r:
            return "state"
        if self.state == "explicit" and r["state"].raw is None:
            return None  # nothing to continue from
        if "when" not in r:
            return "when"
        if not (r["when"].valid and r["when"].prediction == "yes"):
            return None
        if "whom_how" not in r:
            return "whom_how"
        if r["whom_how"].raw is None:
            return None
        if "turn" not in r:
            return "turn"
        return None

    def _branch(self) -> Request | None:
        gold = self.point.gold
        if not self.how_given_gold or "how_gold" in self.results or gold.whom is None or gold.how is None:
            return None
        question = how_given_target_question(self.point, gold.whom)
        if self.state == "none":
            return Request("how_gold", (self.system, message("user", opening(self.point) + "\n\n" + question)))
        state = self.results.get("state")
        if state is None or state.raw is None:
            return None
        first = self._first_user("state")
        return Request("how_gold", (self.system, first, message("assistant", state.raw), message("user", question)))

    def _first_user(self, step: str) -> ChatMessage:
        return message("user", opening(self.point) + "\n\n" + QUESTIONS[step](self.point))

    def _advance(self) -> None:
        step = self._main_next()
        self._pending = self._question(step) if step is not None else self._branch()
