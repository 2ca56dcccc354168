"""Emotion-recognition scores (SPEC section 5).

ER combines a judge score of the emotion description (1-5) with an intensity score on the same
1-5 scale, and reports their mean.
"""

from __future__ import annotations

__all__ = ["intensity_score", "er_score"]


def intensity_score(pred: int | float | None, gold: int | float) -> float:
    """``max(1, 5 - |pred - gold|)``: 5 for the exact intensity, one point less per step off, never
    below 1.

    An invalid answer (``pred is None``) gets the floor, 1, like a prediction 4+ steps off.

    >>> intensity_score(7, 5), intensity_score(0, 10), intensity_score(None, 3)
    (3.0, 1.0, 1.0)
    """
    if pred is None:
        return 1.0
    return float(max(1.0, 5.0 - abs(float(pred) - float(gold))))


def er_score(judge: int | float | None, intensity: float | None) -> float:
    """The ER score: the mean of the judge score (1-5) and the intensity score (1-5).

    ``None`` for either part (invalid answer, or a judge reply that failed validation) counts as the
    floor score 1, so nothing is silently dropped; callers that want to exclude judge failures must
    do so explicitly and report it.

    >>> er_score(4, 3.0)
    3.5
    """
    j = 1.0 if judge is None else float(judge)
    i = 1.0 if intensity is None else float(intensity)
    return (j + i) / 2.0
