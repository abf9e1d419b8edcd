"""Output is a layer: core code produces records; reporters render them.

``Reporter`` is what a task hands its records to as they arrive: it writes them to the run folder first (so
nothing is lost), then shows them: JSON Lines on stdout with ``--json``, otherwise a live progress line on
stderr and a rich table at the end. Tests render to a string with :func:`render_to_text`.
"""

from __future__ import annotations

import io
import sys
from collections import Counter
from collections.abc import Iterable
from typing import IO, Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from .records import SEVERITY, Record, RunWriter, exit_code_for

STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "error": "magenta", "skip": "dim"}


def status_text(status: str) -> Text:
    return Text(status.upper(), style=STATUS_STYLE.get(status, ""))


def records_table(records: Iterable[Record], *, title: str | None = None) -> Table:
    """Hosts x checks, worst first, with the remedy where there is one."""
    table = Table(title=title, show_lines=False, expand=False)
    table.add_column("host", style="bold")
    table.add_column("check")
    table.add_column("status")
    table.add_column("summary", overflow="fold")
    table.add_column("remedy", overflow="fold", style="cyan")
    ordered = sorted(records, key=lambda r: (-SEVERITY.get(r.status, 0), r.host, r.check))
    for record in ordered:
        table.add_row(record.host, record.check, status_text(record.status), record.summary, record.remedy or "")
    return table


def totals_line(records: list[Record]) -> Text:
    counts = Counter(record.status for record in records)
    hosts = len({record.host for record in records})
    parts = [Text(f"{hosts} host(s): ")]
    for status in ("pass", "warn", "fail", "error", "skip"):
        if counts.get(status):
            parts.append(Text(f"{counts[status]} {status}  ", style=STATUS_STYLE[status]))
    return Text.assemble(*parts)


def render_to_text(renderable: RenderableType, width: int = 160) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


class Reporter:
    """Receives records as hosts finish: persist, then show."""

    def __init__(self, writer: RunWriter, *, json_lines: bool = False, stdout: IO[str] | None = None,
                 total_hosts: int = 0, title: str = "") -> None:
        self.writer = writer
        self.json_lines = json_lines
        self.stdout = stdout or sys.stdout
        self.console = Console(file=self.stdout)
        self.progress = Console(file=sys.stderr, stderr=True)
        self.total_hosts = total_hosts
        self.title = title
        self._hosts_seen: set[str] = set()

    def add(self, record: Record) -> None:
        self.writer.write(record)
        self._hosts_seen.add(record.host)
        if self.json_lines:
            self.stdout.write(record.to_json() + "\n")
            self.stdout.flush()
        elif self.progress.is_terminal:
            self.progress.print(f"[{len(self._hosts_seen)}/{self.total_hosts}] {record.host} {record.check}: "
                                f"[{STATUS_STYLE.get(record.status, '')}]{record.status}[/]", highlight=False)

    def add_all(self, records: Iterable[Record]) -> None:
        for record in records:
            self.add(record)

    def finish(self, extra: RenderableType | None = None) -> int:
        self.writer.close()
        records = self.writer.records
        if not self.json_lines:
            if extra is not None:
                self.console.print(extra)
            self.console.print(records_table(records, title=self.title or None))
            self.console.print(totals_line(records))
            self.console.print(Text(f"run {self.writer.run_id}: {self.writer.path}/results.jsonl", style="dim"))
        return exit_code_for(records)


def dict_table(title: str, data: dict[str, Any]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        table.add_row(key, "" if value is None else str(value))
    return table
