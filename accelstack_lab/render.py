"""A person's view of the lab: one row per host of :meth:`accelstack_lab.Lab.status`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table


def status_table(rows: Sequence[dict[str, Any]]) -> Table:
    """Each lab host: address, namespace, anchor, sshd, link state and injected faults."""
    table = Table(title="lab")
    for column in ("host", "address", "netns", "anchor", "sshd", "link", "faults"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(", ".join(v) if isinstance(v, list) else str(v) for v in row.values()))
    return table
