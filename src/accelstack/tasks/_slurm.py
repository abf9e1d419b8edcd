"""The ``--engine slurm`` branches of ``inv validate`` and ``inv fleet-check``: their flags checked, the inventory
loaded once, then the Slurm engine (:class:`accelstack.engines.slurm.run.SlurmEngine`, which returns records) and
the run's reporting."""

from __future__ import annotations

import sys
from typing import Any

from ..engines.slurm.run import SlurmEngine, slurm_checks
from ..errors import ConfigError
from ..flows.fleetcheck.run import FleetResult, fleet_check
from ..results.output import Reporter
from ..results.records import Record, RunWriter
from ..transport.fanout import RunInterrupted
from ..validate.checks import ENGINES
from .common import inventory_hosts


def check_engine_flags(engine: str, *, partition: str | None, nodes: str | None, limit: str | None,
                       forks: Any = None, connect_timeout: Any = None, drain: bool = False) -> None:
    """Flags the chosen engine would ignore are bad input (exit 3, one line, before any host or node is touched):
    a cron job that passes ``--drain`` over SSH must not believe nodes get drained."""
    if engine not in ENGINES:
        raise ConfigError(f"--engine {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "ssh":
        if drain:
            raise ConfigError("--drain drains through scontrol and needs --engine slurm; over SSH use --drain-cmd")
        for flag, value in (("--partition", partition), ("--nodes", nodes)):
            if value:
                raise ConfigError(f"{flag} selects Slurm nodes and needs --engine slurm; over SSH select inventory "
                                  "hosts with --limit")
        return
    if limit:
        raise ConfigError("--limit selects inventory hosts; with --engine slurm name Slurm nodes: --nodes lab[1-4]")
    for flag, value in (("--forks", forks), ("--connect-timeout", connect_timeout)):
        if value is not None:
            raise ConfigError(f"{flag} sets the SSH fan-out; --engine slurm opens no SSH connection (one srun runs "
                              "every node): leave it out")


def _engine(name: str | None, partition: str | None, nodes: str | None, overrides: dict[str, Any] | None,
            **options: Any) -> SlurmEngine:
    """The Slurm engine for the selected nodes, with the inventory (loaded once, every host of it) that maps them to
    hosts, or none. Bad input is exit 3 before a run folder exists: a node the partition lacks, a node no inventory
    host matches."""
    inv, hosts = inventory_hosts(name, None, overrides, connecting=False) if name else (None, [])  # no SSH: no keys
    return SlurmEngine.for_nodes(partition, nodes, inventory=inv, hosts=hosts, overrides=overrides, **options)


def validate_slurm_task(engine: str, *, tier: str, only: set[str] | None, json: bool, partition: str | None,
                        nodes: str | None, inventory: str | None = None, overrides: dict[str, Any] | None = None,
                        deadline_s: float | None = None) -> int:
    """The body of ``inv validate --engine slurm``: checks the flags, runs, reports; returns the exit code. Ctrl-C
    keeps every finished record, marks the rest ``error`` "interrupted" and is exit 130, as over SSH."""
    checks = slurm_checks(tier, only)
    slurm = _engine(inventory, partition, nodes, overrides, deadline_s=deadline_s)
    writer = RunWriter("validate", meta={"engine": "slurm", "partition": partition, "nodes": nodes, "tier": tier,
                                         "inventory": inventory, "only": sorted(only) if only else None})
    reporter = Reporter(writer, json_lines=json, title=f"validate ({tier}, through Slurm)")
    try:
        slurm.validate(checks, tier=tier, only=only, sink=reporter)
    except BaseException as stop:
        # The live panel off; on Ctrl-C the run folder is closed as interrupted, with every finished record.
        reporter.abort(interrupted=isinstance(stop, KeyboardInterrupt))
        if isinstance(stop, RunInterrupted):
            print(f"accelstack: {stop} (run {writer.path})", file=sys.stderr)
            return 130
        if not isinstance(stop, KeyboardInterrupt):
            writer.close()
        raise
    return reporter.finish()


def fleet_check_slurm_task(engine: str, *, inventories: list[str], limit: str | None, drain_cmd: str | None,
                           drain: bool, max_drain: str | None, reports_dir: Any, busbw_drop_pct: float, tier: str,
                           only: set[str] | None, partition: str | None, nodes: str | None,
                           overrides: dict[str, Any] | None, progress: Any) -> FleetResult:
    """The body of ``inv fleet-check --engine slurm``: validation through Slurm (host checks with one srun, the
    multi-node step), then the fleet check's own baseline, regression, report and drain steps. ``--drain`` drains
    through scontrol; the breaker (``--max-drain``) and ``drains.jsonl`` are the fleet check's."""
    checks = slurm_checks(tier, only)  # bad flags: exit 3 before anything runs
    check_engine_flags(engine, partition=partition, nodes=nodes, limit=limit)
    if len(inventories) > 1:
        raise ConfigError("--engine slurm takes one --inventory (it maps Slurm node names to its hosts)")
    if drain and drain_cmd:
        raise ConfigError("--drain (scontrol) and --drain-cmd both given: choose one")
    label = f"slurm:{partition or 'default'}" + (f":{nodes}" if nodes else "")
    name = inventories[0] if inventories else None
    # A node the partition lacks, or one no inventory host matches: exit 3 now.
    slurm = _engine(name, partition, nodes, overrides)
    checked: list[str] = []

    def validate(_name: str, _skip: frozenset[str]) -> list[Record]:
        records = slurm.validate(checks, tier=tier, only=only, sink=progress)
        checked.extend(sorted({r.host for r in records}))
        return records

    def rerun(_name: str, names: list[str], check: str) -> list[Record]:
        family = check.split(".", 1)[0]
        chosen = [c for c in checks if family in c.checks or family == c.name]
        if not chosen:
            return []
        # The multi-node check measures the nodes together: it runs across them again, as it first ran.
        again = ",".join(checked) if family == "multinode" else ",".join(names)
        return _engine(name, partition, again, overrides, client=slurm.client).validate(
            chosen, tier=tier, only={family})

    return fleet_check([label], validate=validate, drain_cmd=drain_cmd, reports_dir=reports_dir,
                       busbw_drop_pct=busbw_drop_pct, progress=progress, rerun=rerun, max_drain=max_drain,
                       drain=slurm.drain if drain else None)
