"""Rendering a diagnosis for people: one panel per finding, root cause first. JSON needs no renderer."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .engine import Diagnosis
from .findings import EvidenceLine, Finding


def render_diagnosis(diagnosis: Diagnosis) -> RenderableType:
    if not diagnosis.findings:
        sources = ", ".join(diagnosis.sources) or "input"
        return Text(f"No known failure signature in {diagnosis.lines_read} lines of {sources}.", style="green")
    panels: list[RenderableType] = []
    for index, finding in enumerate(diagnosis.findings, start=1):
        panels.append(_panel(index, finding))
    first = diagnosis.first_failure
    if first is not None and len(diagnosis.sources) > 1:
        line = first.earliest or first.first_line
        panels.append(Text(f"first failure: {first.cause} {_origin(line)}", style="bold"))
    for note in diagnosis.truncated:
        panels.append(Text(f"cut short: {note}", style="yellow"))
    return Group(*panels)


def _origin(line: EvidenceLine) -> str:
    parts = [f"rank {line.rank}" if line.rank is not None else "", f"on {line.host}" if line.host else "",
             f"at {line.time}" if line.time else "", f"({line.where()})"]
    return " ".join(part for part in parts if part)


def _panel(index: int, finding: Finding) -> Panel:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("why", finding.explanation)
    parts: list[Text] = []
    for line in finding.evidence:
        rank = f" [rank {line.rank}]" if line.rank is not None else ""
        host = f" [{line.host}]" if line.host else ""
        parts.append(Text(f"{line.where()}{rank}{host}", style="dim"))
        parts.append(Text(f"  {line.text}"))
    more = finding.evidence_count - len(finding.evidence)
    if more > 0:
        parts.append(Text(f"... and {more} more matching line(s)", style="dim"))
    grid.add_row("evidence", Text("\n").join(parts))
    if finding.extracted:
        grid.add_row("extracted", ", ".join(f"{key}={value}" for key, value in finding.extracted.items()))
    grid.add_row("remedy", finding.remedy)
    grid.add_row("confirm", f"validator `{finding.confirm_with}`")
    grid.add_row("source", Text(finding.source_ref, style="dim"))
    label = "root cause" if index == 1 else ("consequence" if finding.consequence_of else "also")
    style = "red" if index == 1 else ("yellow" if finding.consequence_of else "blue")
    title = f"{index}. {finding.cause}: {finding.title} ({label}, {finding.vendor})"
    return Panel(grid, title=title, title_align="left", border_style=style)
