"""The Prometheus text exposition format, for node_exporter's textfile collector.

``accelstack_check_status`` uses the severity order of :data:`accelstack.results.records.SEVERITY` (pass 0, skip 1,
warn 2, error 3, fail 4), so an alert is a threshold: ``accelstack_check_status >= 3``.
"""

from __future__ import annotations

import math

from ..history import parse_timestamp
from ..results.metrics import peak_busbw
from ..results.records import SEVERITY
from .model import ReportData, cells, host_status


def escape_label(value: str) -> str:
    """Label values escape backslash, double quote and line feed (exposition format spec)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{name}="{escape_label(value)}"' for name, value in labels.items()) + "}"


def _value(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return repr(float(number)) if not float(number).is_integer() else str(int(number))


_MAPPING = ", ".join(f"{status} {value}" for status, value in sorted(SEVERITY.items(), key=lambda kv: kv[1]))

_METRICS = {
    "accelstack_check_status": ("gauge", f"Status of one check on one host ({_MAPPING})."),
    "accelstack_host_status": ("gauge", f"Headline status of a host: its worst check, skip only when every check "
                                        f"skipped ({_MAPPING})."),
    "accelstack_busbw_gbps": ("gauge", "Peak collective bus bandwidth of a check on a host, in GB/s."),
    "accelstack_regression": ("gauge", ("1 for each regression against the baseline (kind: busbw_drop, "
                                       "new_failure, version_change).")),
    "accelstack_run_timestamp_seconds": ("gauge", "Unix time the reported accelstack run started."),
}


def render_prom(data: ReportData) -> str:
    samples: dict[str, list[str]] = {name: [] for name in _METRICS}
    for record in sorted(cells(data.records).values(), key=lambda r: (r.host, r.check)):
        labels = _labels(host=record.host, check=record.check)
        samples["accelstack_check_status"].append(f"{labels} {SEVERITY[record.status]}")
        # None for one rank (results.metrics.one_rank): a record written before that rule may still carry a busbw
        # (an H100 wrote accelstack_busbw_gbps{check="allreduce"} 181631), and it is no figure to alert on.
        busbw = peak_busbw(record)
        if busbw is not None:
            samples["accelstack_busbw_gbps"].append(f"{labels} {_value(busbw)}")
    for host, status in sorted(host_status(data.records).items()):
        samples["accelstack_host_status"].append(f"{_labels(host=host)} {SEVERITY[status]}")
    for regression in data.regressions:
        if not regression.counts:  # a drop not confirmed by its re-run, or a host that could not be checked
            continue
        labels = _labels(host=regression.host, check=regression.check, kind=regression.kind)
        line = f"{labels} 1"
        if line not in samples["accelstack_regression"]:
            samples["accelstack_regression"].append(line)
    started = parse_timestamp(str(data.meta.get("started") or "")) or parse_timestamp(data.generated)
    if started is not None:
        samples["accelstack_run_timestamp_seconds"].append(f" {_value(round(started.timestamp(), 3))}")
    lines = []
    for name, (kind, help_text) in _METRICS.items():
        if not samples[name]:
            continue
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{sample}" for sample in samples[name])
    return "\n".join(lines) + "\n"
