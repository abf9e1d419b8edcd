"""One self-contained HTML file: the fleet table (hosts x checks, coloured by status), what to do about each
problem, and inline SVG plots of bus bandwidth. No script, no external stylesheet, nothing fetched: the file
opens the same from a CI artifact, a mail attachment or an air-gapped laptop.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timezone
from html import escape

from ..history import parse_timestamp
from ..results.figures import sweep
from ..results.records import SEVERITY, STATUSES
from .model import REGRESSION_COLUMNS, ReportData, family_of, family_status, headline, regression_row, summary, verdict
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
td.remedy { color: #0b5cad; } td.summary, td.remedy { max-width: 520px; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
figure.plot { margin: 0; border: 1px solid #d0d7de; border-radius: 6px; padding: 6px; background: #fff; }
svg .chart-title { font-size: 14px; font-weight: 600; }
svg .tick, svg .legend { font-size: 11px; fill: #444; }
svg .axis-label { font-size: 12px; fill: #444; } svg .grid { stroke: #e5e7eb; stroke-width: 1; }
svg .chart-area { fill: #fcfcfd; stroke: #d0d7de; } svg .chart-empty { fill: #999; }
.muted { color: #57606a; }
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
                counts = Counter(r.status for r in records)
                tip = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) + "\n"
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
    by_check: dict[str, list[Series]] = defaultdict(list)
    for record in sorted(data.records, key=lambda r: r.host):
        points = sweep(record)
        if points:
            by_check[record.check].append(Series(record.host, [(p.bytes, p.busbw_gbps) for p in points]))
    if not by_check:
        return '<p class="muted">no bandwidth sweep in this run.</p>'
    figures = [f'<figure class="plot" data-plot="sweep" data-check="{escape(check)}">'
               + line_chart(series, title=f"{check}: busbw by message size",
                            x_label="message size (bytes, log2)", y_label="busbw GB/s", log2_x=True)
               + "</figure>" for check, series in sorted(by_check.items())]
    return '<div class="plots">' + "".join(figures) + "</div>"


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
<h2>Regressions</h2>
{_regressions(data)}
<h2>Bus bandwidth by message size</h2>
{_sweep_plots(data)}
<h2>Bus bandwidth history</h2>
{_history_plots(data)}
<p class="muted">generated {generated} by accelstack</p>
</body></html>
"""
