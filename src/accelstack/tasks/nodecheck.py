"""``accelstack node-check``: this node's host checks, run on the node itself (Slurm's HealthCheckProgram, a prolog)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..validate import checks, registry
from .common import boundary, only_checks, task

# The help comes from the check declarations (validate/checks/): the host-scope ones are the node's.
DECLARED = registry.load_registry()
HOST_CHECKS = [check for check in DECLARED if check.scope == "host"]


@task(help={"tier": checks.tier_help(HOST_CHECKS, tiers=("health", "quick", "standard"), default="health"),
            "only": checks.only_help(HOST_CHECKS),
            "json": "print JSON Lines records on stdout instead of a table",
            "drain": "on a fail, drain this node: scontrol update nodename=NODE state=drain "
                     "reason=\"accelstack: CHECK: SUMMARY\" (an error never drains)",
            "config": "the node file (default /etc/accelstack/node.yml, rendered by inv provision)",
            "node": "the Slurm node name (default $SLURMD_NODENAME, else the short hostname)"})
@boundary
def node_check(c: Any, tier: str = "health", only: str | None = None, json: bool = False, drain: bool = False,
               config: str | None = None, node: str | None = None) -> int:
    """Run this node's host checks here, with no SSH and no inventory.

    The stack and settings come from the node file provisioning wrote. Same records and exit codes as inv validate.
    The default tier, health, reads vendor tools and files only (no torch, no device context): Slurm's
    HealthCheckProgram, beside running jobs. --tier quick adds torch and the communication library: a job prolog
    (PrologFlags=Alloc). --drain drains the node on a fail (never on an error or a skip)."""
    from ..nodecheck import (
        check_tier,
        drain_node,
        drain_reason,
        load_node_file,
        node_context,
        run_node_check,
        slurm_node_name,
    )
    from ..results.output import Reporter
    from ..results.records import RunWriter, prune_runs, runs_dir
    from ..validate.registry import select

    check_tier(tier)
    wanted = only_checks(only)
    select(DECLARED, tier, wanted)  # a bad --only is exit 3 before anything runs
    node_file = load_node_file(Path(config) if config else None)
    name = node or slurm_node_name()
    from ..validate.slurm import apply_control_vars

    apply_control_vars(node_file, name)  # under `validate --engine slurm --inventory`: the inventory's vars
    ctx = node_context(node_file, name)
    # $ACCELSTACK_RUNS first, as everywhere (set but blank is unset: runs_dir's rule); then the node file's folder
    # (slurmd starts a health check in /, where a ./runs would land).
    from_env = os.environ.get("ACCELSTACK_RUNS", "").strip()
    base = None if from_env or not node_file.runs_dir else Path(node_file.runs_dir)
    writer = RunWriter("node-check", base=runs_dir(base),
                       meta={"node": name, "node_file": str(node_file.path), "tier": tier,
                             "only": sorted(wanted) if wanted else None, "drain": bool(drain)})
    reporter = Reporter(writer, json_lines=json, total_hosts=1, title=f"node-check {name} ({tier})")
    records = run_node_check(ctx, tier=tier, only=wanted, reporter=reporter)
    code = reporter.finish()
    prune_runs(writer.path.parent, "node-check", node_file.keep_runs, node=name)  # a check every few minutes adds up
    reason = drain_reason(records) if drain else None
    if reason is not None:
        outcome = drain_node(name, reason)
        if outcome.ok:
            print(f"accelstack: drained {name}: {reason}", file=sys.stderr)
        else:
            print(f"accelstack: could not drain {name} ({outcome.message}); reason was: {reason}", file=sys.stderr)
    return code


@task(help={"spec": "the step's JSON (deadline, run tag, node addresses), written by validate --engine slurm",
            "config": "the node file (default /etc/accelstack/node.yml)"})
@boundary
def node_collective(c: Any, spec: str, config: str | None = None) -> None:
    """One rank of the multi-node allreduce, as a task of a Slurm step (started by inv validate --engine slurm).

    Takes its rank and rendezvous from Slurm's environment; not meant to be run by hand."""
    from ..validate.slurm_collective import exec_node_collective

    exec_node_collective(spec, node_file=config)
