"""The result record every task produces, the run folder it is appended to, and the exit-code rule.

A record is one host x one check: ``{run_id, ts, host, check, status, summary, metrics, evidence, remedy,
duration_s}``. Records are appended and flushed to ``runs/<run_id>/results.jsonl`` as they arrive, so a crash or a
Ctrl-C leaves every finished record on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Protocol

from ..errors import EXIT_ERROR, EXIT_FAIL, EXIT_OK

Status = Literal["pass", "warn", "fail", "error", "skip"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail", "error", "skip")
# Worst first: used to order tables and to pick the status of a group of records.
SEVERITY: dict[str, int] = {"fail": 4, "error": 3, "warn": 2, "skip": 1, "pass": 0}
# Field order of the contract, so JSON Lines read well by eye too.
FIELD_ORDER = ("run_id", "ts", "host", "check", "status", "summary", "metrics", "evidence", "remedy", "duration_s")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id(kind: str = "run") -> str:
    """Sortable and unique: ``20261122T101500Z-facts-3f9a``."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{kind}-{secrets.token_hex(2)}"


@dataclass
class Record:
    host: str
    check: str
    status: Status
    summary: str
    metrics: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    remedy: str | None = None
    duration_s: float = 0.0
    run_id: str = ""
    ts: str = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"record status {self.status!r} is not one of {', '.join(STATUSES)}")

    def to_dict(self) -> dict[str, Any]:
        """The record as a new dict, nested values copied (the caller may change it)."""
        data = asdict(self)
        return {key: data[key] for key in FIELD_ORDER}

    def to_json(self) -> str:
        """One JSON Lines line. Reads the fields in place: ``to_dict``'s deep copy of a facts record's evidence
        cost more than the encoding itself."""
        return json.dumps({key: getattr(self, key) for key in FIELD_ORDER}, sort_keys=False, default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        return cls(
            host=data["host"],
            check=data["check"],
            status=data["status"],
            summary=data.get("summary", ""),
            metrics=data.get("metrics") or {},
            evidence=data.get("evidence") or {},
            remedy=data.get("remedy"),
            duration_s=float(data.get("duration_s") or 0.0),
            run_id=data.get("run_id", ""),
            ts=data.get("ts", ""),
        )


def error_record(host: str, check: str, err: BaseException, duration_s: float = 0.0) -> Record:
    """The ``error`` record for a check that could not run on a host (unreachable, timed out, tool missing)."""
    evidence: dict[str, Any] = {"error": type(err).__name__}
    command = getattr(err, "command", None)
    if command:
        evidence["command"] = command
    for stream in ("stdout", "stderr"):
        text = getattr(err, stream, "")
        if text:
            evidence[f"{stream}_tail"] = text.strip().splitlines()[-20:]
    message = getattr(err, "message", None) or str(err)
    return Record(host=host, check=check, status="error", summary=message, evidence=evidence,
                  remedy=getattr(err, "hint", None), duration_s=round(duration_s, 3))


def interrupted_record(host: str, check: str, *, cut_short: bool, rerun: str) -> Record:
    """The ``error`` record Ctrl-C leaves for a check without one: cut short while it ran, or never started.
    ``rerun``: the command that runs it again."""
    summary = ("interrupted (Ctrl-C) before it finished: not measured" if cut_short
               else "not run: the run was interrupted (Ctrl-C)")
    return Record(host=host, check=check, status="error", summary=summary, evidence={"error": "interrupted"},
                  remedy=f"re-run: {rerun}")


def exit_code_for(records: Iterable[Record]) -> int:
    """0 all pass/warn/skip; 1 any fail; 2 any error and no fail."""
    statuses = {record.status for record in records}
    if "fail" in statuses:
        return EXIT_FAIL
    if "error" in statuses:
        return EXIT_ERROR
    return EXIT_OK



def prune_runs(base: Path, kind: str, keep: int, *, node: str | None = None,
               stale_s: float = 86400.0) -> list[Path]:
    """Remove the oldest run folders of ``kind`` under ``base`` beyond the newest ``keep`` (0 keeps every one).

    Only a run that ended (its meta.json says finished or interrupted), or one begun over ``stale_s`` ago that
    never closed (a killed run), is removed: a run still going (a prolog beside a health check) is never
    touched. ``node``: only that node's runs (their meta.json's ``node``) are counted and removed, so nodes that
    share a runs folder do not remove each other's runs. Never raises; returns what it removed."""
    if keep <= 0:
        return []
    pattern = re.compile(rf"^\d{{8}}T\d{{6}}Z-{re.escape(kind)}-[0-9a-f]+$")
    try:
        # By the time in the name, then by the folder's own (two runs begun in the same second).
        folders = sorted((p for p in base.iterdir() if pattern.match(p.name) and p.is_dir()),
                         key=lambda p: (p.name[:16], p.stat().st_mtime))
    except OSError:
        return []
    metas = {folder: read_meta(folder) for folder in folders}
    if node is not None:
        folders = [folder for folder in folders if metas[folder].get("node") == node]
    removed = []
    for folder in folders[:-keep]:
        meta = metas[folder]
        ended = bool(meta.get("finished") or meta.get("interrupted"))
        try:
            if ended or time.time() - folder.stat().st_mtime > stale_s:
                shutil.rmtree(folder)
                removed.append(folder)
        except OSError:
            continue
    return removed


def read_meta(folder: Path) -> dict[str, Any]:
    """A run folder's meta.json; {} when it is missing, torn or not a mapping."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def runs_dir(base: Path | None = None) -> Path:
    """Where runs are kept: ``$ACCELSTACK_RUNS`` or ``./runs``.

    Set but empty (``ACCELSTACK_RUNS= inv facts``, or ``ACCELSTACK_RUNS=$UNSET_VAR`` in a cron line) means unset,
    as the XDG base directory variables do: ``Path("")`` is the current folder, where run folders would land
    among whatever is there. Refusing it (exit 3) would break the common way a shell unsets a variable for one
    command."""
    if base is not None:
        return base
    return Path(os.environ.get("ACCELSTACK_RUNS", "").strip() or "runs")


# ----- Ctrl-C and a record half written ---------------------------------------------------------------------
# Python runs a SIGINT handler in the main thread between any two bytecodes. Where the main thread itself writes
# a record (Slurm's step output is read there), a KeyboardInterrupt raised between the record's line in
# results.jsonl and its line on stdout would keep it on disk and lose it from `--json`'s stream (or leave it in
# the file and out of the run's records, which then marks it "not run"). A record is written whole, or not at all.
_DEFERRED = {"depth": 0, "pending": False}


@contextlib.contextmanager
def whole_record() -> Iterator[None]:
    """Within it, a first Ctrl-C (:func:`interrupt_now`) waits until the block is done, then raises. Only the
    main thread defers: a signal is never delivered to another one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _DEFERRED["depth"] += 1
    try:
        yield
    finally:
        _DEFERRED["depth"] -= 1
        if not _DEFERRED["depth"] and _DEFERRED["pending"]:
            _DEFERRED["pending"] = False
            raise KeyboardInterrupt


def interrupt_now() -> None:
    """What a SIGINT handler calls to interrupt the main thread: KeyboardInterrupt now, or, while a record is
    being written (:func:`whole_record`), as soon as it is."""
    if _DEFERRED["depth"]:
        _DEFERRED["pending"] = True
        return
    raise KeyboardInterrupt


class RecordSink(Protocol):
    """Where records go as they arrive: a run folder, a reporter that also shows them, a fleet check."""

    def add(self, record: Record) -> None: ...

    def add_all(self, records: Iterable[Record]) -> None: ...


class RunWriter:
    """Appends records to ``runs/<run_id>/results.jsonl``, one flushed line per record, fsynced within
    :attr:`SYNC_INTERVAL_S`.

    A flushed line survives a crash, a kill or Ctrl-C of this process; the fsync is for the machine's own crash.
    Records that arrive together (hundreds of hosts answering facts within a second) share one fsync: one per
    record put about 2 ms of disk wait per host under the writer's lock on a busy machine. A record is never
    left unsynced longer than the interval (a timer syncs the tail of a burst), and close() syncs what is left.

    Thread-safe: fan-out workers call :meth:`write` as each host finishes. ``meta.json`` is written when the run
    starts and updated when it closes; a run without ``finished`` in its meta was interrupted, and its records
    are still all there.
    """

    SYNC_INTERVAL_S = 0.25

    def __init__(self, kind: str, *, base: Path | None = None, meta: dict[str, Any] | None = None,
                 run_id: str | None = None) -> None:
        self.run_id = run_id or new_run_id(kind)
        self.kind = kind
        self.path = runs_dir(base) / self.run_id
        self.path.mkdir(parents=True, exist_ok=True)
        self.records: list[Record] = []
        self._lock = threading.Lock()
        self._meta: dict[str, Any] = {"run_id": self.run_id, "kind": kind, "started": utc_now(), **(meta or {})}
        self._write_meta()
        self._file = (self.path / "results.jsonl").open("a", encoding="utf-8")
        self._started = time.monotonic()
        self._synced = 0.0  # monotonic time of the last fsync
        self._sync_timer: threading.Timer | None = None

    def _write_meta(self) -> None:
        tmp = self.path / "meta.json.tmp"
        tmp.write_text(json.dumps(self._meta, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.path / "meta.json")

    def write(self, record: Record) -> Record:
        self.write_line(record)
        return record

    def write_line(self, record: Record) -> str:
        """Append the record and return the JSON line written, so a reporter that prints JSON Lines prints
        the same line without encoding the record a second time."""
        record.run_id = self.run_id
        line = record.to_json()
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            self.records.append(record)
            now = time.monotonic()
            if now - self._synced >= self.SYNC_INTERVAL_S:
                self._fsync(now)
            elif self._sync_timer is None:
                self._sync_timer = threading.Timer(self.SYNC_INTERVAL_S, self._sync_tail)
                self._sync_timer.daemon = True
                self._sync_timer.start()
        return line

    def _fsync(self, now: float) -> None:
        os.fsync(self._file.fileno())
        self._synced = now

    def _sync_tail(self) -> None:
        with self._lock:
            self._sync_timer = None
            if not self._file.closed:
                self._fsync(time.monotonic())

    def add(self, record: Record) -> None:
        self.write(record)

    def add_all(self, records: Iterable[Record]) -> None:
        for record in records:
            self.write(record)

    def close(self, *, interrupted: bool = False) -> None:
        """Close the file and record the end in ``meta.json``; an interrupted run gets no ``finished`` (that is
        how reports and history tell it), only when it stopped."""
        with self._lock:
            if self._file.closed:
                return
            if self._sync_timer is not None:
                self._sync_timer.cancel()
                self._sync_timer = None
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
        self._meta["duration_s"] = round(time.monotonic() - self._started, 3)
        if interrupted:
            self._meta["interrupted"] = utc_now()
            self._meta["exit_code"] = 130
        else:
            self._meta["finished"] = utc_now()
            self._meta["exit_code"] = exit_code_for(self.records)
        self._write_meta()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_run(path: Path) -> list[Record]:
    """Every complete record of a run folder; a torn last line (a crash mid-write), a line that is not a record
    and bytes that are not text (a damaged disk block) are passed over, so one bad run never hides the others."""
    records = []
    results = path / "results.jsonl" if path.is_dir() else path
    with results.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(Record.from_dict(json.loads(line)))
            except (KeyError, ValueError, TypeError, AttributeError):  # JSONDecodeError is a ValueError
                continue
    return records
