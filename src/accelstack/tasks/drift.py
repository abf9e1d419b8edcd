"""``inv drift``: each host's installed stack against its pinned stack, component by component."""

from __future__ import annotations

from typing import Any

from ..facts.gather import gather_facts, probe_options_for
from ..results.output import Reporter
from ..results.records import RunWriter
from ..stacks import load_matrix, run_drift
from ..stacks.context import resolve_contexts
from ..stacks.render import drift_table
from ..transport.fanout import HostPool
from .common import (
    HELP_COMMON,
    boundary,
    check_runs_folder,
    extra_vars,
    fanout_options,
    inventory_hosts,
    task,
)


@task(help=HELP_COMMON, iterable=["set"])
@boundary
def drift(c: Any, inventory: str | None = None, limit: str | None = None, json: bool = False,
          forks: int | None = None, connect_timeout: float | None = None, set: list[str] | None = None) -> int:
    """Compare each host's installed stack with its pinned stack; each record names the fix.

    Fails where the installed set breaks a compatibility rule, warns for other differences; the fix is a
    re-provision, or the pin to change.
    """
    overrides = extra_vars(set or [])
    options = fanout_options(c, forks, connect_timeout, read_only=True)
    inv, hosts = inventory_hosts(inventory, limit, overrides)
    # drift reports a bad pin; it does not refuse it
    contexts = resolve_contexts(hosts, overrides=overrides or None, run_preflight=False)
    matrix = load_matrix()
    check_runs_folder()
    writer = RunWriter("drift", meta={"inventory": str(inv.path), "limit": limit})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title="drift")
    with HostPool(options) as pool:
        outcomes = gather_facts(pool, hosts, lambda h: probe_options_for(h, contexts[h.name]))
        for outcome in outcomes:
            installed = outcome.error if outcome.error else outcome.value.components()  # type: ignore[union-attr]
            stacks = {outcome.host.name: contexts[outcome.host.name].stack}
            reporter.add_all(run_drift({outcome.host.name: installed}, stacks, matrix))
    return reporter.finish(extra=None if json else drift_table(writer.records))
