"""``inv drift``: each host's installed stack against its pinned stack, component by component."""

from __future__ import annotations

from invoke import task

from ..context import resolve_contexts
from ..fanout import FanoutOptions, Fleet
from ..gather import gather_facts, probe_options_for
from ..inventory import load_inventory
from ..output import Reporter
from ..records import RunWriter
from ..stacks import drift_table, load_matrix, run_drift
from .common import HELP_COMMON, boundary


@task(help=HELP_COMMON)
@boundary
def drift(c, inventory=None, limit=None, json=False, forks=64):
    """Compare each host's facts with its stack: fail where the installed set breaks a compatibility rule,
    warn for other differences; each record names the fix (re-provision, or which pin to change)."""
    inv = load_inventory(inventory)
    hosts = inv.select(limit)
    contexts = resolve_contexts(hosts, run_preflight=False)  # drift reports a bad pin; it does not refuse it
    matrix = load_matrix()
    writer = RunWriter("drift", meta={"inventory": str(inv.path), "limit": limit})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title="drift")
    with Fleet(FanoutOptions(forks=int(forks))) as fleet:
        outcomes = gather_facts(fleet, hosts, lambda h: probe_options_for(h, contexts[h.name]))
        for outcome in outcomes:
            installed = outcome.error if outcome.error else outcome.value.components()  # type: ignore[union-attr]
            stacks = {outcome.host.name: contexts[outcome.host.name].stack}
            reporter.add_all(run_drift({outcome.host.name: installed}, stacks, matrix))
    return reporter.finish(extra=None if json else drift_table(writer.records))
