"""Confirming a diagnosis on a host: which checks are declared to confirm the causes found (each check's
``confirms``, in ``accelstack/validate/checks/``), and, from their records (``inv diagnose --host`` runs them, as
``inv validate`` does), whether the host confirmed each finding. Nothing here runs a check: the task does.

Only a ``node`` finding that a host check confirmed (the check failed on that host) is a reason to drain the node:
a finding of the job, the launch or a service is never the node's, and a node finding that the host's checks pass
is not proven (a transient fault, or one the checks cannot see). ``Confirmation.drain`` says exactly that.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..results.records import Record
from ..validate.checks import Check
from .findings import Finding

CONFIRMED = "confirmed"  # a confirming check failed on the host
NOT_CONFIRMED = "not-confirmed"  # every confirming check measured the host and found it good
UNKNOWN = "could-not-tell"  # the confirming checks could not run (error) or did not apply (skip)
NO_CHECK = "no-check"  # no host check is declared to confirm this cause (the program's own error)


def confirming_checks(causes: Iterable[str], registry: Iterable[Check]) -> list[str]:
    """The checks declared to confirm any of ``causes``: the first cause's first, without repeats."""
    registry = list(registry)
    names: list[str] = []
    for cause in causes:
        for check in registry:
            if cause in check.confirms:
                names += [name for name in check.checks if name not in names]
    return names


def _of_check(record: Record, names: Iterable[str]) -> bool:
    """Whether a record belongs to one of the checks ``names`` ("memory" owns "memory.shm")."""
    return any(record.check == name or record.check.startswith(name + ".") for name in names)


def judge_finding(checks: list[str], records: Iterable[Record]) -> str:
    """What the host says about one finding, from the records of the checks that confirm its cause."""
    if not checks:
        return NO_CHECK
    mine = [record for record in records if _of_check(record, checks)]
    if any(record.status == "fail" for record in mine):
        return CONFIRMED
    if mine and all(record.status in ("pass", "warn") for record in mine):
        return NOT_CONFIRMED
    return UNKNOWN


@dataclass
class FindingConfirmation:
    id: str
    cause: str
    actor: str
    checks: list[str]
    status: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "cause": self.cause, "actor": self.actor, "checks": list(self.checks),
                "status": self.status}


@dataclass
class Confirmation:
    """What ``diagnose --host`` ran on the host (``checks``), what they said (``records``) and what that means for
    each finding (``findings``)."""

    host: str
    checks: list[str]
    records: list[Record] = field(default_factory=list)
    findings: list[FindingConfirmation] = field(default_factory=list)

    @property
    def drain(self) -> bool:
        """True only when a ``node`` finding was confirmed by a check that failed on the host."""
        return any(item.actor == "node" and item.status == CONFIRMED for item in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "checks": list(self.checks), "records": [r.to_dict() for r in self.records],
                "findings": [item.to_dict() for item in self.findings], "drain": self.drain}


def judge_findings(findings: Sequence[Finding], records: Sequence[Record],
                   registry: Iterable[Check]) -> list[FindingConfirmation]:
    registry = list(registry)
    out = []
    for finding in findings:
        checks = confirming_checks([finding.cause], registry)
        out.append(FindingConfirmation(finding.id, finding.cause, finding.actor, checks,
                                       judge_finding(checks, records)))
    return out
