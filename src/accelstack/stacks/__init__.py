"""Pinned stacks, compatibility matrices, preflight and drift (the second step of the flow in README.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lazy import lazy_name

if TYPE_CHECKING:
    from .compat import Matrix, Violation, check_components, check_stack, load_matrix
    from .components import (
        COMPONENTS,
        SPECS,
        Component,
        InstalledVersions,
        installed_matches,
        installed_versions,
    )
    from .drift import DriftRow, drift_records, drift_rows, run_drift
    from .model import Pin, Stack, list_stacks, load_stack, stack_names
    from .preflight import format_violations, preflight_stack
    from .versions import ComponentVersion, compare, parse_version, version_key, versions_match

_SUBMODULES = {
    **dict.fromkeys(("Matrix", "Violation", "check_components", "check_stack", "load_matrix"), "compat"),
    **dict.fromkeys(("DriftRow", "drift_records", "drift_rows", "run_drift"), "drift"),
    **dict.fromkeys(("COMPONENTS", "SPECS", "Component", "InstalledVersions", "installed_matches",
                     "installed_versions"), "components"),
    **dict.fromkeys(("Pin", "Stack", "list_stacks", "load_stack", "stack_names"), "model"),
    **dict.fromkeys(("format_violations", "preflight_stack"), "preflight"),
    **dict.fromkeys(("ComponentVersion", "compare", "parse_version", "version_key", "versions_match"), "versions"),
}


def __getattr__(name: str) -> Any:
    # Each name's submodule is imported when the name is first used (accelstack.lazy).
    return lazy_name(__name__, _SUBMODULES, globals(), name)


__all__ = [
    "COMPONENTS", "SPECS", "Component", "ComponentVersion", "InstalledVersions", "installed_matches",
    "installed_versions", "DriftRow", "Matrix", "Pin", "Stack", "Violation", "check_components",
    "check_stack", "compare", "drift_records", "drift_rows", "format_violations", "list_stacks", "load_matrix", "load_stack",
    "parse_version", "preflight_stack", "run_drift", "stack_names", "version_key", "versions_match",
]
