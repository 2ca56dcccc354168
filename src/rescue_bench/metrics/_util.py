"""Small shared helpers of the metrics package (not public API)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Key = str | Callable[[Any], Any]
"""How to read a field of a record: a key / attribute name, or a function of the record."""


def key_fn(key: Key) -> Callable[[Any], Any]:
    """A function reading ``key`` from a record.

    A string reads ``record[key]`` from a mapping and ``getattr(record, key)`` from any other object
    (pydantic models, dataclasses); a callable is used as is.
    """
    if callable(key):
        return key
    if not isinstance(key, str):
        raise TypeError(f"key must be a field name or a function, not {type(key).__name__}")

    def read(record: Any) -> Any:
        if isinstance(record, Mapping):
            return record[key]
        return getattr(record, key)

    read.__name__ = f"read_{key}"
    return read
