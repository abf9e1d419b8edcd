"""Output is a layer: core code produces records; reporters render them.

``Reporter`` is what a task hands its records to as they arrive: it writes them to the run folder first (so
nothing is lost), then shows them. With ``--json``: JSON Lines on stdout and nothing else. On a terminal: each
record as it arrives, a live panel of what runs now on each host and for how long, and a table at the end.
Without a terminal (cron, CI logs): plain text, one line per record as it arrives, then the totals; no table
(at 80 columns a table wraps each cell over several lines). Tests render to a string with
:func:`render_to_text`.

rich is imported only where something is drawn with it: JSON Lines and plain text never import it (start-up
CPU that a fleet-wide ``--json`` run pays for nothing; tests/test_engine_costs.py checks).
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.table import Table
    from rich.text import Text

from .records import SEVERITY, Record, RunWriter, exit_code_for

STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "error": "magenta", "skip": "dim"}


def status_text(status: str) -> Text:
    from rich.text import Text

    return Text(status.upper(), style=STATUS_STYLE.get(status, ""))


def records_table(records: Iterable[Record], *, title: str | None = None) -> Table:
    """Hosts x checks, worst first, with the remedy where there is one."""
    from rich.table import Table

    table = Table(title=title, show_lines=False, expand=False)
    table.add_column("host", style="bold")
    table.add_column("check")
    table.add_column("status")
    table.add_column("summary", overflow="fold")
    ordered = sorted(records, key=lambda r: (-SEVERITY.get(r.status, 0), r.host, r.check))
    remedies = any(record.remedy for record in ordered)
    if remedies:  # an empty remedy column would still take its share of the width
        table.add_column("remedy", overflow="fold", style="cyan")
    for record in ordered:
        cells: list[RenderableType] = [record.host, record.check, status_text(record.status), record.summary]
        table.add_row(*cells, *([record.remedy or ""] if remedies else []))
    return table


def _one_line(text: str) -> str:
    return " ".join(text.split())


def plain_line(record: Record) -> str:
    """A record as one line of plain text, for logs: ``STATUS host check: summary [remedy: ...]``."""
    line = f"{record.status.upper():<5} {record.host} {record.check}: {_one_line(record.summary)}"
    if record.remedy:
        line += f" [remedy: {_one_line(record.remedy)}]"
    return line


def plain_totals(records: list[Record]) -> str:
    counts = Counter(record.status for record in records)
    hosts = len({record.host for record in records})
    parts = [f"{counts[s]} {s}" for s in ("pass", "warn", "fail", "error", "skip") if counts.get(s)]
    return f"{hosts} host(s): " + (", ".join(parts) or "no records")


def _elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class RunningPanel:
    """What runs now, per host and check, with how long it has run; rendered afresh at each refresh."""

    MAX_HOSTS = 20

    def __init__(self, total_hosts: int) -> None:
        self.total_hosts = total_hosts
        self.running: dict[str, dict[str, float]] = {}
        self.hosts_seen: set[str] = set()
        self.records = 0
        self.lock = threading.Lock()

    def begin(self, host: str, check: str, now: float | None = None) -> None:
        with self.lock:
            self.running.setdefault(host, {})[check] = time.monotonic() if now is None else now

    def end(self, host: str, check: str) -> None:
        with self.lock:
            checks = self.running.get(host)
            if checks is not None:
                checks.pop(check, None)
                if not checks:
                    del self.running[host]

    def render(self, now: float | None = None) -> Text:
        from rich.text import Text

        now = time.monotonic() if now is None else now
        with self.lock:
            rows = sorted(self.running.items())
            header = Text(f"{self.records} record(s) from {len(self.hosts_seen)}/{self.total_hosts or '?'} "
                          f"host(s); running now:" if rows else f"{self.records} record(s)", style="dim")
            lines = [header]
            for host, checks in rows[:self.MAX_HOSTS]:
                items = ", ".join(f"{c} {_elapsed(now - t)}" for c, t in sorted(checks.items(), key=lambda i: i[1]))
                lines.append(Text.assemble(("  " + host, "bold"), f"  {items}"))
            if len(rows) > self.MAX_HOSTS:
                lines.append(Text(f"  ... and {len(rows) - self.MAX_HOSTS} more host(s)", style="dim"))
        return Text("\n").join(lines)

    def __rich__(self) -> RenderableType:
        from rich.console import Group

        return Group(self.render())


def totals_line(records: list[Record]) -> Text:
    from rich.text import Text

    counts = Counter(record.status for record in records)
    hosts = len({record.host for record in records})
    parts = [Text(f"{hosts} host(s): ")]
    for status in ("pass", "warn", "fail", "error", "skip"):
        if counts.get(status):
            parts.append(Text(f"{counts[status]} {status}  ", style=STATUS_STYLE[status]))
    return Text.assemble(*parts)


def render_to_text(renderable: RenderableType, width: int = 160) -> str:
    from rich.console import Console

    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


class Reporter:
    """Receives records as checks end: persist, then show (see the module's docstring for what is shown where).

    ``begin(host, check)`` and ``end(host, check)`` feed the live panel of what runs now (terminal only)."""

    def __init__(self, writer: RunWriter, *, json_lines: bool = False, stdout: IO[str] | None = None,
                 total_hosts: int = 0, title: str = "", terminal: bool | None = None) -> None:
        self.writer = writer
        self.json_lines = json_lines
        self.stdout = stdout or sys.stdout
        self._force_terminal = terminal
        self._console: Console | None = None
        self._terminal = terminal
        self.total_hosts = total_hosts
        self.title = title
        self.panel = RunningPanel(total_hosts)
        self._live: Live | None = None
        self._lock = threading.Lock()

    @property
    def console(self) -> Console:
        """The rich console on stdout, made (and rich imported) when something is first drawn."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stdout, force_terminal=self._force_terminal)
        return self._console

    @property
    def terminal(self) -> bool:
        """Whether stdout is a terminal, as rich decides it; a stream that is no tty, with neither of the
        variables that rich lets override that, is decided without importing rich."""
        if self._terminal is None:
            isatty = getattr(self.stdout, "isatty", None)
            try:
                plain = isatty is None or not isatty()
            except ValueError:  # a closed stream
                plain = True
            overridden = "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ
            self._terminal = False if plain and not overridden else self.console.is_terminal
        return self._terminal

    @property
    def interactive(self) -> bool:
        return not self.json_lines and self.terminal

    def begin(self, host: str, check: str) -> None:
        if not self.interactive:
            return
        self.panel.begin(host, check)
        with self._lock:
            if self._live is None:
                from rich.live import Live

                self._live = Live(self.panel, console=self.console, refresh_per_second=2, transient=True)
                self._live.start()

    def end(self, host: str, check: str) -> None:
        self.panel.end(host, check)

    def add(self, record: Record) -> None:
        line = self.writer.write_line(record)  # encoded once: the same line goes to the file and to stdout
        with self._lock:
            self.panel.hosts_seen.add(record.host)
            self.panel.records += 1
            if self.json_lines:
                self.stdout.write(line + "\n")
                self.stdout.flush()
            elif self.interactive:
                from rich.text import Text

                self.console.print(Text.assemble(status_text(record.status), f" {record.host} {record.check}: ",
                                                 _one_line(record.summary)), highlight=False, overflow="ellipsis",
                                   no_wrap=True)
            else:
                self.stdout.write(plain_line(record) + "\n")
                self.stdout.flush()

    def add_all(self, records: Iterable[Record]) -> None:
        for record in records:
            self.add(record)

    def _stop_live(self) -> None:
        with self._lock:
            live, self._live = self._live, None
        if live is not None:
            live.stop()

    def abort(self, *, interrupted: bool = True) -> None:
        """The run stopped early: the live panel off; on an interrupt the run folder is closed, marked so."""
        self._stop_live()
        if interrupted:
            self.writer.close(interrupted=True)

    def finish(self, extra: RenderableType | None = None) -> int:
        self._stop_live()
        self.writer.close()
        records = self.writer.records
        if self.json_lines:
            return exit_code_for(records)
        if extra is not None:
            self.console.print(extra)
        run_line = f"run {self.writer.run_id}: {self.writer.path}/results.jsonl"
        if self.interactive:
            from rich.text import Text

            self.console.print(records_table(records, title=self.title or None))
            self.console.print(totals_line(records))
            self.console.print(Text(run_line, style="dim"))
        else:
            self.stdout.write(plain_totals(records) + "\n" + run_line + "\n")
            self.stdout.flush()
        return exit_code_for(records)


def dict_table(title: str, data: dict[str, Any]) -> Table:
    from rich.table import Table

    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        table.add_row(key, "" if value is None else str(value))
    return table
