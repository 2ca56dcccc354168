"""Which optional extra of rescue-bench provides which import, for the one-line "install the extra" hint.

The core install evaluates and reports; ``rescue review`` needs the ``review`` extra and ``rescue
annotate`` (and ``rescue eval --mode video``) the ``annotate`` extra (pyproject.toml,
``[project.optional-dependencies]``). When one of their imports is missing, the command's error guard
(:mod:`rescue_bench.cli._common`) turns the ``ModuleNotFoundError`` into :class:`MissingExtra`: one
line naming the extra and the ``pip install`` that brings it, exit 2. Nothing here imports the package.
"""

from __future__ import annotations

import importlib.util
import sys

from rescue_bench.errors import RescueError

DISTRIBUTION = "rescue-bench"

EXTRA_OF_MODULE: dict[str, str] = {
    # the review web app: ASGI app and server (uvicorn loads httptools and uvloop when present),
    # database and migrations, passwords, signed cookies, templates, Swagger UI served offline
    "fastapi": "review",
    "fastapi_offline": "review",
    "uvicorn": "review",
    "httptools": "review",
    "uvloop": "review",
    "sqlalchemy": "review",
    "alembic": "review",
    "psycopg": "review",
    "argon2": "review",
    "itsdangerous": "review",
    "jinja2": "review",
    # pre-annotation: PyAV (FFmpeg) for clips and keyframes, the subtitle parsers
    "av": "annotate",
    "srt": "annotate",
    "webvtt": "annotate",
}
"""Top-level import name -> the extra whose distributions provide it (tests/test_packaging.py checks
the table against pyproject.toml)."""


class MissingExtra(RescueError):
    """A command needs an optional extra that is not installed; the message is the install hint."""

    def __init__(self, extra: str, module: str) -> None:
        self.extra = extra
        self.module = module
        super().__init__(f"this command needs the '{extra}' extra ({module} is not installed): pip install '{DISTRIBUTION}[{extra}]'")


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here, found without importing them (uvloop is
    left out on Windows, where the extra does not install it)."""
    missing = []
    for module, of in EXTRA_OF_MODULE.items():
        if of != extra or (module == "uvloop" and sys.platform == "win32"):
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return missing


def missing_extra(exc: ModuleNotFoundError) -> MissingExtra | None:
    """The :class:`MissingExtra` behind ``exc`` when the missing module belongs to an extra, else ``None``."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    return MissingExtra(extra, top) if extra else None
