"""Confirming a diagnosis on a host: run the checks declared to confirm the causes found (each check's
``confirms``, in ``accelstack/validate/checks/``) and hand back their records, as ``inv validate`` gives them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..inventory import Host, Inventory
from ..results.records import Record
from ..validate.checks import Check
from ..validate.registry import load_registry
from ..validate.run import validate_inventory
from .engine import Diagnosis


def confirming_checks(causes: Iterable[str], registry: Iterable[Check]) -> list[str]:
    """The checks declared to confirm any of ``causes``: the first cause's first, without repeats."""
    registry = list(registry)
    names: list[str] = []
    for cause in causes:
        for check in registry:
            if cause in check.confirms:
                names += [name for name in check.checks if name not in names]
    return names


@dataclass
class Confirmation:
    """What ``diagnose --host`` ran on the host (``checks``) and what they said (``records``)."""

    host: str
    checks: list[str]
    records: list[Record] = field(default_factory=list)


def confirm_on_host(diagnosis: Diagnosis, inventory: Inventory, hosts: Sequence[Host],
                    registry: Iterable[Check] | None = None) -> Confirmation:
    """Run, on ``hosts`` of the loaded ``inventory`` (the task selects them from ``--host``), every check
    declared to confirm one of the diagnosis's causes, root cause's first; the full tier's settings."""
    name = ",".join(host.name for host in hosts)
    checks = confirming_checks((finding.cause for finding in diagnosis.findings),
                               load_registry() if registry is None else registry)
    if not checks:
        return Confirmation(name, [])
    records = validate_inventory(inventory, hosts, only=set(checks), tier="full")
    return Confirmation(name, checks, records)
