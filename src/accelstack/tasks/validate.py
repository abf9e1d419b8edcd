"""``inv validate``: can this fleet train? Host checks, collectives and cluster checks, one record each."""

from __future__ import annotations

import sys
from typing import Any

from ..results.output import Reporter
from ..results.records import RunWriter
from ..transport.fanout import RunInterrupted
from ..validate import checks, registry
from .common import (
    HELP_COMMON,
    boundary,
    check_runs_folder,
    default_text,
    explicit_setting,
    extra_vars,
    inventory_hosts,
    only_checks,
    setting,
    task,
)

# The help comes from the check declarations (validate/checks/): a new check shows up here by itself.
DECLARED = registry.load_registry()


@task(help={**HELP_COMMON,
            "tier": checks.tier_help(DECLARED),
            "only": checks.only_help(DECLARED),
            "deadline": "seconds after which the multi-node run is killed on every host " + default_text("deadline"),
            "engine": "ssh (default) or slurm: host checks on every node of a partition with one srun and the "
                      "multi-node allreduce as one Slurm step, no SSH",
            "partition": "--engine slurm: the partition (default: Slurm's default)",
            "nodes": "--engine slurm: a Slurm hostlist to validate, e.g. lab[1-4] (default: every node)"},
      iterable=["set"])
@boundary
def validate(c: Any, inventory: str | None = None, limit: str | None = None, tier: str = "standard",
             only: str | None = None, json: bool = False, forks: int | None = None,
             connect_timeout: float | None = None, deadline: float | None = None,
             set: list[str] | None = None, engine: str = "ssh", partition: str | None = None,
             nodes: str | None = None) -> int:
    """Validate hosts and the fleet: can they train?

    Every check of the tier (listed under --tier) on every host, then the cluster checks: clock skew, ports
    and a multi-node allreduce whose faults are isolated by bisection. With no inventory it validates this
    machine, including a 2-rank gloo allreduce.
    """
    from ..engines.ssh.run import validate_inventory
    from ..validate import select  # loaded when this task runs, not for every task

    forks_n = setting(c, "forks", forks)
    connect_s = setting(c, "connect_timeout", connect_timeout)
    # None unless asked: the inventory's multinode_deadline_s, then the built-in default, apply on the hosts.
    deadline_s = explicit_setting(c, "deadline", deadline)
    overrides = extra_vars(set or [])
    wanted = only_checks(only)
    select(DECLARED, tier, wanted)  # a bad --tier/--only is exit 3 before anything else
    from ._slurm import check_engine_flags

    check_engine_flags(engine, partition=partition, nodes=nodes, limit=limit, forks=forks,
                       connect_timeout=connect_timeout)
    if engine != "ssh":
        from ._slurm import validate_slurm_task
        return validate_slurm_task(engine, tier=tier, only=wanted, json=json, partition=partition, nodes=nodes,
                                   inventory=inventory, overrides=overrides or None, deadline_s=deadline_s)
    inv, hosts = inventory_hosts(inventory, limit, overrides)
    check_runs_folder()
    writer = RunWriter("validate", meta={"inventory": str(inv.path), "limit": limit, "tier": tier,
                                         "only": sorted(wanted) if wanted else None})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title=f"validate ({tier})")
    try:
        validate_inventory(inv, hosts, tier=tier, only=wanted, reporter=reporter, forks=forks_n,
                           deadline_s=deadline_s, overrides=overrides or None, connect_timeout=connect_s)
    except BaseException as stop:
        # The live panel off; on Ctrl-C the run folder is closed as interrupted, with every finished record.
        reporter.abort(interrupted=isinstance(stop, KeyboardInterrupt))
        if isinstance(stop, RunInterrupted):
            print(f"accelstack: {stop} (run {writer.path})", file=sys.stderr)
            return 130
        raise
    return reporter.finish()
