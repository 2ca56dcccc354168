"""Keystrokes and seconds to review a row in the review app's form, measured with a real browser,
beside Label Studio's and Argilla's documented keys for the same acts.

    python bench/review_form.py            # prints the table (SQLite, Playwright driving /usr/bin/chromium)
    python bench/review_form.py --write    # ... and writes it into docs/benchmarks.md
    python bench/review_form.py --rows 8   # rows per flow (default 6; --screen-rows: confirm on the other screens, default 4)

An annotator (a Playwright page at 1366x768 against a real ``rescue review serve`` on SQLite) works
through rows with the keyboard only, in four flows, then an admin adjudicates:

- **confirm**: the draft is right: Ctrl+Enter (save, mark reviewed, next row), pressed again while
  the form shows fields that were never in view (each press brings the next ones into view: a row
  is confirmed only once all of it was seen); measured on each of the four screens (1024x768,
  1366x768, 200% zoom of 1366x768, 3840x2160), since what is in view depends on the screen;
- **fix a label**: Alt+J until the row's relation label list has the focus (the relation cycle state
  on a therapist row, the relation pattern on a client row: SPEC section 1), the new label's letter,
  then as confirm;
- **comment**: Alt+C (the comment box), the text, Ctrl+Enter (posts it; the row stays as it was);
- **discard**: Ctrl+Space (the skip / discard dialog), the reason, Alt+D (discard; Enter or
  Ctrl+Enter would skip), and the next row opens;
- **adjudicate a disputed row**: two annotators reviewed a segment in their own copies, the second
  differing on the tone of voice of every row and the relation pattern of some; the admin, on the
  adjudication page, takes the first annotator's values of a row (``1``, Enter) or, every third row,
  the first disputed field from the second (``1``, Down, ``2``, Enter); Enter goes on to the next
  row to decide.

Keystrokes are the key presses sent besides the text typed (a chord such as Ctrl+Enter counts
once). Seconds are the machine's share: from the first key press of a row to the next row's form
having the focus (to the comment listed, for a comment; to the next row to decide, for an
adjudication), without the person's reading, thinking and typing. Every row is checked through the
API afterwards (reviewed; the new label stored; the comment posted; discarded with its reason;
adjudicated with the values chosen), so a fast but wrong flow cannot pass. Nothing is written into
the repository except the doc with ``--write``.

The reference columns are the other tools' documented keys, not measurements: Label Studio's
keymap (``web/libs/editor/src/core/settings/keymap.json``: ``annotation:submit`` ctrl+enter,
``annotation:skip`` ctrl+space) and a choice's own ``hotkey``; Argilla's "Annotate your dataset"
guide (its shortcut table: Enter submits, Backspace discards, digits pick a label, the arrow keys
move between questions, Shift+Enter enters a text area and Esc leaves it; Tab activates the form).
Adjudication: Label Studio's review (Enterprise only) has Accept, Fix & Accept and Reject buttons per
annotation, without documented keys; Argilla has no adjudication view (its guide unifies the
responses in Python after export: majority, minimum, maximum).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import review as load_bench  # noqa: E402  (bench/review.py: database, users, server)
from common import REPO  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- review-form-bench:begin -->", "<!-- review-form-bench:end -->"
CHROMIUM = "/usr/bin/chromium"
RELATION = {"therapist": "f-relation_cycle_state", "client": "f-relation_pattern"}
FLOWS = ("confirm", "fix a label", "comment", "discard")
SCREENS: dict[str, dict[str, Any]] = {
    "1024x768": {"viewport": {"width": 1024, "height": 768}},
    "200% zoom of 1366x768": {"viewport": {"width": 683, "height": 384}, "device_scale_factor": 2},
    "3840x2160": {"viewport": {"width": 3840, "height": 2160}},
}
"""The other screens confirm is measured on (the flows above run at 1366x768)."""
TYPED = {"comment": "the speaker changes mid-row", "discard": "not a therapy exchange"}
REFERENCE = {
    "confirm": ("1 (Ctrl+Enter)", "1 (Enter; Tab first to activate the form)"),
    "fix a label": ("2 (the choice's hotkey, Ctrl+Enter)", "2 + moves (Down/Up to the question, the label's digit, Enter)"),
    "comment": ("no documented key to reach the comment box", "3 + moves + text (Down to a text question, Shift+Enter, text, Esc, Enter)"),
    "discard": ("1 (Ctrl+Space: skip, no reason)", "1 (Backspace: discard, no reason)"),
    "adjudicate a disputed row": (
        "Enterprise only: Accept / Reject buttons per annotation, no documented key; Community: no review",
        "no adjudication view: responses unified in Python after export",
    ),
}
"""flow -> (Label Studio, Argilla): their documented keys for the same act (see the module docstring)."""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _moved(page: Any, url: str, timeout: float = 1500) -> bool:
    from playwright.sync_api import TimeoutError as StillThere

    try:
        page.wait_for_url(lambda now: now != url, timeout=timeout)
        page.wait_for_selector("#row-form:focus")
        return True
    except StillThere:
        return False


def _confirm(page: Any) -> int:
    """Ctrl+Enter until the row moves on; the presses it took. A press held back (fields never in
    view) counts up the form's ``data-asks``; the next press waits for that, not for a timeout."""
    url = page.url
    for n in range(1, 16):
        page.keyboard.press("Control+Enter")
        deadline = time.perf_counter() + 30
        while time.perf_counter() < deadline:
            if page.url != url:
                page.wait_for_selector("#row-form:focus")
                return n
            if page.locator(f'#row-form[data-asks="{n}"]').count():
                break
            time.sleep(0.01)
        else:
            raise RuntimeError(f"{url}: Ctrl+Enter answered nothing in 30 s")
    raise RuntimeError(f"{url}: Ctrl+Enter never moved on")


