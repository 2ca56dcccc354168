"""Offline baselines: reference points every model score is read against (SPEC section 5).

The paper's reviewers found RPP accuracy close to the share of the majority label, so each headline
number needs a baseline beside it. Five methods, all answering in the exact answer contract of a
model (raw JSON text per instance id, see :mod:`rescue_bench.contract`):

- ``majority``: the most frequent answer of the other clips (leave-one-clip-out);
- ``random``: uniform guesses (chance level);
- ``prior``: guesses drawn from the training folds' label distribution (clip-grouped k-fold);
- ``supervised``: TF-IDF + logistic regression on the rendered prompt (clip-grouped k-fold);
- ``shortcut``: one surface cue (ITP: ``yes`` when the last client row is addressed to the
  therapist), exposing annotation artefacts; other tasks as ``majority``.

Choices where the SPEC is silent:

- No gold of an instance's own clip is ever used. Training uses instances of the same scenario when
  the training side has any (label sets and majority shares differ by scenario), else all of them.
- With one clip there is nothing to learn from: label tasks answer in candidate order (ITP ``yes``),
  ER ``{"emotion": NEUTRAL_EMOTION, "intensity": 5}``, VP ``NEUTRAL_VIEWPOINT`` per other participant
  (``random`` still guesses). ``random`` ER/VP likewise falls back to the neutral phrases.
- Ties: label counts by candidate order (ITP tie -> ``yes``); ER intensity the lower value; texts
  alphabetically. VP answers name every other client of the session (the therapist when there is
  none), handing the method's viewpoint texts out in order.
- STP names differ between clips, so ``supervised`` learns roles (group label / last speaker / other
  client); ``stp_roles=True`` makes ``majority`` and ``prior`` do the same (default: plain labels,
  where only the group label and names of couples seen in several clips transfer).
- Randomness is per instance (seed and a hash of the id), so answers do not depend on input order.
- Leave-one-clip-out majority is slightly pessimistic when labels are balanced across clips (the
  held-out clip's label is under-represented among the others); with many clips this vanishes.
"""

from rescue_bench.baselines.api import BASELINES, predict_answers

__all__ = ["BASELINES", "predict_answers"]
