"""Keeping ``runs/history.sqlite`` in step with the run folders.

Each run row remembers the size and mtime of the ``results.jsonl`` and ``meta.json`` it was read from; a
run whose files no longer match is read again as a whole, a run folder that is gone is dropped. Reading a
run is cheap (one JSONL file), so re-reading it beats tracking offsets through torn lines and rewrites.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..results.metrics import RANKS_METRIC, TRACKED_METRIC, every_figure, size_points
from ..results.records import Record, read_meta, read_run, runs_dir
from .queries import (
    BusbwPoint,
    DrainEntry,
    HistoryEntry,
    MetricPoint,
    SeriesPoint,
    query_drains,
    query_metric,
    query_records,
    query_series,
)

HISTORY_FILE = "history.sqlite"
# Bump when the tables change: an index of another version is thrown away and rebuilt from the files.
SCHEMA_VERSION = 3
DRAINS_FILE = "drains.jsonl"

_SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    started TEXT NOT NULL,
    started_epoch REAL NOT NULL,
    finished TEXT,
    exit_code INTEGER,
    record_count INTEGER NOT NULL,
    results_size INTEGER NOT NULL,
    results_mtime_ns INTEGER NOT NULL,
    meta_size INTEGER NOT NULL,
    meta_mtime_ns INTEGER NOT NULL,
    drains_size INTEGER NOT NULL,
    drains_mtime_ns INTEGER NOT NULL
);
CREATE TABLE records (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    ts TEXT NOT NULL,
    ts_epoch REAL NOT NULL,
    host TEXT NOT NULL,
    check_name TEXT NOT NULL,
    status TEXT NOT NULL,
    record_json TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
-- Every plain number a record measured, by name: history knows metrics, not checks.
CREATE TABLE metrics (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, seq, name),
    FOREIGN KEY (run_id, seq) REFERENCES records(run_id, seq) ON DELETE CASCADE
);
CREATE INDEX metrics_name ON metrics(name);
-- Every per-size figure (metrics.sizes) by name and size.
CREATE TABLE series (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    value REAL NOT NULL,
    FOREIGN KEY (run_id, seq) REFERENCES records(run_id, seq) ON DELETE CASCADE
);
CREATE INDEX series_name ON series(name, run_id, seq);
-- What the fleet check drained: host, reason (with its cause), the command and how it exited.
CREATE TABLE drains (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    ts TEXT NOT NULL,
    host TEXT NOT NULL,
    reason TEXT NOT NULL,
    command TEXT NOT NULL,
    exit_status INTEGER,
    output TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX records_host ON records(host, ts_epoch);
CREATE INDEX records_check ON records(check_name, ts_epoch);
CREATE INDEX records_ts ON records(ts_epoch);
CREATE INDEX runs_started ON runs(started_epoch);
"""


def history_path(base: Path | None = None) -> Path:
    return runs_dir(base) / HISTORY_FILE


