"""``accelstack node-check``: this node's host checks, run on the node itself (Slurm's HealthCheckProgram, a prolog)."""

from __future__ import annotations

from typing import Any

from ..validate import checks, registry
from .common import boundary, task

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
    from .direct import node_check_command

    return node_check_command(tier=tier, only=only, json=json, drain=drain, config=config, node=node)


@task(help={"spec": "the step's JSON (deadline, run tag, node addresses), written by validate --engine slurm",
            "config": "the node file (default /etc/accelstack/node.yml)"})
@boundary
def node_collective(c: Any, spec: str, config: str | None = None) -> None:
    """One rank of the multi-node allreduce, as a task of a Slurm step (started by inv validate --engine slurm).

    Takes its rank and rendezvous from Slurm's environment; not meant to be run by hand."""
    from ..engines.slurm.node import exec_node_collective

    exec_node_collective(spec, node_file=config)
