"""A scripted drafting model for the loopback server: answers ``rescue annotate draft`` requests.

It reads only what the model is sent (the cues JSON array, the first row number, the
participants, the scenario from the instructions) and answers in the draft contract. ``behaviour``
decides what it says:

- ``valid``: one row per cue, every annotated field filled and valid (rows rich enough for all six
  task builders: emotions of clients, viewpoints, therapist strategies and relation patterns);
- ``reask``: the first answer has invalid values (an intensity of 14, a label outside the taxonomy,
  a therapist-only field on a client row); the re-ask gets the valid answer;
- ``invalid``: the invalid answer both times (so the draft keeps the problems on the rows);
- ``garbage``: prose that holds no JSON, both times.

``requests`` keeps every request's messages for tests to inspect (media parts included).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from rescue_bench.testing.server import RequestMessage

BEHAVIOURS = ("valid", "reask", "invalid", "garbage")
_CUES = re.compile(r"Cues \([^)]*\):\n(\[.*\])")
_FIRST_ROW = re.compile(r"The first row you write is row (\d+)")
_PARTICIPANTS = re.compile(r"Participants \(clients\): (.*)\.")


def message_text(message: RequestMessage) -> str:
    """The text of a chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")


class DraftResponder:
    """A responder for :class:`~rescue_bench.testing.FakeOpenAI` that drafts rows (see module doc)."""

    def __init__(self, behaviour: str = "valid") -> None:
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {BEHAVIOURS}")
        self.behaviour = behaviour
        self.requests: list[list[RequestMessage]] = []
        self._lock = threading.Lock()

    def __call__(self, messages: list[RequestMessage]) -> tuple[int, str]:
        with self._lock:
            self.requests.append(messages)
        system = message_text(messages[0])
        request = message_text(messages[1])
        reask = len(messages) > 2
        if self.behaviour == "garbage":
            return 200, "I watched the session closely and there is a lot going on between them."
        cues = json.loads(_CUES.search(request).group(1))  # type: ignore[union-attr]
        first_row = int(_FIRST_ROW.search(request).group(1))  # type: ignore[union-attr]
        participants = [p.strip() for p in _PARTICIPANTS.search(request).group(1).split(",")]  # type: ignore[union-attr]
        scenario = "family" if "family session" in system else "couple"
        broken = self.behaviour == "invalid" or (self.behaviour == "reask" and not reask)
        rows = [self._row(cue, i + first_row, participants, scenario, broken and i < 2) for i, cue in enumerate(cues)]
        answer: dict[str, Any] = {"rows": rows}
        if "Also give \"summary\"" in request:
            answer["summary"] = f"Up to cue {cues[-1]['cue']}: the clients keep missing each other; the therapist tracks it."
        return 200, json.dumps(answer)

    @staticmethod
    def _row(cue: dict[str, Any], row: int, participants: list[str], scenario: str, broken: bool) -> dict[str, Any]:
        group = "Couple" if scenario == "couple" else "Family"
        speaker = cue["speaker"] or participants[0]
        others = [p for p in participants if p != speaker]
        out: dict[str, Any] = {
            "cues": [cue["cue"]],
            "primary_speaker": speaker,
            "dialogue_cleaned": cue["text"],
            "tone_of_voice": "steady, a little tense",
            "body_posture": [{"person": speaker, "description": "leaning forward"}],
            "facial_expressions": [{"person": speaker, "description": "brows drawn together"}],
            "self_directed_behavior": [],
            "interaction_behavior": [],
            "background_dialogue": [],
        }
        if speaker == "Therapist":
            strategy = "track" if scenario == "couple" else "boundary"
            out.update(
                target=[group],
                internal_emotion=[],
                viewpoints_attitudes=[],
                support_strategy=[{"provider": "Therapist", "target": [group], "strategy_type": strategy,
                                   "strategy_content": "names what is happening between them"}],
                relation_cycle_state="pursue_withdraw",
                relation_pattern="pursue_withdraw",
                relation_pattern_reason="one presses while another pulls back",
                relation_pattern_evidence_rows=[max(1, row - 1), row],
            )
        else:
            target = others[:1] or ["Therapist"]
            out.update(
                target=target,
                utterance_type="disclosure",
                internal_emotion=[{"person": speaker, "emotion_description": "hurt and unheard", "intensity": 6}],
                viewpoints_attitudes=[{"source": speaker, "target": target[0], "viewpoint": "does not listen to me",
                                       "attitude": "frustrated"}],
                relation_pattern="pursue_withdraw",
                relation_pattern_reason="asks for contact and meets distance",
                relation_pattern_evidence_rows=[row],
            )
            if broken:  # three invalid values, each a different rule
                out["internal_emotion"][0]["intensity"] = 14
                out["utterance_type"] = "complaint"
                out["support_strategy"] = [{"provider": "Therapist", "target": target, "strategy_type": "track"}]
        if broken and speaker == "Therapist":
            out["support_strategy"][0]["strategy_type"] = "lecture"
        return out
