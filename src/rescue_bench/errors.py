"""The errors a user is meant to read, shared by every layer (nothing here imports the package).

A command turns each into one line on stderr and an exit code (:mod:`rescue_bench.cli._common`);
a library caller catches them by type. :class:`rescue_bench.data.DataError` is the data layer's
own, carrying every :class:`~rescue_bench.data.Problem` found.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
"""A check ran and failed (``rescue tasks build --strict`` on the full release and a count differs)."""
EXIT_BAD_INPUT = 2
"""Bad input of any kind (the code click uses for a usage error too)."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (128 + SIGINT, as shells report it)."""


class RescueError(Exception):
    """An error whose message is one line for the user (bad input, a failed download, a failed
    worker); commands print it as ``error: <message>`` and exit 2."""


class RunInterrupted(RuntimeError):
    """A run was stopped before it finished (Ctrl-C); finished calls are in the response cache."""

    def __init__(self, message: str = "run interrupted; run the same command again to resume (finished calls are cached)") -> None:
        super().__init__(message)
