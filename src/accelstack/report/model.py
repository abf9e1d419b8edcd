"""What every report format renders from: one run's records, its regressions, and the history around it."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EXIT_ERROR, EXIT_FAIL, EXIT_OK, ConfigError
from ..history import BusbwPoint, History
from ..results.baseline import (
    VALIDATION_KINDS,
    Regression,
    baseline_path,
    confirm_regressions,
    find_regressions,
    load_baseline,
    needs_rerun,
)
from ..results.metrics import CLUSTER_HOST
from ..results.records import SEVERITY, STATUSES, Record, read_meta, read_run, runs_dir, utc_now


@dataclass
class ReportData:
    run_id: str
    records: list[Record]
    meta: dict[str, Any] = field(default_factory=dict)
    regressions: list[Regression] = field(default_factory=list)
    baseline_run: str | None = None
    busbw_history: list[BusbwPoint] = field(default_factory=list)
    generated: str = field(default_factory=utc_now)
    # Whatever the caller adds to the summary (fleet check: inventories, drained hosts).
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def hosts(self) -> list[str]:
        """Worst host first (by its headline), then by name; the cluster aggregate last among equals."""
        worst = host_status(self.records)
        return sorted(worst, key=lambda host: (-HEADLINE_RANK[worst[host]], host == CLUSTER_HOST, host))

    @property
    def checks(self) -> list[str]:
        """Checks that failed somewhere first, then by name; a check that only ever skipped comes last."""
        worst: dict[str, int] = {}
        for record in self.records:
            worst[record.check] = max(worst.get(record.check, 0), HEADLINE_RANK[record.status])
        return sorted(worst, key=lambda check: (-worst[check], check))

    def regressions_for(self, host: str, check: str) -> list[Regression]:
        """The host and check's regressions, less the drops their re-run did not confirm (noise: listed with
        the regressions, but they fail no testcase and mark no cell)."""
        return [r for r in self.regressions if r.host == host and r.check == check and r.confirmed is not False]


REGRESSION_COLUMNS = ("host", "check", "regression", "then", "now", "drop", "noise band", "re-run")


def regression_row(regression: Regression) -> tuple[str, ...]:
    """One regression as the cells of :data:`REGRESSION_COLUMNS`, the same in every format: the kind as the JSON
    summary names it (with its component and message size), then and now, and for a busbw drop its size, the
    noise band it had to pass and what its re-run said."""
    r = regression
    kind = r.kind + (f" ({r.component})" if r.component else "")
    if r.bytes is not None:
        kind += f" at {r.bytes} B"
    drop = band = rerun = ""
    if r.kind == "busbw_drop":
        drop = f"-{r.drop_pct or 0:.1f}%"
        band = f"{r.noise_pct or 0:.1f}% spread over {r.samples} run(s); counts past -{r.threshold_pct or 0:.1f}%"
        rerun = {None: "not re-run", True: "confirmed", False: "not confirmed"}[r.confirmed]
        if r.rerun_now is not None:
            rerun += f" ({r.rerun_now:g})"
    return (r.host, r.check, kind, str(r.then), str(r.now), drop, band, rerun)


# What a group of records (a host, a check family such as health.*, one check run twice) shows as its one
# status: the worst of fail, error, warn and pass; skip only when every part skipped. A part that does not apply
# (health.nvlink on a one-GPU host) says nothing about the parts that were measured, so it never hides a pass.
HEADLINE_RANK: dict[str, int] = {"fail": 4, "error": 3, "warn": 2, "pass": 1, "skip": 0}


def headline(statuses: Iterable[str]) -> str:
    """The one status of a group of parts (see :data:`HEADLINE_RANK`); ``skip`` for none at all."""
    return max(statuses, key=HEADLINE_RANK.__getitem__, default="skip")


def counts_text(statuses: Iterable[str]) -> str:
    """``6 pass, 2 skip``: how a group's parts ended, worst first (in :data:`HEADLINE_RANK`'s order)."""
    counts = Counter(statuses)
    return ", ".join(f"{counts[s]} {s}" for s in sorted(counts, key=lambda s: -HEADLINE_RANK[s]))


def family_of(check: str) -> str:
    """A check's family: ``health.ecc`` -> ``health``, ``versions.driver`` -> ``versions``, ``devices`` itself. A
    report's column is a family, so one with every check, a part per installed component, still fits a screen."""
    return check.split(".", 1)[0]


def host_status(records: Iterable[Record]) -> dict[str, str]:
    """Each host's headline: the worst of its checks, a skip only when every check skipped."""
    statuses: dict[str, list[str]] = {}
    for record in records:
        statuses.setdefault(record.host, []).append(record.status)
    return {host: headline(found) for host, found in statuses.items()}


def family_status(records: Iterable[Record]) -> dict[tuple[str, str], list[Record]]:
    """``{(host, family): its records}``, parts in check order; :func:`headline` of their statuses is the cell."""
    found: dict[tuple[str, str], list[Record]] = {}
    for record in sorted(records, key=lambda r: r.check):
        found.setdefault((record.host, family_of(record.check)), []).append(record)
    return found


