"""The agent's options: how a decision point is shown, what its gold is, and which steps are asked.

Each default, bound and ``description`` here is the only declaration of it: ``rescue agent eval``
builds its options from these fields, the inspect_ai ``@task`` (``inspect eval rescue_bench/agent``)
reads its defaults from :data:`AGENT_DEFAULTS`, and the closed loop's ``context`` is this one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.labels import CueMode

StateMode = Literal["explicit", "none"]
STATE_MODES: tuple[str, ...] = ("explicit", "none")


class AgentOptions(BaseModel):
    """Every knob of the agent chain. The defaults are documented in docs/decisions.md; the CLI
    (``rescue agent eval``) builds its options from these fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: StateMode = Field(
        default="explicit", description="explicit: estimate the group's state first; none: decide without it (the ablation)."
    )
    """``explicit``: the chain starts with the state step (emotions, stances, pattern); ``none``: it
    starts with the timing step (the ablation without explicit relational reasoning)."""
    mode: CueMode = Field(default="dialogue", description="Cues shown: dialogue, audio, visual or audiovisual.")
    """Which annotated cues the agent sees (as the tasks' cue modes)."""
    context: int = Field(
        default=5, ge=-1, description="Rows shown, ending with the last row before the decision (-1 = all previous rows)."
    )
    """Rows shown, ending with the last row before the decision (-1 = all previous rows). Five by
    default, the same rows the state gold is read from (``recent``), so the agent sees every row
    whose annotation it is scored on."""
    recent: int = Field(default=5, ge=1, description="Rows whose annotations give the state gold and the distress levels.")
    """Rows, ending with the last row before the decision, whose annotations give the state gold
    (each client's latest emotion and stances) and the distress levels of the neglect rate.
    Independent of ``context`` so neglect numbers compare across context settings. Measured on the
    real sample lines: 3 rows leave 29 of 108 points with two clients annotated (9 qualify for the
    neglect rate), 5 rows 53 (19): therapist rows sit between the clients' turns."""
    neglect_margin: int = Field(
        default=2, ge=1, description="Intensity points by which the most distressed client must lead every other annotated client."
    )
    """A client is *clearly* most distressed when their highest intensity in the recent rows
    exceeds every other annotated client's by at least this many points (0-10 scale)."""
    neglect_min: int = Field(default=5, ge=0, le=10, description="Lowest intensity that counts as distress.")
    """... and is at least this high (a 3 against a 1 is not distress)."""
    how_given_gold: bool = Field(
        default=True, description="Also ask the strategy toward the gold target (a branch of the conversation)."
    )
    """Also ask, in a branch of the conversation, which strategy the agent would use toward the
    gold target (SSP's question), so strategy choice is measured apart from target choice."""


AGENT_DEFAULTS = AgentOptions()
"""The agent's options as they are by default (read by the inspect_ai ``@task`` for its own defaults)."""
