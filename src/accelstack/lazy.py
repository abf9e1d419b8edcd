"""Package namespaces that import a submodule the first time one of its names is used (PEP 562).

``from accelstack.stacks import load_stack`` then costs the stack model alone, not the compatibility matrices,
drift and preflight beside it; ``facts`` and the fan-out never pay for what they do not use. A package lists
which submodule holds each name it exports; type checkers read the same names from an ``if TYPE_CHECKING``
import block.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def lazy_name(package: str, names: Mapping[str, str], namespace: dict[str, Any], name: str) -> Any:
    """The package's ``__getattr__``: ``name`` from its submodule, kept in ``namespace`` for next time."""
    submodule = names.get(name)
    if submodule is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
    namespace[name] = value
    return value
