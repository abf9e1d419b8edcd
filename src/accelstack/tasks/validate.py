"""``inv validate``: can this fleet train? Host checks, collectives and cluster checks, one record each."""

from __future__ import annotations

import sys

from invoke import task

from ..fanout import RunInterrupted
from ..inventory import load_inventory
from ..output import Reporter
from ..records import RunWriter
from .common import HELP_COMMON, boundary


@task(help={**HELP_COMMON,
            "tier": "quick (devices, versions, libraries, env, clock, init), standard (+ topology, memory, "
                    "storage, allreduce/allgather, ports, multi-node; default) or full (bigger sweeps)",
            "only": "comma-separated checks to run whatever the tier, e.g. devices,allreduce,multinode",
            "deadline": "seconds after which the multi-node run is killed on every host (default 120)"})
@boundary
def validate(c, inventory=None, limit=None, tier="standard", only=None, json=False, forks=64, deadline=None):
    """Validate hosts and the fleet: devices, versions, libraries, env, topology, memory, storage, collective
    init, single-node allreduce/allgather busbw, clock skew, ports and a multi-node allreduce with pairwise fault
    isolation. With no inventory it validates this machine, including a 2-rank gloo allreduce."""
    from ..validate import load_registry, select  # loaded when this task runs, not for every task
    from ..validate.run import validate_inventory

    wanted = {item.strip() for item in only.split(",") if item.strip()} if only else None
    select(load_registry(), tier, wanted)  # a bad --tier/--only is exit 3 before anything else
    inv = load_inventory(inventory)
    hosts = inv.select(limit)
    writer = RunWriter("validate", meta={"inventory": str(inv.path), "limit": limit, "tier": tier,
                                         "only": sorted(wanted) if wanted else None})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title=f"validate ({tier})")
    try:
        validate_inventory(inventory, tier=tier, limit=limit, only=wanted, reporter=reporter, forks=int(forks),
                           deadline_s=float(deadline) if deadline else None)
    except BaseException as stop:
        # The live panel off; on Ctrl-C the run folder is closed as interrupted, with every finished record.
        reporter.abort(interrupted=isinstance(stop, KeyboardInterrupt))
        if isinstance(stop, RunInterrupted):
            print(f"accelstack: {stop} (run {writer.path})", file=sys.stderr)
            return 130
        raise
    return reporter.finish()
