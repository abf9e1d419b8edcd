"""What a person watching ``inv fleet-check`` sees, on stderr, as the run goes.

On a terminal a rich status line shows what is running; otherwise (cron, CI logs) a timestamped line is printed
per inventory, per problem and, while a step runs longer, every ``heartbeat_s`` seconds. The fleet check
itself (:mod:`accelstack.flows.fleetcheck.run`) prints nothing: it calls this view and returns a
:class:`~accelstack.flows.fleetcheck.run.FleetResult`.
"""

from __future__ import annotations

import sys
import threading
import time

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from ...engines.base import DrainResult
from ...results.baseline import Regression
from ...results.output import STATUS_STYLE
from ...results.records import Record
from .run import FleetResult, FleetView

HEARTBEAT_S = 60.0
VERDICTS = {0: "healthy", 1: "failures or regressions", 2: "hosts could not be checked"}


class FleetConsole(FleetView):
    """The fleet check on a rich console (stderr by default): a live status line on a terminal, timestamped
    lines and a heartbeat elsewhere. What hosts wrote is escaped: it is never read as markup."""

    def __init__(self, console: Console | None = None, *, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.console = console or Console(file=sys.stderr, stderr=True)
        self.heartbeat_s = heartbeat_s
        self.counts: dict[str, int] = {}
        self._hosts: set[str] = set()
        self._lock = threading.Lock()
        self._activity = "starting"
        self._since = time.monotonic()
        self._status: Status | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------

    def started(self, run_id: str) -> None:
        self.note(f"fleet check: run {run_id}")
        if self.console.is_terminal:
            self._status = self.console.status(self._line(), spinner="dots")
            self._status.start()
        elif self.heartbeat_s > 0:
            self._beat = threading.Thread(target=self._heartbeat, name="fleet-check-heartbeat", daemon=True)
            self._beat.start()

    def stopped(self) -> None:
        self._stop.set()
        if self._status is not None:
            self._status.stop()
            self._status = None
        if self._beat is not None:
            self._beat.join(timeout=5)
            self._beat = None

    # -- what the fleet check reports ------------------------------------------------------------------------

    def step(self, activity: str) -> None:
        self._activity = activity
        self._since = time.monotonic()
        if self._status is None:
            self.note(activity)
        self._refresh()

    def note(self, message: str) -> None:
        self._line_above(escape(message))

    def record(self, record: Record) -> None:
        with self._lock:
            self.counts[record.status] = self.counts.get(record.status, 0) + 1
            self._hosts.add(record.host)
        if record.status in ("fail", "error"):
            style = STATUS_STYLE.get(record.status, "")
            self._line_above(f"[{style}]{record.status}[/] " + escape(f"{record.host} {record.check}: {record.summary}"))
        self._refresh()

    def regression(self, regression: Regression) -> None:
        label = "regression" if regression.counts else "not counted"
        self._line_above(f"[bold red]{label}[/] " + escape(regression.message))

    def drain_breaker(self, why: str) -> None:
        self._line_above("[bold red]drain breaker tripped[/]: " + escape(why))

    def drained(self, result: DrainResult) -> None:
        outcome = "done"
        if result.exit_status != 0:
            outcome = f"[red]failed[/] ({result.exit_status}) " + escape(result.output[-200:])
        self._line_above(escape(f"drain {result.host}: ") + outcome)

    def finished(self, result: FleetResult) -> None:
        names = ", ".join(path.name for path in result.reports)
        self.note(f"reports in {result.reports_dir}: {names}")
        verdict = VERDICTS[result.code]
        if result.breaker_tripped:
            verdict += "; drain breaker tripped, nothing drained"
        self.note(f"fleet check {verdict} (exit {result.code})")

    # -- drawing ---------------------------------------------------------------------------------------------

    def _line_above(self, markup: str) -> None:
        """A timestamped line above the live status; ``markup`` is rich markup, already escaped."""
        stamp = time.strftime("%H:%M:%S")
        self.console.print(f"[dim]{stamp}[/] {markup}", highlight=False)

    def _line(self) -> str:
        counts = " ".join(f"[{STATUS_STYLE[s]}]{n} {s}[/]" for s, n in sorted(self.counts.items()) if n)
        elapsed = int(time.monotonic() - self._since)
        return f"{escape(self._activity)} ({elapsed}s)  {len(self._hosts)} host(s)  {counts}"

    def _refresh(self) -> None:
        if self._status is not None:
            self._status.update(self._line())

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            self._line_above(f"still {self._line()}")
