"""Conventions shared by every ``rescue`` command: one-line errors, exit code 2, no tracebacks."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click
import typer

EXIT_BAD_INPUT = 2
"""Exit code of every command when the input is bad (same as a usage error)."""

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    """Print ``error: <message>`` as one line on stderr and return the exit to raise."""
    typer.echo(f"error: {' '.join(str(message).split())}", err=True)
    return typer.Exit(code)


def no_traceback(func: F) -> F:
    """Turn any unexpected exception in a command into one error line and exit code 2.

    ``RESCUE_DEBUG=1`` lets the traceback through, for bug reports.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, click.exceptions.ClickException, click.exceptions.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - the contract is: never a traceback
            if os.environ.get("RESCUE_DEBUG"):
                raise
            raise fail(f"unexpected {type(exc).__name__}: {exc} (set RESCUE_DEBUG=1 for details)") from None

    return wrapper  # type: ignore[return-value]
