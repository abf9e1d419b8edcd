"""The run history: every run's JSON Lines indexed into ``runs/history.sqlite``.

The JSONL files are the truth; the database is an index that is rebuilt from them whenever it is missing,
unreadable, of an older schema, or stale for a run (its files changed size or mtime since it was indexed).
"""

from __future__ import annotations

from .index import HISTORY_FILE, History, RunInfo, history_path, parse_since, parse_timestamp
from .queries import DrainEntry, HistoryEntry, MetricPoint, SeriesPoint

__all__ = [
    "HISTORY_FILE",
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