def parse_timestamp(text: str) -> datetime | None:
    """An ISO 8601 time as records write it (``...Z`` or an offset); naive times are taken as UTC."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """``7d``, ``12h``, ``30m``, ``2w`` (that long ago) or an ISO time (``2026-11-01``, ``...T10:00Z``)."""
    match = _RELATIVE.match(text)
    if match:
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        try:
            return (now or datetime.now(timezone.utc)) - timedelta(seconds=seconds)
        except OverflowError:  # an age older than the calendar (99999999999d): everything there is
            return datetime.min.replace(tzinfo=timezone.utc)
    moment = parse_timestamp(text)
    if moment is None:
        raise ConfigError(f"cannot read the time {text!r}",
                          hint="use an age like 7d, 12h, 30m, 2w or an ISO time like 2026-11-01T10:00Z")
    return moment


def _run_id_time(run_id: str) -> datetime | None:
    # Run ids start with a UTC stamp (records.new_run_id): the fallback when meta.json was lost.
    try:
        return datetime.strptime(run_id[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _run_id_kind(run_id: str) -> str:
    parts = run_id.split("-")
    return "-".join(parts[1:-1]) if len(parts) >= 3 else "run"


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    kind: str
    started: str
    finished: str | None
    exit_code: int | None
    record_count: int

    @property
    def interrupted(self) -> bool:
        return self.finished is None

    @property
    def good(self) -> bool:
        """Finished, and nothing failed or errored."""
        return self.finished is not None and self.exit_code == 0

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "kind": self.kind, "started": self.started, "finished": self.finished,
                "exit_code": self.exit_code, "records": self.record_count, "interrupted": self.interrupted}


@dataclass(frozen=True)
class _FileStamp:
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> _FileStamp:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return cls(-1, -1)
        return cls(stat.st_size, stat.st_mtime_ns)


def _read_drains(path: Path) -> list[tuple[Any, ...]]:
    """``(ts, host, reason, command, exit_status, output)`` per line of a run's drains.jsonl; torn lines
    (a crash mid-write) are skipped."""
    rows: list[tuple[Any, ...]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return rows
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict) or not item.get("host"):
            continue
        status = item.get("exit_status")
        rows.append((str(item.get("ts") or ""), str(item["host"]), str(item.get("reason") or ""),
                     str(item.get("command") or ""), status if isinstance(status, int) else None,
                     str(item.get("output") or "")))
    return rows


class History:
    """The index over every run in a runs folder. Call :meth:`sync` (done on open) before querying."""

    def __init__(self, base: Path | None = None, *, sync: bool = True) -> None:
        self.runs_dir = runs_dir(base)
        self.path = self.runs_dir / HISTORY_FILE
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._conn = self._open()
        if sync:
            self.sync()

    # -- opening and rebuilding ------------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        try:
            conn = self._connect()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == SCHEMA_VERSION:
                return conn
            conn.close()
        except sqlite3.DatabaseError:
            pass  # not a database, or a torn one: it is only an index, so start again from the files
        self._remove_files()
        conn = self._connect()
        with conn:
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30)
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _remove_files(self) -> None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Cursor]:
        with closing(self._conn.cursor()) as cursor:
            yield cursor

    def run_folders(self) -> list[Path]:
        if not self.runs_dir.is_dir():
            return []
        return sorted(path for path in self.runs_dir.iterdir() if path.is_dir()
                      and ((path / "results.jsonl").exists() or (path / "meta.json").exists()))

    def sync(self) -> list[str]:
        """Bring the index in step with the run folders; the run ids (re)indexed, for tests and logs."""
        on_disk = {folder.name: folder for folder in self.run_folders()}
        known = {row[0]: (_FileStamp(row[1], row[2]), _FileStamp(row[3], row[4]), _FileStamp(row[5], row[6]))
                 for row in self._conn.execute(
                     "SELECT run_id, results_size, results_mtime_ns, meta_size, meta_mtime_ns, drains_size, "
                     "drains_mtime_ns FROM runs")}
        changed = []
        with self._conn:
            for run_id in known.keys() - on_disk.keys():
                self._conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
            for run_id, folder in sorted(on_disk.items()):
                stamps = (_FileStamp.of(folder / "results.jsonl"), _FileStamp.of(folder / "meta.json"),
                          _FileStamp.of(folder / DRAINS_FILE))
                if known.get(run_id) == stamps:
                    continue
                self._index_run(folder, *stamps)
                changed.append(run_id)
        return changed

    def _index_run(self, folder: Path, results: _FileStamp, meta_stamp: _FileStamp,
                   drains_stamp: _FileStamp) -> None:
        run_id = folder.name
        meta = read_meta(folder)
        records = read_run(folder) if results.size >= 0 else []
        started = str(meta.get("started") or (records[0].ts if records else ""))
        started_at = parse_timestamp(started) or _run_id_time(run_id) or datetime.fromtimestamp(
            max(results.mtime_ns, meta_stamp.mtime_ns, 0) / 1e9, timezone.utc)
        if not started:
            started = started_at.isoformat().replace("+00:00", "Z")
        exit_code = meta.get("exit_code")
        self._conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        self._conn.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, str(meta.get("kind") or _run_id_kind(run_id)), started,
             started_at.timestamp(), meta.get("finished"), exit_code if isinstance(exit_code, int) else None,
             len(records), results.size, results.mtime_ns, meta_stamp.size, meta_stamp.mtime_ns,
             drains_stamp.size, drains_stamp.mtime_ns))
        self._conn.executemany(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [self._record_row(run_id, seq, record, started_at) for seq, record in enumerate(records)])
        self._conn.executemany(
            "INSERT INTO metrics VALUES (?, ?, ?, ?)",
            [(run_id, seq, name, value) for seq, record in enumerate(records)
             for name, value in every_figure(record).items()])
        self._conn.executemany(
            "INSERT INTO series VALUES (?, ?, ?, ?, ?)",
            [(run_id, seq, name, point.bytes, value) for seq, record in enumerate(records)
             for point in size_points(record) for name, value in point.values.items()])
        self._conn.executemany("INSERT INTO drains VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               [(run_id, seq, *row) for seq, row in enumerate(_read_drains(folder / DRAINS_FILE))])

    @staticmethod
    def _record_row(run_id: str, seq: int, record: Record, run_started: datetime) -> tuple[Any, ...]:
        moment = parse_timestamp(record.ts) or run_started
        return (run_id, seq, record.ts, moment.timestamp(), record.host, record.check, record.status,
                record.to_json())

    # -- queries ---------------------------------------------------------------------------------------------

    def runs(self, *, kind: str | tuple[str, ...] | None = None, since: datetime | None = None,
             until: datetime | None = None) -> list[RunInfo]:
        """Runs oldest first."""
        sql = "SELECT run_id, kind, started, finished, exit_code, record_count FROM runs WHERE 1=1"
        params: list[Any] = []
        if kind is not None:
            kinds = (kind,) if isinstance(kind, str) else kind
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        if since is not None:
            sql += " AND started_epoch >= ?"
            params.append(since.timestamp())
        if until is not None:
            sql += " AND started_epoch <= ?"
            params.append(until.timestamp())
        sql += " ORDER BY started_epoch, run_id"
        return [RunInfo(*row) for row in self._conn.execute(sql, params)]

    def run(self, run_id: str) -> RunInfo | None:
        row = self._conn.execute(
            "SELECT run_id, kind, started, finished, exit_code, record_count FROM runs WHERE run_id = ?",
            (run_id,)).fetchone()
        return RunInfo(*row) if row else None

    def latest_run(self, *, kind: str | tuple[str, ...] | None = None) -> RunInfo | None:
        runs = self.runs(kind=kind)
        return runs[-1] if runs else None

    def last_good_run(self, *, kind: str | tuple[str, ...] | None = None) -> RunInfo | None:
        """The newest finished run with exit code 0 that has records."""
        good = [run for run in self.runs(kind=kind) if run.good and run.record_count]
        return good[-1] if good else None

    def records(self, *, host: str | None = None, check: str | None = None, since: datetime | None = None,
                until: datetime | None = None, run_id: str | None = None,
                status: str | None = None) -> list[HistoryEntry]:
        """Records oldest first, with the run each belongs to."""
        return query_records(self._conn, host=host, check=check, since=since, until=until, run_id=run_id,
                             status=status)

    def metric_history(self, name: str, *, host: str | None = None, check: str | None = None,
                       since: datetime | None = None, series_peak: bool = False) -> list[MetricPoint]:
        """A metric's highest value per run, host and check, oldest run first; records without it are absent
        (never a zero). With ``series_peak``, a record that lacks the plain metric but has it per size
        counts with the highest value of its series."""
        return query_metric(self._conn, name, host=host, check=check, since=since, series_peak=series_peak)

    def busbw_history(self, *, host: str | None = None, check: str | None = None,
                      since: datetime | None = None) -> list[BusbwPoint]:
        """Peak busbw per run, host and check, oldest run first: the points of the history plot. A record of one
        rank has none (:func:`accelstack.results.metrics.one_rank`), whatever an old record carries."""
        one_rank_cells = {(p.run_id, p.host, p.check)
                          for p in self.metric_history(RANKS_METRIC, host=host, check=check, since=since)
                          if p.value == 1}
        return [BusbwPoint(p.run_id, p.run_started, p.started_epoch, p.host, p.check, p.value)
                for p in self.metric_history(TRACKED_METRIC, host=host, check=check, since=since, series_peak=True)
                if (p.run_id, p.host, p.check) not in one_rank_cells]

    def series(self, name: str, *, run_id: str | None = None, host: str | None = None,
               check: str | None = None, since: datetime | None = None) -> list[SeriesPoint]:
        """A metric's per-size values, by run (oldest first), host, check and size."""
        return query_series(self._conn, name, run_id=run_id, host=host, check=check, since=since)

    def drains(self, *, host: str | None = None, since: datetime | None = None) -> list[DrainEntry]:
        """Every drain the fleet check ran, oldest first."""
        return query_drains(self._conn, host=host, since=since)
