"""Reading valence and stance out of annotation text, with a small documented word list.

The release annotates emotions and viewpoints in free text ("feels hurt and disappointed",
"critical and untrusting"). The hidden state of a closed-loop episode needs them on closed scales:
each client's valence (negative, neutral, positive) and each ordered pair's stance (hostile,
guarded, neutral, warm). These functions map text onto those scales by counting words of the lists
below (whole words, lower case, a leading "un"/"in" is not stripped). They are the environment's
reading of its own annotations, never shown to the agent. The lists are the project's own.
"""

from __future__ import annotations

import re

NEGATIVE_WORDS = frozenset(
    """
    abandoned abandonment accused afraid aggrieved alone angry anger anguish annoyed anxious anxiety
    apprehensive ashamed attacked avoidant betrayed bitter blamed blaming cold condemnatory confused
    contempt contemptuous controlling critical criticized cut defeated defective defensive deflecting
    demanding desperate despair despairing devalued disappointed disapproval disbelief disconnected
    discouraged disgusted dismissive distrustful distressed doubtful doubting dread exasperated
    exhausted exposed falsely fatalistic fear fearful frustrated frustration furious grief guarded
    guilty helpless hopeless hostile humiliated hurt impatient incredulous insecure invalidated
    invaliding irritated isolated jealous judged judging let lonely mistrust mistrustful
    misunderstood nervous overwhelmed pain panicked paranoid pressured rejected reluctant resentful
    resentment resigned resignation sad sadness scared shame sheepish shut stressed suspicious tense
    threatened tired unappreciated undervalued unfairly unheard unimportant unsafe untrusting upset
    vulnerable wary withdrawn worried worry wounded
    """.split()
)
"""Words that make an emotion or stance negative."""

POSITIVE_WORDS = frozenset(
    """
    accepted affectionate appreciated appreciative calm caring close comforted compassionate connected
    content curious eager empathic encouraged grateful happy heard hope hopeful loved loving open
    optimistic proud reassured relieved safe secure supportive tender trusting understood validated
    warm warmth willing
    """.split()
)
"""Words that make an emotion or stance positive."""

HOSTILE_WORDS = frozenset(
    """
    accusing attack attacking blaming condemnatory contempt contemptuous disgusted furious hate hostile
    resentful resentment scornful
    """.split()
)
"""Negative words strong enough to make a stance hostile rather than guarded."""

_WORD = re.compile(r"[a-z']+")


def words(text: str | None) -> list[str]:
    return _WORD.findall((text or "").lower())


def valence(text: str | None) -> str:
    """``negative`` / ``positive`` / ``neutral``: whichever word list the text has more words of."""
    ws = words(text)
    neg = sum(w in NEGATIVE_WORDS for w in ws)
    pos = sum(w in POSITIVE_WORDS for w in ws)
    if neg > pos:
        return "negative"
    if pos > neg:
        return "positive"
    return "neutral"


def stance(text: str | None) -> str:
    """``hostile`` (a hostile word and negative overall), ``guarded`` (negative), ``warm`` (positive),
    else ``neutral``."""
    v = valence(text)
    if v == "negative":
        return "hostile" if any(w in HOSTILE_WORDS for w in words(text)) else "guarded"
    return "warm" if v == "positive" else "neutral"
