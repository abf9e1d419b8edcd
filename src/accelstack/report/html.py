"""One self-contained HTML file: the fleet table (hosts x checks, coloured by status), what to do about each
problem, and inline SVG plots of bus bandwidth. No script, no external stylesheet, nothing fetched: the file
opens the same from a CI artifact, a mail attachment or an air-gapped laptop.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from html import escape

from ..history import parse_timestamp
from ..results.metrics import algbw_sweep, one_rank, sweep
from ..results.records import SEVERITY
from .devices import (
    FIGURES,
    LINK_CHECK,
    Figure,
    HostHealth,
    HostPerf,
    Link,
    device_health,
    device_perf,
    figure_text,
    shipped_floors,
)
from .model import (
    REGRESSION_COLUMNS,
    ReportData,
    counts_text,
    family_of,
    family_status,
    headline,
    regression_row,
    summary,
    verdict,
)
from .svg import Series, line_chart

HISTORY_RUNS = 30

_CSS = """
:root { --pass:#2e7d32; --warn:#b7791f; --fail:#c62828; --error:#8e24aa; --skip:#757575; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px;
       color: #1f2328; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.meta { color: #57606a; margin-bottom: 12px; }
.verdict { display: inline-block; padding: 4px 12px; border-radius: 4px; color: #fff; font-weight: 600; }
.verdict.v0 { background: var(--pass); } .verdict.v1 { background: var(--fail); }
.verdict.v2 { background: var(--error); }
.counts span { margin-right: 14px; font-weight: 600; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; position: sticky; top: 0; }
#fleet td { text-align: center; font-weight: 600; font-size: 12px; min-width: 44px; padding: 4px 5px; }
#fleet thead th { font-size: 12px; padding: 4px 5px; } #fleet td .n { font-weight: 400; opacity: .7; }
#fleet th[scope=row] { max-width: 220px; overflow-wrap: anywhere; }
td.st-pass { background: #e6f4ea; color: var(--pass); }
td.st-warn { background: #fff4d6; color: var(--warn); }
td.st-fail { background: #fde2e1; color: var(--fail); }
td.st-error { background: #f3e5f5; color: var(--error); }
td.st-skip { background: #f2f2f2; color: var(--skip); } td.st-none { color: #aaa; }
td.regressed { outline: 2px solid var(--fail); outline-offset: -3px; }
.badge { font-weight: 700; } .badge.pass { color: var(--pass); } .badge.warn { color: var(--warn); }
.badge.fail { color: var(--fail); } .badge.error { color: var(--error); } .badge.skip { color: var(--skip); }
td.remedy { color: #0b5cad; } #problems td:nth-child(-n+2) { white-space: nowrap; } td.summary, td.remedy { max-width: 520px; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
figure.plot { margin: 0; border: 1px solid #d0d7de; border-radius: 6px; padding: 6px; background: #fff; }
svg .chart-title { font-size: 14px; font-weight: 600; }
svg .tick, svg .legend { font-size: 11px; fill: #444; }
svg .axis-label { font-size: 12px; fill: #444; } svg .grid { stroke: #e5e7eb; stroke-width: 1; }
svg .chart-area { fill: #fcfcfd; stroke: #d0d7de; } svg .chart-empty { fill: #999; }
.muted { color: #57606a; }
table.devices td, table.devices th { white-space: nowrap; }
table.devices th[scope=rowgroup] { background: #fafbfc; }
table.devices .sku { font-weight: 400; color: #57606a; font-size: 12px; }
td.fig { min-width: 120px; } td.fig .v { font-weight: 700; font-size: 15px; }
td.fig .u { color: #57606a; font-size: 11px; margin-left: 3px; }
td.fig .fl { display: block; color: #57606a; font-size: 11px; }
.meter { position: relative; display: block; height: 6px; width: 110px; margin: 3px 0 1px; background: #eaeef2;
         border-radius: 3px; }
.meter .fill { position: absolute; left: 0; top: 0; bottom: 0; border-radius: 3px; background: var(--pass); }
.meter .mark { position: absolute; top: -3px; bottom: -3px; width: 2px; background: #1f2328; }
td.fig.st-warn .fill { background: var(--warn); } td.fig.st-fail .fill { background: var(--fail); }
td.fig.st-unjudged .fill { background: #8c959f; }
td.st-unjudged { background: #fff; } td.st-missing { background: #f3e5f5; color: var(--error); }
"""

_VERDICT = {0: "healthy", 1: "failures or regressions", 2: "hosts could not be checked"}


def _badge(status: str) -> str:
    return f'<span class="badge {escape(status)}">{escape(status.upper())}</span>'


def column_of(check: str) -> str:
    """The fleet grid's column for a check: its family (``versions.driver`` -> ``versions``)."""
    return family_of(check)


def _header(name: str) -> str:
    # A break opportunity after "_" keeps long names (collective_init) from setting a column's width.
    return escape(name).replace("_", "_<wbr>")


def _fleet_table(data: ReportData) -> str:
    families = family_status(data.records)
    columns = list(dict.fromkeys(column_of(check) for check in data.checks))
    members: dict[str, list[str]] = defaultdict(list)
    for check in data.checks:
        members[column_of(check)].append(check)
    rows = ['<table id="fleet"><thead><tr><th>host</th>'
            + "".join(f'<th data-check="{escape(c)}" title="{escape(", ".join(sorted(members[c])))}">'
                      f"{_header(c)}</th>" for c in columns)
            + "</tr></thead><tbody>"]
    for host in data.hosts:
        row = [f'<tr data-host="{escape(host)}"><th scope="row">{escape(host)}</th>']
        for column in columns:
            records = families.get((host, column), [])
            if not records:
                row.append('<td class="st-none" data-status="none">&ndash;</td>')
                continue
            status = headline(r.status for r in records)
            regressions = [r for record in records for r in data.regressions_for(host, record.check)]
            if len(records) == 1:
                tip = records[0].summary
            else:
                tip = counts_text(r.status for r in records) + "\n"
                tip += "\n".join(f"{r.check}: {r.status} {r.summary}" for r in records)
            tip += "".join(f"\nregression: {r.message}" for r in regressions)
            marker = " &#9660;" if regressions else ""
            count = f' <span class="n">{len(records)}</span>' if len(records) > 1 else ""
            css = f"st-{status}" + (" regressed" if regressions else "")
            row.append(f'<td class="{css}" data-status="{escape(status)}" '
                       f'data-check="{escape(column)}" data-parts="{len(records)}" title="{escape(tip)}">'
                       f"{escape(status.upper())}{count}{marker}</td>")
        rows.append("".join(row) + "</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def _problems(data: ReportData) -> str:
    problems = sorted((r for r in data.records if r.status in ("fail", "error", "warn")),
                      key=lambda r: (-SEVERITY[r.status], r.host, r.check))
    if not problems:
        return '<p class="muted">every check passed.</p>'
    rows = ['<table id="problems"><thead><tr><th>host</th><th>check</th><th>status</th>'
            "<th>what was found</th><th>what to do</th></tr></thead><tbody>"]
    for r in problems:
        rows.append(f'<tr data-host="{escape(r.host)}"><td>{escape(r.host)}</td><td>{escape(r.check)}</td>'
                    f"<td>{_badge(r.status)}</td><td class=\"summary\">{escape(r.summary)}</td>"
                    f'<td class="remedy">{escape(r.remedy or "")}</td></tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _regressions(data: ReportData) -> str:
    if data.baseline_run is None:
        return ('<p class="muted">no baseline to compare with: <code>inv baseline --from RUN</code> '
                "sets one.</p>")
    if not data.regressions:
        return f'<p class="muted">no regressions against baseline {escape(data.baseline_run)}.</p>'
    rows = [f'<p class="muted">against baseline {escape(data.baseline_run)}; a bandwidth drop counts past the '
            "larger of the configured percentage and the noise band (2.5 times the spread of the baseline's "
            "healthy runs, on a log scale), once a re-run confirms it</p>",
            '<table id="regressions"><thead><tr>' + "".join(f"<th>{c}</th>" for c in REGRESSION_COLUMNS)
            + "</tr></thead><tbody>"]
    for r in data.regressions:
        tds = "".join(f"<td>{escape(cell)}</td>" for cell in regression_row(r))
        rows.append(f'<tr data-host="{escape(r.host)}" data-kind="{escape(r.kind)}">{tds}</tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _sweep_plots(data: ReportData) -> str:
    """busbw by message size per check; where a record has one rank (no bus bandwidth), its algbw instead, in a
    chart of its own: the two are different figures and never share an axis."""
    by_check: dict[tuple[str, str], list[Series]] = defaultdict(list)
    for record in sorted(data.records, key=lambda r: r.host):
        points = sweep(record)
        if points:
            by_check[(record.check, "busbw")].append(Series(record.host, [(p.bytes, p.busbw_gbps) for p in points]))
        elif one_rank(record):
            algbw = algbw_sweep(record)
            if algbw:
                by_check[(record.check, "algbw")].append(Series(record.host, [(float(b), v) for b, v in algbw]))
    if not by_check:
        return '<p class="muted">no bandwidth sweep in this run.</p>'
    figures = []
    for (check, figure), series in sorted(by_check.items()):
        title = (f"{check}: busbw by message size" if figure == "busbw"
                 else f"{check}: algbw by message size (one rank: no busbw)")
        figures.append(f'<figure class="plot" data-plot="sweep" data-check="{escape(check)}" '
                       f'data-figure="{figure}">'
                       + line_chart(series, title=title, x_label="message size (bytes, log2)",
                                    y_label=f"{figure} GB/s", log2_x=True)
                       + "</figure>")
    return '<div class="plots">' + "".join(figures) + "</div>"


# -- devices ---------------------------------------------------------------------------------------------------


def _meter(value: float, floor: float | None) -> str:
    """A bar of the figure with a mark at its floor, on a scale a quarter past the larger of the two."""
    scale = max(value, floor or 0.0) * 1.25 or 1.0
    mark = (f'<span class="mark" style="left:{min(floor / scale, 1.0) * 100:.1f}%"></span>'
            if floor is not None else "")
    return (f'<span class="meter"><span class="fill" style="width:{min(value / scale, 1.0) * 100:.1f}%"></span>'
            f"{mark}</span>")


def _figure_cell(host: HostPerf, device: str, check: str, figure: Figure | None) -> str:
    if figure is None:
        return '<td class="st-none" data-state="none">&ndash;</td>'
    record = host.records[check]
    label = next(kind.label for kind in FIGURES if kind.check == check)
    attrs = f'data-check="{escape(check)}" data-state="{figure.state}"'
    if figure.value is None:
        tip = f"{label} on {device}: not measured. {check}: {record.status} {record.summary}"
        return f'<td class="fig st-missing" {attrs} title="{escape(tip)}">not measured</td>'
    attrs += f' data-value="{figure.value:g}"' + (f' data-floor="{figure.floor:g}"' if figure.floor is not None else "")
    tip = f"{label} on {device}: {figure.value:g} {figure.unit}"
    if figure.floor is None:
        floor = "no floor"
        tip += f"; no floor for {host.sku or 'this SKU'}: reported, not judged"
    else:
        ratio = figure.ratio or 0.0
        floor = f"floor {figure_text(figure.floor)} &middot; {ratio:.2f}&times;"
        tip += f"; floor {figure.floor:g} {figure.unit} for {host.sku or 'this SKU'} ({ratio:.2f}x)"
    if host.sources.get(check):
        tip += f"\nfloor from: {host.sources[check]}"
    return (f'<td class="fig st-{figure.state}" {attrs} title="{escape(tip)}">'
            f'<span class="v">{figure_text(figure.value)}</span><span class="u">{escape(figure.unit)}</span>'
            f'{_meter(figure.value, figure.floor)}<span class="fl">{floor}</span></td>')


def _link_cell(host: HostPerf, device: str, link: Link | None) -> str:
    if link is None:
        return '<td class="st-none" data-state="none">&ndash;</td>'
    sku = f"; {host.sku}: {link.sku}" if link.sku else ""
    tip = f"PCIe link of {device}: {link.reading} (now of its maximum, read under load){sku}"
    if host.sources.get(LINK_CHECK):
        tip += f"\nfrom: {host.sources[LINK_CHECK]}"
    detail = f"max {link.maximum}" + (f" &middot; {escape(host.sku or 'SKU')} {link.sku}" if link.sku else "")
    return (f'<td class="fig st-{link.state}" data-check="{LINK_CHECK}" data-state="{link.state}" '
            f'data-link="{escape(link.now)}" title="{escape(tip)}"><span class="v">{escape(link.now)}</span>'
            f'<span class="fl">{detail}</span></td>')


def _perf_table(data: ReportData, found: dict[str, HostPerf]) -> str:
    hosts = [found[h] for h in data.hosts if h in found]
    measured = [h for h in hosts if h.devices]
    rows = []
    if measured:
        units = {kind.check: kind.unit for kind in FIGURES}
        for host in measured:
            for kind in FIGURES:
                units[kind.check] = host.floor(kind.check)[1]
        rows.append('<table id="device-perf" class="devices"><thead><tr><th>host</th><th>device</th>'
                    + "".join(f'<th data-check="{kind.check}">{escape(kind.label)}<br>'
                              f'<span class="sku">{escape(units[kind.check])}</span></th>' for kind in FIGURES)
                    + f'<th data-check="{LINK_CHECK}">PCIe link<br><span class="sku">now</span></th></tr></thead>')
        for host in measured:
            rows.append(f'<tbody data-host="{escape(host.host)}">')
            for i, device in enumerate(host.devices):
                head = ""
                if i == 0:
                    sku = escape(host.sku or "unknown SKU") + (" (estimated floors)" if host.estimate else "")
                    head = (f'<th scope="rowgroup" rowspan="{len(host.devices)}">{escape(host.host)}<br>'
                            f'<span class="sku">{sku}</span><br>{_badge(host.status)}</th>')
                rows.append(f'<tr data-host="{escape(host.host)}" data-device="{escape(device.device)}">{head}'
                            f"<td>{escape(device.device)}</td>"
                            + "".join(_figure_cell(host, device.device, kind.check, device.figures.get(kind.check))
                                      for kind in FIGURES)
                            + _link_cell(host, device.device, device.link) + "</tr>")
            rows.append("</tbody>")
        rows.append("</table>")
    unmeasured = [h for h in hosts if not h.devices and h.status != "skip"]
    if unmeasured:
        rows.append('<table id="device-perf-missing"><thead><tr><th>host</th><th>perf</th><th>why no figure</th>'
                    "</tr></thead><tbody>")
        for host in unmeasured:
            why = "; ".join(f"{r.check}: {r.summary}" for r in host.records.values())
            rows.append(f'<tr data-host="{escape(host.host)}"><td>{escape(host.host)}</td><td>{_badge(host.status)}'
                        f'</td><td class="summary">{escape(why)}</td></tr>')
        rows.append("</tbody></table>")
    skipped = [h for h in hosts if h.status == "skip"]
    if skipped:
        why = next(iter(skipped[0].records.values())).summary
        rows.append(f'<p class="muted">perf skipped on {len(skipped)} host(s): {escape(why)}</p>')
    if not rows:
        return '<p class="muted">no device performance check in this run (it runs in the standard tier).</p>'
    if not measured:
        return "".join(rows)
    return (f'<p class="muted">each device&#39;s figure with the floor its check judged it against '
            f"(the vendor&#39;s floors.yml per SKU, or the inventory&#39;s device_thresholds); the bar&#39;s mark is the "
            f"floor; amber: within {shipped_floors()[1]:.0%} above it, red: below it; hover a figure for where its "
            "floor comes from.</p>" + "".join(rows))


def _health_table(data: ReportData, found: dict[str, HostHealth]) -> str:
    hosts = [found[h] for h in data.hosts if h in found and found[h].devices]
    if not hosts:
        return '<p class="muted">no per-device health reading in this run.</p>'
    devices = [d for h in hosts for d in h.devices]
    show_temp = any(d.temperature_c is not None for d in devices)
    show_events = any(d.clock_events is not None for d in devices)
    show_links = any(d.nvlinks is not None for d in devices)
    head = ("<th>host</th><th>device</th>" + ("<th>temperature</th>" if show_temp else "")
            + ("<th>clock-event reasons</th>" if show_events else "") + ("<th>NVLinks</th>" if show_links else ""))
    rows = [f'<table id="device-health" class="devices"><thead><tr>{head}</tr></thead>']
    for host in hosts:
        counts = counts_text(r.status for r in host.records)
        tip = "\n".join(f"{r.check}: {r.status} {r.summary}" for r in host.records)
        rows.append(f'<tbody data-host="{escape(host.host)}">')
        for i, device in enumerate(host.devices):
            cells = [f"<td>{escape(device.device)}</td>"]
            if i == 0:
                cells.insert(0, f'<th scope="rowgroup" rowspan="{len(host.devices)}" title="{escape(tip)}">'
                                f'{escape(host.host)}<br>{_badge(host.status)} <span class="sku">{counts}</span></th>')
            if show_temp:
                temp = device.temperature_c
                cells.append("<td>&ndash;</td>" if temp is None else
                             f'<td data-reading="temperature" data-value="{temp:g}">{temp:g} &deg;C</td>')
            if show_events:
                events = device.clock_events
                cells.append("<td>&ndash;</td>" if events is None else
                             f'<td class="st-warn" data-reading="clock_events">{escape(", ".join(events))}</td>'
                             if events else '<td data-reading="clock_events">none active</td>')
            if show_links:
                links = device.nvlinks
                cells.append("<td>&ndash;</td>" if links is None else
                             f'<td class="st-{device.nvlink_state}" data-reading="nvlinks">'
                             f"{links[0]} of {links[1]} active</td>")
            rows.append(f'<tr data-host="{escape(host.host)}" data-device="{escape(device.device)}">'
                        + "".join(cells) + "</tr>")
        rows.append("</tbody>")
    rows.append("</table>")
    return ('<p class="muted">readings the health parts keep per device, named as the vendor tool numbers them '
            "(nvidia-smi&#39;s gpu N need not be torch&#39;s cuda:N); hover a host for every health part.</p>"
            + "".join(rows))


def run_labels(runs: list[tuple[str, str]]) -> dict[str, str]:
    """``{run_id: label}`` for ``(run_id, started)`` pairs: ``MM-DD HH:MM``, with seconds where two runs share
    a minute, and the run id's suffix where they share a second too; every label distinct."""
    moments = {run: parse_timestamp(started) for run, started in runs}

    def fmt(run: str, pattern: str) -> str:
        moment = moments[run]
        return moment.astimezone(timezone.utc).strftime(pattern) if moment else dict(runs)[run][:19]

    labels = {run: fmt(run, "%m-%d %H:%M") for run, _ in runs}
    for pattern in ("%m-%d %H:%M:%S", None):
        counts: dict[str, int] = defaultdict(int)
        for label in labels.values():
            counts[label] += 1
        for run in labels:
            if counts[labels[run]] > 1:
                labels[run] = fmt(run, pattern) if pattern else f"{labels[run]} {run.rsplit('-', 1)[-1]}"
    return labels


def _history_plots(data: ReportData) -> str:
    run_order: dict[str, tuple[float, str]] = {}
    for point in data.busbw_history:
        run_order[point.run_id] = (point.started_epoch, point.run_started)
    recent = sorted(run_order, key=lambda run: run_order[run])[-HISTORY_RUNS:]
    index = {run: i for i, run in enumerate(recent)}
    if not recent:
        return '<p class="muted">no bandwidth history yet.</p>'
    labels = run_labels([(run, run_order[run][1]) for run in recent])
    ticks = [(float(i), labels[run]) for run, i in index.items()]
    if len(ticks) > 8:
        step = -(-len(ticks) // 8)
        ticks = ticks[::step]
    series: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for point in data.busbw_history:
        if point.run_id in index:
            series[point.check][point.host].append((float(index[point.run_id]), point.busbw_gbps))
    figures = []
    for check, hosts in sorted(series.items()):
        chart = line_chart([Series(host, points) for host, points in sorted(hosts.items())],
                           title=f"{check}: peak busbw per run", x_label=f"run (last {len(recent)}, UTC)",
                           y_label="busbw GB/s", x_ticks=ticks)
        figures.append(f'<figure class="plot" data-plot="history" data-check="{escape(check)}">'
                       f"{chart}</figure>")
    return '<div class="plots">' + "".join(figures) + "</div>"


def render_html(data: ReportData) -> str:
    info = summary(data)
    code = verdict(data.records, data.regressions)
    counts = "".join(f'<span class="badge {s}">{n} {s}</span>' for s, n in info["counts"].items() if n)
    started = escape(str(data.meta.get("started") or "?"))
    interrupted = ('<p class="badge warn">this run was interrupted: the report shows the checks it '
                   "finished.</p>" if info["interrupted"] else "")
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = f"accelstack {data.run_id}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{_CSS}</style></head>
<body>
<h1>accelstack fleet report</h1>
<div class="meta">run <code>{escape(data.run_id)}</code>
 &middot; {escape(str(data.meta.get("kind") or "run"))}
 &middot; started {started} &middot; {info["hosts"]} host(s), {info["records"]} check result(s)</div>
<p><span class="verdict v{code}" id="verdict">{escape(_VERDICT[code])}</span></p>
<p class="counts">{counts}</p>{interrupted}
<h2>Fleet</h2>
<p class="muted">hosts worst first, checks that failed somewhere first; a column holds a check and its
parts (versions: one part per component; the number is how many), showing the worst of fail, error, warn
and pass (SKIP only when every part skipped); hover a cell for the summaries; &#9660; marks a regression.</p>
{_fleet_table(data)}
<h2>Problems and what to do</h2>
{_problems(data)}
<h2>Devices against their floors</h2>
{_perf_table(data, device_perf(data.records))}
<h2>Device health</h2>
{_health_table(data, device_health(data.records))}
<h2>Regressions</h2>
{_regressions(data)}
<h2>Bandwidth by message size</h2>
{_sweep_plots(data)}
<h2>Bus bandwidth history</h2>
{_history_plots(data)}
<p class="muted">generated {generated} by accelstack</p>
</body></html>
"""
