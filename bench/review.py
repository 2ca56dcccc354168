"""Benchmark of the review web app: 50 simulated annotators against ``rescue review serve``.

    python bench/review.py                 # SQLite, PostgreSQL, PostgreSQL --workers 2; prints the table
    python bench/review.py --write         # ... and writes it into docs/benchmarks.md
    python bench/review.py --help          # --annotators, --duration, --think, --backends, --postgres URL

Each annotator is an HTTP client with its own session (asyncio + httpx, one process). It walks the
rows of its two segments: open the row page (HTML, the version read from the page's data like the
browser does), think, save one field with a value nobody else writes; on a 409 it takes the current
version from the answer and saves again (the merge a person makes in the page). Every segment is
shared by two annotators, so saves do collide.

Measured: accepted saves per second, p50/p95 latency of a save (PUT) and of the row page (GET), the
409s, and lost updates, checked in the database afterwards: an accepted save whose value is not in
the row's audit log with the version the server answered, a break in the audit chain (a save whose
old value is not the previous save's new value), or a final row value that is not the last accepted
save. Goals: p95 < 100 ms for both at 50 annotators on a 2-CPU machine, 0 lost updates.

PostgreSQL: ``--postgres URL`` or ``RESCUE_TEST_POSTGRES_URL`` (a role that may create databases;
``bash .ci/postgres.sh`` starts a local server and prints one). Each run uses a new database that is
dropped afterwards, and a temporary folder: nothing is written into the repository except the doc.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, write_scaled  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- review-bench:begin -->", "<!-- review-bench:end -->"
PASSWORD = "bench password"
PAGE_DATA = re.compile(r'<script type="application/json" id="page-data">(.*?)</script>', re.S)


@dataclass
class Stats:
    save_ms: list[float] = field(default_factory=list)
    page_ms: list[float] = field(default_factory=list)
    save_server_ms: list[float] = field(default_factory=list)
    """The same, as the server measured them (its Server-Timing header): without the client's own delays."""
    page_server_ms: list[float] = field(default_factory=list)
    accepted: dict[tuple[str, int], list[tuple[int, str]]] = field(default_factory=lambda: defaultdict(list))
    conflicts: int = 0
    errors: list[str] = field(default_factory=list)


def server_ms(resp: Any) -> float:
    match = re.search(r"app;dur=([0-9.]+)", resp.headers.get("server-timing", ""))
    return float(match.group(1)) if match else float("nan")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# ------------------------------------------------------------------------------------------------
# setup: database, users, segments, server
# ------------------------------------------------------------------------------------------------


def make_database(backend: str, folder: Path, pg_url: str | None) -> tuple[str, Any]:
    """(URL, cleanup) of a new empty database."""
    if backend == "sqlite":
        return f"sqlite:///{folder / 'bench.db'}", lambda: None
    import psycopg
    from sqlalchemy.engine import make_url

    if not pg_url:
        raise SystemExit("PostgreSQL needs --postgres URL or RESCUE_TEST_POSTGRES_URL (bash .ci/postgres.sh prints one)")
    plain = make_url(pg_url).set(drivername="postgresql")
    admin = plain.render_as_string(hide_password=False)
    name = f"rescue_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return plain.set(database=name).render_as_string(hide_password=False), drop


