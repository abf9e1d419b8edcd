"""``inv validate``: can this fleet train? Host checks, collectives and cluster checks, one record each."""

from __future__ import annotations

from invoke import task

from ..inventory import load_inventory
from ..output import Reporter
from ..records import RunWriter
from .common import HELP_COMMON, boundary


@task(help={**HELP_COMMON,
            "tier": "quick (devices, versions, libraries, env, clock, init), standard (+ topology, memory, "
                    "storage, allreduce/allgather, ports, multi-node; default) or full (bigger sweeps)",
            "only": "comma-separated checks to run whatever the tier, e.g. devices,allreduce,multinode",
            "deadline": "seconds after which the multi-node run is killed on every host (default 120)",
            "engine": "ssh (default) or slurm: host checks on every node of a partition with one srun, no SSH",
            "partition": "--engine slurm: the partition (default: Slurm's default)",
            "nodes": "--engine slurm: a Slurm hostlist to validate, e.g. lab[1-4] (default: every node)"})
@boundary
def validate(c, inventory=None, limit=None, tier="standard", only=None, json=False, forks=64, deadline=None,
             engine="ssh", partition=None, nodes=None):
    """Validate hosts and the fleet: devices, versions, libraries, env, topology, memory, storage, collective
    init, single-node allreduce/allgather busbw, clock skew, ports and a multi-node allreduce with pairwise fault
    isolation. With no inventory it validates this machine, including a 2-rank gloo allreduce."""
    from ..validate import load_registry, select  # loaded when this task runs, not for every task
    from ..validate.run import validate_inventory

    wanted = {item.strip() for item in only.split(",") if item.strip()} if only else None
    select(load_registry(), tier, wanted)  # a bad --tier/--only is exit 3 before anything else
    if engine != "ssh":
        from ..validate.slurm import validate_slurm_task
        return validate_slurm_task(engine, tier=tier, only=wanted, json=json, partition=partition, nodes=nodes)
    inv = load_inventory(inventory)
    hosts = inv.select(limit)
    writer = RunWriter("validate", meta={"inventory": str(inv.path), "limit": limit, "tier": tier,
                                         "only": sorted(wanted) if wanted else None})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title=f"validate ({tier})")
    validate_inventory(inventory, tier=tier, limit=limit, only=wanted, reporter=reporter, forks=int(forks),
                       deadline_s=float(deadline) if deadline else None)
    return reporter.finish()
