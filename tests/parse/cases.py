"""Label sets and helpers shared by the parse tests."""

from __future__ import annotations

import json

from rescue_bench import labels

COUPLE_P = labels.patterns("couple")
FAMILY_P = labels.patterns("family")
COUPLE_S = labels.strategies("couple")
FAMILY_S = labels.strategies("family")
COUPLE_T = ["Alan", "Evelyn", labels.group_label("couple")]
FAMILY_T = ["Mary-Ann", "Tom", "Lucy", labels.group_label("family")]


def fence(obj: object, lang: str = "json") -> str:
    return f"```{lang}\n{json.dumps(obj)}\n```"
