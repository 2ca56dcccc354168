"""Construction options: the paper's constants, named, with the paper's defaults."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.labels import CueMode, cue_mode
from rescue_bench.tasks.instance import DEFAULT_CONTEXT


class BuildOptions(BaseModel):
    """Every knob of instance construction. The defaults reproduce the paper (SPEC sections 3-4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: CueMode = "dialogue"
    """Which annotated cues the model sees: dialogue, audio, visual or audiovisual."""
    context: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_CONTEXT))
    """Rows of context per task (-1 = all previous rows)."""
    er_min_words: int = 5
    """ER: minimum words (``[A-Za-z0-9']+``) in the client's turn."""
    er_skip_ratio: float = 0.3
    """ER: rows up to ``ceil(ratio * T)`` (at most ``T - 1``) are skipped as too early to judge."""
    er_max_per_clip: int = 5
    """ER: at most this many instances per clip, picked evenly."""
    vp_max_per_clip: int = 5
    """VP: at most this many instances per clip, picked evenly."""
    rpp_include_client_patterns: bool = False
    """RPP: also make instances of client rows' annotated ``relation_pattern`` (not in the paper)."""

    def window(self, task: str) -> int:
        """The context window of ``task``."""
        return self.context.get(task, DEFAULT_CONTEXT[task])

    @classmethod
    def for_run(cls, mode: str, context: int | None) -> BuildOptions:
        """The options of a run in evaluation mode ``mode`` (``video`` builds ``dialogue``'s instances)
        with ``context`` rows for every task (``None`` keeps the per-task defaults): the one rule
        every runner and the run record use."""
        return cls(mode=cue_mode(mode)).with_context(context)

    def with_context(self, rows: int | None) -> BuildOptions:
        """These options with one context window for every task (``None`` keeps the defaults)."""
        if rows is None:
            return self
        return self.model_copy(update={"context": {t: rows for t in DEFAULT_CONTEXT}})
