"""The drafting prompt: instructions written by this project, labels and rules from ``rescue_bench.labels``.

Layout, as for the evaluation prompts: a *system* message that depends only on the scenario and
the media mode (role, rules, field meanings, label definitions, boundary rules, the answer
contract), then a *user* message per window (participants, what came before, the cues as a JSON
array, the media). The system message is the same for every window of every segment of a scenario,
so providers' prefix caches reuse it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache

from rescue_bench.annotate.contract import CLIENT_ONLY, ROW_FIELDS, THERAPIST_ONLY, DraftProblem, problem_lines
from rescue_bench.annotate.manifest import ManifestCue
from rescue_bench.annotate.windows import CarriedRow, Window
from rescue_bench.labels import BOUNDARY_RULES, GROUP_LABELS, PATTERNS, STRATEGIES, THERAPIST, UTTERANCE_TYPES

MEDIA_MODES: tuple[str, ...] = ("video", "frames", "none")
"""What the drafting model receives besides the subtitles."""

PROMPT_VERSION = "draft-1"
"""Bumped whenever the user-message template changes (it is part of the prompt hash)."""

_ROLE = (
    "You are an experienced {setting} annotator preparing research data on relation-aware, multi-party "
    "emotional support (RESCUE-Bench). You turn a therapy session's subtitles into annotated rows."
)

_SETTING = {"couple": "couple-therapy", "family": "family-therapy"}

_SCENARIO_GUIDE = {
    "couple": (
        "This is a couple session: two partners and a therapist. Read every turn as a move in the partners' "
        "cycle: who reaches for whom, who protects themselves and how, and whether a move lands with the other "
        "partner. Name a partner's stance toward the other (blame, longing, fear of being left, feeling "
        "controlled) rather than their surface wording. A partner who turns to the therapist often speaks "
        "about the other partner: the target is the person addressed, the viewpoint is about the one discussed. "
        "Use Couple as speaker only when both partners say the same thing together, and as target when a turn "
        "addresses both partners."
    ),
    "family": (
        "This is a family session: several family members and a therapist. Keep the generations and roles in "
        "view: who speaks for whom, who sides with whom, who is pulled into a conflict between others, and "
        "whether a parent and a child are lined up against another member. Stances differ between members: "
        "record each member's viewpoint of each other member separately. Use Family as speaker only when "
        "several members answer together, and as target when a turn addresses the whole family."
    ),
}

_RULES = (
    "Rules:\n"
    "- The subtitles are the ground truth for the words and their timing. Never add, move or reorder cues, "
    "and never invent speech.\n"
    "- Group consecutive cues into rows. Start a new row when the speaker changes, or when the addressee, "
    "the function of the turn, the emotion or a salient behaviour changes. A row has exactly one speaker; "
    "short overlapping remarks by someone else go into that row's background_dialogue.\n"
    "- Use every cue of this request exactly once, in order: the rows' \"cues\" lists, read one after the "
    "other, are exactly the cue numbers given.\n"
    "- A cue's \"speaker\" comes from the subtitles; when it names a participant, Therapist or the group "
    "label, the row's primary_speaker is that name. When it is null, decide from the content.\n"
    "- Names: use only the participants' names, {therapist} and {group}, spelled as given. {group} stands "
    "alone in a target list. Nobody targets themselves.\n"
    "- {therapist_only} only on {therapist} rows; {client_only} only on client rows.\n"
    "- Intensities are integers from 0 (none) to 10 (overwhelming).\n"
    "- Leave a field empty (\"\" or []) rather than guess; never use a label outside the lists below."
)

_MEDIA = {
    "video": (
        "Evidence: you receive the video (picture and sound) of the span these cues cover. Use it for tone of "
        "voice, posture, facial expressions, self-directed and interaction behaviour, and as support for "
        "emotion, stance and strategy. Describe only what can be seen or heard."
    ),
    "frames": (
        "Evidence: you receive a few still frames from the span these cues cover, in time order, and its "
        "sound when the service accepts audio. Use the frames for posture, facial expression and visible "
        "behaviour at those moments; describe tone of voice only when you hear the sound, otherwise infer it "
        "cautiously from the words or leave it empty."
    ),
    "none": (
        "Evidence: you receive the subtitles only. Infer emotion, stance, strategy and relation patterns from "
        "the words and the flow of the conversation; leave tone_of_voice, body_posture, facial_expressions, "
        "self_directed_behavior and interaction_behavior empty unless the words themselves describe them."
    ),
}


def _definitions(title: str, labels: dict[str, str]) -> str:
    return "\n".join([f"{title}:", *(f"- {name}: {text}" for name, text in labels.items())])


def _contract(scenario: str) -> str:
    group = GROUP_LABELS[scenario]
    example = {
        "rows": [
            {
                "cues": [1, 2],
                "primary_speaker": "<name>",
                "target": [group],
                "dialogue_cleaned": "<what was said>",
                "utterance_type": "",
                "background_dialogue": [],
                "tone_of_voice": "<tone>",
                "body_posture": [{"person": "<name>", "description": "<posture>"}],
                "facial_expressions": [],
                "self_directed_behavior": [],
                "interaction_behavior": [],
                "internal_emotion": [{"person": "<name>", "emotion_description": "<feeling>", "intensity": 5}],
                "viewpoints_attitudes": [],
                "support_strategy": [{"provider": THERAPIST, "target": [group], "strategy_type": "<strategy>", "strategy_content": "<what the move does>"}],
                "relation_cycle_state": "<pattern or empty>",
                "relation_pattern": "",
                "relation_pattern_reason": "",
                "relation_pattern_evidence_rows": [],
            }
        ],
        "summary": "<only when asked: the session so far in at most 60 words>",
    }
    return "Answer with JSON only, no other text, in exactly this form:\n" + json.dumps(example, ensure_ascii=False)


@lru_cache(maxsize=16)
def system_prompt(scenario: str, media: str) -> str:
    """The stable instructions for ``scenario`` under media mode ``media``."""
    if media not in MEDIA_MODES:
        raise ValueError(f"unknown media mode {media!r}; expected one of {', '.join(MEDIA_MODES)}")
    group = GROUP_LABELS[scenario]
    parts = [
        _ROLE.format(setting=_SETTING[scenario]),
        _SCENARIO_GUIDE[scenario],
        _RULES.format(
            therapist=THERAPIST,
            group=group,
            therapist_only=" and ".join(THERAPIST_ONLY),
            client_only=" and ".join(CLIENT_ONLY),
        ),
        _MEDIA[media],
        "Row fields (the tool sets row_index, start_time and end_time from the cues):\n"
        + "\n".join(f"- {name}: {meaning}" for name, meaning in ROW_FIELDS.items()),
        "Utterance types: " + ", ".join(UTTERANCE_TYPES) + ".",
        _definitions(f"Relation patterns ({scenario})", PATTERNS[scenario]),
        _definitions(f"Therapist support strategies ({scenario})", STRATEGIES[scenario]),
        "Boundary rules:\n" + "\n".join(f"- {rule}" for rule in BOUNDARY_RULES),
        _contract(scenario),
    ]
    return "\n\n".join(parts)


def cues_json(cues: Sequence[ManifestCue]) -> str:
    """The cues as the JSON array the model reads: objects with cue, start, end, speaker, text."""
    return json.dumps([c.model_dump(mode="json") for c in cues], ensure_ascii=False)


def user_prompt(
    participants: Sequence[str],
    window: Window,
    *,
    first_row: int,
    summary: str | None = None,
    previous_rows: Sequence[CarriedRow] = (),
    media_note: str | None = None,
) -> str:
    """The request for one window: who is there, what came before, the cues, and what to answer."""
    parts = [f"Participants (clients): {', '.join(participants) or '(unknown)'}."]
    if window.count > 1:
        parts.append(f"This is part {window.index + 1} of {window.count} of the session.")
    if window.index > 0:
        parts.append("Summary of the session so far: " + (summary or "(none given)"))
        if previous_rows:
            parts.append("Last rows drafted before this part: " + json.dumps(list(previous_rows), ensure_ascii=False))
    if media_note:
        parts.append(media_note)
    parts.append(f"Cues ({window.start:.2f}-{window.end:.2f} s):\n" + cues_json(window.cues))
    parts.append(
        f"The first row you write is row {first_row}"
        + (f"; rows 1-{first_row - 1} came before." if first_row > 1 else ".")
        + " relation_pattern_evidence_rows refer to these row numbers."
    )
    if window.index + 1 < window.count:
        parts.append('Also give "summary": the session so far (who feels what toward whom, the pattern) in at most 60 words.')
    parts.append("Answer (JSON only).")
    return "\n\n".join(parts)


def reask_prompt(problems: Sequence[DraftProblem]) -> str:
    """The one follow-up after an invalid answer: its problems, and the instruction to answer again."""
    lines = "\n".join(f"- {line}" for line in problem_lines(problems))
    return (
        "Your answer breaks the rules in these places:\n"
        f"{lines}\n"
        "Answer again with the complete corrected JSON for the same cues (all rows, not only the changed ones)."
    )


def prompt_sha(scenario: str, media: str) -> str:
    """A hash of everything that shapes the prompt, recorded on each draft (provenance)."""
    text = "\n".join([PROMPT_VERSION, system_prompt(scenario, media), reask_prompt([])])
    return hashlib.sha256(text.encode()).hexdigest()[:16]