def _summary(flow: str, keys_per_row: list[int], seconds: list[float]) -> dict[str, Any]:
    return {
        "flow": flow,
        "rows": len(seconds),
        "keys": statistics.median(keys_per_row),
        "keys_max": max(keys_per_row),
        "p50": statistics.median(seconds),
        "p95": _pct(seconds, 0.95),
    }


def _log_in(browser: Any, base: str, user: str, **context: Any) -> Any:
    page = browser.new_context(**(context or {"viewport": {"width": 1366, "height": 768}})).new_page()
    page.goto(base + "/login")
    page.fill("#username", user)
    page.fill("#password", load_bench.PASSWORD)
    page.click("#login-submit")
    page.wait_for_url(base + "/")
    return page


def _prepare_adjudication(url: str, segment_key: str) -> list[int]:
    """The segment reviewed in full by its two annotators in their own copies (the second differing on
    every row's tone of voice and on the relation pattern of the rows that have one), and an admin;
    returns the row positions."""
    from sqlalchemy import select

    from rescue_bench.review import access, edits
    from rescue_bench.review.db import Database
    from rescue_bench.review.models import Assignment, Segment, User
    from rescue_bench.review.security import hash_password

    db = Database(url)
    with db.write() as s:
        s.add(User(username="admin", password_hash=hash_password(load_bench.PASSWORD), role="admin", active=True, auth_epoch=0))
        seg = s.scalars(select(Segment).where(Segment.key == segment_key)).one()
        access.set_mode(s, seg, "independent", by=None)
    with db.write() as s:
        seg = s.scalars(select(Segment).where(Segment.key == segment_key)).one()
        people = s.scalars(select(User).join(Assignment, Assignment.user_id == User.id).where(Assignment.segment_id == seg.id).order_by(User.username)).all()
        positions = []
        for i, user in enumerate(people):
            for r in edits.segment_rows(s, user, seg):
                fields: dict[str, Any] = {}
                if i == 1:
                    fields["tone_of_voice"] = f"{user.username}'s tone {r.position}"
                    pattern = r.row.get("relation_pattern")
                    if pattern:
                        fields["relation_pattern"] = "attack_attack" if pattern != "attack_attack" else "withdraw_withdraw"
                plan = edits.prepare_save(s, user, seg, r.position, version=r.version, fields=fields, reviewed=True)
                if isinstance(plan, edits.SavePlan):
                    edits.apply_save(s, plan)
                positions += [r.position] if i == 0 else []
    db.dispose()
    return positions


def _adjudicate(page: Any, base: str, key: str, positions: list[int], rows: int) -> tuple[list[int], list[float], dict[int, str]]:
    """The admin decides ``rows`` disputed rows by keyboard; returns the keys and seconds per row and
    what each row was decided as (``first``: the first annotator's values; ``mixed``: its first
    disputed field from the second)."""
    page.goto(f"{base}/segments/{key}/adjudicate")
    keys_per_row, seconds, decided = [], [], {}
    for i, n in enumerate(positions[:rows]):
        page.wait_for_function("(n) => document.activeElement && document.activeElement.id === 'adj-' + n", arg=n)
        mixed = i % 3 == 2
        t0 = time.perf_counter()
        chord = ["1", "ArrowDown", "2", "Enter"] if mixed else ["1", "Enter"]
        for k in chord:
            page.keyboard.press(k)
        if i + 1 < rows:
            page.wait_for_function("(n) => document.activeElement && document.activeElement.id === 'adj-' + n", arg=positions[i + 1])
        else:
            page.locator(f"#adj-{n}.done").wait_for()
        seconds.append(time.perf_counter() - t0)
        keys_per_row.append(len(chord))
        decided[n] = "mixed" if mixed else "first"
    return keys_per_row, seconds, decided


