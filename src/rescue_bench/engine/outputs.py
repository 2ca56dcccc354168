"""The output folder of a run, written once everything is evaluated.

    DIR/results/<task>.jsonl   one record per instance (rescue_bench.scoring.base_record + judge + BERTScore)
    DIR/summary.json           {task: {scenario: {metric: value, "n", "invalid_rate"}}}
    DIR/run.json               the recorded configuration (model, judge and its prompt, options, versions, usage)
    DIR/logs/                  inspect_ai logs (``inspect view --log-dir DIR/logs``), written during the run

Files are written to a temporary name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rescue_bench.engine.settings import EvalSettings, Evaluated


def judge_fingerprint() -> str:
    """A hash of the judge prompts, recorded so judged numbers say which rubric made them."""
    from rescue_bench.prompts.render import ER_RUBRIC, JUDGE_SYSTEM, VP_RUBRIC, VP_RUBRIC_AUTHORS

    text = "\n".join([JUDGE_SYSTEM, ER_RUBRIC, VP_RUBRIC, VP_RUBRIC_AUTHORS])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def add_bertscore(records: list[dict[str, Any]], backbone: str | None) -> str | None:
    """Fill ``bertscore`` of valid ER/VP records in one batch; return the backbone used (None if skipped)."""
    from rescue_bench.bertscore import BertScoreUnavailable, bertscore_f1, default_backbone
    from rescue_bench.scoring import bertscore_pairs

    todo = [(r, pair) for r in records if (pair := bertscore_pairs(r)) is not None]
    if not todo:
        return None
    try:
        backbone = backbone or default_backbone()
        scores = bertscore_f1([p for _, (p, _) in todo], [g for _, (_, g) in todo], backbone=backbone)
    except BertScoreUnavailable:
        return None
    for (record, _), value in zip(todo, scores):
        record["bertscore"] = value
    return backbone


def preload() -> None:
    """Import what writing the outputs needs and a run does not: scikit-learn, for the summary's metrics.

    The parent of a multi-worker run calls it in a thread while the workers work, so the ~1 s import
    is not added to the end of the run (``rescue_bench.metrics`` imports it only when summarising)."""
    import sklearn.metrics  # noqa: F401


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as JSON Lines at ``path``, atomically."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)


def write_json(path: Path, obj: Any) -> None:
    """``obj`` as indented JSON at ``path``, atomically."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def write_results(folder: Path, records: list[dict[str, Any]]) -> dict[str, Any]:
    """``folder/results/<task>.jsonl`` and ``folder/summary.json`` of task records; returns the summary.

    The records are put in one canonical order (task, clip, row) first, and the summary is computed
    from them exactly as they are written, so anyone recomputing it from ``results/`` gets the same
    floats (with any number of workers).
    """
    from rescue_bench.scoring import summarize

    (folder / "results").mkdir(parents=True, exist_ok=True)
    records.sort(key=lambda r: (r["task"], r["sample_id"], r["row"]))
    by_task: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_task.setdefault(record["task"], []).append(record)
    for name, rows in by_task.items():
        write_jsonl(folder / "results" / f"{name}.jsonl", rows)
    summary = summarize(records)
    write_json(folder / "summary.json", summary)
    return summary


def versions() -> dict[str, str]:
    """The versions a run records: rescue-bench, inspect_ai and Python."""
    from importlib.metadata import version

    from rescue_bench import __version__

    return {"rescue_bench": __version__, "inspect_ai": version("inspect_ai"), "python": platform.python_version()}


def write_outputs(
    settings: EvalSettings,
    evaluated: Evaluated,
    *,
    clips: int,
    workers: int = 1,
    choice: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """BERTScore, then ``results/``, ``summary.json`` and ``run.json`` (plus ``extra``); returns the summary.

    ``workers``: the processes that made calls; ``choice``: how that number was chosen
    (``run.workers_choice``), recorded as ``workers_choice``; ``extra``: more entries of ``run.json``
    (the video mode's clip report).
    """
    from rescue_bench.labels import cue_mode
    from rescue_bench.tasks import DEFAULT_CONTEXT, BuildOptions

    out = Path(settings.out)
    records = evaluated.records
    backbone = add_bertscore(records, settings.bertscore_model) if settings.bertscore else None
    summary = write_results(out, records)
    options = BuildOptions(mode=cue_mode(settings.mode)).with_context(settings.context)
    write_json(
        out / "run.json",
        {
            "settings": settings.model_dump(),
            "model": settings.model,
            "judge": settings.judge,
            "judge_prompt_sha": judge_fingerprint() if settings.judge else None,
            "context_windows": {t: options.window(t) for t in DEFAULT_CONTEXT},
            "clips": clips,
            "workers": workers,
            "workers_choice": choice,
            "bertscore_backbone": backbone,
            "usage": evaluated.usage,
            "versions": versions(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "status": evaluated.statuses,
            **(extra or {}),  # e.g. the video mode's clip report
        },
    )
    return summary
