"""Read-only queries over the history index; the SQL lives here, the syncing in :mod:`.index`."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..results.records import Record


@dataclass(frozen=True)
class HistoryEntry:
    run_id: str
    run_kind: str
    run_started: str
    record: Record

    def to_dict(self) -> dict[str, Any]:
        return {**self.record.to_dict(), "run_kind": self.run_kind, "run_started": self.run_started}


@dataclass(frozen=True)
class MetricPoint:
    run_id: str
    run_started: str
    started_epoch: float
    host: str
    check: str
    name: str
    value: float


@dataclass(frozen=True)
class SeriesPoint:
    run_id: str
    run_started: str
    host: str
    check: str
    name: str
    bytes: int
    value: float


@dataclass(frozen=True)
class BusbwPoint:
    """One point of the history plot: a run's peak busbw on a host, for a check."""

    run_id: str
    run_started: str
    started_epoch: float
    host: str
    check: str
    busbw_gbps: float


@dataclass(frozen=True)
class DrainEntry:
    run_id: str
    ts: str
    host: str
    reason: str
    command: str
    exit_status: int | None
    output: str

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "ts": self.ts, "host": self.host, "reason": self.reason,
                "command": self.command, "exit_status": self.exit_status, "output": self.output}


def _filters(host: str | None, check: str | None, since: datetime | None, until: datetime | None,
             run_id: str | None = None, status: str | None = None) -> tuple[str, list[Any]]:
    clauses = []
    params: list[Any] = []
    pairs = (("r.host", host), ("r.check_name", check), ("r.run_id", run_id), ("r.status", status))
    for column, value in pairs:
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if since is not None:
        clauses.append("r.ts_epoch >= ?")
        params.append(since.timestamp())
    if until is not None:
        clauses.append("r.ts_epoch <= ?")
        params.append(until.timestamp())
    return (" AND " + " AND ".join(clauses)) if clauses else "", params


def query_records(conn: sqlite3.Connection, *, host: str | None, check: str | None, since: datetime | None,
                  until: datetime | None, run_id: str | None, status: str | None) -> list[HistoryEntry]:
    where, params = _filters(host, check, since, until, run_id, status)
    rows = conn.execute(
        "SELECT r.run_id, u.kind, u.started, r.record_json FROM records r JOIN runs u ON u.run_id = r.run_id"
        f" WHERE 1=1{where} ORDER BY r.ts_epoch, u.started_epoch, r.run_id, r.seq", params)
    return [HistoryEntry(run_id, kind, started, Record.from_dict(json.loads(blob)))
            for run_id, kind, started, blob in rows]


def query_metric(conn: sqlite3.Connection, name: str, *, host: str | None, check: str | None,
                 since: datetime | None, series_peak: bool = False) -> list[MetricPoint]:
    where, params = _filters(host, check, since, None)
    values = "SELECT run_id, seq, name, value FROM metrics WHERE name = ?"
    value_params: list[Any] = [name]
    if series_peak:
        # A record without the plain figure counts with the best point of its series under the same name.
        values += (" UNION ALL SELECT s.run_id, s.seq, s.name, MAX(s.value) FROM series s WHERE s.name = ?"
                   " AND NOT EXISTS (SELECT 1 FROM metrics x WHERE x.run_id = s.run_id AND x.seq = s.seq"
                   " AND x.name = s.name) GROUP BY s.run_id, s.seq")
        value_params.append(name)
    rows = conn.execute(
        "SELECT r.run_id, u.started, u.started_epoch, r.host, r.check_name, m.name, MAX(m.value)"
        f" FROM ({values}) m JOIN records r ON r.run_id = m.run_id AND r.seq = m.seq"
        " JOIN runs u ON u.run_id = r.run_id"
        f" WHERE 1=1{where}"
        " GROUP BY r.run_id, r.host, r.check_name ORDER BY u.started_epoch, r.run_id, r.host, r.check_name",
        [*value_params, *params])
    return [MetricPoint(*row) for row in rows]


def query_series(conn: sqlite3.Connection, name: str, *, run_id: str | None, host: str | None,
                 check: str | None, since: datetime | None) -> list[SeriesPoint]:
    where, params = _filters(host, check, since, None, run_id)
    rows = conn.execute(
        "SELECT r.run_id, u.started, r.host, r.check_name, s.name, s.bytes, MAX(s.value)"
        " FROM series s JOIN records r ON r.run_id = s.run_id AND r.seq = s.seq"
        " JOIN runs u ON u.run_id = r.run_id"
        f" WHERE s.name = ?{where}"
        " GROUP BY r.run_id, r.host, r.check_name, s.bytes"
        " ORDER BY u.started_epoch, r.run_id, r.host, r.check_name, s.bytes",
        [name, *params])
    return [SeriesPoint(*row) for row in rows]


def query_drains(conn: sqlite3.Connection, *, host: str | None, since: datetime | None) -> list[DrainEntry]:
    sql = ("SELECT d.run_id, d.ts, d.host, d.reason, d.command, d.exit_status, d.output FROM drains d"
           " JOIN runs u ON u.run_id = d.run_id WHERE 1=1")
    params: list[Any] = []
    if host is not None:
        sql += " AND d.host = ?"
        params.append(host)
    if since is not None:
        sql += " AND u.started_epoch >= ?"
        params.append(since.timestamp())
    return [DrainEntry(*row) for row in conn.execute(sql + " ORDER BY u.started_epoch, d.run_id, d.seq", params)]
