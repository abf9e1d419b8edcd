"""The figure that baselines, regressions, reports and plots follow: bus bandwidth, as the collectives write it.

History keeps every metric by name and knows none of them (:mod:`accelstack.results.metrics`); this is where
one of them is chosen. The collective validators (``validate/bandwidth.py``) write the peak as
``metrics.busbw_gbps`` and each size's ``busbw_gbps`` (with ``algbw_gbps`` and ``time_us``) in
``metrics.sizes``. One rank has no bus bandwidth: a record of one rank (``metrics.ranks == 1``) has no
busbw figure here even when an old record carries one, so it never reaches a baseline, a report or a plot.
Algorithm bandwidth (bytes over time) is defined at any rank count, one included: a report plots it where busbw
means nothing, and follows nothing with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from .metrics import number, peak, size_points
from .metrics import scalar_metrics as all_scalar_metrics
from .records import Record

if TYPE_CHECKING:
    from ..history import History

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


@dataclass(frozen=True)
class BusbwPoint:
    run_id: str
    run_started: str
    started_epoch: float
    host: str
    check: str
    busbw_gbps: float


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
    found = all_scalar_metrics(record)
    if one_rank(record):
        found.pop(TRACKED_METRIC, None)
    return found


def busbw_history(history: History, *, host: str | None = None, check: str | None = None,
                  since: datetime | None = None) -> list[BusbwPoint]:
    """Peak busbw per run, host and check, oldest run first: the points of the history plot."""
    one_rank_cells = {(p.run_id, p.host, p.check)
                      for p in history.metric_history(RANKS_METRIC, host=host, check=check, since=since)
                      if p.value == 1}
    return [BusbwPoint(p.run_id, p.run_started, p.started_epoch, p.host, p.check, p.value)
            for p in history.metric_history(TRACKED_METRIC, host=host, check=check, since=since, series_peak=True)
            if (p.run_id, p.host, p.check) not in one_rank_cells]
