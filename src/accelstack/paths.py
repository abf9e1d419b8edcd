"""Where the project's data lives: inventories, stacks, compat, roles, templates, validators.

A checkout is the usual home (``pip install -e .``); ``$ACCELSTACK_HOME`` points elsewhere, for a site that keeps
its inventories and stacks in its own repository.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def project_root() -> Path:
    """``$ACCELSTACK_HOME``, else the current folder if it holds ``inventories/``, else the checkout."""
    env = os.environ.get("ACCELSTACK_HOME")
    if env:
        return Path(env).resolve()
    cwd = Path.cwd()
    if (cwd / "inventories").is_dir() and (cwd / "stacks").is_dir():
        return cwd
    return _PACKAGE_DIR.parent.parent


def package_data(name: str) -> Path:
    """A file shipped inside the package (``src/accelstack/data``)."""
    return _PACKAGE_DIR / "data" / name
