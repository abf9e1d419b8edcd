"""Where the project's data lives: inventories, stacks, compat, roles, templates; and the host-side scripts.

A checkout is the usual home (``pip install -e .``); ``$ACCELSTACK_HOME`` points elsewhere, for a site that keeps
its inventories and stacks in its own repository. A wheel installs the project's defaults (the embedded default
inventory, the stacks, compat, roles, templates) under ``<prefix>/share/accelstack``, so an install without a
checkout still runs ``accelstack validate``. The host-side scripts always come from the package itself.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
SHARE_SUBDIR = ("share", "accelstack")


def project_root() -> Path:
    """``$ACCELSTACK_HOME``; else the current folder if it holds ``inventories/`` and ``stacks/``; else the checkout
    this package runs from; else the defaults a wheel installed; else the checkout path (errors name it)."""
    env = os.environ.get("ACCELSTACK_HOME")
    if env:
        return Path(env).resolve()
    cwd = Path.cwd()
    if _is_project(cwd):
        return cwd
    checkout = _PACKAGE_DIR.parent.parent
    if _is_project(checkout):
        return checkout
    for installed in installed_roots():
        if _is_project(installed):
            return installed
    return checkout


def checkout() -> Path | None:
    """The source checkout this package runs from (``src/accelstack`` beside the checkout's ``tasks.py``), or None
    when it runs from an install (a wheel): what only a checkout has (the lab, its tasks) is found there."""
    root = _PACKAGE_DIR.parent.parent
    return root if _PACKAGE_DIR.parent.name == "src" and (root / "tasks.py").is_file() else None


def installed_roots() -> list[Path]:
    """Where a wheel's data files land: ``<prefix>/share/accelstack`` for the running python's scheme, then the
    user scheme's (``pip install --user``)."""
    schemes = [sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user")]
    return [Path(sysconfig.get_path("data", scheme)).joinpath(*SHARE_SUBDIR) for scheme in schemes]


def _is_project(folder: Path) -> bool:
    return (folder / "inventories").is_dir() and (folder / "stacks").is_dir()


def package_data(name: str) -> Path:
    """A data file shipped inside the package (``src/accelstack/data``)."""
    return _PACKAGE_DIR / "data" / name


def hostside(*parts: str) -> Path:
    """The host-side scripts, shipped inside the package (``src/accelstack/hostside``): ``validators/`` and
    ``probes/``. They run with the host's python (3.6+, stdlib only, plus torch where they check torch)."""
    return _PACKAGE_DIR.joinpath("hostside", *parts)
