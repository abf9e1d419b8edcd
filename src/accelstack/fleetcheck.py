"""The nightly fleet check: validate every inventory, compare with the baseline, write every report, drain.

Exit codes: 0 healthy; 1 a host failed a check or regressed against the baseline; 2 hosts could not be checked
(and none failed). ``--drain-cmd`` runs for each host that failed or regressed, never for a host whose only
problem is ``error``: an unreachable node is not evidence of a bad node, and draining on it would let one
network blip empty a partition.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from .baseline import (
    Regression,
    baseline_from_records,
    baseline_path,
    find_regressions,
    load_baseline,
    save_baseline,
)
from .errors import AccelstackError
from .history import History
from .history.metrics import CLUSTER_HOST
from .output import STATUS_STYLE
from .records import Record, RunWriter, error_record
from .report import ReportData, render_html, render_json, render_junit, render_prom, write_atomic
from .report.model import actionable, read_meta, verdict

REPORT_FILES = {"junit.xml": render_junit, "report.html": render_html, "accelstack.prom": render_prom,
                "summary.json": render_json}
DRAIN_TIMEOUT_S = 120
HEARTBEAT_S = 60.0
# Slurm caps a node's reason; a short reason also keeps the drain command line readable in logs.
REASON_MAX = 200


class FleetReporter:
    """Persist, then show: every record goes to the run folder as it arrives, then to a live status on stderr.

    Validation streams into it through :meth:`add` (the same call as :class:`accelstack.output.Reporter`); the
    records a validate callable returns are added too, and a record already added is not written twice. On a
    terminal a rich status line shows what is running; otherwise (cron, CI logs) a timestamped line is printed
    per inventory, per problem and, while a step runs longer, every ``heartbeat_s`` seconds.
    """

    def __init__(self, console: Console | None = None, *, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.console = console or Console(file=sys.stderr, stderr=True)
        self.heartbeat_s = heartbeat_s
        self.writer: RunWriter | None = None
        self.total_hosts = 0
        self.counts: dict[str, int] = {}
        self._seen: set[int] = set()
        self._hosts: set[str] = set()
        self._lock = threading.Lock()
        self._activity = "starting"
        self._since = time.monotonic()
        self._status: Status | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self, writer: RunWriter) -> None:
        self.writer = writer
        self.note(escape(f"fleet check: run {writer.run_id}"))
        if self.console.is_terminal:
            self._status = self.console.status(self._line(), spinner="dots")
            self._status.start()
        elif self.heartbeat_s > 0:
            self._beat = threading.Thread(target=self._heartbeat, name="fleet-check-heartbeat", daemon=True)
            self._beat.start()

    def stop(self) -> None:
        self._stop.set()
        if self._status is not None:
            self._status.stop()
            self._status = None
        if self._beat is not None:
            self._beat.join(timeout=5)
            self._beat = None

    # -- what validation calls -------------------------------------------------------------------------------

    def add(self, record: Record) -> None:
        with self._lock:
            if id(record) in self._seen:
                return
            self._seen.add(id(record))
            if self.writer is not None:
                self.writer.write(record)
            self.counts[record.status] = self.counts.get(record.status, 0) + 1
            self._hosts.add(record.host)
        if record.status in ("fail", "error"):
            style = STATUS_STYLE.get(record.status, "")
            what = escape(f"{record.host} {record.check}: {record.summary}")
            self.note(f"[{style}]{record.status}[/] {what}")
        self._refresh()

    def add_all(self, records: Iterable[Record]) -> None:
        for record in records:
            self.add(record)

    def finish(self, extra: Any = None) -> int:
        # validate_inventory may finish its reporter; the fleet check closes the run itself, later.
        return 0

    # -- progress --------------------------------------------------------------------------------------------

    def step(self, activity: str) -> None:
        self._activity = activity
        self._since = time.monotonic()
        if self._status is None:
            self.note(activity)
        self._refresh()

    def note(self, message: str) -> None:
        """A line above the live status; ``message`` is rich markup, so callers escape what hosts wrote."""
        stamp = time.strftime("%H:%M:%S")
        self.console.print(f"[dim]{stamp}[/] {message}", highlight=False)

    def _line(self) -> str:
        counts = " ".join(f"[{STATUS_STYLE[s]}]{n} {s}[/]" for s, n in sorted(self.counts.items()) if n)
        elapsed = int(time.monotonic() - self._since)
        return f"{self._activity} ({elapsed}s)  {len(self._hosts)} host(s)  {counts}"

    def _refresh(self) -> None:
        if self._status is not None:
            self._status.update(self._line())

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            self.note(f"still {self._line()}")


@dataclass(frozen=True)
class DrainResult:
    host: str
    reason: str
    command: str
    exit_status: int | None
    output: str

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "reason": self.reason, "command": self.command,
                "exit_status": self.exit_status, "output": self.output}


def drain_targets(records: list[Record], regressions: list[Regression]) -> dict[str, str]:
    """``{host: reason}`` for every host that failed a check or regressed; ``error`` alone never drains."""
    reasons: dict[str, list[str]] = {}
    for record in records:
        if record.status == "fail" and record.host != CLUSTER_HOST:
            reasons.setdefault(record.host, []).append(f"{record.check} failed")
    for regression in actionable(regressions):
        if regression.host != CLUSTER_HOST and regression.kind != "new_failure":
            reasons.setdefault(regression.host, []).append(f"regression {regression.message}")
    return {host: _reason(items) for host, items in sorted(reasons.items())}


def _reason(items: list[str]) -> str:
    text = "accelstack: " + "; ".join(dict.fromkeys(items))
    text = " ".join(text.split())  # one line: a newline in a reason would end a scheduler's command
    return text if len(text) <= REASON_MAX else text[: REASON_MAX - 1] + "\u2026"


def drain_command(template: str, host: str, reason: str) -> str:
    """The template with ``{host}`` and ``{reason}`` replaced by shell-quoted values.

    Plain replacement rather than ``str.format``, so other braces in a template (awk, shell ``${VAR}``) stay.
    """
    return template.replace("{host}", shlex.quote(host)).replace("{reason}", shlex.quote(reason))


def run_drain(template: str, host: str, reason: str, *, timeout_s: float = DRAIN_TIMEOUT_S) -> DrainResult:
    command = drain_command(template, host, reason)
    try:
        # A shell, because the template is the operator's own command line (pipes, sudo, ssh to a controller).
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        return DrainResult(host, reason, command, None, f"timed out after {timeout_s:g}s")
    output = (done.stdout + done.stderr).strip()
    return DrainResult(host, reason, command, done.returncode, output[-2000:])


def _validate_safely(validate: Callable[[str], list[Record]], inventory: str) -> list[Record]:
    try:
        return list(validate(inventory))
    # Broad on purpose: one broken inventory must not cost the report on the others.
    except Exception as err:
        record = error_record(f"inventory:{inventory}", "validate", err)
        if not isinstance(err, AccelstackError):
            record.summary = f"{type(err).__name__}: {err}"
        return [record]


def fleet_check(inventories: list[str], *, validate: Callable[[str], list[Record]], drain_cmd: str | None,
                reports_dir: Path, busbw_drop_pct: float, progress: FleetReporter | None = None,
                runs_base: Path | None = None) -> int:
    """Validate each inventory, write one run and every report, drain bad hosts; the exit code (0, 1 or 2).

    ``validate`` may stream records into ``progress.add`` as they arrive and return them too; records it only
    returns are written when it returns. With no baseline yet, a healthy run becomes the baseline.
    """
    progress = progress or FleetReporter()
    writer = RunWriter("fleet-check", base=runs_base, meta={"inventories": inventories})
    progress.start(writer)
    try:
        for number, inventory in enumerate(inventories, 1):
            progress.step(escape(f"validating {inventory} ({number}/{len(inventories)})"))
            progress.add_all(_validate_safely(validate, inventory))
        writer.close()
        records = writer.records

        progress.step("comparing with the baseline")
        baseline_file = baseline_path(runs_base)
        baseline = load_baseline(baseline_file)
        regressions = find_regressions(records, baseline, busbw_drop_pct)
        for regression in regressions:
            progress.note("[bold red]regression[/] " + escape(regression.message))
        code = verdict(records, regressions)
        extra: dict[str, Any] = {"inventories": inventories, "busbw_drop_pct": busbw_drop_pct,
                                 "baseline_created": False, "drained": []}
        if baseline is None and code == 0:
            save_baseline(baseline_from_records(records, source_run=writer.run_id), baseline_file)
            extra["baseline_created"] = True
            progress.note(escape(f"no baseline yet: this healthy run is now the baseline ({baseline_file})"))
        elif baseline is None:
            progress.note("no baseline yet, and this run is not healthy: `inv baseline --from RUN` sets one")

        if drain_cmd:
            for host, reason in drain_targets(records, regressions).items():
                progress.step(escape(f"draining {host}"))
                result = run_drain(drain_cmd, host, reason)
                extra["drained"].append(result.to_dict())
                outcome = "done"
                if result.exit_status != 0:
                    outcome = f"[red]failed[/] ({result.exit_status}) " + escape(result.output[-200:])
                progress.note(escape(f"drain {host}: ") + outcome)

        progress.step("writing reports")
        with History(runs_base) as history:
            points = history.busbw_history()
        data = ReportData(run_id=writer.run_id, records=records, meta=read_meta(writer.path),
                          regressions=regressions, baseline_run=baseline.source_run if baseline else None,
                          busbw_history=points, extra=extra)
        for name, renderer in REPORT_FILES.items():
            write_atomic(reports_dir / name, renderer(data))
        progress.note(escape(f"reports in {reports_dir}: {', '.join(REPORT_FILES)}"))
        verdict_text = {0: "healthy", 1: "failures or regressions", 2: "hosts could not be checked"}[code]
        progress.note(f"fleet check {verdict_text} (exit {code})")
        return code
    finally:
        # No writer.close() here: on Ctrl-C or a crash the run must stay without `finished` (interrupted),
        # and every record it got is already flushed to disk.
        progress.stop()
