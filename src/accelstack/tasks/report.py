"""``inv report``, ``inv baseline``, ``inv history`` and ``inv fleet-check``: what happened, and is it worse.

invoke 2.2 has no optional positional arguments, so the run is given as ``--run RUN`` (default: the newest
run).
"""

from __future__ import annotations

import json as jsonlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from ..errors import ConfigError
from ..flows.fleetcheck.render import FleetConsole
from ..flows.fleetcheck.run import FleetReporter, fleet_check
from ..history import History, parse_since
from ..history.render import drains_table, history_table
from ..report import FORMATS, load_report, render, resolve_run, rich_report, verdict, write_atomic
from ..report.model import RERUN_FILE
from ..results.baseline import (
    DEFAULT_KEEP,
    VALIDATION_KINDS,
    baseline_from_records,
    baseline_from_runs,
    baseline_path,
    load_baseline,
    save_baseline,
)
from ..results.records import Record, read_run
from ..results.render import baseline_table
from .common import (
    HELP_COMMON,
    boundary,
    check_runs_folder,
    default_text,
    extra_vars,
    only_checks,
    setting,
    task,
    writable_dir,
    writable_file,
)

if TYPE_CHECKING:
    from ..inventory import Host, Inventory

# `inv baseline` reads up to this many times --keep recent runs: a host missing from some still finds its last few.
BASELINE_RUNS_FACTOR = 4

