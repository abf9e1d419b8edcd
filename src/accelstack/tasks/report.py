"""``inv report``, ``inv baseline``, ``inv history`` and ``inv fleet-check``: what happened, and is it worse.

invoke 2.2 has no optional positional arguments, so the run is given as ``--run RUN`` (default: the newest
run).
"""

from __future__ import annotations

import json as jsonlib
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ..baseline import (
    VALIDATION_KINDS,
    baseline_from_records,
    baseline_path,
    save_baseline,
)
from ..errors import ConfigError
from ..fleetcheck import FleetReporter
from ..fleetcheck import fleet_check as run_fleet_check
from ..history import History, parse_since
from ..output import status_text
from ..records import Record, read_run
from ..report import FORMATS, load_report, render, resolve_run, rich_report, verdict, write_atomic
from .common import (
    HELP_COMMON,
    boundary,
    check_runs_folder,
    default_text,
    extra_vars,
    setting,
    task,
    writable_dir,
    writable_file,
)

HELP_REPORT = {
    "run": "run id (or a unique part of it) or run folder; default: the newest run",
    "format": f"one of {', '.join(FORMATS)} (default rich)",
    "output": "write the report to this file (atomically) instead of stdout",
    "busbw_drop_pct": "flag a busbw drop beyond this percentage of the baseline " + default_text("busbw_drop_pct"),
}


@task(help=HELP_REPORT)
@boundary
def report(c: Any, run: str | None = None, format: str = "rich", output: str | None = None,
           busbw_drop_pct: float | None = None) -> int:
    """Report one run as rich text, JUnit XML, self-contained HTML, a Prometheus textfile or JSON.

    Compares with the baseline when there is one. Exit 0 healthy; 1 a failure or regression; 2 hosts could
    not be checked; 3 no such run or format.
    """
    if format not in FORMATS:
        raise ConfigError(f"unknown report format {format!r}", hint=f"one of {', '.join(FORMATS)}")
    drop_pct = setting(c, "busbw_drop_pct", busbw_drop_pct)
    if output:
        writable_file(Path(output), "--output")
    data = load_report(run, busbw_drop_pct=drop_pct)
    if output:
        write_atomic(Path(output), render(data, format))
        print(f"{format} report of {data.run_id} written to {output}", file=sys.stderr)
    elif format == "rich":
        Console().print(rich_report(data))
    else:
        sys.stdout.write(render(data, format))
    return verdict(data.records, data.regressions)


@task(help={"from_": "run id or folder to hold as the baseline; default: the newest good validation run",
            "output": "where to store it (default: runs/baseline.json)"})
@boundary
def baseline(c: Any, from_: str | None = None, output: str | None = None) -> int:
    """Record per host and check the status, peak busbw and versions a later run must hold."""
    if from_:
        folder = resolve_run(from_)
    else:
        with History() as history:
            good = history.last_good_run(kind=VALIDATION_KINDS)
        if good is None:
            raise ConfigError("no finished validation run without failures to take a baseline from",
                              hint="run `inv validate`, or name a run: inv baseline --from RUN")
        folder = resolve_run(good.run_id)
    records = read_run(folder)
    if not records:
        raise ConfigError(f"run {folder.name} has no records", where=str(folder))
    held = baseline_from_records(records, source_run=folder.name)
    path = save_baseline(held, Path(output) if output else baseline_path())
    checks = sum(len(entries) for entries in held.hosts.values())
    print(f"baseline from {folder.name}: {len(held.hosts)} host(s), {checks} check(s) -> {path}")
    return 0


HELP_HISTORY = {
    "host": "only this host",
    "check": "only this check (devices, allreduce.single, ...)",
    "since": "only records since: an age (7d, 12h, 30m, 2w) or an ISO time (2026-11-01T10:00Z)",
    "until": "only records until this ISO time or age",
    "status": "only records with this status (pass, warn, fail, error, skip)",
    "last": "show the newest N records (0 = all) " + default_text("last"),
    "json": HELP_COMMON["json"],
}


