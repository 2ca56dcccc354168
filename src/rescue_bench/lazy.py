"""A package's exports imported from its modules on first use (PEP 562), for packages whose import
must stay cheap: every ``rescue`` command imports ``rescue_bench.agent.options`` and
``rescue_bench.sim.options`` for its option defaults, and that must not load the agent's chain, the
closed loop's episodes and numpy (``rescue --help`` stays fast).

Nothing here imports the rest of the package, so every layer can use it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any


def lazy_exports(package: str, names: Collection[str], modules: Sequence[str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: a name of ``names`` is looked up in ``modules``
    (``package``'s submodules, in this order) when first used, then kept on the package."""

    def __getattr__(name: str) -> Any:
        if name in names:
            for module in modules:
                found = importlib.import_module(f"{package}.{module}")
                if name in vars(found):
                    value = vars(found)[name]
                    vars(sys.modules[package])[name] = value
                    return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