HELP_REPORT = {
    "run": "run id (or a unique part of it) or run folder; default: the newest validate or fleet-check run",
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
    check_runs_folder()  # ACCELSTACK_RUNS naming a file: exit 3, not a traceback from the history index
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


@task(help={"from_": "run id or folder to hold alone as the baseline; default: the healthy figures of the "
                     "recent validation runs (the last --keep per host and check)",
            "keep": f"healthy runs held per host and check (default {DEFAULT_KEEP})",
            "show": "only show what the baseline holds and how noisy each figure is; change nothing",
            "output": "where to store it (default: runs/baseline.json)"})
@boundary
def baseline(c: Any, from_: str | None = None, keep: int = DEFAULT_KEEP, show: bool = False,
             output: str | None = None) -> int:
    """Hold, per host, check and message size, the bandwidth of the last healthy runs and their spread.

    A later run regresses when a figure drops below the held median by more than both --busbw-drop-pct and
    the figure's noise band (2.5 times the spread of its held runs, on a log scale), and a re-run confirms it.
    Prints what it holds, with the noise of each figure and the drop that would count.
    """
    check_runs_folder()
    path = Path(output) if output else baseline_path()
    if not show:
        writable_file(path, "--output" if output else "baseline")  # a folder there: exit 3 before any work
    if show:
        held = load_baseline(path)
        if held is None:
            raise ConfigError(f"no baseline at {path}", hint="`inv baseline` takes one from the recent runs")
        Console().print(baseline_table(held))
        return 0
    keep = int(keep)
    if keep < 1:
        raise ConfigError(f"--keep {keep} must be at least 1")
    if from_:
        folder = resolve_run(from_)
        records = read_run(folder)
        if not records:
            raise ConfigError(f"run {folder.name} has no records", where=str(folder))
        held = baseline_from_records(records, source_run=folder.name, keep=keep)
    else:
        with History() as history:
            runs = [run for run in history.runs(kind=VALIDATION_KINDS) if not run.interrupted and run.record_count]
            if not any(run.good for run in runs):
                raise ConfigError("no finished validation run without failures to take a baseline from",
                                  hint="run `inv validate`, or name a run: inv baseline --from RUN")
        # Enough recent runs that each host and check can find its last `keep` healthy ones.
        recent = runs[-keep * BASELINE_RUNS_FACTOR:]
        folders = [history.runs_dir / run.run_id for run in recent]
        held = baseline_from_runs([(folder.name, read_run(folder), _reruns(folder)) for folder in folders],
                                  keep=keep)
    save_baseline(held, path)
    checks = sum(len(entries) for entries in held.hosts.values())
    print(f"baseline from {held.describe()}: {len(held.hosts)} host(s), {checks} check(s) -> {path}")
    Console().print(baseline_table(held))
    return 0


def _reruns(folder: Path) -> list[Record]:
    rerun = folder / RERUN_FILE
    return read_run(rerun) if rerun.is_file() else []


HELP_HISTORY = {
    "host": "only this host",
    "check": "only this check (devices, allreduce.single, ...)",
    "since": "only records since: an age (7d, 12h, 30m, 2w) or an ISO time (2026-11-01T10:00Z)",
    "until": "only records until this ISO time or age",
    "status": "only records with this status (pass, warn, fail, error, skip)",
    "last": "show the newest N records (0 = all) " + default_text("last"),
    "json": HELP_COMMON["json"],
    "drains": "list the hosts the fleet check drained (when, why, the command and its exit) instead",
}


@task(help=HELP_HISTORY)
@boundary
def history(c: Any, host: str | None = None, check: str | None = None, since: str | None = None,
            until: str | None = None, status: str | None = None, last: int | None = None, json: bool = False,
            drains: bool = False) -> int:
    """Records across runs from the history index (rebuilt from the run folders when stale), oldest first."""
    from ..results.records import STATUSES

    if status is not None and status not in STATUSES:  # a typo would match nothing and look like a clean fleet
        raise ConfigError(f"--status {status!r} is not one of {', '.join(STATUSES)}")
    check_runs_folder()
    if drains:
        return _drain_history(host, parse_since(since) if since else None, json)
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
    Console().print(history_table(entries))
    return 0


def _drain_history(host: str | None, since: Any, json: bool) -> int:
    with History() as index:
        entries = index.drains(host=host, since=since)
    if json:
        for entry in entries:
            sys.stdout.write(jsonlib.dumps(entry.to_dict()) + "\n")
        return 0
    Console().print(drains_table(entries))
    return 0


HELP_FLEET = {
    "inventory": HELP_COMMON["inventory"] + "; repeatable, one run over all of them (a host in several is "
                                            "checked once)",
    "drain_cmd": "command run for each host that failed or regressed, never for hosts that only errored; "
                 "{host} and {reason} are replaced by shell-quoted values, e.g. "
                 "'scontrol update nodename={host} state=drain reason={reason}'",
    "max_drain": "drain at most this many hosts in one run (2), or this share of the hosts checked (10%); "
                 "past it none is drained and the run exits 1 (default 10%, at least 1)",
    "reports_dir": "folder for junit.xml, report.html, accelstack.prom, summary.json (default: reports)",
    "busbw_drop_pct": HELP_REPORT["busbw_drop_pct"] + "; the baseline's own noise can raise it",
    "tier": "validation tier: quick, standard or full (default standard)",
    "only": "comma-separated checks to run whatever the tier, e.g. allreduce,multinode",
    "limit": HELP_COMMON["limit"] + " (in every inventory)",
    "json": "print the run's JSON Lines records on stdout at the end (progress stays on stderr)",
    "forks": HELP_COMMON["forks"],
    "connect_timeout": HELP_COMMON["connect_timeout"],
    "set": HELP_COMMON["set"],
    "engine": "ssh (default) or slurm: validate through Slurm (host checks with one srun, the multi-node "
              "allreduce as one step); --inventory then only maps node names to hosts and their vars",
    "partition": "--engine slurm: the partition (default: Slurm's default)",
    "nodes": "--engine slurm: a Slurm hostlist to check, e.g. lab[1-4] (default: every node)",
    "drain": "--engine slurm: drain each node that failed or regressed with scontrol (reason \"accelstack: "
             "...\"), under --max-drain; an error never drains",
}


def _preflight(names: list[str], limit: str | None,
               overrides: dict[str, object]) -> dict[str, tuple[Inventory, list[Host]]]:
    """Every inventory read and its stacks checked (with --set applied, as validation will) before any host is
    touched: a broken one is exit 3 with its file:line. Each inventory, loaded once, with the hosts it gives.

    ``--limit`` applies to every inventory: a pattern that matches hosts in one inventory and none in another
    selects nothing there; it is an error only when it matches no host in any of them."""
    from ..inventory import load_inventory
    from ..stacks.context import resolve_contexts
    from ..transport.connection import check_connection_files

    loaded: dict[str, tuple[Inventory, list[Host]]] = {}
    unmatched: ConfigError | None = None
    for name in names:
        inv = load_inventory(name)
        try:
            selected = inv.select(limit)
        except ConfigError as err:
            if not limit or "matches no host" not in str(err):
                raise
            unmatched, loaded[name] = unmatched or err, (inv, [])
            continue
        resolve_contexts(selected, overrides=overrides or None)
        check_connection_files(selected)  # a key: or known_hosts: that cannot be read: exit 3 before any host
        loaded[name] = (inv, selected)
    if unmatched is not None and not any(hosts for _inv, hosts in loaded.values()):
        raise unmatched
    return loaded


@task(iterable=["inventory", "set"], help=HELP_FLEET)
@boundary
def check_fleet(c: Any, inventory: list[str] | None = None, drain_cmd: str | None = None,
                max_drain: str | None = None, reports_dir: str = "reports", busbw_drop_pct: float | None = None,
                tier: str = "standard", only: str | None = None, limit: str | None = None, json: bool = False,
                forks: int | None = None, connect_timeout: float | None = None,
                set: list[str] | None = None, engine: str = "ssh", partition: str | None = None,
                nodes: str | None = None, drain: bool = False) -> int:
    """Validate the fleet, compare with the baseline, write every report, drain bad hosts.

    A bandwidth drop counts only beyond the baseline's own noise and once a re-run of that check confirms it.
    Exit 0 healthy; 1 a failure or regression, or the drain breaker tripped; 2 hosts could not be checked;
    3 bad input.
    """
    # Imported here: validation is a heavier layer, and report/history/baseline load without it.
    from ..engines.ssh.run import validate_inventory
    from ..flows.fleetcheck.run import check_max_drain
    from ..validate import load_registry, select
    from ..validate.registry import all_checks

    wanted = only_checks(only)
    registry = load_registry()
    select(registry, tier, wanted)  # a bad --tier or --only is exit 3 before any host is touched
    check_max_drain(max_drain)
    from ._slurm import check_engine_flags

    check_engine_flags(engine, partition=partition, nodes=nodes, limit=limit, forks=forks,
                       connect_timeout=connect_timeout, drain=drain)
    drop_pct = setting(c, "busbw_drop_pct", busbw_drop_pct)
    forks_n = setting(c, "forks", forks)
    connect_s = setting(c, "connect_timeout", connect_timeout)
    overrides = extra_vars(set or [])
    if engine != "ssh":
        from ._slurm import fleet_check_slurm_task

        reports = writable_dir(Path(reports_dir), "--reports-dir")
        check_runs_folder()
        outcome = fleet_check_slurm_task(engine, inventories=list(inventory or []), limit=limit,
                                         drain_cmd=drain_cmd, drain=drain, max_drain=max_drain, reports_dir=reports,
                                         busbw_drop_pct=float(drop_pct), tier=tier, only=wanted,
                                         partition=partition, nodes=nodes, overrides=overrides or None,
                                         progress=FleetReporter(FleetConsole()))
        if json:
            sys.stdout.write("".join(jsonlib.dumps(r.to_dict()) + "\n" for r in outcome.records))
            sys.stdout.flush()
        return outcome.code
    names = list(inventory or ["local"])
    loaded = _preflight(names, limit, overrides)
    reports = writable_dir(Path(reports_dir), "--reports-dir")  # found now, not after validating every host
    check_runs_folder()
    known_checks = {name for name in all_checks(registry)}  # `set` is the --set flag here
    cluster_checks = {c for v in registry if v.scope == "cluster" for c in v.checks}
    progress = FleetReporter(FleetConsole())
    validated: dict[str, list[Host]] = {}

    def run(name: str, hosts: list[Host], only_checks: frozenset[str] | None, reporter: Any) -> list[Record]:
        records: list[Record] = validate_inventory(loaded[name][0], hosts, tier=tier,
                                                   only=None if only_checks is None else {*only_checks},
                                                   reporter=reporter, forks=forks_n,
                                                   overrides=overrides or None, connect_timeout=connect_s)
        return records

    def validate(name: str, skip: frozenset[str]) -> list[Record]:
        selected = loaded[name][1]
        left = [host for host in selected if host.name not in skip]
        if not left:
            why = "every host was checked in an earlier inventory" if selected else f"--limit {limit} selects none"
            progress.note(f"{name}: {why}")
            return []
        validated[name] = left
        return run(name, left, frozenset(wanted) if wanted else None, progress)

    def rerun(name: str, hosts: list[str], check: str) -> list[Record]:
        # The record's check or its family (memory.shm -> memory) is what --only names.
        family = check if check in known_checks else check.split(".", 1)[0]
        if family not in known_checks:
            return []
        # A cluster check measures the hosts together: re-run it across the inventory, as it first ran.
        ran = validated.get(name, [])
        again = ran if family in cluster_checks else [host for host in ran if host.name in hosts]
        return run(name, again, frozenset({family}), _Collector()) if again else []

    result = fleet_check(names, validate=validate, drain_cmd=drain_cmd, reports_dir=reports,
                             busbw_drop_pct=float(drop_pct), progress=progress, rerun=rerun, max_drain=max_drain)
    if json:
        for record in result.records:
            sys.stdout.write(jsonlib.dumps(record.to_dict()) + "\n")
        sys.stdout.flush()
    return result.code


class _Collector:
    """A record sink that keeps nothing on disk: a re-run's records go to the fleet check's run folder."""

    def add(self, record: Record) -> None:
        pass

    def add_all(self, records: Any) -> None:
        pass
