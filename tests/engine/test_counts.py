"""One set of counts per run that adds up, the same in ``run.json``, ``summary.json``, the console and
the report: every instance was answered (usable, or unusable by cause), refused as longer than the
model's context window, or got no answer.

The attack: a small window that refuses most prompts. ``run.json`` said ``answered 87,
without_answer 0`` beside ``overflow 81``: a refused prompt was counted as answered.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.contract import FORMATS
from rescue_bench.records import InvalidCause
from rescue_bench.testing import ContextWindow, FakeOpenAI, ValidAnswers
from tests.factories import read_records

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

N_CTX = 1200
"""The fake window, in tokens of 4 characters: refuses some of the demo's RPP prompts with every earlier row."""
PARSE_CAUSES = [c for c in InvalidCause if c not in (InvalidCause.CONTEXT_OVERFLOW, InvalidCause.JUDGE_FAILED)]


class Mixed:
    """Valid RPP answers, the ITP template echoed, prose for ER: answers usable and unusable by cause."""

    def __init__(self) -> None:
        self.valid = ValidAnswers()

    def __call__(self, messages):
        system = str(messages[0].get("content", ""))
        if "Task: intervention" in system:
            return 200, "I would say " + FORMATS["itp"].example
        if "Task: emotion" in system:
            return 200, "She feels sad, maybe 7."
        return self.valid(messages)


def test_every_instance_is_answered_refused_or_without_an_answer_and_every_place_says_so(isolated_env: Path) -> None:
    out = isolated_env / "run"
    window = ContextWindow(Mixed(), N_CTX)
    with FakeOpenAI(window) as server:
        result = CliRunner().invoke(
            app,
            ["eval", "--model", "openai/m", "--tasks", "itp,rpp,er", "--context", "-1", "--limit", "20", "--out", str(out),
             "--display", "none", "--no-bertscore", "--max-retries", "1"],
            env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x", "RESCUE_CACHE_DIR": str(isolated_env / "cache")},
        )
    assert result.exit_code == 0, result.output
    records = read_records(out)
    counts = json.loads((out / "run.json").read_text())["counts"]
    # what the records say, counted here by hand
    refused = sum(1 for r in records if r["cause"] == InvalidCause.CONTEXT_OVERFLOW)
    replied = [r for r in records if r["raw"] is not None]
    causes = Counter(r["cause"] for r in replied if not r["valid"])
    assert refused > 0 and causes[InvalidCause.ECHO] > 0 and causes[InvalidCause.NO_JSON] > 0 and any(r["valid"] for r in records)
    assert counts["instances"] == len(records)
    assert counts["answered"] == len(replied) and counts["overflow"] == refused and counts["without_answer"] == 0
    assert counts["answered"] + counts["overflow"] + counts["without_answer"] == counts["instances"]
    assert counts["usable"] == sum(1 for r in replied if r["valid"])
    assert counts["invalid"] == {str(c): causes[c] for c in PARSE_CAUSES}
    assert counts["usable"] + sum(counts["invalid"].values()) == counts["answered"]

    # summary.json: the same numbers, per task and scenario
    summary = json.loads((out / "summary.json").read_text())
    both = [per["both"] for per in summary.values()]
    assert sum(e["n"] for e in both) == counts["instances"]
    assert sum(e["answered"] for e in both) == counts["answered"]
    assert sum(e["invalid_causes"]["context_overflow"] for e in both) == counts["overflow"]
    for cause in PARSE_CAUSES:
        assert sum(e["invalid_causes"][str(cause)] for e in both) == counts["invalid"][str(cause)], cause

    # the console: one paragraph with the same numbers (wrapped at the console's width)
    paragraph = result.output.split("Answers:", 1)[1].split("without an answer", 1)[0]
    line = "Answers: " + " ".join(paragraph.split()) + " without an answer"
    invalid = sum(counts["invalid"].values())
    for words in (f"{counts['instances']} instances", f"{counts['answered']} answered", f"{counts['usable']} usable",
                  f"{invalid} unusable", f"echo {counts['invalid']['echo']}", f"{counts['overflow']} refused as too long",
                  f"{counts['without_answer']} without an answer"):
        assert words in line, (words, line)

    # the report: a row per run with the same numbers
    report = isolated_env / "report"
    made = CliRunner().invoke(app, ["report", str(out), "--out", str(report), "--resamples", "20"])
    assert made.exit_code == 0, made.output
    header, row = list(csv.reader((report / "tables" / "outcomes.csv").open(encoding="utf-8")))[:2]
    shown = dict(zip(header, row))
    assert shown["Instances"] == str(counts["instances"]) and shown["Answered"] == str(counts["answered"])
    assert shown["Usable"] == str(counts["usable"]) and shown["Refused as too long"] == str(counts["overflow"])
    assert shown["Without an answer"] == "0" and shown["Unusable: echoed template"] == str(counts["invalid"]["echo"])
