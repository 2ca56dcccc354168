"""A responder for the loopback server that answers every task in many shapes and remembers intent.

For each prompt it decides what it *means* (a label, yes/no, an emotion, viewpoints, a judge score,
or nothing) and how to *say* it (plain JSON, fenced JSON, JSON inside prose, wrong case, hyphens for
underscores, an invalid label mixed in, garbage). ``intent[content]`` records the meaning of each
reply, so tests check the engine's parsed predictions against what was meant, not against the
engine's own parser. Answers are built with the answer contract (``rescue_bench.contract``); the
shapes then bend its values (case, separators, an invalid label), never its keys.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any

from rescue_bench.contract import ANSWER, RANKING, answer_object, judge_format

SHAPES = ("plain", "fenced", "prose", "upper", "hyphen", "invalid_mixed", "garbage")


def _h(text: str, salt: str = "") -> int:
    return int(hashlib.sha256(f"{salt}|{text}".encode()).hexdigest()[:8], 16)


def _line(user: str, prefix: str) -> list[str]:
    for line in user.splitlines():
        if line.startswith(prefix):
            return [x.strip() for x in line[len(prefix):].split(",") if x.strip()]
    return []


class Scripted:
    def __init__(self) -> None:
        self.intent: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.judge_calls = 0

    def _say(self, obj: Any, shape: str) -> str:
        text = json.dumps(obj)
        if shape == "fenced":
            return f"```json\n{text}\n```"
        if shape == "prose":
            return f"Let me think about the session. My answer is {text} based on the rows."
        return text

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[int, str]:
        system = str(messages[0].get("content", "")) if messages else ""
        user = str(messages[-1].get("content", ""))
        if "careful rater" in system:
            return 200, self._judge(messages, user)
        task = re.search(r"Task: ([a-z ]+)\.", system)
        name = task.group(1) if task else ""
        shape = SHAPES[_h(user, "shape") % len(SHAPES)]
        if shape == "garbage":
            content = "I am not sure, it depends on many things."
            self._remember(content, None)
            return 200, content
        if name == "intervention time prediction":
            ans = "yes" if _h(user, "itp") % 2 else "no"
            obj = answer_object("itp", ans)
            if shape == "upper":
                obj[ANSWER.name] = ans.upper()
            content = self._say(obj, shape if shape in ("plain", "fenced", "prose") else "plain")
            self._remember(content, ans)
            return 200, content
        if name in ("relation pattern prediction", "support target prediction", "support strategy prediction"):
            prefix = {"relation pattern prediction": "Labels: ", "support target prediction": "Candidates: "}.get(name, "Strategies: ")
            cands = _line(user, prefix)
            start = _h(user, "rank") % len(cands)
            ranking = [cands[(start + i) % len(cands)] for i in range(min(3, len(cands)))]
            said = list(ranking)
            if shape == "upper":
                said = [s.upper() for s in said]
            elif shape == "hyphen":
                said = [s.replace("_", "-") for s in said]
            obj = answer_object("rpp", ranking)  # RPP, STP and SSP share one format
            meaning: list[str | None] = list(ranking)
            if shape == "invalid_mixed":
                said = ["not_a_label", said[0], said[0], *said[1:]]
                # the invented label and the repeat keep their ranks as misses (scoring's
                # keep_positions rule): only the first valid label counts, at rank 2
                meaning = [None, ranking[0], None]
            obj[RANKING.name] = said
            content = self._say(obj, shape if shape in ("plain", "fenced", "prose") else "plain")
            self._remember(content, meaning)
            return 200, content
        if name == "emotion recognition":
            intensity = _h(user, "int") % 11
            pred = {"emotion": "feels hurt and unheard", "intensity": intensity}
            content = self._say(answer_object("er", pred), shape if shape in ("plain", "fenced", "prose") else "plain")
            self._remember(content, pred)
            return 200, content
        if name == "viewpoint prediction":
            others = _line(user, "Other participants: ")
            others = [o for o in others if o != "Therapist"] or ["Therapist"]
            pred = [{"target": o, "viewpoint": "thinks they do not listen"} for o in others]
            content = self._say(answer_object("vp", pred), shape if shape in ("plain", "fenced", "prose") else "plain")
            self._remember(content, pred)
            return 200, content
        return 200, "unrecognised prompt"

    def _judge(self, messages: list[dict[str, Any]], user: str) -> str:
        with self.lock:
            self.judge_calls += 1
        first = messages[1].get("content", "") if len(messages) > 1 else user
        if judge_format("authors").example in str(first):  # the authors' VP rubric
            parts = {"target_score": _h(str(first), "t") % 3, "viewpoint_score": _h(str(first), "v") % 5}
            self._remember("judge:" + str(first), parts)
            return json.dumps(answer_object("judge_authors", parts))
        score = 1 + _h(str(first), "judge") % 5
        reask = len(messages) > 2
        if not reask and _h(str(first), "judgebad") % 4 == 0:
            return "Score: excellent"  # invalid; the engine must ask again
        content = json.dumps(answer_object("judge", score))
        self._remember("judge:" + str(first), score)
        return content

    def _remember(self, content: str, meaning: Any) -> None:
        with self.lock:
            self.intent[content] = meaning
