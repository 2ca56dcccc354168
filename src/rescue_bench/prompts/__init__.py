"""Prompts for the six tasks and the judges, written by this project in its own words.

Layout, chosen for provider-side prefix caching: a *system* message that depends only on the task and
the scenario (instructions, label definitions, boundary rules, the answer contract), then a *user*
message with the clip's rows in order and, last, the question. Consecutive instances of one clip
therefore share a long prefix. Nothing derived from the gold is rendered: only the instance's
``model_input()`` (cue-mode projections of rows, candidates, the asked-about client, SSP's target).

:mod:`rescue_bench.prompts.export` writes the same prompts with the gold answer as chat examples
(``rescue tasks export``), so a model fine-tuned on them is prompted at test time with the same text.
"""

from rescue_bench.prompts.render import (
    ANSWER_CONTRACT,
    Prompt,
    judge_prompt,
    render,
    render_input,
    render_rows,
    system_prompt,
)

__all__ = ["ANSWER_CONTRACT", "Prompt", "judge_prompt", "render", "render_input", "render_rows", "system_prompt"]
