"""The rich summary people read in a terminal: hosts by status, each check family's headline, every device's
figures against their floors and its health readings, failing checks first with remedies, regressions."""

from __future__ import annotations

from collections import defaultdict

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..results.output import STATUS_STYLE, records_table, render_to_text, status_text, totals_line
from .devices import FIGURES, Figure, HostHealth, HostPerf, Link, device_health, device_perf, figure_text
from .model import (
    HEADLINE_RANK,
    REGRESSION_COLUMNS,
    ReportData,
    counts_text,
    family_status,
    headline,
    host_status,
    regression_row,
    summary,
    verdict,
)

# Past this many device rows a table keeps the devices with something to look at; the HTML report lists all.
MAX_DEVICE_ROWS = 64
HOSTS_NAMED = 5
STATE_STYLE = {**STATUS_STYLE, "unjudged": "", "missing": "magenta"}
BAD = ("fail", "error", "warn")
SHORT_LABELS = {"perf.matmul": "bf16 matmul", "perf.copy": "copy", "perf.h2d": "H2D", "perf.d2h": "D2H"}


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


def families_table(data: ReportData) -> Table:
    """Each check family across the hosts: its headline, the hosts by their headline in it (the ones not passing
    named), and how its parts ended."""
    cells = family_status(data.records)
    hosts: dict[str, dict[str, str]] = defaultdict(dict)  # family -> host -> headline
    parts: dict[str, list[str]] = defaultdict(list)
    for (host, family), records in cells.items():
        hosts[family][host] = headline(r.status for r in records)
        parts[family] += [r.status for r in records]
    table = Table(title="checks by family", title_justify="left",
                  caption="a family's status is the worst of fail, error, warn and pass; SKIP only when every part "
                          "skipped", caption_justify="left")
    for column in ("family", "status", "hosts", "parts"):
        table.add_column(column, overflow="fold")
    order = list(dict.fromkeys(family for family in (c.split(".", 1)[0] for c in data.checks)))
    for family in order:
        by_host = hosts[family]
        status = headline(by_host.values())
        described = []
        for state in sorted(set(by_host.values()), key=lambda s: -HEADLINE_RANK[s]):
            named = [h for h in data.hosts if by_host.get(h) == state]
            text = f"{len(named)} {state}"
            if state in ("fail", "error", "warn"):
                text += " (" + ", ".join(named[:HOSTS_NAMED]) + (", ..." if len(named) > HOSTS_NAMED else "") + ")"
            described.append(text)
        table.add_row(family, status_text(status), ", ".join(described), counts_text(parts[family]))
    return table


def figure_cell(figure: Figure | None) -> Text:
    if figure is None:
        return Text("-", style="dim")
    if figure.value is None:
        return Text("not measured", style=STATE_STYLE["missing"])
    floor = figure_text(figure.floor) if figure.floor is not None else "no floor"
    return Text.assemble((figure_text(figure.value), STATE_STYLE.get(figure.state, "")), (f" ({floor})", "dim"))


def link_cell(link: Link | None) -> Text:
    if link is None:
        return Text("-", style="dim")
    text = link.now if link.now == link.maximum else f"{link.now} of {link.maximum}"
    if link.sku is not None and link.sku != link.maximum:
        text += f" (SKU: {link.sku})"
    return Text(text, style=STATE_STYLE.get(link.state, ""))


def _unmeasured_line(title: str, hosts: list[tuple[str, str, str]]) -> Text:
    """``hosts``: (host, status, summary) of hosts whose family has no per-device figure at all."""
    parts = [Text(f"{title}: ", style="bold")]
    for i, (host, status, text) in enumerate(hosts):
        parts.append(Text.assemble(("; " if i else ""), (host, "bold"), " ", status_text(status), f" {text}"))
    return Text.assemble(*parts)