@task(help=HELP_HISTORY)
@boundary
def history(c: Any, host: str | None = None, check: str | None = None, since: str | None = None,
            until: str | None = None, status: str | None = None, last: int | None = None, json: bool = False) -> int:
    """Records across runs from the history index (rebuilt from the run folders when stale), oldest first."""
    with History() as index:
        entries = index.records(host=host, check=check, status=status,
                                since=parse_since(since) if since else None,
                                until=parse_since(until) if until else None)
    if count := setting(c, "last", last):
        entries = entries[-count:]
    if json:
        for entry in entries:
            sys.stdout.write(jsonlib.dumps(entry.to_dict(), default=str) + "\n")
        return 0
    table = Table(title=f"history ({len(entries)} record(s))", title_justify="left")
    for column in ("time", "run", "host", "check", "status", "busbw GB/s", "summary"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        busbw = entry.record.metrics.get("busbw_gbps")
        record = entry.record
        table.add_row(record.ts, entry.run_id, record.host, record.check, status_text(record.status),
                      "" if busbw is None else f"{busbw:g}", record.summary)
    Console().print(table)
    return 0


HELP_FLEET = {
    "inventory": HELP_COMMON["inventory"] + "; repeatable, one run over all of them",
    "drain_cmd": "command run for each host that failed or regressed, never for hosts that only errored; "
                 "{host} and {reason} are replaced by shell-quoted values, e.g. "
                 "'scontrol update nodename={host} state=drain reason={reason}'",
    "reports_dir": "folder for junit.xml, report.html, accelstack.prom, summary.json (default: reports)",
    "busbw_drop_pct": HELP_REPORT["busbw_drop_pct"],
    "tier": "validation tier: quick, standard or full (default standard)",
    "only": "comma-separated checks to run whatever the tier, e.g. allreduce,multinode",
    "limit": HELP_COMMON["limit"] + " (in every inventory)",
    "json": "print the run's JSON Lines records on stdout at the end (progress stays on stderr)",
    "forks": HELP_COMMON["forks"],
    "connect_timeout": HELP_COMMON["connect_timeout"],
    "set": HELP_COMMON["set"],
}


@task(iterable=["inventory", "set"], help=HELP_FLEET)
@boundary
def fleet_check(c: Any, inventory: list[str] | None = None, drain_cmd: str | None = None,
                reports_dir: str = "reports", busbw_drop_pct: float | None = None,
                tier: str = "standard", only: str | None = None, limit: str | None = None, json: bool = False,
                forks: int | None = None, connect_timeout: float | None = None,
                set: list[str] | None = None) -> int:
    """Validate the fleet, compare with the baseline, write every report, drain bad hosts.

    Exit 0 healthy; 1 a failure or regression; 2 hosts could not be checked; 3 bad input.
    """
    # Imported here: validation is a heavier layer, and report/history/baseline load without it.
    from ..validate import load_registry, select, validate_inventory

    wanted = {item.strip() for item in only.split(",") if item.strip()} if only else None
    select(load_registry(), tier, wanted)  # a bad --tier or --only is exit 3 before any host is touched
    drop_pct = setting(c, "busbw_drop_pct", busbw_drop_pct)
    forks_n = setting(c, "forks", forks)
    connect_s = setting(c, "connect_timeout", connect_timeout)
    overrides = extra_vars(set or [])
    reports = writable_dir(Path(reports_dir), "--reports-dir")  # found now, not after validating every host
    check_runs_folder()
    progress = FleetReporter()

    def validate(name: str) -> list[Record]:
        records: list[Record] = validate_inventory(name, tier=tier, only=wanted, reporter=progress, limit=limit,
                                                   forks=forks_n, overrides=overrides or None,
                                                   connect_timeout=connect_s)
        return records

    code = run_fleet_check(list(inventory or ["local"]), validate=validate, drain_cmd=drain_cmd,
                           reports_dir=reports, busbw_drop_pct=drop_pct, progress=progress)
    if json and progress.writer is not None:
        for record in progress.writer.records:
            sys.stdout.write(jsonlib.dumps(record.to_dict()) + "\n")
        sys.stdout.flush()
    return code
