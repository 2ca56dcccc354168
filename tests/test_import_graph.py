"""The import graph of rescue_bench: no cycle anywhere, inspect_ai loaded only by the engine, and no
private module or name of another package imported.

The layer contracts (pyproject.toml, ``[tool.importlinter]``) order the packages; these tests add
what they cannot say: that no two *modules* import each other in a circle (inside one package too,
imports inside functions included), that the modules outside the engine, and ``rescue --help``,
really run without loading inspect_ai (the CLI may import the engine, but only inside a command),
and that every import of another package goes through its public API (import-linter keeps an
external package as one node, ``inspect_ai``, so it cannot tell ``inspect_ai.model`` from
``inspect_ai.model._providers``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.cli.helpers import BLOCKER

grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (pip install -e '.[test]')")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` that are cycles (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(iter(children), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return sorted(found)


def test_cycle_finder_finds_cycles():
    """The finder itself, on hand-made graphs: a self-import, a three-cycle, and none."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"a"}, "b": set()}) == [["a"]]
    assert _cycles({"p": {"p.x"}, "p.x": {"p"}, "q": {"p"}}) == [["p", "p.x"]]


def test_no_import_cycle():
    graph = grimp.build_graph("rescue_bench")
    modules = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert len(modules) > 50  # the whole package was read
    cycles = _cycles(modules)
    lines = []
    for cycle in cycles:
        for a in cycle:
            for b in sorted(modules[a] & set(cycle)):
                where = ", ".join(f"line {d['line_number']}" for d in graph.get_import_details(importer=a, imported=b))
                lines.append(f"{a} -> {b} ({where})")
    assert not cycles, "import cycles:\n" + "\n".join(lines)


SRC = Path(__file__).resolve().parents[1] / "src" / "rescue_bench"


def _private(name: str) -> bool:
    """``_x`` is private; ``__x__`` (``__future__``, ``__version__``) is not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports(source: str) -> list[tuple[int, str]]:
    """The imports of another package's private module or name in ``source`` (imports inside
    functions too; relative imports and ``rescue_bench`` are the package's own): line and import."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] != "rescue_bench" and any(_private(part) for part in parts):
                found.append((node.lineno, name))
    return found


def test_private_import_finder_finds_private_imports():
    """The finder itself: a private module, a private name of a public module, one inside a function;
    public imports, dunders and the package's own private modules pass."""
    source = (
        "from __future__ import annotations\n"
        "import inspect_ai.model\n"
        "from inspect_ai.model import ModelAPI, modelapi\n"
        "from rescue_bench.engine._registry import x\n"
        "from . import _local\n"
        "from inspect_ai.model._providers.openai_compatible import OpenAICompatibleAPI\n"
        "def f():\n"
        "    import inspect_ai._util.error as e\n"
        "    from openai import _types\n"
    )
    assert _private_imports(source) == [
        (6, "inspect_ai.model._providers.openai_compatible.OpenAICompatibleAPI"),
        (8, "inspect_ai._util.error"),
        (9, "openai._types"),
    ]


def test_no_private_module_of_another_package_is_imported():
    """Every module of rescue_bench uses inspect_ai, openai and every other dependency through their
    public API: no ``inspect_ai.x._y`` module, no ``_name`` imported from a public one."""
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 50
    found = [
        f"{path.relative_to(SRC.parent)}:{line}: {name}"
        for path in files
        for line, name in _private_imports(path.read_text(encoding="utf-8"))
    ]
    assert not found, "private imports of other packages:\n" + "\n".join(found)


PROBE = """
import importlib, pkgutil, sys
import rescue_bench
names = sorted(m.name for m in pkgutil.walk_packages(rescue_bench.__path__, "rescue_bench."))
assert len(names) > 50, names
# __main__ modules run the command when imported; the engine is the one place inspect_ai may load
outside = [n for n in names if not n.startswith("rescue_bench.engine") and not n.endswith(".__main__")]
for name in outside:
    importlib.import_module(name)
assert "rescue_bench.engine.run" not in sys.modules
import contextlib, io
from rescue_bench.cli import app
with contextlib.redirect_stdout(io.StringIO()) as shown:
    app(["--help"], standalone_mode=False)
assert "Usage" in shown.getvalue()
print("imported", len(outside))
loaded = sorted(m for m in sys.modules if m == "inspect_ai" or m.startswith("inspect_ai."))
print(f"inspect_ai modules loaded: {len(loaded)} {loaded[:3]}")
"""


@pytest.mark.slow
def test_only_the_engine_loads_inspect_ai():
    """Import every module outside rescue_bench.engine (the CLI with all its command groups too) and
    print ``rescue --help``, in a fresh interpreter: inspect_ai must stay unloaded."""
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imported = [line for line in proc.stdout.splitlines() if line.startswith("imported ")]
    assert imported and int(imported[0].split()[1]) > 50, proc.stdout
    assert "inspect_ai modules loaded: 0 []" in proc.stdout, proc.stdout


CORE_COMMANDS = BLOCKER + """
import os
from rescue_bench.cli import app
out = sys.argv[2]
commands = [
    ["eval", "--limit", "2", "--out", f"{out}/run", "--display", "none", "--no-bertscore"],
    ["report", f"{out}/run", "-o", f"{out}/report", "--resamples", "50"],
    ["data", "validate"],
    ["data", "stats", "--json"],
    ["tasks", "build", "--out", f"{out}/tasks"],
    ["tasks", "export", "--format", "chat", "--out", f"{out}/export"],
    ["agent", "eval", "--limit", "2", "--out", f"{out}/agent", "--display", "none", "--no-bertscore"],
]
for args in commands:
    try:
        app(args, standalone_mode=False)
    except SystemExit as exc:
        assert not exc.code, (args, exc.code)
    print("ok", " ".join(args[:2]), flush=True)
loaded = sorted({m.split(".")[0] for m in sys.modules} & BLOCKED)
print("extras loaded:", loaded)
"""


def _core_blocked() -> list[str]:
    """Every import of the review and annotate extras that a core install does not bring anyway
    (fastapi and uvicorn come with inspect-ai)."""
    import importlib.metadata as md

    from rescue_bench.extras import EXTRA_OF_MODULE

    core = {"fastapi", "uvicorn"} if md.distribution("inspect-ai").requires else set()
    return sorted(m for m in EXTRA_OF_MODULE if m not in core)


@pytest.mark.slow
def test_core_commands_run_without_the_extras(tmp_path):
    """`rescue eval`, `report`, `data`, `tasks` and `agent eval` on the demo, in a fresh interpreter
    where every module of the review and annotate extras is uninstallable: each command succeeds and
    none of those modules is loaded (a core install runs them)."""
    blocked = _core_blocked()
    assert {"av", "sqlalchemy", "srt", "jinja2"} <= set(blocked)
    proc = subprocess.run(
        [sys.executable, "-c", CORE_COMMANDS, ",".join(blocked), str(tmp_path)],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("ok ") == 7, proc.stdout
    assert "extras loaded: []" in proc.stdout, proc.stdout