def cells(records: Iterable[Record]) -> dict[tuple[str, str], Record]:
    """One record per host and check, in the records' order: where a check has several (a retry, a host in
    two inventories), the headline's record speaks for it (a skip only when each of them skipped). JUnit
    testcases and Prometheus series must be unique."""
    found: dict[tuple[str, str], Record] = {}
    for record in records:
        key = (record.host, record.check)
        if key not in found or HEADLINE_RANK[record.status] > HEADLINE_RANK[found[key].status]:
            found[key] = record
    return found


def actionable(regressions: Iterable[Regression]) -> list[Regression]:
    """Regressions that say a host is bad: not one whose check now errors (it could not be checked), not a
    bandwidth drop that its re-run did not confirm (noise)."""
    return [r for r in regressions if r.counts]


def verdict(records: list[Record], regressions: list[Regression]) -> int:
    """0 healthy; 1 a failure or a regression; 2 hosts could not be checked (or nothing was)."""
    statuses = {record.status for record in records}
    if "fail" in statuses or actionable(regressions):
        return EXIT_FAIL
    if "error" in statuses or not records:
        return EXIT_ERROR
    return EXIT_OK


def summary(data: ReportData) -> dict[str, Any]:
    counts = Counter(record.status for record in data.records)
    worst = host_status(data.records)
    by_status: dict[str, list[str]] = {status: [] for status in STATUSES}
    for host in data.hosts:
        by_status[worst[host]].append(host)
    failing = [record.to_dict() for record in sorted(data.records, key=lambda r: (-SEVERITY[r.status], r.host,
                                                                                    r.check))
               if record.status in ("fail", "error")]
    return {
        "run_id": data.run_id,
        "kind": data.meta.get("kind"),
        "started": data.meta.get("started"),
        "finished": data.meta.get("finished"),
        "interrupted": bool(data.meta) and not data.meta.get("finished"),
        "generated": data.generated,
        "exit_code": verdict(data.records, data.regressions),
        "hosts": len(worst),
        "records": len(data.records),
        "counts": {status: counts.get(status, 0) for status in STATUSES},
        "hosts_by_status": {status: hosts for status, hosts in by_status.items() if hosts},
        "failing": failing,
        "baseline_run": data.baseline_run,
        "regressions": [r.to_dict() for r in data.regressions],
        **data.extra,
    }


RERUN_FILE = "rerun.jsonl"


def resolve_run(run: str | None, base: Path | None = None) -> Path:
    """A run folder from a run id (or a unique part of it), a folder or its results.jsonl; ``None``: the
    newest validation run (validate or fleet-check: a facts or provision run has nothing to report on)."""
    root = runs_dir(base)
    if run:
        for candidate in (Path(run), root / run):
            folder = candidate.parent if candidate.name == "results.jsonl" else candidate
            if (folder / "results.jsonl").is_file():
                return folder
        matches = sorted(p for p in root.glob(f"*{run}*") if (p / "results.jsonl").is_file())
        if len(matches) == 1:
            return matches[0]
        hint = "`inv history` lists runs"
        if matches:
            hint = "matches " + ", ".join(p.name for p in matches[:5])
        raise ConfigError(f"no single run {run!r} under {root}", hint=hint)
    with History(base) as history:
        latest = history.latest_run(kind=VALIDATION_KINDS)
    if latest is None:
        raise ConfigError(f"no validate or fleet-check run under {root}",
                          hint="run `inv validate` first, name a run with --run, or set ACCELSTACK_RUNS")
    return root / latest.run_id


def load_report(run: str | None = None, *, base: Path | None = None, busbw_drop_pct: float = 10.0,
                baseline_file: Path | None = None) -> ReportData:
    """Everything a report of one run shows: its records, regressions against the baseline, busbw history."""
    folder = resolve_run(run, base)
    records = read_run(folder)
    baseline = load_baseline(baseline_file or baseline_path(base))
    regressions: list[Regression] = []
    baseline_run = None
    if baseline is not None:
        # The run's own samples are left out: a run is never compared with itself.
        held = baseline.excluding(folder.name)
        if held.runs and held.runs != [folder.name]:
            regressions = find_regressions(records, held, busbw_drop_pct)
            # A fleet check re-ran the checks that dropped; their figures confirm a drop or undo it.
            rerun = folder / RERUN_FILE
            if rerun.is_file():
                regressions = confirm_regressions(regressions, read_run(rerun), held, busbw_drop_pct,
                                                  attempted={r.host for r in regressions if needs_rerun(r)})
            baseline_run = held.describe()
    with History(base) as history:
        points = history.busbw_history()
    return ReportData(run_id=folder.name, records=records, meta=read_meta(folder), regressions=regressions,
                      baseline_run=baseline_run, busbw_history=points)


def write_atomic(path: Path, text: str) -> Path:
    """Readers (node_exporter, a CI upload) never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
