"""A person's view of a provisioning plan (``inv provision --check``): one rich table, a row per change.

The renderer of this package; it belongs in ``provision/render.py``, the name every package gives its
renderers, once the jinja2 module that holds that name now is renamed.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.table import Table

from .plan import HostPlan


def plan_table(plans: Mapping[str, HostPlan]) -> Table:
    """Hosts in name order; a host's problems, or "no change", or each change: step, what, bytes, reboot."""
    table = Table(title="plan (--check: nothing was touched)")
    for column in ("host", "step", "change", "bytes", "reboot"):
        table.add_column(column, overflow="fold")
    for name in sorted(plans):
        plan = plans[name]
        if plan.problems:
            table.add_row(name, "-", "; ".join(plan.problems), "", "")
            continue
        if not plan.changes:
            table.add_row(name, "-", "no change", "0", "yes (pending)" if plan.reboot_pending else "no")
        for change in plan.changes:
            table.add_row(name, change.step, change.summary, str(change.bytes_to_transfer), change.reboot)
    return table
