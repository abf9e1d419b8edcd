"""``accelstack node-check``: this node's host checks, run here, with no SSH and no inventory.

The node's stack and settings come from the file provisioning renders on it (:mod:`accelstack.engines.node`). The
checks are the ones ``inv validate`` runs over SSH, through the same code (:func:`accelstack.engines.ssh.host.run_host`
on a local transport), so the records and the exit codes are the same. Its default tier, ``health``, is made to be
Slurm's ``HealthCheckProgram`` (it reads vendor tools, sysfs and files, imports no torch and opens no device, so it
runs beside jobs); ``quick`` is for a job prolog. With ``drain`` a ``fail`` drains the node through ``scontrol`` with
the cause in the reason (:mod:`accelstack.engines.slurm.drain`); an ``error`` (the check could not run) and a
``skip`` (a device another process holds) never drain.

This module runs at every health check on every node: it imports what a run needs and no more (no invoke, fabric,
paramiko or rich: tests/test_nodecheck.py holds it to that).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from ...engines.base import DrainResult, interrupt_guard
from ...engines.node import DEFAULT_NODE_TIER, check_tier, load_node_file, node_context
from ...engines.slurm.client import SlurmClient
from ...engines.slurm.drain import drain_node, drain_reason
from ...engines.slurm.node import apply_control_vars, slurm_node_name
from ...engines.slurm.nodes import NODE_VARS_ENV
from ...engines.ssh.host import run_host
from ...results.output import Reporter
from ...results.records import (
    Record,
    RecordSink,
    RunWriter,
    interrupted_record,
    prune_runs,
    runs_dir,
    whole_record,
)
from ...stacks.context import HostContext
from ...transport.connection import LocalTransport
from ...validate.config import tier_config
from ...validate.registry import Check, load_registry, select, validators_dir
from ...validate.thresholds import load_thresholds
from ...values import only_checks

# The flags of `node-check`, by parameter name: True for one that takes a value. The invoke task
# (accelstack.tasks.nodecheck) and its invoke-free command (tasks.direct) declare the same parameters (a test holds
# them together), and the console script parses a plain `accelstack node-check ...` line with this table (cli.py).
NODE_CHECK_FLAGS: dict[str, bool] = {"tier": True, "only": True, "json": False, "drain": False, "config": True,
                                     "node": True}


@dataclass
class NodeCheckResult:
    """One node-check run: its records, its exit code and the drain it asked for (None: no drain asked)."""

    records: list[Record]
    code: int
    drain: DrainResult | None = None


def node_check(*, tier: str = DEFAULT_NODE_TIER, only: str | None = None, json_lines: bool = False,
               drain: bool = False, config: str | None = None, node: str | None = None) -> NodeCheckResult:
    """``accelstack node-check``: check the flags and the node file (a problem is a ConfigError, exit 3, before
    anything runs), run the tier's checks here, write and show the records, keep the newest runs, drain on a
    fail when asked. Returns the records, the exit code (0 pass/warn/skip, 1 a fail, 2 an error) and the drain."""
    check_tier(tier)
    wanted = only_checks(only)
    select(load_registry(), tier, wanted)  # a bad --only is exit 3 before anything runs
    node_file = load_node_file(Path(config) if config else None)
    name = node or slurm_node_name()
    if os.environ.get(NODE_VARS_ENV):
        # Under `validate --engine slurm --inventory`: the inventory's vars for this node, over the node file's.
        apply_control_vars(node_file, name)
    ctx = node_context(node_file, name)
    # $ACCELSTACK_RUNS first, as everywhere (set but blank is unset: runs_dir's rule); then the node file's folder
    # (slurmd starts a health check in /, where a ./runs would land).
    from_env = os.environ.get("ACCELSTACK_RUNS", "").strip()
    base = None if from_env or not node_file.runs_dir else Path(node_file.runs_dir)
    writer = RunWriter("node-check", base=runs_dir(base),
                       meta={"node": name, "node_file": str(node_file.path), "tier": tier,
                             "only": sorted(wanted) if wanted else None, "drain": bool(drain)})
    reporter = Reporter(writer, json_lines=json_lines, total_hosts=1, title=f"node-check {name} ({tier})")
    try:
        records = run_node_check(ctx, tier=tier, only=wanted, reporter=reporter)
    except KeyboardInterrupt:
        # Ctrl-C (or slurmd's SIGINT): the run folder is closed as interrupted, with every finished record and the
        # checks cut short marked; no drain is asked for a run that did not finish.
        reporter.abort(interrupted=True)
        raise
    code = reporter.finish()
    prune_runs(writer.path.parent, "node-check", node_file.keep_runs, node=name)  # a check every few minutes adds up
    reason = drain_reason(records) if drain else None
    return NodeCheckResult(records, code, drain_node(SlurmClient(), name, reason) if reason is not None else None)


def run_node_check(ctx: HostContext, *, tier: str, only: set[str] | None = None,
                   reporter: RecordSink | None = None) -> list[Record]:
    """Every host-scope check of the tier, here, through the code ``inv validate`` runs over SSH
    (:func:`accelstack.engines.ssh.host.run_host` on a local transport): the scripts of one python in one interpreter,
    so the health tier is one system python start and one read of each vendor tool. Records go to ``reporter`` as
    each check's are judged, so a health check that slurmd kills at its own timeout keeps what finished."""
    validators = [v for v in select(load_registry(), tier, only) if v.scope == "host"]
    thresholds = load_thresholds().with_overrides(ctx.vars.get("thresholds"),
                                                  where=f"{ctx.host.source} vars.thresholds")
    config = tier_config(ctx, tier)
    transport = LocalTransport(ctx.host)
    cancelled = threading.Event()
    started: set[str] = set()
    done: list[Record] = []

    def cancel() -> None:
        # The validators run in a session of their own (a Ctrl-C at the terminal does not reach them): kill them.
        cancelled.set()
        transport.cancel()

    def on_start(validator: Check) -> None:
        started.add(validator.name)

    def on_done(_validator: object, batch: list[Record]) -> None:
        with whole_record():  # in the records returned and on the reporter both, or in neither
            done.extend(batch)
            if reporter is not None:
                reporter.add_all(batch)

    try:
        with interrupt_guard(cancel):
            try:
                records = run_host(transport, ctx, validators, validators_dir(), thresholds, tier=tier,
                                   config=config, on_start=on_start, on_done=on_done, stop=cancelled.is_set)
                if cancelled.is_set():
                    raise KeyboardInterrupt
                return records
            except KeyboardInterrupt:
                cancel()
                missing = _not_run(ctx.host.name, validators, done, started)
                with whole_record():
                    if reporter is not None:
                        reporter.add_all(missing)
                raise
    finally:
        transport.close()


def _not_run(host: str, validators: list[Check], done: list[Record], started: set[str]) -> list[Record]:
    """After Ctrl-C: an ``error`` record for each check of the run without one (it could not measure)."""
    have = {r.check for r in done}
    missing = []
    for validator in validators:
        for check in validator.checks:
            if check in have or any(name.startswith(check + ".") for name in have):
                continue
            missing.append(interrupted_record(host, check, cut_short=validator.name in started,
                                              rerun=f"accelstack node-check --only {check}"))
    return missing
