"""Benchmark of the agreement page: the demo reviewed in full by two annotators in independent copies.

    python bench/review_agreement.py            # prints the table
    python bench/review_agreement.py --write    # ... and writes it into docs/benchmarks.md
    python bench/review_agreement.py --help     # --rounds, --resamples, --no-bertscore

Each of the demo's segments is switched to independent copies and reviewed row by row by two
annotators through the services; the second disagrees on the relation pattern of about a third of
the rows and describes the first emotion of some rows in words of their own (so BERTScore has work).
Then ``rescue review serve`` runs on the SQLite file and, ``--settle`` seconds later (an admin logs
in and opens the page; the server imports the report's libraries in the background in its first
seconds, and a load before they are in waits for them), an admin's client measures, for the first
state and ``--rounds`` more (an annotator's save before each):

- **first load**: ``GET /agreement`` (the page's own defaults: 1,000 resamples, BERTScore), which
  answers with the point estimates and exact-match shares (the save before each round describes an
  emotion anew, so there is always a pair of texts BERTScore has not scored);
- **full report**: the ``full=true`` page the first load's script fetches (bootstrap intervals and
  BERTScore), which is what a first load waited for before;
- **next load**: ``GET /agreement`` again, nothing changed (the report is computed once per state).

Wall time at the client and the server's own time (its ``Server-Timing`` header). Goals: every
first load under 0.3 s (:data:`FIRST_PAINT_MS`), the full report under 2 s after a change
(:data:`FULL_AFTER_CHANGE_MS`). Nothing is written into the repository except the doc.
"""

from __future__ import annotations

import argparse
import html
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO  # noqa: E402
from review import server_ms, start  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- review-agreement-bench:begin -->", "<!-- review-agreement-bench:end -->"
PASSWORD = "bench password"
PATTERNS = ("attack_attack", "pursue_withdraw", "withdraw_withdraw")


def fill(url: str, seed: int) -> tuple[int, int]:
    """The demo, every segment reviewed by ann and ben in independent copies; returns (segments, rows)."""
    from sqlalchemy import select

    from rescue_bench.data import load_clips
    from rescue_bench.data.load import demo_path
    from rescue_bench.review import access, edits
    from rescue_bench.review.db import Database, upgrade
    from rescue_bench.review.models import Segment
    from rescue_bench.review.security import ensure_secret
    from rescue_bench.review.store import import_clips
    from rescue_bench.review.users import add_user, get_user

    rng = random.Random(seed)
    db = Database(url)
    upgrade(db)
    with db.write() as s:
        ensure_secret(s)
        for name, role in (("admin", "admin"), ("ann", "annotator"), ("ben", "annotator")):
            add_user(s, name, PASSWORD, role)
        import_clips(s, load_clips([demo_path()]), file_name="demo.jsonl", sha256="0" * 64)
        for seg in s.scalars(select(Segment)):
            access.set_mode(s, seg, "independent", by=None)
            for name in ("ann", "ben"):
                access.assign(s, seg, get_user(s, name), by=None)
    rows = 0
    with db.write() as s:
        segments = list(s.scalars(select(Segment).order_by(Segment.position)))
        for seg in segments:
            for name in ("ann", "ben"):
                user = get_user(s, name)
                for r in edits.segment_rows(s, user, seg):
                    fields: dict[str, Any] = {}
                    if name == "ben" and rng.random() < 0.33:
                        fields["relation_pattern"] = rng.choice(PATTERNS)
                    emotions = r.row.get("internal_emotion") or []
                    if name == "ben" and emotions and rng.random() < 0.3:
                        first = dict(emotions[0])
                        first["emotion_description"] = f"{first.get('emotion_description') or 'upset'}, and tired of it"
                        fields["internal_emotion"] = [first, *emotions[1:]]
                    try:  # the app's save: planned, then applied
                        plan = edits.prepare_save(s, user, seg, r.position, version=r.version, fields=fields, reviewed=True)
                    except Exception:  # noqa: BLE001 - a drawn label the row's rules refuse: review it as it is
                        plan = edits.prepare_save(s, user, seg, r.position, version=r.version, fields={}, reviewed=True)
                    if isinstance(plan, edits.SavePlan):
                        edits.apply_save(s, plan)
                    rows += name == "ann"
    db.dispose()
    return len(segments), rows


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    with tempfile.TemporaryDirectory(prefix="rescue-agreement-bench-") as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder / 'bench.db'}"
        segments, rows = fill(url, args.seed)
        proc, base = start(url, folder, 1)
        try:
            admin = httpx.Client(base_url=base, timeout=600)
            assert admin.post("/api/login", json={"username": "admin", "password": PASSWORD}).status_code == 200
            ben = httpx.Client(base_url=base, timeout=60)
            csrf = ben.post("/api/login", json={"username": "ben", "password": PASSWORD}).json()["csrf_token"]
            key = re.search(r'href="/segments/([^/"]+)"', admin.get("/").text).group(1)  # type: ignore[union-attr]
            params = {} if args.bertscore else {"bertscore": "false"}
            if args.resamples != 1000:
                params["resamples"] = str(args.resamples)
            time.sleep(args.settle)  # the server imports the report's libraries in its first seconds
            out: dict[str, list[float]] = {k: [] for k in ("first", "first_server", "full", "full_server", "next", "next_server")}
            load_before = os.getloadavg()[0]
            page = ""
            listed = ben.get(f"/api/segments/{key}").json()["rows"]
            felt = next(r["row_index"] for r in listed if ben.get(f"/api/segments/{key}/rows/{r['row_index']}").json()["row"].get("internal_emotion"))
            for i in range(args.rounds + 1):
                if i:  # a save by an annotator: a new state of the database, and an emotion described anew (a pair BERTScore has not seen)
                    row = ben.get(f"/api/segments/{key}/rows/{felt}").json()
                    emotions = [dict(e) for e in row["row"]["internal_emotion"]]
                    emotions[0]["emotion_description"] = f"{emotions[0].get('emotion_description') or 'upset'}, round {i}"
                    body = {"version": row["version"], "fields": {"internal_emotion": emotions}, "reviewed": True}
                    resp = ben.put(f"/api/segments/{key}/rows/{felt}", json=body, headers={"X-CSRF-Token": csrf})
                    if resp.status_code != 200:
                        raise SystemExit(f"the save before round {i}: {resp.status_code} {resp.text[:200]}")
                for label, path in (("first", None), ("full", "full"), ("next", None)):
                    if path is None:
                        t0 = time.perf_counter()
                        resp = admin.get("/agreement", params=params)
                    else:
                        found = re.search(r'data-full="([^"]+)"', page)
                        if found is None:
                            raise SystemExit("the first load was not answered with the quick report")
                        t0 = time.perf_counter()
                        resp = admin.get(html.unescape(found.group(1)))
                    out[label].append((time.perf_counter() - t0) * 1000)
                    out[f"{label}_server"].append(server_ms(resp))
                    if resp.status_code != 200:
                        raise SystemExit(f"{label}: {resp.status_code}")
                    page = resp.text
                    if label == "next" and "agreement-pending" in page:
                        raise SystemExit("the next load was not answered from the computed report")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {"segments": segments, "rows": rows, "times": out, "load_before": load_before}


