"""``inv facts``: what every host is and has installed, in one round trip per host."""

from __future__ import annotations

from typing import Any

from ..facts.gather import facts_record, gather_facts
from ..facts.render import facts_table
from ..results.output import Reporter
from ..results.records import RunWriter
from ..transport.fanout import HostPool
from .common import (
    HELP_COMMON,
    boundary,
    check_runs_folder,
    extra_vars,
    fanout_options,
    inventory_hosts,
    task,
    with_vars,
)


@task(help=HELP_COMMON, iterable=["set"])
@boundary
def facts(c: Any, inventory: str | None = None, limit: str | None = None, json: bool = False,
          forks: int | None = None, connect_timeout: float | None = None, set: list[str] | None = None) -> int:
    """Gather facts from every host: OS, CPUs, memory, NUMA, NICs, accelerators and the installed stack."""
    overrides = extra_vars(set or [])
    options = fanout_options(c, forks, connect_timeout, read_only=True)
    # A stack that does not exist is bad input, whatever task reads it.
    inv, selected = inventory_hosts(inventory, limit, overrides)
    hosts = with_vars(selected, overrides)
    check_runs_folder()
    writer = RunWriter("facts", meta={"inventory": str(inv.path), "limit": limit, "hosts": [h.name for h in hosts]})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title="facts")
    tables = []
    with HostPool(options) as pool:
        for outcome in gather_facts(pool, hosts):
            record = facts_record(outcome)
            reporter.add(record)
            if outcome.value is not None and not json:
                tables.append(facts_table(outcome.host.name, outcome.value))
    if not json:
        for table in sorted(tables, key=lambda t: str(t.title)):
            reporter.console.print(table)
    return reporter.finish()
