"""Pinned stacks, compatibility matrices, preflight and drift (the second step of the flow in DESIGN.md)."""

from __future__ import annotations

from .compat import Matrix, Violation, check_components, check_stack, load_matrix
from .drift import DriftRow, drift, drift_rows, run_drift
from .model import COMPONENTS, Pin, Stack, list_stacks, load_stack, stack_names
from .preflight import format_violations, preflight
from .versions import ComponentVersion, compare, parse_version, version_key, versions_match

__all__ = [
    "COMPONENTS", "ComponentVersion", "DriftRow", "Matrix", "Pin", "Stack", "Violation", "check_components",
    "check_stack", "compare", "drift", "drift_rows", "format_violations", "list_stacks", "load_matrix", "load_stack",
    "parse_version", "preflight", "run_drift", "stack_names", "version_key", "versions_match",
]
