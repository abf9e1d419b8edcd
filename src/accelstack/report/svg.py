"""Line charts as inline SVG, written by hand so the HTML report needs no script, stylesheet or network."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

# Tableau 10: distinguishable, and still readable printed in grey.
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
LEGEND_MAX = 16


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]
    color: str = ""


def size_label(size: float) -> str:
    """Bytes as the sweep tables of nccl-tests print them: 8B, 1K, 64M, 2G."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g}{unit}"
    return f"{size:g}B"


def nice_step(span: float, target: int = 5) -> float:
    if span <= 0:
        return 1.0
    raw = span / target
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _thin(ticks: list[tuple[float, str]], limit: int = 9) -> list[tuple[float, str]]:
    if len(ticks) <= limit:
        return ticks
    every = math.ceil(len(ticks) / limit)
    return ticks[::every]


def log2_ticks(low: float, high: float) -> list[tuple[float, str]]:
    """A tick at each power of two from ``low`` to ``high`` (thinned), in log2 units."""
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    return _thin([(float(exp), size_label(2.0 ** exp)) for exp in range(first, last + 1)])


def line_chart(series: Sequence[Series], *, title: str, x_label: str, y_label: str, log2_x: bool = False,
               x_ticks: Sequence[tuple[float, str]] | None = None, width: int = 620, height: int = 320,
               css_class: str = "chart") -> str:
    """One SVG element. With ``log2_x`` the x values are sizes in bytes, drawn on a log2 axis."""
    left, right, top, bottom = 64, 170, 34, 52
    plot_w, plot_h = width - left - right, height - top - bottom
    drawn = [Series(s.name, [(math.log2(x) if log2_x else x, y) for x, y in s.points if (x > 0 or not log2_x)
                             and math.isfinite(y)], s.color or PALETTE[i % len(PALETTE)])
             for i, s in enumerate(series)]
    drawn = [s for s in drawn if s.points]
    xs = [x for s in drawn for x, _ in s.points]
    ys = [y for s in drawn for _, y in s.points]
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" class="{escape(css_class)}" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'),
             f"<title>{escape(title)}</title>",
             f'<text x="{left}" y="20" class="chart-title">{escape(title)}</text>']
    if not drawn:
        parts.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" text-anchor="middle" '
                     f'class="chart-empty">no data</text></svg>')
        return "".join(parts)
    x_low, x_high = min(xs), max(xs)
    if x_low == x_high:
        x_low, x_high = x_low - 1, x_high + 1
    y_step = nice_step(max(ys) if max(ys) > 0 else 1.0)
    y_high = max(y_step, math.ceil(max(ys) / y_step) * y_step)

    def px(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * plot_w

    def py(y: float) -> float:
        return top + plot_h - max(y, 0.0) / y_high * plot_h

    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="chart-area"/>')
    y = 0.0
    while y <= y_high + y_step / 2:
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{py(y):.1f}" y2="{py(y):.1f}" '
                     'class="grid"/>'
                     f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end" class="tick">{y:g}</text>')
        y += y_step
    ticks = list(x_ticks) if x_ticks is not None else (
        log2_ticks(2 ** x_low, 2 ** x_high) if log2_x else [(x, f"{x:g}") for x in (x_low, x_high)])
    for x, label in ticks:
        if x_low - 1e-9 <= x <= x_high + 1e-9:
            parts.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{top}" y2="{top + plot_h}" '
                         'class="grid"/>'
                         f'<text x="{px(x):.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="tick">'
                         f"{escape(label)}</text>")
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 10}" text-anchor="middle" class="axis-label">'
                 f"{escape(x_label)}</text>"
                 f'<text x="14" y="{top + plot_h / 2}" text-anchor="middle" class="axis-label" '
                 f'transform="rotate(-90 14 {top + plot_h / 2})">{escape(y_label)}</text>')
    for s in drawn:
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
        parts.append(f'<g class="series" data-series="{escape(s.name)}"><title>{escape(s.name)}</title>'
                     f'<polyline points="{coords}" fill="none" stroke="{s.color}" stroke-width="2"/>')
        for x, y in s.points:
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{s.color}">'
                         f"<title>{escape(s.name)}: {y:g}</title></circle>")
        parts.append("</g>")
    legend_x = left + plot_w + 14
    for i, s in enumerate(drawn[:LEGEND_MAX]):
        y_pos = top + 8 + i * 16
        name = s.name if len(s.name) <= 20 else s.name[:19] + "\u2026"
        parts.append(f'<rect x="{legend_x}" y="{y_pos - 8}" width="10" height="10" fill="{s.color}"/>'
                     f'<text x="{legend_x + 15}" y="{y_pos + 1}" class="legend">{escape(name)}</text>')
    if len(drawn) > LEGEND_MAX:
        parts.append(f'<text x="{legend_x}" y="{top + 8 + LEGEND_MAX * 16}" class="legend">'
                     f"+{len(drawn) - LEGEND_MAX} more</text>")
    parts.append("</svg>")
    return "".join(parts)
