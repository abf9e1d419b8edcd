"""The figures that history, baselines and reports read off a record, whatever check wrote it.

Validation records carry bandwidth as ``metrics.busbw_gbps`` (the peak) with the per-size
``metrics.sizes`` (the name the collectives validator writes), and versions as ``components: {name: version}`` in ``metrics`` or ``evidence``. Values
come from JSON written by other tools, so every reader here tolerates a missing or mistyped field and
answers ``None``/empty instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..results.records import Record

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


def _bandwidth(value: Any) -> float | None:
    # Zero or less is no bandwidth anyone measured (a one-rank run, a placeholder): never a figure to hold.
    number = _number(value)
    return number if number is not None and number > 0 else None


def _one_rank(record: Record) -> bool:
    return _number(record.metrics.get("ranks")) == 1


def peak_busbw(record: Record) -> float | None:
    """``metrics.busbw_gbps``, else the best point of the sweep, else ``None`` (always for one rank)."""
    if _one_rank(record):
        return None
    peak = _bandwidth(record.metrics.get("busbw_gbps"))
    if peak is not None:
        return peak
    points = sweep(record)
    return max((point.busbw_gbps for point in points), default=None)


def sweep(record: Record) -> list[SweepPoint]:
    """The message-size sweep (``metrics.sizes``), smallest size first; malformed or bandwidth-less points
    (one rank has no bus bandwidth) are dropped."""
    if _one_rank(record):
        return []
    raw = record.metrics.get("sizes")
    if not isinstance(raw, list):
        return []
    points = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        size = _number(item.get("bytes"))
        busbw = _bandwidth(item.get("busbw_gbps"))
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
    """The plain numbers in ``metrics`` (no sweep, no nested values), for JUnit properties, JSON and the
    history index; a bandwidth (``*_gbps``) that is no figure (zero, or busbw of one rank) is left out."""
    found = {}
    for name, value in record.metrics.items():
        number = _number(value)
        if number is None:
            continue
        # One rank has an algbw but no bus bandwidth: only busbw is meaningless there.
        if name.endswith("_gbps") and (number <= 0 or (_one_rank(record) and name.startswith("busbw"))):
            continue
        found[name] = number
    return found


def record_figures(record: Record) -> dict[str, float]:
    """What the history index keeps of a record: its plain numbers, the peak bus bandwidth among them when
    the record has one (read from the sweep if need be), and no bandwidth where it means nothing."""
    figures = scalar_metrics(record)
    figures.pop("busbw_gbps", None)
    peak = peak_busbw(record)
    if peak is not None:
        figures["busbw_gbps"] = peak
    return figures
