"""The relation-aware support agent (SPEC section 8, the paper's Appendix B), evaluated as a chain.

At each decision point (ITP's boundaries) the agent estimates the group's state (each client's
emotion and intensity, each ordered pair's stance, the active relation pattern), decides whether to
take the turn, whom to address and with which strategy, then says it. This package is the domain
core, free of the evaluation engine like the tasks: decision points and their gold (``points``),
prompts (``prompts``), answer formats and parsers (``answers``), the chain as a state machine
(``chain``), the chain record (``record``), its metrics (``metrics``), the baseline chain
(``baseline``) and the two ablations (``ablation``). :mod:`rescue_bench.engine.agent` runs it on
inspect_ai; ``rescue agent eval`` is the command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rescue_bench.lazy import lazy_exports

if TYPE_CHECKING:
    from rescue_bench.agent.ablation import (
        Comparison,
        single_task_comparisons,
        single_task_instances,
        single_task_options,
        state_comparisons,
    )
    from rescue_bench.agent.answers import parse_state, parse_step, parse_strategy, parse_turn, parse_whom_how
    from rescue_bench.agent.baseline import FALLBACK_TURN, answer_queries, baseline_chain_answers
    from rescue_bench.agent.chain import STEPS, Chain, Request, StepResult
    from rescue_bench.agent.metrics import (
        BY_NAME,
        GROUP_TITLES,
        GROUPS,
        METRICS,
        ChainMetric,
        chain_metrics,
        metric_value,
        summarize_chain,
    )
    from rescue_bench.agent.options import STATE_MODES, AgentOptions
    from rescue_bench.agent.points import AGENT_TASK, DecisionPoint, PointGold, build_all_points, build_points
    from rescue_bench.agent.prompts import CONTRACT, judge_texts, system_prompt
    from rescue_bench.agent.record import (
        bertscore_requests,
        chain_record,
        judge_requests,
        with_bertscores,
        with_judges,
    )

__all__ = [
    "AGENT_TASK",
    "BY_NAME",
    "CONTRACT",
    "FALLBACK_TURN",
    "GROUPS",
    "GROUP_TITLES",
    "METRICS",
    "STATE_MODES",
    "STEPS",
    "AgentOptions",
    "Chain",
    "ChainMetric",
    "Comparison",
    "DecisionPoint",
    "PointGold",
    "Request",
    "StepResult",
    "answer_queries",
    "baseline_chain_answers",
    "bertscore_requests",
    "build_all_points",
    "build_points",
    "chain_metrics",
    "chain_record",
    "judge_requests",
    "judge_texts",
    "metric_value",
    "parse_state",
    "parse_step",
    "parse_strategy",
    "parse_turn",
    "parse_whom_how",
    "single_task_comparisons",
    "single_task_instances",
    "single_task_options",
    "state_comparisons",
    "summarize_chain",
    "system_prompt",
    "with_bertscores",
    "with_judges",
]

# Lazy: every ``rescue`` command imports ``rescue_bench.agent.options`` for its option defaults,
# and that import must not load the chain, its metrics and numpy (``rescue --help`` stays fast). A name of the package is imported from its module on first use.
_MODULES = ('options', 'points', 'answers', 'chain', 'prompts', 'record', 'metrics', 'baseline', 'ablation')
"""The package's modules, in the order a name is looked up in them."""


__getattr__ = lazy_exports(__name__, __all__, _MODULES)