def run(rows: int, screen_rows: int) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url, drop = load_bench.make_database("sqlite", folder, None)
        segments = load_bench.fill(url, folder, 4)
        adjudicated = segments[2][0].split(":")[0]  # a002's segment, shared with a003: reviewed in their own copies
        positions = _prepare_adjudication(url, adjudicated)
        proc, base = load_bench.start(url, folder, 1)
        results: list[dict[str, Any]] = []
        try:
            # a000's two segments, row after row (the last row of each is left out: Ctrl+Enter there
            # goes on to another segment); a001's own segment for the other screens
            todo = [(key, n) for key, count in (s.split(":") for s in segments[0]) for n in range(1, int(count))]
            if len(todo) < rows * len(FLOWS):
                raise SystemExit(f"--rows {rows}: a000 has {len(todo)} rows, {rows * len(FLOWS)} needed")
            other_key, other_count = segments[1][0].split(":")
            if (int(other_count) - 1) < screen_rows * len(SCREENS):
                raise SystemExit(f"--screen-rows {screen_rows}: a001 has {int(other_count) - 1} rows, {screen_rows * len(SCREENS)} needed")
            expected: dict[tuple[str, int], tuple[str, str | None]] = {}
            measured: dict[str, tuple[list[int], list[float]]] = {f: ([], []) for f in FLOWS}
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
                page = _log_in(browser, base, "a000")
                at = iter(todo)
                for flow in FLOWS:
                    for _ in range(rows):
                        key, n = next(at)
                        keys, seconds, label = _row_flow(page, f"{base}/segments/{key}/rows/{n}", flow)
                        measured[flow][0].append(keys)
                        measured[flow][1].append(seconds)
                        expected[(key, n)] = (flow, label)
                results += [_summary(flow, *measured[flow]) for flow in FLOWS]
                n = 0
                for screen, context in SCREENS.items():
                    page = _log_in(browser, base, "a001", **context)
                    keys_per_row, seconds = [], []
                    for _ in range(screen_rows):
                        n += 1
                        keys, took, _ = _row_flow(page, f"{base}/segments/{other_key}/rows/{n}", "confirm")
                        keys_per_row.append(keys)
                        seconds.append(took)
                        expected[(other_key, n)] = ("confirm", None)
                    results.append(_summary(f"confirm ({screen})", keys_per_row, seconds))
                page = _log_in(browser, base, "admin")
                keys_per_row, seconds, decided = _adjudicate(page, base, adjudicated, positions, rows)
                results.append(_summary("adjudicate a disputed row", keys_per_row, seconds))
                browser.close()
            _check(base, expected)
            _check_adjudicated(base, adjudicated, decided)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            drop()
    return results


def _row_flow(page: Any, target: str, flow: str) -> tuple[int, float, str | None]:
    """One row of ``flow`` by keyboard: (keys, seconds, the label chosen)."""
    if page.url != target:
        page.goto(target)
    page.wait_for_selector("#row-form:focus")
    keys, t0, label = 0, time.perf_counter(), None
    if flow == "fix a label":
        speaker = page.locator("#f-primary_speaker").input_value()
        field = RELATION["therapist" if speaker == "Therapist" else "client"]
        while page.evaluate("document.activeElement.id") != field and keys < 8:
            page.keyboard.press("Alt+KeyJ")
            keys += 1
        current = page.locator(f"#{field}").input_value()
        choice = page.locator(f"#{field} option[data-key]").evaluate_all("(os, cur) => os.find((o) => o.value !== cur).dataset.key", current)
        page.keyboard.press(choice.lower())
        keys += 1
        label = page.locator(f"#{field}").input_value()
    if flow in ("confirm", "fix a label"):
        keys += _confirm(page)
    elif flow == "comment":
        page.keyboard.press("Alt+KeyC")
        page.keyboard.type(TYPED[flow])
        page.keyboard.press("Control+Enter")
        keys += 2
        page.locator("#comments li", has_text=TYPED[flow]).wait_for()
    else:
        page.keyboard.press("Control+Space")
        page.wait_for_selector("#flag[open]")
        page.keyboard.type(TYPED[flow])
        page.keyboard.press("Alt+KeyD")
        keys += 2
        if not _moved(page, target, timeout=10000):
            raise RuntimeError(f"{target}: discarding did not move on")
    return keys, time.perf_counter() - t0, label


