"""The figures read off a record, in one place: every figure history keeps, whatever check wrote it, and the one
figure baselines, regressions, reports and plots follow (bus bandwidth).

A record's ``metrics`` holds plain numbers by name, and may hold a per-size series as ``metrics.sizes``: a list
of ``{"bytes": N, <name>: value, ...}`` (the shape the collectives validators write). History keeps every
number under the record's own names (:func:`every_figure`, :func:`size_points`); which of them a baseline, a
regression or a plot follows is chosen here, below, and nowhere else. Versions are ``components: {name: version}``
in ``metrics`` or ``evidence``. Values come from JSON written by other tools, so every reader here tolerates a
missing or mistyped field and answers ``None``/empty instead.

A value is a figure when it is a finite number (a bool is not) and, for a rate (a name ending in ``_gbps``),
above zero: a zero bandwidth is no bandwidth anyone measured (a placeholder, a run that moved nothing).

The figure followed is bus bandwidth, as the collectives write it: the collective validators
(``validate/bandwidth.py``) write the peak as ``metrics.busbw_gbps`` and each size's ``busbw_gbps`` (with
``algbw_gbps`` and ``time_us``) in ``metrics.sizes``. One rank has no bus bandwidth: a record of one rank
(``metrics.ranks == 1``) has no busbw figure here even when an old record carries one, so it never reaches a
baseline, a report or a plot. Algorithm bandwidth (bytes over time) is defined at any rank count, one included: a
report plots it where busbw means nothing, and follows nothing with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .records import Record

# The aggregate of a multi-node check; never a machine that can be drained.
CLUSTER_HOST = "cluster"
# Where a record keeps its per-size series, and the key of each point's size.
SERIES_KEY = "sizes"
SIZE_KEY = "bytes"
RATE_SUFFIX = "_gbps"


@dataclass(frozen=True)
class SizePoint:
    """One size of a record's series: every figure measured at ``bytes``."""

    bytes: int
    values: dict[str, float]


def number(value: Any) -> float | None:
    """A finite int or float as a float; anything else (a bool, a string, NaN) is ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    result = float(value)
    return result if math.isfinite(result) else None


def figure(name: str, value: Any) -> float | None:
    """``value`` as a figure named ``name``, or ``None`` when it is none (see the module's note)."""
    result = number(value)
    if result is None or (name.endswith(RATE_SUFFIX) and result <= 0):
        return None
    return result


def every_figure(record: Record) -> dict[str, float]:
    """Every plain figure in ``metrics`` by name (no series, no nested values): what history keeps."""
    found = {}
    for name, value in record.metrics.items():
        result = figure(str(name), value)
        if result is not None:
            found[str(name)] = result
    return found


def size_points(record: Record) -> list[SizePoint]:
    """The per-size series (``metrics.sizes``), smallest size first; a point without a positive size or without
    a single figure is dropped."""
    raw = record.metrics.get(SERIES_KEY)
    if not isinstance(raw, list):
        return []
    points = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        size = number(item.get(SIZE_KEY))
        if size is None or size <= 0:
            continue
        values = {str(name): result for name, value in item.items() if name != SIZE_KEY
                  and (result := figure(str(name), value)) is not None}
        if values:
            points.append(SizePoint(bytes=int(size), values=values))
    return sorted(points, key=lambda point: point.bytes)


def series(record: Record, name: str) -> list[tuple[int, float]]:
    """``(bytes, value)`` of one metric across the record's sizes, smallest first."""
    return [(point.bytes, point.values[name]) for point in size_points(record) if name in point.values]


def peak(record: Record, name: str) -> float | None:
    """``metrics[name]`` when it is a figure, else the highest value of its series, else ``None``."""
    value = figure(name, record.metrics.get(name))
    if value is not None:
        return value
    return max((value for _, value in series(record, name)), default=None)


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


# ----- the figure followed: bus bandwidth ---------------------------------------------------------------------

TRACKED_METRIC = "busbw_gbps"
RANKS_METRIC = "ranks"
ALGBW_METRIC = "algbw_gbps"
# A drop of the tracked figure beyond this percentage (and beyond the baseline's own spread) is a regression.
DEFAULT_BUSBW_DROP_PCT = 10.0


@dataclass(frozen=True)
class SweepPoint:
    bytes: int
    busbw_gbps: float
    algbw_gbps: float | None = None
    time_us: float | None = None


def one_rank(record: Record) -> bool:
    return number(record.metrics.get(RANKS_METRIC)) == 1


def peak_busbw(record: Record) -> float | None:
    """``metrics.busbw_gbps``, else the best point of the sweep, else ``None`` (always for one rank)."""
    return None if one_rank(record) else peak(record, TRACKED_METRIC)


def sweep(record: Record) -> list[SweepPoint]:
    """The message-size sweep, smallest size first; points without busbw are dropped, and one rank has none."""
    if one_rank(record):
        return []
    return [SweepPoint(bytes=point.bytes, busbw_gbps=point.values[TRACKED_METRIC],
                       algbw_gbps=point.values.get("algbw_gbps"), time_us=point.values.get("time_us"))
            for point in size_points(record) if TRACKED_METRIC in point.values]


def algbw_sweep(record: Record) -> list[tuple[int, float]]:
    """``(bytes, algbw GB/s)`` per message size, smallest first, at any rank count (one rank included)."""
    return [(point.bytes, point.values[ALGBW_METRIC]) for point in size_points(record)
            if ALGBW_METRIC in point.values]


def scalar_metrics(record: Record) -> dict[str, float]:
    """A record's plain figures for a report (JUnit properties, JSON), less a busbw that one rank cannot have."""
    found = every_figure(record)
    if one_rank(record):
        found.pop(TRACKED_METRIC, None)
    return found
