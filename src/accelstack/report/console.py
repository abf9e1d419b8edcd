"""The rich summary people read in a terminal: hosts by status, failing checks first, remedies,
regressions."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..results.output import STATUS_STYLE, records_table, render_to_text, status_text, totals_line
from .model import REGRESSION_COLUMNS, ReportData, host_status, regression_row, summary, verdict


def hosts_table(data: ReportData) -> Table:
    worst = host_status(data.records)
    table = Table(title="hosts by status", title_justify="left")
    table.add_column("status")
    table.add_column("hosts", overflow="fold")
    for status in ("fail", "error", "warn", "skip", "pass"):
        hosts = [host for host in data.hosts if worst[host] == status]
        if hosts:
            table.add_row(status_text(status), ", ".join(hosts))
    return table


def regressions_table(data: ReportData) -> Table:
    table = Table(title=f"regressions against baseline {data.baseline_run}", title_justify="left")
    for column in REGRESSION_COLUMNS:
        table.add_column(column)
    for regression in data.regressions:
        table.add_row(*regression_row(regression))
    return table


def rich_report(data: ReportData) -> RenderableType:
    info = summary(data)
    code = verdict(data.records, data.regressions)
    state = {0: ("healthy", "green"), 1: ("failures or regressions", "bold red"),
             2: ("hosts could not be checked", "magenta")}[code]
    header = Text.assemble(("run ", "dim"), (data.run_id, "bold"), ("  ", ""), (state[0], state[1]))
    if info["interrupted"]:
        header.append("  (interrupted: showing the records it finished)", style="yellow")
    parts: list[RenderableType] = [header, hosts_table(data)]
    problems = [r for r in data.records if r.status != "pass"]
    if problems:
        parts.append(records_table(problems, title="checks not passing (worst first)"))
    if data.regressions:
        parts.append(regressions_table(data))
    elif data.baseline_run is None:
        parts.append(Text("no baseline to compare with: `inv baseline --from RUN` sets one", style="dim"))
    parts.append(totals_line(data.records))
    return Group(*parts)


def render_rich(data: ReportData, width: int = 140) -> str:
    """Plain text, for ``--output FILE`` and tests; the task prints :func:`rich_report` in colour."""
    return render_to_text(rich_report(data), width=width)


__all__ = ["STATUS_STYLE", "render_rich", "rich_report"]