def _check(base: str, expected: dict[tuple[str, int], tuple[str, str | None]]) -> None:
    """Every row was saved as its flow meant (through the API)."""
    import httpx

    clients = {}
    for user in ("a000", "a001"):
        clients[user] = httpx.Client(base_url=base, timeout=30)
        clients[user].post("/api/login", json={"username": user, "password": load_bench.PASSWORD}).raise_for_status()
    comments: dict[str, list[dict[str, Any]]] = {}
    for (key, n), (flow, label) in expected.items():
        client = clients["a000"] if clients["a000"].get(f"/api/segments/{key}").status_code == 200 else clients["a001"]
        row = client.get(f"/api/segments/{key}/rows/{n}").json()
        if flow in ("confirm", "fix a label"):
            assert row["reviewed"], f"{key} row {n}: not marked reviewed"
        if label is not None:
            assert label in (row["row"].get("relation_pattern"), row["row"].get("relation_cycle_state")), f"{key} row {n}: {label} not saved"
        if flow == "comment":
            listed = comments.setdefault(key, client.get(f"/api/segments/{key}/comments").json())
            assert any(c["row"] == n and c["text"] == TYPED[flow] for c in listed), f"{key} row {n}: comment not posted"
            assert not row["reviewed"], f"{key} row {n}: a comment marked the row reviewed"
        if flow == "discard":
            assert (row["status"], row["flag_reason"]) == ("discarded", TYPED[flow]), f"{key} row {n}: not discarded with its reason"


def _check_adjudicated(base: str, key: str, decided: dict[int, str]) -> None:
    """Every adjudicated row holds the values chosen: the first annotator's, or for a mixed row its
    first disputed field from the second."""
    import httpx

    admin = httpx.Client(base_url=base, timeout=30)
    admin.post("/api/login", json={"username": "admin", "password": load_bench.PASSWORD}).raise_for_status()
    rows = {r["row_index"]: r for r in admin.get(f"/api/segments/{key}/adjudication").json()["rows"]}
    for n, how in decided.items():
        r = rows[n]
        assert r["final"]["reviewed"], f"row {n}: not adjudicated"
        first = r["disputes"][0]
        for d in r["disputes"]:
            second = d is first and how == "mixed"
            want = next(o["value"] for o in d["options"] if (o["annotators"][0] != r["annotators"][0]["name"]) == second)
            assert r["final"]["row"].get(d["field"]) == want, f"row {n}: {d['field']} is not the value chosen"


def table(results: list[dict[str, Any]], rows: int, screen_rows: int) -> str:
    lines = [
        "| flow | rows | keystrokes here (median / max; text typed not counted) | Label Studio (documented) | Argilla (documented) | seconds per row here, machine's share (p50 / p95) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        ls, argilla = REFERENCE[r["flow"].split(" (")[0]]
        typed = " + text" if r["flow"] in TYPED else ""
        lines.append(f"| {r['flow']} | {r['rows']} | {r['keys']:g} / {r['keys_max']}{typed} | {ls} | {argilla} | {r['p50']:.2f} / {r['p95']:.2f} |")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines += [
        "",
        f"Measured {when} with `python bench/review_form.py --rows {rows} --screen-rows {screen_rows}` on {_cpus()} CPUs, Python {platform.python_version()}, "
        "Chromium at 1366x768 unless the flow names another screen, SQLite, one app worker.",
    ]
    return "\n".join(lines)


def _cpus() -> int:
    import os

    return os.cpu_count() or 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=6, help="rows per flow")
    parser.add_argument("--screen-rows", type=int, default=4, help="rows confirmed on each of the other screens")
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = parser.parse_args()
    text = table(run(args.rows, args.screen_rows), args.rows, args.screen_rows)
    print(text)
    if args.write:
        doc = DOC.read_text(encoding="utf-8")
        if BEGIN not in doc:
            raise SystemExit(f"{DOC}: no {BEGIN} marker")
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        from rescue_bench.fileio import atomic_write

        atomic_write(DOC, head + BEGIN + "\n" + text + "\n" + END + tail)


if __name__ == "__main__":
    main()
