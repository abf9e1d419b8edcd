"""The checkout's tasks: the product's (``accelstack.tasks``, what the wheel's console script runs) and the lab's
(``accelstack_lab.tasks``: ``lab.*`` and ``repo.build``, test tooling that lives in the checkout and never in the
wheel). ``inv`` loads this file; the ``accelstack`` console script run from this checkout reads
``EXTRA_TASK_MODULES`` here too (``accelstack.cli``), so ``inv`` and ``accelstack`` stay one program."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# The lab package sits beside this file: on the path for whoever loads it (inv does; the console script does not).
CHECKOUT = str(Path(__file__).resolve().parent)
if CHECKOUT not in sys.path:
    sys.path.insert(0, CHECKOUT)

# The checkout's own task modules -> the top-level names each adds (accelstack.tasks.TASK_MODULES's form).
EXTRA_TASK_MODULES = {"accelstack_lab.tasks": ("lab", "repo")}


def __getattr__(name: str) -> Any:
    # `ns` for inv, built when invoke asks for it: reading EXTRA_TASK_MODULES imports no task module.
    if name == "ns":
        from accelstack.tasks import build_collection

        collection = build_collection(extra=EXTRA_TASK_MODULES)
        globals()["ns"] = collection
        return collection
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
