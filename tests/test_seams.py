"""Seams between the layers that a refactor must not undo: facts with one home.

- ``run.json`` is parsed in one module, :mod:`rescue_bench.runinfo` (its typed model). A module that
  reads the file by hand (``json.loads``/``loads``/``read_text``/``open`` of a path naming
  ``run.json``) would go back to ``.get("...")`` on an untyped dict, and a command that re-reads the
  file its own run just wrote would print what is on disk instead of what the run returned.
- The role/content -> inspect chat message conversion is written once, in the engine's judge module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "rescue_bench"

READERS = {"loads", "load", "read_text", "read_bytes", "open", "_read_json", "read_json"}
"""Calls that read or parse a file's content."""
RUN_JSON_NAMES = {"RUN_JSON"}
THE_READER = PACKAGE / "runinfo.py"


def _names_run_json(node: ast.AST, tainted: set[str]) -> bool:
    """Whether ``node`` mentions run.json: the literal, the constant, or a variable assigned from either."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.endswith("run.json"):
            return True
        if isinstance(sub, ast.Name) and (sub.id in RUN_JSON_NAMES or sub.id in tainted):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in RUN_JSON_NAMES:
            return True
    return False


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def run_json_reads(source: str) -> list[int]:
    """Lines of ``source`` that read or parse a ``run.json`` file by hand."""
    lines = []
    tree = ast.parse(source)
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] + [tree]
    for scope in scopes:
        tainted: set[str] = set()
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and _names_run_json(node.value, tainted):
                tainted |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call) or _call_name(node) not in READERS:
                continue
            parts: list[ast.AST] = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                parts.append(node.func.value)  # (folder / "run.json").read_text()
            if any(_names_run_json(p, tainted) for p in parts):
                lines.append(node.lineno)
    return sorted(set(lines))


def offenders(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == THE_READER.name and path.parent == package:
            continue
        for line in run_json_reads(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(package.parent)}:{line}")
    return found


def test_run_json_is_parsed_only_by_runinfo():
    found = offenders(PACKAGE)
    assert not found, (
        "run.json read by hand (use rescue_bench.runinfo.read_run_info, or the RunResult the run returned): " + ", ".join(found)
    )


def test_the_check_catches_the_ways_run_json_was_read():
    """The ways the package used to read it (a command re-reading its own run's file, the report
    and the resume check reading it as an untyped dict) are each caught."""
    samples = [
        'def f(out):\n    run = json.loads((Path(out) / "run.json").read_text(encoding="utf-8"))\n',
        'def f(root):\n    run_json = root / "run.json"\n    if run_json.is_file():\n        info = _read_json(run_json)\n',
        'def f(out):\n    value = loads((out / "run.json").read_text(encoding="utf-8"))\n',
        'def f(out):\n    with open(out / RUN_JSON) as fh:\n        return json.load(fh)\n',
    ]
    for sample in samples:
        assert run_json_reads(sample), sample
    fine = 'def f(root):\n    run_json = root / RUN_JSON\n    if run_json.is_file():\n        info = read_run_info(run_json)\n    s = _read_json(root / "summary.json")\n'
    assert not run_json_reads(fine)


def test_chat_messages_are_converted_in_one_place():
    defined = [
        f"{p.relative_to(PACKAGE)}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if any(isinstance(n, ast.FunctionDef) and n.name == "to_messages" for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))
    ]
    assert defined == ["engine/judge.py"], defined
