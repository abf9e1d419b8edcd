"""Reports of one run, each a pure function from :class:`ReportData` to text.

``rich`` (terminal), ``junit`` (CI), ``html`` (one self-contained file), ``prom`` (node_exporter textfile) and
``json`` (summary plus records).
"""

from __future__ import annotations

from collections.abc import Callable

from .console import render_rich, rich_report
from .html import render_html
from .jsondoc import render_json
from .junit import render_junit
from .model import ReportData, load_report, resolve_run, summary, verdict, write_atomic
from .prom import render_prom

RENDERERS: dict[str, Callable[[ReportData], str]] = {
    "rich": render_rich,
    "junit": render_junit,
    "html": render_html,
    "prom": render_prom,
    "json": render_json,
}
FORMATS = tuple(RENDERERS)


def render(data: ReportData, fmt: str) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        from ..errors import ConfigError

        raise ConfigError(f"unknown report format {fmt!r}", hint=f"one of {', '.join(FORMATS)}") from None
    return renderer(data)


__all__ = [
    "FORMATS",
    "RENDERERS",
    "ReportData",
    "load_report",
    "render",
    "render_html",
    "render_json",
    "render_junit",
    "render_prom",
    "render_rich",
    "resolve_run",
    "rich_report",
    "summary",
    "verdict",
    "write_atomic",
]
