"""Drift: a host's installed versions against its stack, one record per pinned component. Pure: no I/O.

Which copy of a component is judged, and how it is compared with its pin, is
:mod:`accelstack.stacks.components`' one definition, the same that provisioning plans with.

Status per component:

- ``pass``: installed matches the pin (by the pin's match mode) and breaks no rule;
- ``fail``: the installed set breaks a compatibility rule and this component is to blame (it differs from its
  pin, or every component of the rule matches its pin, which only happens when the matrix changed under a stack);
- ``warn``: any other difference from the pin, or a warning-level rule;
- missing: ``fail`` for a component the host cannot train without, ``warn`` otherwise;
- ``error`` (from :func:`run_drift`): the host's facts could not be gathered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..results.records import SEVERITY, Record, Status
from .compat import Matrix, Violation, check_components, load_matrix
from .components import COMPONENTS, CRITICAL, SPECS, installed_matches
from .model import Pin, Stack


def _matches(pin: Pin, installed: str, matrix: Matrix) -> bool | None:
    """Whether installed meets the pin (the one comparison provisioning uses too); None when unreadable."""
    return installed_matches(pin.component, pin.version, installed, pin.match, matrix)


def _blamed(violation: Violation, differs: Mapping[str, bool]) -> set[str]:
    culprits = {key for key in violation.components if differs.get(key)}
    return culprits or set(violation.components)


def _provision(host: str) -> str:
    return f"inv provision --limit {host}"


def drift_records(host: str, stack: Stack, installed: Mapping[str, str | None], matrix: Matrix | None = None,
                  details: Mapping[str, Mapping[str, Any]] | None = None) -> list[Record]:
    """One ``drift.<component>`` record per component the stack pins, in the vocabulary's order.

    ``details`` (default: ``installed.details`` when it has them, as :meth:`Facts.components` gives) join each
    component's evidence: which installed copy was judged and what else is installed beside it; a ``note``
    there ends the summary, so a person sees the system libnccl next to the one torch loads.
    """
    matrix = matrix or load_matrix()
    if details is None:
        details = getattr(installed, "details", None) or {}
    violations = check_components(installed, stack.vendor, devices=stack.devices, matrix=matrix)
    critical = CRITICAL.get(stack.vendor, frozenset())
    pinned = [key for key in COMPONENTS if key in stack.pins]

    differs: dict[str, bool] = {}
    for key in pinned:
        have = installed.get(key)
        differs[key] = not have or _matches(stack.pins[key], have, matrix) is not True

    blamed: dict[str, list[Violation]] = {key: [] for key in pinned}
    for violation in violations:
        for key in _blamed(violation, differs):
            if key in blamed:
                blamed[key].append(violation)

    records: list[Record] = []
    for key in pinned:
        before = len(records)
        pin = stack.pins[key]
        have = installed.get(key)
        where = stack.where(f"components.{key}")
        evidence: dict[str, object] = {"component": key, "pinned": pin.version, "installed": have,
                                       "match": pin.match, "stack": stack.name, "judged": SPECS[key].copy}
        check = f"drift.{key}"
        extra = dict(details.get(key) or {})
        note = extra.pop("note", None)
        evidence.update(extra)
        if note:
            evidence["note"] = note
        change_pin = (f"or, if {have} is intended, pin {key}: \"{have}\" at {where} and run "
                      f"inv stack.check {stack.name}")
        if not have:
            status: Status = "fail" if key in critical else "warn"
            records.append(Record(
                host, check, status, f"{key} is not installed (pinned {pin.version})" + (f" ({note})" if note else ""),
                evidence=evidence, remedy=f"{_provision(host)} installs {key} {pin.version} (role "
                                          f"{SPECS[key].installed_by.split(' ')[0]})"))
            continue
        same = _matches(pin, have, matrix)
        errors = [v for v in blamed[key] if v.severity == "error"]
        warnings = [v for v in blamed[key] if v.severity == "warning"]
        if errors or warnings:
            evidence["violations"] = [v.to_dict() for v in errors + warnings]
        if same is None:
            records.append(Record(
                host, check, "warn", f"{key} reports {have!r}, which is not a version accelstack can read",
                evidence=evidence, remedy=f"check how {key} was installed; {_provision(host)} installs {pin.version}"))
        elif errors:
            first = errors[0]
            rules = ", ".join(sorted({v.rule for v in errors}))
            nearest = "; ".join(first.nearest)
            if same:
                remedy = (f"{key} matches its pin; the components it is checked against have drifted: "
                          f"{_provision(host)}")
            else:
                remedy = f"{_provision(host)} brings {key} back to {pin.version}; {change_pin} (nearest: {nearest})"
            records.append(Record(
                host, check, "fail",
                f"{key} {have} (pinned {pin.version}) breaks {rules}: {first.message} [source: {first.source}]",
                evidence=evidence, remedy=remedy))
        elif not same:
            rule = f"; {warnings[0].rule}: {warnings[0].message}" if warnings else ""
            records.append(Record(
                host, check, "warn", f"{key} {have} differs from the pin {pin.version}{rule}", evidence=evidence,
                remedy=f"{_provision(host)} brings {key} back to {pin.version}; {change_pin}"))
        elif warnings:
            records.append(Record(
                host, check, "warn", f"{key} {have} matches its pin; {warnings[0].rule}: {warnings[0].message}",
                evidence=evidence, remedy="none needed to match the stack; see the rule's message"))
        else:
            records.append(Record(host, check, "pass", f"{key} {have} matches the pin {pin.version}",
                                  evidence=evidence))
        if note:
            for record in records[before:]:
                record.summary += f" ({note})"
    return records


def run_drift(hosts_facts: Mapping[str, Mapping[str, str | None] | Exception], stacks_by_host: Mapping[str, Stack],
              matrix: Matrix | None = None) -> list[Record]:
    """Drift for every host: facts (or the exception that stopped gathering them) and each host's stack.

    A host whose facts are an exception, or that has no stack, gets one ``error`` record: the check could not run.
    """
    matrix = matrix or load_matrix()
    records: list[Record] = []
    for host, facts in hosts_facts.items():
        if isinstance(facts, Exception):
            hint = getattr(facts, "hint", None)
            records.append(Record(
                host, "drift", "error", f"facts could not be gathered: {facts}",
                evidence={"error": type(facts).__name__},
                remedy=hint or f"check that {host} is reachable, then: inv facts --limit {host}"))
            continue
        stack = stacks_by_host.get(host)
        if stack is None:
            records.append(Record(
                host, "drift", "error", "no stack is named for this host", evidence={},
                remedy="set stack: NAME in the host's host_vars or its group's group_vars"))
            continue
        records.extend(drift_records(host, stack, facts, matrix))
    return records


@dataclass(frozen=True)
class DriftRow:
    """One line of a drift report: a record as a person reads it (``stacks.render.drift_table`` shows them)."""

    host: str
    component: str
    status: str
    installed: str
    pinned: str
    detail: str


def drift_rows(records: list[Record]) -> list[DriftRow]:
    """One row per record, hosts in the order they came, worst first within each host; the fix under the
    detail of anything that is not a pass."""
    order = {host: index for index, host in enumerate(dict.fromkeys(r.host for r in records))}
    rows = []
    for record in sorted(records, key=lambda r: (order[r.host], -SEVERITY.get(r.status, 0))):
        component = record.check.removeprefix("drift.") if record.check.startswith("drift.") else "-"
        detail = record.summary if record.status != "pass" else ""
        if record.remedy and record.status != "pass":
            detail += f"\nfix: {record.remedy}"
        rows.append(DriftRow(record.host, component, record.status, str(record.evidence.get("installed") or "-"),
                             str(record.evidence.get("pinned") or "-"), detail))
    return rows
