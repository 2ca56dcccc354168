"""The closed loop's options (defaults recorded in docs/decisions.md, "Closed-loop evaluation")."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.agent.options import StateMode
from rescue_bench.tasks.instance import CueMode


class SimOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    horizon: int = Field(default=5, ge=1, le=50)
    """Agent decisions per episode (each followed by one simulator step)."""
    gamma: float = Field(default=0.9, ge=0.0, le=1.0)
    """Discount of J."""
    lam: float = Field(default=1.0, ge=0.0)
    """lambda of J: the weight of the most distressed client's distress."""
    per_clip: int = Field(default=2, ge=1)
    """Episodes per clip: its decision points picked evenly (``pick_evenly``)."""
    state: StateMode = "explicit"
    """The model agent's chain: with or without the state step (reference agents skip it)."""
    mode: CueMode = "dialogue"
    context: int = Field(default=5, ge=-1)
    """Rows of the transcript the agent sees at each decision (-1: all)."""
    subgroups: bool = False
    """Offer the agent every pair and subgroup of clients short of the whole group as a target
    besides each client and the group label (Appendix B's supporter may address any subset). Off by
    default, so the agent's question is the same as in ``rescue agent eval`` and in STP."""
