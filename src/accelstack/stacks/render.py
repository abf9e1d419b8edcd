"""A person's view of stacks: drift (a rich table of :func:`accelstack.stacks.drift.drift_rows`, one row per record)
and the shipped stacks with their preflight verdicts (``inv stack.list``)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from ..results.output import STATUS_STYLE
from ..results.records import Record
from ..vendors import get_vendor
from .compat import Violation
from .drift import drift_rows
from .model import Stack


def drift_table(records: list[Record], *, title: str = "drift") -> Table:
    """A rich table, worst first within each host, one row per record."""
    table = Table(title=title)
    for column in ("host", "component", "status", "installed", "pinned", "detail"):
        table.add_column(column, overflow="fold")
    for row in drift_rows(records):
        table.add_row(row.host, row.component, Text(row.status, style=STATUS_STYLE.get(row.status, "")),
                      row.installed, row.pinned, row.detail)
    return table


def key_pins(stack: Stack) -> str:
    """The pins `inv stack.list` shows for a stack: its vendor's (Vendor.listed_pins), in that order, where the stack
    has them."""
    pins = stack.components
    return ", ".join(f"{key} {pins[key]}" for key in get_vendor(stack.vendor).listed_pins if key in pins)


def stacks_table(verdicts: Sequence[tuple[Stack, Sequence[Violation]]]) -> Table:
    """Each stack with its key pins and its preflight verdict: OK, or the rules its ``error`` violations break."""
    table = Table(title="stacks")
    table.add_column("name", no_wrap=True)
    for column in ("vendor", "backend", "pins", "preflight", "description"):
        table.add_column(column, overflow="fold")
    for stack, errors in verdicts:
        verdict = Text("OK", style="green") if not errors else Text(
            "refused: " + ", ".join(sorted({v.rule for v in errors})), style="bold red")
        table.add_row(stack.name, stack.vendor, stack.backend, key_pins(stack), verdict, stack.description)
    return table
