"""Rendering a diagnosis for people: who acts first, then one panel per finding, root cause first. JSON needs no
renderer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .diagnosis import Diagnosis
from .findings import EvidenceLine, Finding

if TYPE_CHECKING:
    from .confirm import Confirmation

# What each actor does with a finding: the first thing a reader needs, before the why.
WHO_ACTS = {
    "node": "the node: drain or repair it, but only once a host check confirms (diagnose --host)",
    "job": "the job's owner: the program's own error; do not drain the node",
    "config": "the launch: fix its settings, environment or versions",
    "service": "a service: storage, network, rendezvous or the scheduler",
}
_ACTOR_STYLE = {"node": "bold red", "job": "bold magenta", "config": "bold yellow", "service": "bold cyan"}


def render_diagnosis(diagnosis: Diagnosis) -> RenderableType:
    parts: list[RenderableType] = []
    if not diagnosis.findings:
        sources = ", ".join(diagnosis.sources) or "input"
        parts.append(Text(f"No failure found in {diagnosis.lines_read} lines of {sources}: no known signature, no "
                          "error a table names, no failure in the logs' structure (traceback, signal, scheduler "
                          "end).", style="green"))
    else:
        root = diagnosis.findings[0]
        lead = Text("who acts: ", style="bold")
        lead.append(root.actor, style=_ACTOR_STYLE.get(root.actor, "bold"))
        lead.append(f" ({WHO_ACTS.get(root.actor, root.actor)}), for {root.cause} {_origin(root.first_line)}")
        parts.append(lead)
    for index, finding in enumerate(diagnosis.findings, start=1):
        parts.append(_panel(index, finding))
    first = diagnosis.first_failure
    if first is not None and len(diagnosis.sources) > 1:
        line = first.earliest or first.first_line
        parts.append(Text(f"first failure: {first.cause} {_origin(line)}", style="bold"))
    for note in diagnosis.truncated:
        parts.append(Text(f"cut short: {note}", style="yellow"))
    for note in diagnosis.skipped:
        parts.append(Text(f"skipped: {note}", style="yellow"))
    return Group(*parts)


def render_confirmation(confirmation: Confirmation) -> RenderableType:
    """One line per finding: what the host's checks say about it, and whether that is a reason to drain."""
    from .confirm import CONFIRMED, NO_CHECK, NOT_CONFIRMED

    lines: list[Text] = []
    for item in confirmation.findings:
        checks = ", ".join(item.checks)
        if item.status == NO_CHECK:
            text, style = "no host check confirms this cause", "dim"
        elif item.status == CONFIRMED:
            text, style = f"confirmed: {checks} failed on {confirmation.host}", "red"
        elif item.status == NOT_CONFIRMED:
            text, style = f"not confirmed: {checks} found {confirmation.host} good", "green"
        else:
            text, style = f"could not tell: {checks} did not measure {confirmation.host}", "yellow"
        lines.append(Text(f"{item.cause} ({item.actor}): {text}", style=style))
    verdict = ("drain: a node finding is confirmed on the host" if confirmation.drain
               else "no drain: no node finding is confirmed on the host")
    lines.append(Text(verdict, style="bold red" if confirmation.drain else "bold green"))
    return Group(*lines)


def _origin(line: EvidenceLine) -> str:
    parts = [f"rank {line.rank}" if line.rank is not None else "", f"on {line.host}" if line.host else "",
             f"at {line.time}" if line.time else "", f"({line.where()})"]
    return " ".join(part for part in parts if part)


def _panel(index: int, finding: Finding) -> Panel:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("who acts", Text(f"{finding.actor}: {WHO_ACTS.get(finding.actor, finding.actor)}",
                                  style=_ACTOR_STYLE.get(finding.actor, "")))
    grid.add_row("why", Text(finding.explanation))
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
        grid.add_row("extracted", Text(", ".join(f"{key}={value}" for key, value in finding.extracted.items())))
    grid.add_row("remedy", Text(finding.remedy))
    if finding.confirm_with:
        grid.add_row("confirm", Text(f"check `{finding.confirm_with}` on the host (diagnose --host HOST)"))
    grid.add_row("source", Text(finding.source_ref, style="dim"))
    label = "root cause" if index == 1 else ("consequence" if finding.consequence_of else "also")
    style = "red" if index == 1 else ("yellow" if finding.consequence_of else "blue")
    # A Text title: the actor's brackets and the quoted error are words, not rich markup.
    title = Text(f"{index}. [{finding.actor}] {finding.cause}: {finding.title} ({label}, {finding.vendor})")
    return Panel(grid, title=title, title_align="left", border_style=style)
