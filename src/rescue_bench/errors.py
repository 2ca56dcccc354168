"""The errors a user is meant to read, shared by every layer (nothing here imports the package).

A command turns each into one line on stderr and an exit code (:mod:`rescue_bench.cli._common`);
a library caller catches them by type, or all of them as :class:`RescueError`: every error class of
the package derives from it (a test walks the package). :class:`rescue_bench.data.DataError` is the
data layer's own, carrying every :class:`~rescue_bench.data.Problem` found.
"""

from __future__ import annotations

import os
import traceback

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
"""A check ran and failed (``rescue tasks build --strict`` on the full release and a count differs)."""
EXIT_BAD_INPUT = 2
"""Bad input of any kind (the code click uses for a usage error too)."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (128 + SIGINT, as shells report it)."""


class RescueError(Exception):
    """The root of every error of rescue-bench: a message that is one line for the user (bad input, a
    failed download, a failed worker, a review service's refusal); commands print it as ``error:
    <message>`` and exit 2 (:func:`rescue_bench.cli._common.guard`, the one place that formats them).

    A subclass with a ``problems`` attribute lists every finding (the data layer's and ``rescue
    annotate prepare``'s :class:`~rescue_bench.data.Problem` lists): the guard prints one line each.
    ``details`` is text for a bug report, not for the one line (a worker's stderr, say): it is added
    to the exception as a note, so a traceback (``RESCUE_DEBUG=1``) shows it.
    """

    def __init__(self, *args: object, details: str | None = None) -> None:
        super().__init__(*args)
        if details:
            self.add_note(details)


class RunInterrupted(RescueError, RuntimeError):
    """A run was stopped before it finished (Ctrl-C); finished calls are in the response cache."""

    def __init__(self, message: str = "run interrupted; run the same command again to resume (finished calls are cached)") -> None:
        super().__init__(message)


DEBUG_VARIABLE = "RESCUE_DEBUG"


def debug_enabled() -> bool:
    """Whether ``RESCUE_DEBUG`` asks for tracebacks (set, and not ``0`` or empty): the command's guard
    and every worker process then let the traceback through instead of the one-line error."""
    return os.environ.get(DEBUG_VARIABLE, "").strip() not in ("", "0")


def print_traceback_if_debug() -> None:
    """In an ``except`` block: the current traceback on stderr when :func:`debug_enabled` (workers
    print it before their one-line error, so the parent can show both)."""
    if debug_enabled():
        traceback.print_exc()
