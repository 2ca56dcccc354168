"""The package installs where it says and carries what it says.

- The core install (evaluation, reports, data, tasks, the agent) leaves out what only ``rescue
  review`` and ``rescue annotate`` need; those are the extras ``review`` and ``annotate``, and
  :data:`rescue_bench.extras.EXTRA_OF_MODULE` (the table behind the one-line "install the extra"
  hint) names each of their imports.
- One Python floor: ``requires-python``, ruff's ``target-version`` and mypy's ``python_version`` say
  the same version, and every dependency as installed accepts it.
- A LICENSE file beside the SPDX ``license``, and an sdist that carries the whole test suite.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
EXTRAS = PROJECT["optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def _closure(names: set[str]) -> set[str]:
    """``names`` and everything they require, as installed here (markers evaluated, no extras)."""
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.distribution(name).requires or []
        except md.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                stack.append(canonicalize_name(req.name))
    return seen


def test_the_core_install_leaves_out_review_and_annotate():
    """A plain ``pip install rescue-bench`` evaluates and reports; the review app's database, web
    and password packages and the annotation pipeline's PyAV and subtitle parsers are extras."""
    core = _names(PROJECT["dependencies"])
    brought = _closure({"inspect-ai"})  # fastapi and uvicorn come with inspect-ai (for `inspect view`)
    for extra in ("review", "annotate"):
        assert extra in EXTRAS, f"no [{extra}] extra"
        extra_only = _names(EXTRAS[extra]) - brought
        assert not extra_only & core, f"core dependencies that only [{extra}] needs: {sorted(extra_only & core)}"
    assert {"av", "sqlalchemy", "alembic", "psycopg", "argon2-cffi", "itsdangerous", "jinja2", "srt", "webvtt-py"}.isdisjoint(core)


def test_the_all_extra_names_every_extra_for_users():
    """``[all]`` is every feature of the command line: review and annotate (bertscore stays its own,
    since it wants a CPU build of torch installed first)."""
    named: set[str] = set()
    for text in EXTRAS["all"]:
        req = Requirement(text)
        named |= set(req.extras) if canonicalize_name(req.name) == "rescue-bench" else {canonicalize_name(req.name)}
    assert {"review", "annotate"} <= named or _names(EXTRAS["review"]) | _names(EXTRAS["annotate"]) <= named, EXTRAS["all"]


def test_the_missing_extra_table_matches_the_extras():
    """Each import of the table is provided by a distribution of the extra it names, and each
    distribution of the two extras that ships a module is in the table (so the hint is never silent)."""
    from rescue_bench.extras import EXTRA_OF_MODULE

    provides = md.packages_distributions()
    for module, extra in EXTRA_OF_MODULE.items():
        dists = {canonicalize_name(d) for d in provides.get(module, [])}
        assert dists, f"{module}: not installed here (install '.[all]')"
        assert dists & _names(EXTRAS[extra]), f"{module} is provided by {dists}, which [{extra}] does not list"
    for extra in ("review", "annotate"):
        for dist in _names(EXTRAS[extra]):
            modules = {m for m, ds in provides.items() if dist in {canonicalize_name(d) for d in ds} and not m.startswith("_")}
            assert modules & set(EXTRA_OF_MODULE), f"[{extra}] lists {dist} (modules {sorted(modules)}) but the hint table has none of them"


def _floor() -> tuple[int, int]:
    match = re.fullmatch(r">=\s*(\d+)\.(\d+)", PROJECT["requires-python"].strip())
    assert match, PROJECT["requires-python"]
    return int(match[1]), int(match[2])


def test_one_python_floor_in_every_tool():
    major, minor = _floor()
    assert PYPROJECT["tool"]["ruff"]["target-version"] == f"py{major}{minor}"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == f"{major}.{minor}"
    classifiers = PROJECT.get("classifiers", [])
    versions = sorted(c.rsplit(":: ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert versions and versions[0] == f"{major}.{minor}", versions
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"Python {major}.{minor}" in readme, "the README says which Python the package needs"


def test_every_dependency_installs_on_the_floor():
    """Each dependency, as installed here, declares a ``Requires-Python`` that admits the floor: the
    floor is one a fresh install can satisfy (SQLAlchemy 2.1 wants 3.11, and the floor said 3.10)."""
    major, minor = _floor()
    floor = f"{major}.{minor}.0"
    requirements = list(PROJECT["dependencies"]) + [r for extra, rs in EXTRAS.items() if extra in ("review", "annotate", "test") for r in rs]
    refused = []
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            meta = md.metadata(req.name)
        except md.PackageNotFoundError:
            continue
        needs = meta.get("Requires-Python")
        if needs and floor not in SpecifierSet(needs):
            refused.append(f"{req.name} {meta['Version']} needs Python {needs}")
    assert not refused, f"requires-python {PROJECT['requires-python']!r} is below what dependencies need: {refused}"


def test_license_file_and_spdx_expression():
    assert PROJECT["license"] == "Apache-2.0", "an SPDX expression, not the deprecated table"
    assert "LICENSE" in PROJECT["license-files"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    assert not any(c.startswith("License ::") for c in PROJECT.get("classifiers", [])), "PEP 639: no license classifier beside the expression"
    assert PROJECT.get("authors"), "authors"


@pytest.mark.slow
def test_the_sdist_carries_the_tests(tmp_path):
    """Build the sdist from a copy of the tracked files (offline, this environment's setuptools) and
    list it: every test module and the README, LICENSE and pyproject.toml are in it."""
    setuptools = pytest.importorskip("setuptools")
    if tuple(int(p) for p in setuptools.__version__.split(".")[:2]) < (77, 0):
        pytest.skip("SPDX license expressions need setuptools >= 77 (pip install -e '.[test]')")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    src = tmp_path / "src-tree"
    tracked = [p for p in listed.stdout.decode().split("\0") if p and (ROOT / p).is_file()]
    for rel in tracked:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    dist = tmp_path / "dist"
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    archive = dist / proc.stdout.strip().splitlines()[-1]
    with tarfile.open(archive) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    wanted = {p for p in tracked if p.startswith("tests/") and p.endswith(".py")}
    assert len(wanted) > 50
    assert not wanted - names, f"test files missing from the sdist: {sorted(wanted - names)[:10]}"
    assert {"README.md", "LICENSE", "pyproject.toml"} <= names


def test_the_readme_test_command_is_what_ci_runs():
    """The README's second command and ``.ci/run`` install the same thing (the tests need every
    extra: the review app's and the annotation pipeline's tests run too); the first stays a core install."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(block) == 2, block
    assert block[0].endswith("pip install -e . && rescue eval"), block[0]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == block[1], (ci, block[1])
    installed = re.search(r"pip install -e '\.\[([a-z,]+)\]'", block[1])
    assert installed, block[1]
    assert {"test", "bertscore", "all"} <= set(installed[1].split(",")), installed[1]
