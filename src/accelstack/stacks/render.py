"""A person's view of drift: a rich table of :func:`accelstack.stacks.drift.drift_rows`, one row per record."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..results.output import STATUS_STYLE
from ..results.records import Record
from .drift import drift_rows


def drift_table(records: list[Record], *, title: str = "drift") -> Table:
    """A rich table, worst first within each host, one row per record."""
    table = Table(title=title)
    for column in ("host", "component", "status", "installed", "pinned", "detail"):
        table.add_column(column, overflow="fold")
    for row in drift_rows(records):
        table.add_row(row.host, row.component, Text(row.status, style=STATUS_STYLE.get(row.status, "")),
                      row.installed, row.pinned, row.detail)
    return table
