"""The agent's options: how a decision point is shown, what its gold is, and which steps are asked."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.tasks.instance import CueMode

StateMode = Literal["explicit", "none"]
STATE_MODES: tuple[str, ...] = ("explicit", "none")


class AgentOptions(BaseModel):
    """Every knob of the agent chain. The defaults are documented in docs/decisions.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: StateMode = "explicit"
    """``explicit``: the chain starts with the state step (emotions, stances, pattern); ``none``: it
    starts with the timing step (the ablation without explicit relational reasoning)."""
    mode: CueMode = "dialogue"
    """Which annotated cues the agent sees (as the tasks' cue modes)."""
    context: int = Field(default=5, ge=-1)
    """Rows shown, ending with the last row before the decision (-1 = all previous rows). Five by
    default, the same rows the state gold is read from (``recent``), so the agent sees every row
    whose annotation it is scored on."""
    recent: int = Field(default=5, ge=1)
    """Rows, ending with the last row before the decision, whose annotations give the state gold
    (each client's latest emotion and stances) and the distress levels of the neglect rate.
    Independent of ``context`` so neglect numbers compare across context settings. Measured on the
    real sample lines: 3 rows leave 29 of 108 points with two clients annotated (9 qualify for the
    neglect rate), 5 rows 53 (19): therapist rows sit between the clients' turns."""
    neglect_margin: int = Field(default=2, ge=1)
    """A client is *clearly* most distressed when their highest intensity in the recent rows
    exceeds every other annotated client's by at least this many points (0-10 scale)."""
    neglect_min: int = Field(default=5, ge=0, le=10)
    """... and is at least this high (a 3 against a 1 is not distress)."""
    how_given_gold: bool = True
    """Also ask, in a branch of the conversation, which strategy the agent would use toward the
    gold target (SSP's question), so strategy choice is measured apart from target choice."""
