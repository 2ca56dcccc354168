"""The static checks run as tests, so the README's test command (and CI) runs them: ruff, mypy and
import-linter, each configured in pyproject.toml. A failure shows the tool's own report.

Each tool runs in a subprocess of this interpreter, from the repository root, on what its
configuration names (ruff: the whole repository; mypy: src/rescue_bench; import-linter: the
contracts of ``[tool.importlinter]``). Their caches (``.ruff_cache``, ``.mypy_cache``,
``.import_linter_cache``) are git-ignored; a cold mypy run is the slow one (47 s here, 2 s warm).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _check(module: str, args: list[str]) -> None:
    """Run ``args`` with this interpreter; fail with the tool's output unless it exits 0."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]')")
    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
    )
    assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"


def test_ruff():
    _check("ruff", ["-m", "ruff", "check", "--quiet"])


def test_mypy():
    _check("mypy", ["-m", "mypy"])


def test_import_contracts():
    _check("importlinter", ["-c", LINT_IMPORTS])


def test_tests_import_helpers_not_conftests_or_test_modules():
    """A test imports shared code as ``tests.<module>`` from a helpers or factories module: never
    from a conftest (pytest loads those itself, and a relative import of one broke collection in CI
    after a helper moved) and never from another test module (whose tests it would drag along)."""
    import ast

    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                last = (node.module or "").rsplit(".", 1)[-1]
                if node.level or last == "conftest" or last.startswith("test_"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {'.' * node.level}{node.module or ''}")
    assert not offenders, "\n".join(offenders)


def test_the_baseline_test_is_spelled_once():
    """Whether a model is an offline baseline is :func:`rescue_bench.labels.is_baseline`; a copy of
    its prefix test elsewhere drifts when the prefix does."""
    import re

    copies = []
    for path in sorted((ROOT / "src" / "rescue_bench").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"""startswith\(\s*(["']baseline/["']|BASELINE_PREFIX)""", line) and path.name != "labels.py":
                copies.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not copies, "use rescue_bench.labels.is_baseline:\n" + "\n".join(copies)


def test_comments_say_why_not_which_issue():
    """A comment or docstring that names an issue number ("issue 13's overlap") says nothing to the
    reader who has no tracker open; say what the code is for instead."""
    import re

    offenders = []
    for path in sorted((ROOT / "src" / "rescue_bench").rglob("*")):
        if path.suffix not in (".py", ".js", ".css", ".html") or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bissues? \d+", line, re.IGNORECASE):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not offenders, "\n".join(offenders)
