"""Whether a row's ``dialogue_cleaned`` is a cleaning of its cues' text: the words said, not new ones.

Cleaning (the release's ``dialogue_cleaned``) may remove fillers, false starts and repeated words,
and change case and punctuation; it may not add words nobody said, nor leave out most of what was
said. The measure compares words (letters and digits, apostrophes inside a word kept, case folded,
curly apostrophes read as straight ones):

- **added**: words of the cleaned text that the cues' text does not have, as a share of the cleaned
  text's words. At most :data:`MAX_ADDED` (a cleaned text of fewer than ten words may add none).
- **dropped**: distinct words of the cues' text, fillers (:data:`FILLERS`) left out, that the cleaned
  text does not have, as a share of those distinct words. At most :data:`MAX_DROPPED` (false starts
  and repeats may go; a third of the words may not).

An empty cleaned text is not judged here: the draft then takes the cues' text itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ADDED = 0.10
"""Largest share of a cleaned text's words that may be missing from its cues' text."""
MAX_DROPPED = 0.33
"""Largest share of the cues' distinct non-filler words that the cleaned text may leave out."""

FILLERS = frozenset({
    "um", "umm", "uh", "uhh", "uhm", "er", "erm", "ah", "ahh", "eh", "hm", "hmm", "mm", "mmm", "mhm",
    "uh-huh", "huh", "oh",
})
"""Words a cleaning removes without dropping anything said (hesitation sounds)."""

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def words(text: str) -> list[str]:
    """The words of ``text``, case folded, curly apostrophes read as straight ones."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")
    return [w.casefold() for w in _WORD.findall(text)]


@dataclass(frozen=True)
class CleaningCheck:
    """What :func:`cleaning_check` measured."""

    added: list[str]
    """Words of the cleaned text not in the cues' text, in order (repeats once)."""
    dropped: list[str]
    """Distinct non-filler words of the cues' text not in the cleaned text, in order."""
    added_share: float
    dropped_share: float

    @property
    def faithful(self) -> bool:
        return self.added_share <= MAX_ADDED and self.dropped_share <= MAX_DROPPED

    def message(self) -> str:
        """Why the cleaned text is not a cleaning (for the re-ask and the row's ``draft_problems``)."""
        bits = []
        if self.added_share > MAX_ADDED:
            bits.append(f"adds {len(self.added)} word(s) the subtitles do not have ({', '.join(self.added[:6])})")
        if self.dropped_share > MAX_DROPPED:
            bits.append(f"drops {len(self.dropped)} word(s) of the subtitles ({', '.join(self.dropped[:6])})")
        return ("not a cleaning of the cues' text: " + " and ".join(bits)
                + "; only fillers, false starts and repeats may be removed, nothing added; the cues' text was kept")


def cleaning_check(cleaned: str, source: str) -> CleaningCheck:
    """Measure ``cleaned`` against ``source`` (the row's cues' text joined); see the module doc."""
    said = words(source)
    said_set = set(said)
    mine = words(cleaned)
    mine_set = set(mine)
    added = list(dict.fromkeys(w for w in mine if w not in said_set))
    added_count = sum(1 for w in mine if w not in said_set)
    content = list(dict.fromkeys(w for w in said if w not in FILLERS))
    dropped = [w for w in content if w not in mine_set]
    return CleaningCheck(
        added=added,
        dropped=dropped,
        added_share=added_count / len(mine) if mine else 0.0,
        dropped_share=len(dropped) / len(content) if content else 0.0,
    )
