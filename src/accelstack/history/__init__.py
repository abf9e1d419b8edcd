"""The run history: every run's JSON Lines indexed into ``runs/history.sqlite``.

The JSONL files are the truth; the database is an index that is rebuilt from them whenever it is missing,
unreadable, of an older schema, or stale for a run (its files changed size or mtime since it was indexed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lazy import lazy_name

if TYPE_CHECKING:
    from .index import HISTORY_FILE, History, RunInfo, history_path, parse_since, parse_timestamp
    from .queries import BusbwPoint, DrainEntry, HistoryEntry, MetricPoint, SeriesPoint

_SUBMODULES = {
    **dict.fromkeys(("HISTORY_FILE", "History", "RunInfo", "history_path", "parse_since", "parse_timestamp"), "index"),
    **dict.fromkeys(("BusbwPoint", "DrainEntry", "HistoryEntry", "MetricPoint", "SeriesPoint"), "queries"),
}


def __getattr__(name: str) -> Any:
    # Each name's submodule is imported when the name is first used (accelstack.lazy): a caller of the queries'
    # types does not bring sqlite3 and the index with them.
    return lazy_name(__name__, _SUBMODULES, globals(), name)


__all__ = [
    "HISTORY_FILE",
    "BusbwPoint",
    "DrainEntry",
    "History",
    "HistoryEntry",
    "MetricPoint",
    "RunInfo",
    "SeriesPoint",
    "history_path",
    "parse_since",
    "parse_timestamp",
]