def perf_table(data: ReportData, found: dict[str, HostPerf]) -> list[RenderableType]:
    """One row per device: each figure against the floor it was judged by, and the PCIe link."""
    units = {kind.check: kind.unit for kind in FIGURES}
    for host in found.values():
        for kind in FIGURES:
            units[kind.check] = host.floor(kind.check)[1]
    rows = [(host, device) for host in (found[h] for h in data.hosts if h in found) for device in host.devices]
    shown = rows
    if len(rows) > MAX_DEVICE_ROWS:
        shown = [(h, d) for h, d in rows if h.status != "pass"
                 or any(f.state != "pass" for f in d.figures.values()) or (d.link and d.link.state != "pass")]
    parts: list[RenderableType] = []
    if rows:
        table = Table(title="device figures (floor) per device: red below the floor, yellow within the warning band "
                            "above it", title_justify="left")
        for column in ("host", "SKU", "device"):
            table.add_column(column, overflow="fold")
        for kind in FIGURES:
            table.add_column(f"{SHORT_LABELS[kind.check]}\n{units[kind.check]}", overflow="fold", min_width=11)
        table.add_column("PCIe link", overflow="fold", min_width=19)
        last = None
        for host, device in shown:
            first = host.host != last
            last = host.host
            sku = (host.sku or "?") + ("*" if host.estimate else "")
            table.add_row(Text(host.host, style=STATE_STYLE[host.status]) if first else "",
                          sku if first else "", device.device,
                          *(figure_cell(device.figures.get(kind.check)) for kind in FIGURES), link_cell(device.link))
        notes = []
        if any(h.estimate for h, _ in shown):
            notes.append("*: some of the SKU's floors are estimates (its vendor's floors.yml names each source)")
        if len(shown) < len(rows):
            hidden = [h for h, d in rows if (h, d) not in shown]
            notes.append(f"and {len(hidden)} device(s) on {len({h.host for h in hidden})} host(s) above every "
                         "floor: the HTML report lists every device")
        table.caption = "\n".join(notes) or None
        table.caption_justify = "left"
        parts.append(table)
    unmeasured = [(h, h.status) for h in (found[n] for n in data.hosts if n in found) if not h.devices]
    failed = [(h.host, s, "; ".join(r.summary for r in h.records.values())) for h, s in unmeasured if s != "skip"]
    skipped = [(h.host, s, "; ".join(r.summary for r in h.records.values())) for h, s in unmeasured if s == "skip"]
    if failed:
        parts.append(_unmeasured_line("no device figure", failed))
    if skipped and (rows or failed):
        parts.append(Text(f"perf skipped on {len(skipped)} host(s): {skipped[0][2]}", style="dim"))
    return parts


def health_table(data: ReportData, found: dict[str, HostHealth]) -> list[RenderableType]:
    """One row per device with the readings the health parts keep for it."""
    hosts = [found[h] for h in data.hosts if h in found and found[h].devices]
    unread = [(h.host, h.status, "; ".join(r.summary for r in h.records))
              for h in (found[n] for n in data.hosts if n in found) if not h.devices and h.status in BAD]
    parts: list[RenderableType] = [_unmeasured_line("no health reading", unread)] if unread else []
    if not hosts:
        return parts
    devices = [d for h in hosts for d in h.devices]
    columns = [("temperature C", any(d.temperature_c is not None for d in devices)),
               ("clock events", any(d.clock_events is not None for d in devices)),
               ("NVLinks", any(d.nvlinks is not None for d in devices))]
    table = Table(title="device health readings", title_justify="left")
    for column in ("host", "health", "parts", "device"):
        table.add_column(column, overflow="fold")
    for column, wanted in columns:
        if wanted:
            table.add_column(column, overflow="fold")
    rows = [(h, d) for h in hosts for d in h.devices]
    shown = rows if len(rows) <= MAX_DEVICE_ROWS else [
        (h, d) for h, d in rows if h.status != "pass" or d.clock_events or d.nvlink_state == "fail"]
    last = None
    for host, device in shown:
        first = host.host != last
        last = host.host
        cells: list[RenderableType] = [host.host if first else "", status_text(host.status) if first else "",
                                       counts_text(r.status for r in host.records) if first else "", device.device]
        if columns[0][1]:
            cells.append("-" if device.temperature_c is None else f"{device.temperature_c:g}")
        if columns[1][1]:
            events = device.clock_events
            cells.append("-" if events is None else Text(", ".join(events), style="yellow") if events else "none")
        if columns[2][1]:
            links = device.nvlinks
            cells.append("-" if links is None else Text(f"{links[0]} of {links[1]}",
                                                        style=STATE_STYLE[device.nvlink_state or "pass"]))
        table.add_row(*cells)
    if len(shown) < len(rows):
        table.caption = f"and {len(rows) - len(shown)} device(s) with nothing to note: the HTML report lists them"
    return [table, *parts]


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
    if data.records:
        parts.append(families_table(data))
    parts += perf_table(data, device_perf(data.records))
    parts += health_table(data, device_health(data.records))
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
