"""``inv facts``: what every host is and has installed, in one round trip per host."""

from __future__ import annotations

from invoke import task

from ..facts.render import facts_table
from ..fanout import FanoutOptions, Fleet
from ..gather import facts_record, gather_facts
from ..inventory import load_inventory
from ..output import Reporter
from ..records import RunWriter
from .common import HELP_COMMON, boundary


@task(help={**HELP_COMMON, "connect_timeout": "seconds to wait for an SSH connection (default 10)"})
@boundary
def facts(c, inventory=None, limit=None, json=False, forks=64, connect_timeout=10.0):
    """Gather facts from every host: OS, CPUs, memory, NUMA, NICs, accelerators, and the stack as installed."""
    inv = load_inventory(inventory)
    hosts = inv.select(limit)
    options = FanoutOptions(forks=int(forks), connect_timeout=float(connect_timeout))
    writer = RunWriter("facts", meta={"inventory": str(inv.path), "limit": limit, "hosts": [h.name for h in hosts]})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title="facts")
    tables = []
    with Fleet(options) as fleet:
        for outcome in gather_facts(fleet, hosts):
            record = facts_record(outcome)
            reporter.add(record)
            if outcome.value is not None and not json:
                tables.append(facts_table(outcome.host.name, outcome.value))
    if not json:
        for table in sorted(tables, key=lambda t: str(t.title)):
            reporter.console.print(table)
    return reporter.finish()