def fill(url: str, folder: Path, annotators: int) -> list[list[str]]:
    """Users a000.. and one segment per annotator, each shared with the next annotator."""
    from sqlalchemy import select

    from rescue_bench.data import load_clips
    from rescue_bench.data.load import demo_path
    from rescue_bench.review import access
    from rescue_bench.review.db import Database, upgrade
    from rescue_bench.review.models import Segment, User
    from rescue_bench.review.security import ensure_secret, hash_password
    from rescue_bench.review.store import import_clips

    clips = [json.loads(line) for line in demo_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    data = write_scaled(clips, folder / "segments.jsonl", n_clips=annotators)
    db = Database(url)
    upgrade(db)
    one_hash = hash_password(PASSWORD)  # the same hash for everyone: setup speed, not a security test
    with db.write() as session:
        ensure_secret(session)
        users = [User(username=f"a{i:03d}", password_hash=one_hash, role="annotator", active=True, auth_epoch=0) for i in range(annotators)]
        session.add_all(users)
        session.flush()
        import_clips(session, load_clips([data]), file_name=data.name, sha256="0" * 64)
        segments = session.scalars(select(Segment).order_by(Segment.position)).all()
        for i, seg in enumerate(segments):
            for person in (users[i], users[(i + 1) % annotators]):
                access.assign(session, seg, person, by=None)
        keys = [s.key for s in segments]
        rows = [s.row_count for s in segments]
    db.dispose()
    # annotator i works on segments i and i-1
    return [[f"{keys[i]}:{rows[i]}", f"{keys[i - 1]}:{rows[i - 1]}"] for i in range(annotators)]


def start(url: str, folder: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "rescue_bench.cli", "review", "serve", "--db", url, "--port", str(port), "--log-level", "warning"]
    if workers > 1:
        cmd += ["--workers", str(workers)]
    log = (folder / "serve.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {(folder / 'serve.log').read_text()[-2000:]}")
        try:
            if httpx.get(base + "/login", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("server did not start")


# ------------------------------------------------------------------------------------------------
# the simulated annotators
# ------------------------------------------------------------------------------------------------


async def annotator(i: int, client: Any, csrf: str, segments: list[str], stats: Stats, stop_at: float, think: float, rng: random.Random) -> None:
    if True:
        n = 0
        await asyncio.sleep(rng.uniform(0, think))  # do not start in lock step
        while time.monotonic() < stop_at:
            key, rows = segments[n % 2].split(":")
            position = (n // 2) % int(rows) + 1
            n += 1
            t0 = time.perf_counter()
            page = await client.get(f"/segments/{key}/rows/{position}")
            stats.page_ms.append((time.perf_counter() - t0) * 1000)
            stats.page_server_ms.append(server_ms(page))
            if page.status_code != 200:
                stats.errors.append(f"page {page.status_code}")
                continue
            version = json.loads(PAGE_DATA.search(page.text).group(1))["version"]
            await asyncio.sleep(rng.uniform(0.5, 1.5) * think)
            value = f"a{i:03d} save {n}"
            for _attempt in range(20):
                t0 = time.perf_counter()
                resp = await client.put(
                    f"/api/segments/{key}/rows/{position}",
                    json={"version": version, "fields": {"tone_of_voice": value}},
                    headers={"X-CSRF-Token": csrf},
                )
                stats.save_ms.append((time.perf_counter() - t0) * 1000)
                stats.save_server_ms.append(server_ms(resp))
                if resp.status_code == 200:
                    stats.accepted[(key, position)].append((resp.json()["version"], value))
                    break
                if resp.status_code == 409:
                    stats.conflicts += 1
                    version = resp.json()["version"]
                    continue
                stats.errors.append(f"save {resp.status_code}: {resp.text[:100]}")
                break


def lost_updates(url: str, stats: Stats) -> int:
    """Accepted saves missing from the audit log, chain breaks, and rows not holding their last save."""
    from sqlalchemy import select

    from rescue_bench.review.db import Database
    from rescue_bench.review.models import FINAL_LABEL, AuditEntry, Copy, RowValue, Segment, SegmentRow

    db = Database(url)
    lost = 0
    with db.read() as session:
        for (key, position), saves in stats.accepted.items():
            seg = session.scalars(select(Segment).where(Segment.key == key)).one()
            row = session.scalars(select(SegmentRow).where(SegmentRow.segment_id == seg.id, SegmentRow.position == position)).one()
            chain = session.execute(
                select(AuditEntry.version, AuditEntry.old_json, AuditEntry.new_json)
                .where(AuditEntry.row_id == row.id, AuditEntry.action == "edit", AuditEntry.field == "tone_of_voice")
                .order_by(AuditEntry.id)
            ).all()
            logged = {(v, json.loads(new)) for v, _, new in chain}
            lost += sum(1 for save in saves if save not in logged)
            lost += sum(1 for a, b in zip(chain, chain[1:]) if b.old_json != a.new_json or b.version != a.version + 1)
            value = session.scalars(
                select(RowValue).join(Copy, Copy.id == RowValue.copy_id).where(RowValue.row_id == row.id, Copy.label == FINAL_LABEL)
            ).one()
            last = max(saves)
            if value.version != last[0] or json.loads(value.value_json or "{}").get("tone_of_voice") != last[1]:
                lost += 1
    db.dispose()
    return lost


def run_one(backend: str, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rescue-review-bench-") as tmp:
        folder = Path(tmp)
        url, cleanup = make_database(backend, folder, args.postgres)
        try:
            segments = fill(url, folder, args.annotators)
            proc, base = start(url, folder, workers)
            try:
                stats = Stats()
                rng = random.Random(args.seed)
                load_before = os.getloadavg()[0]

                async def main() -> float:
                    import httpx

                    clients, tokens = [], []
                    for i in range(args.annotators):  # log in first, one by one (argon2 is slow on purpose)
                        client = httpx.AsyncClient(base_url=base, timeout=60)
                        resp = await client.post("/api/login", json={"username": f"a{i:03d}", "password": PASSWORD})
                        if resp.status_code != 200:
                            raise SystemExit(f"login a{i:03d}: {resp.status_code}")
                        clients.append(client)
                        tokens.append(resp.json()["csrf_token"])
                    marks["cpu0"] = _cpu_of_tree(proc.pid)
                    t0 = time.monotonic()
                    stop_at = t0 + args.duration
                    await asyncio.gather(*(annotator(i, clients[i], tokens[i], segments[i], stats, stop_at, args.think, random.Random(rng.random())) for i in range(args.annotators)))
                    for client in clients:
                        await client.aclose()
                    return time.monotonic() - t0

                marks: dict[str, float] = {}
                client0 = time.process_time()
                try:  # the client's own delays count in the latencies: use the faster loop when there
                    import uvloop

                    elapsed = uvloop.run(main())
                except ImportError:
                    elapsed = asyncio.run(main())
                client_cpu = time.process_time() - client0
                server_cpu = _cpu_of_tree(proc.pid) - marks["cpu0"]
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            saves = sum(len(v) for v in stats.accepted.values())
            return {
                "setup": f"{'SQLite' if backend == 'sqlite' else 'PostgreSQL'}" + (f", --workers {workers}" if workers > 1 else ""),
                "annotators": args.annotators,
                "seconds": round(elapsed, 1),
                "saves": saves,
                "saves_per_s": saves / elapsed,
                "save_p50": pct(stats.save_ms, 0.50),
                "save_p95": pct(stats.save_ms, 0.95),
                "page_p50": pct(stats.page_ms, 0.50),
                "page_p95": pct(stats.page_ms, 0.95),
                "save_server_p95": pct(stats.save_server_ms, 0.95),
                "page_server_p95": pct(stats.page_server_ms, 0.95),
                "pages": len(stats.page_ms),
                "conflicts": stats.conflicts,
                "errors": len(stats.errors),
                "error_samples": stats.errors[:3],
                "lost": lost_updates(url, stats),
                "server_cpu_s": server_cpu,
                "client_cpu_s": client_cpu,
                "load_before": load_before,
            }
        finally:
            cleanup()


def _cpu_of_tree(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and its children (the --workers processes)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total


def table(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "| setup | annotators | saves/s | save p50 / p95 (ms) | row page p50 / p95 (ms) | p95 inside the server: save / page (ms) | 409s | errors | lost updates | server CPU | server CPU per request | client CPU | goal met |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        met = r["save_p95"] < 100 and r["page_p95"] < 100 and r["lost"] == 0 and r["errors"] == 0
        lines.append(
            f"| {r['setup']} | {r['annotators']} | {r['saves_per_s']:.1f} | {r['save_p50']:.0f} / {r['save_p95']:.0f} | "
            f"{r['page_p50']:.0f} / {r['page_p95']:.0f} | {r['save_server_p95']:.0f} / {r['page_server_p95']:.0f} | {r['conflicts']} | {r['errors']} | {r['lost']} | "
            f"{r['server_cpu_s'] / r['seconds']:.2f} CPUs | {1000 * r['server_cpu_s'] / max(1, r['pages'] + r['saves'] + r['conflicts']):.1f} ms | "
            f"{r['client_cpu_s'] / r['seconds']:.2f} CPUs | {'yes' if met else 'no'} |"
        )
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    loads = ", ".join(f"{r['load_before']:.2f}" for r in results)
    # server CPU per request: server CPU seconds over pages + saves (incl. refused ones); it does not
    # depend on what else the machine runs, unlike the latencies
    lines.append("")
    lines.append(
        f"Measured {now} with `python bench/review.py --annotators {args.annotators} --duration {args.duration:g} --think {args.think:g}` "
        f"on {os.cpu_count()} CPUs, Python {platform.python_version()}; each annotator opens a row page, thinks "
        f"{0.5 * args.think:g}-{1.5 * args.think:g} s and saves; 1-minute load average before each run: {loads}."
    )
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = DOC.read_text(encoding="utf-8")
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        doc = head + BEGIN + "\n" + text + "\n" + END + tail
    else:
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} section")
    DOC.write_text(doc, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load per setup")
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds between opening a row and saving it")
    parser.add_argument("--backends", default="sqlite,postgresql,postgresql-w2", help="comma-separated: sqlite, postgresql, postgresql-w2")
    parser.add_argument("--postgres", default=os.environ.get("RESCUE_TEST_POSTGRES_URL"))
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = parser.parse_args()
    results = []
    for name in args.backends.split(","):
        backend, workers = ("postgresql", 2) if name == "postgresql-w2" else (name, 1)
        print(f"running {name} ...", file=sys.stderr, flush=True)
        results.append(run_one(backend, workers, args))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    text = table(results, args)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    if args.write:
        write_doc(text)


if __name__ == "__main__":
    main()