FIRST_PAINT_MS = 300
"""Goal: the page shows its figures within this, whenever it is opened."""
FULL_AFTER_CHANGE_MS = 2000
"""Goal: the intervals (and BERTScore) are in place within this after a change."""


def table(result: dict[str, Any], args: argparse.Namespace) -> str:
    t = result["times"]

    def cell(name: str) -> str:
        later = t[name][1:]  # round 0 is the first request after the server started
        return f"{statistics.median(later):.0f} (max {max(later):.0f})"

    def met(ok: bool) -> str:
        return "yes" if ok else "**no**"

    first_max = max(t["first"])
    full_max = max(t["full"][1:])
    lines = [
        f"The demo ({result['segments']} segments, {result['rows']} rows) reviewed in full by two annotators in independent copies; "
        f"{args.rounds} states of the database after the first, an annotator's save before each; {args.resamples} resamples, BERTScore {'on' if args.bertscore else 'off'}. "
        "Median (max) milliseconds:",
        "",
        "| request | client (ms) | server (ms) | goal | met |",
        "|---|---|---|---|---|",
        f"| first load of `/agreement`, {args.settle:.0f} s after the server started | {t['first'][0]:.0f} | {t['first_server'][0]:.0f} | < {FIRST_PAINT_MS} | {met(t['first'][0] < FIRST_PAINT_MS)} |",
        f"| the full report the page then fetches, the first since the server started (loads BERTScore's model) | {t['full'][0]:.0f} | {t['full_server'][0]:.0f} | | |",
        f"| first load of `/agreement` after a change (point estimates, exact match) | {cell('first')} | {cell('first_server')} | < {FIRST_PAINT_MS} | {met(first_max < FIRST_PAINT_MS)} |",
        f"| the full report the page then fetches (intervals, BERTScore) | {cell('full')} | {cell('full_server')} | < {FULL_AFTER_CHANGE_MS} | {met(full_max < FULL_AFTER_CHANGE_MS)} |",
        f"| next load, nothing changed | {cell('next')} | {cell('next_server')} | | |",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC with `python bench/review_agreement.py --rounds {args.rounds} --settle {args.settle:g}` on "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, SQLite, one app worker; 1-minute load average before: {result['load_before']:.2f}.",
    ]
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = DOC.read_text(encoding="utf-8")
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} section")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + BEGIN + "\n" + text + "\n" + END + tail, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--no-bertscore", dest="bertscore", action="store_false")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settle", type=float, default=10.0, help="seconds between the server's start and the first load (0: at once)")
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = parser.parse_args()
    text = table(measure(args), args)
    print(text)
    if args.write:
        write_doc(text)


if __name__ == "__main__":
    main()
