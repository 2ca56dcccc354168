"""Server CPU per request of the review app, one request at a time: a low-noise figure beside the
50-annotator benchmark (``bench/review.py``), whose latencies move with the machine's other work.

    python bench/review_probe.py                                # this tree
    python bench/review_probe.py --tree start=/path/to/old/src  # ... and another tree, side by side

One client, no think time, on SQLite (or ``--backend postgresql``). For each kind of request (the row page, a save, the API's
row, the API's segment) it sends ``--block`` requests to each server in turn, ``--rounds`` times, so
a slow spell of the machine falls on every tree alike; the figure is the server process's CPU
(user + system, from /proc) over the requests it answered. Each tree runs in its own server
process (``PYTHONPATH`` set to the tree's ``src``) over its own copy of the same database.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO  # noqa: E402
from review import PAGE_DATA, PASSWORD, _cpu_of_tree, fill, make_database, start  # noqa: E402

KINDS = ("row page", "save", "API row", "API segment")


class Target:
    """One server of one tree, logged in as an annotator of its first segment."""

    def __init__(self, label: str, src: Path, folder: Path, backend: str = "sqlite", pg_url: str | None = None):
        import httpx

        self.label = label
        folder.mkdir()
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(src)  # the server (a subprocess) imports this tree
        try:
            url, self.cleanup = make_database(backend, folder, pg_url)
            segments = fill(url, folder, 2)
            self.proc, base = start(url, folder, 1)
        finally:
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old
        self.client = httpx.Client(base_url=base, timeout=60)
        login = self.client.post("/api/login", json={"username": "a000", "password": PASSWORD})
        login.raise_for_status()
        self.csrf = login.json()["csrf_token"]
        key, rows = segments[0][0].split(":")
        self.key, self.rows = key, int(rows)
        self.versions: dict[int, int] = {}
        self.cpu = dict.fromkeys(KINDS, 0.0)
        self.count = dict.fromkeys(KINDS, 0)
        self.n = 0

    def one(self, kind: str) -> None:
        self.n += 1
        position = self.n % self.rows + 1
        if kind == "row page" or position not in self.versions:
            page = self.client.get(f"/segments/{self.key}/rows/{position}")
            page.raise_for_status()
            match = PAGE_DATA.search(page.text)
            assert match is not None
            self.versions[position] = json.loads(match.group(1))["version"]
        elif kind == "save":
            resp = self.client.put(
                f"/api/segments/{self.key}/rows/{position}",
                json={"version": self.versions[position], "fields": {"tone_of_voice": f"probe {self.n}"}},
                headers={"X-CSRF-Token": self.csrf},
            )
            resp.raise_for_status()
            self.versions[position] = resp.json()["version"]
        elif kind == "API row":
            self.client.get(f"/api/segments/{self.key}/rows/{position}").raise_for_status()
        else:
            self.client.get(f"/api/segments/{self.key}").raise_for_status()

    def block(self, kind: str, size: int) -> None:
        for _ in range(3):  # the first of a block warms the caches another server cooled
            self.one(kind)
        before = _cpu_of_tree(self.proc.pid)
        for _ in range(size):
            self.one(kind)
        self.cpu[kind] += _cpu_of_tree(self.proc.pid) - before
        self.count[kind] += size

    def close(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=SRC", help="another tree's src folder (repeatable); this tree is always measured, as 'this tree'")
    parser.add_argument("--block", type=int, default=50, help="requests per server in a row")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--postgres", default=os.environ.get("RESCUE_TEST_POSTGRES_URL"), help="PostgreSQL: a role that may create databases")
    args = parser.parse_args()
    trees = [("this tree", REPO / "src")] + [(spec.split("=", 1)[0], Path(spec.split("=", 1)[1])) for spec in args.tree]
    targets: list[Target] = []
    with tempfile.TemporaryDirectory(prefix="rescue-review-probe-") as tmp:
        try:
            for i, (label, src) in enumerate(trees):
                targets.append(Target(label, src, Path(tmp) / str(i), args.backend, args.postgres))
            for kind in KINDS:
                for target in targets:
                    target.block(kind, 20)  # warm-up, not counted
                    target.cpu[kind], target.count[kind] = 0.0, 0
                for _ in range(args.rounds):
                    for target in targets:
                        target.block(kind, args.block)
        finally:
            for target in targets:
                target.close()
    print(table(targets, args))


def table(targets: list[Target], args: Any) -> str:
    lines = ["| tree | " + " | ".join(f"{k} (ms)" for k in KINDS) + " |", "|---|" + "---|" * len(KINDS)]
    for t in targets:
        lines.append(f"| {t.label} | " + " | ".join(f"{t.cpu[k] / t.count[k] * 1000:.2f}" for k in KINDS) + " |")
    lines.append("")
    lines.append(f"Server CPU per request, {args.rounds} rounds of {args.block} requests per kind and tree, one at a time, {args.backend}, on {os.cpu_count()} CPUs; 1-minute load average after: {os.getloadavg()[0]:.2f}.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
