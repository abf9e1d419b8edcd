"""The figures that history, baselines and reports read off a record, whatever check wrote it.

Validation records carry bandwidth as ``metrics.busbw_gbps`` (the peak) with the per-size
``metrics.sweep``, and versions as ``components: {name: version}`` in ``metrics`` or ``evidence``. Values
come from JSON written by other tools, so every reader here tolerates a missing or mistyped field and
answers ``None``/empty instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..records import Record

# The aggregate of a multi-node check; never a machine that can be drained.
CLUSTER_HOST = "cluster"


@dataclass(frozen=True)
class SweepPoint:
    bytes: int
    busbw_gbps: float
    algbw_gbps: float | None = None
    time_us: float | None = None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def peak_busbw(record: Record) -> float | None:
    """``metrics.busbw_gbps``, else the best point of the sweep, else ``None``."""
    peak = _number(record.metrics.get("busbw_gbps"))
    if peak is not None:
        return peak
    points = sweep(record)
    return max((point.busbw_gbps for point in points), default=None)


def sweep(record: Record) -> list[SweepPoint]:
    """The message-size sweep, smallest size first; malformed points are dropped."""
    raw = record.metrics.get("sweep")
    if not isinstance(raw, list):
        return []
    points = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        size = _number(item.get("bytes"))
        busbw = _number(item.get("busbw_gbps"))
        if size is None or size <= 0 or busbw is None:
            continue
        points.append(SweepPoint(bytes=int(size), busbw_gbps=busbw,
                                 algbw_gbps=_number(item.get("algbw_gbps")),
                                 time_us=_number(item.get("time_us"))))
    return sorted(points, key=lambda point: point.bytes)


def components(record: Record) -> dict[str, str]:
    """``{name: version}`` from ``metrics.components`` or ``evidence.components``; metrics win on a clash."""
    found: dict[str, str] = {}
    for source in (record.evidence, record.metrics):
        value = source.get("components")
        if isinstance(value, dict):
            for name, version in value.items():
                if version is not None and not isinstance(version, (dict, list)):
                    found[str(name)] = str(version)
    return found


def scalar_metrics(record: Record) -> dict[str, float]:
    """The plain numbers in ``metrics`` (no sweep, no nested values), for JUnit properties and JSON."""
    return {name: number for name, value in record.metrics.items()
            if (number := _number(value)) is not None}
