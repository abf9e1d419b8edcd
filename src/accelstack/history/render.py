"""A person's view of the history index: records across runs, and the drains the fleet check made."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from ..results.metrics import peak_busbw
from ..results.output import status_text
from .queries import DrainEntry, HistoryEntry


def history_table(entries: Sequence[HistoryEntry]) -> Table:
    """One row per record, oldest first: when, which run, host, check, status, peak busbw and summary."""
    table = Table(title=f"history ({len(entries)} record(s))", title_justify="left")
    for column in ("time", "run", "host", "check", "status", "busbw GB/s", "summary"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        record = entry.record
        busbw = peak_busbw(record)
        table.add_row(record.ts, entry.run_id, record.host, record.check, status_text(record.status),
                      "" if busbw is None else f"{busbw:g}", record.summary)
    return table


def drains_table(entries: Sequence[DrainEntry]) -> Table:
    """One row per drain: when, which run, host, why, the command and how it exited."""
    table = Table(title=f"drains ({len(entries)})", title_justify="left")
    for column in ("time", "run", "host", "reason", "command", "exit"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        table.add_row(entry.ts, entry.run_id, entry.host, entry.reason, entry.command,
                      "timed out" if entry.exit_status is None else str(entry.exit_status))
    return table
