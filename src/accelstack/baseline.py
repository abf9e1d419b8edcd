"""Baselines and regressions: what a known-good run measured, and what a later run lost.

A baseline holds, per host and check, the status, the peak bus bandwidth and the component versions of one
run, stored as ``runs/baseline.json``. :func:`find_regressions` compares a run with it and names, with the
value then and now: a bus bandwidth drop beyond a percentage, a new failure (pass/warn then, fail/error
now) and a version change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError
from .history.metrics import components, peak_busbw
from .records import Record, runs_dir, utc_now

BASELINE_FILE = "baseline.json"
BASELINE_FORMAT = 1
# The run kinds a baseline may come from when none is named: runs that validated hosts.
VALIDATION_KINDS = ("validate", "fleet-check")
DEFAULT_BUSBW_DROP_PCT = 10.0

RegressionKind = Literal["busbw_drop", "new_failure", "version_change"]


@dataclass(frozen=True)
class BaselineEntry:
    status: str
    busbw_gbps: float | None = None
    components: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status}
        if self.busbw_gbps is not None:
            data["busbw_gbps"] = self.busbw_gbps
        if self.components:
            data["components"] = dict(sorted(self.components.items()))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BaselineEntry:
        busbw = data.get("busbw_gbps")
        return cls(status=str(data.get("status", "pass")),
                   busbw_gbps=float(busbw) if isinstance(busbw, (int, float)) else None,
                   components={str(k): str(v) for k, v in (data.get("components") or {}).items()})


@dataclass
class Baseline:
    source_run: str
    created: str
    hosts: dict[str, dict[str, BaselineEntry]]

    def entry(self, host: str, check: str) -> BaselineEntry | None:
        return self.hosts.get(host, {}).get(check)

    def to_dict(self) -> dict[str, Any]:
        return {"format": BASELINE_FORMAT, "source_run": self.source_run, "created": self.created,
                "hosts": {host: {check: entry.to_dict() for check, entry in sorted(checks.items())}
                          for host, checks in sorted(self.hosts.items())}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Baseline:
        hosts = {str(host): {str(check): BaselineEntry.from_dict(entry) for check, entry in checks.items()}
                 for host, checks in (data.get("hosts") or {}).items()}
        return cls(source_run=str(data.get("source_run", "")), created=str(data.get("created", "")),
                   hosts=hosts)


def baseline_from_records(records: Iterable[Record], *, source_run: str = "") -> Baseline:
    """What to hold from a run. A failed check's bandwidth is no level to hold: only pass/warn keep it."""
    hosts: dict[str, dict[str, BaselineEntry]] = {}
    for record in records:
        busbw = peak_busbw(record) if record.status in ("pass", "warn") else None
        hosts.setdefault(record.host, {})[record.check] = BaselineEntry(
            status=record.status, busbw_gbps=busbw, components=components(record))
        source_run = source_run or record.run_id
    return Baseline(source_run=source_run, created=utc_now(), hosts=hosts)


def baseline_path(base: Path | None = None) -> Path:
    return runs_dir(base) / BASELINE_FILE


def save_baseline(baseline: Baseline, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(baseline.to_dict(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_baseline(path: Path) -> Baseline | None:
    """The baseline at ``path``; ``None`` when there is none yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ConfigError(f"baseline is not valid JSON: {err}", where=str(path),
                          hint="recreate it with `inv baseline --from RUN`") from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise ConfigError(f"baseline is not in format {BASELINE_FORMAT}", where=str(path),
                          hint="recreate it with `inv baseline --from RUN`")
    return Baseline.from_dict(data)


@dataclass(frozen=True)
class Regression:
    host: str
    check: str
    kind: RegressionKind
    then: Any
    now: Any
    # The record's status in the new run: a regression to ``error`` means the host could not be checked.
    now_status: str
    component: str | None = None
    drop_pct: float | None = None

    @property
    def message(self) -> str:
        where = f"{self.host} {self.check}"
        if self.kind == "busbw_drop":
            return f"{where}: busbw {self.then:g} -> {self.now:g} GB/s (-{self.drop_pct:.1f}%)"
        if self.kind == "version_change":
            return f"{where}: {self.component} {self.then} -> {self.now}"
        return f"{where}: {self.then} -> {self.now}"

    def to_dict(self) -> dict[str, Any]:
        data = {"host": self.host, "check": self.check, "kind": self.kind, "then": self.then, "now": self.now,
                "now_status": self.now_status, "message": self.message}
        if self.component is not None:
            data["component"] = self.component
        if self.drop_pct is not None:
            data["drop_pct"] = round(self.drop_pct, 2)
        return data


def fault_is_elsewhere(record: Record) -> bool:
    """A multi-node record whose pairwise isolation put the fault on other nodes.

    Every node of a multi-node run carries the whole job's busbw, so a slow link on one node drops the figure on
    all of them; the drop is the named nodes' regression, not this host's (which would otherwise be drained)."""
    at_fault = record.metrics.get("at_fault")
    return record.status != "fail" and isinstance(at_fault, list) and bool(at_fault) and record.host not in at_fault


def find_regressions(run_records: Iterable[Record], baseline: Baseline | None,
                     busbw_drop_pct: float = DEFAULT_BUSBW_DROP_PCT) -> list[Regression]:
    """Every regression of a run against a baseline, ordered by host, check and kind.

    Checks and hosts absent from either side are not compared: a new host has nothing to hold yet, and a host
    left out of this run is not a regression of this run.
    """
    if baseline is None:
        return []
    found: list[Regression] = []
    for record in run_records:
        then = baseline.entry(record.host, record.check)
        if then is None:
            continue
        if then.status in ("pass", "warn") and record.status in ("fail", "error"):
            found.append(Regression(record.host, record.check, "new_failure", then.status, record.status,
                                    record.status))
        now_busbw = peak_busbw(record)
        if then.busbw_gbps and now_busbw is not None and then.busbw_gbps > 0 and not fault_is_elsewhere(record):
            drop = (then.busbw_gbps - now_busbw) / then.busbw_gbps * 100.0
            if drop > busbw_drop_pct:
                found.append(Regression(record.host, record.check, "busbw_drop", then.busbw_gbps, now_busbw,
                                        record.status, drop_pct=drop))
        now_components = components(record)
        for name, version in sorted(then.components.items()):
            current = now_components.get(name)
            if current is not None and current != version:
                found.append(Regression(record.host, record.check, "version_change", version, current,
                                        record.status, component=name))
    return sorted(found, key=lambda r: (r.host, r.check, r.kind, r.component or ""))
