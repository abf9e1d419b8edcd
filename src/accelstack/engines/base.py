"""The Engine interface: where checks run, behind one shape.

An engine runs the host checks on its set of nodes (:meth:`Engine.run_host_checks`), then the cluster checks
across the nodes that answered (:meth:`Engine.run_cluster_checks`: the multi-node collective), and drains a node
(:meth:`Engine.drain`). :meth:`Engine.validate` is the run both engines share: the host phase, the cluster phase,
records handed to the sink as each check ends, and Ctrl-C: the first stops the remote work (:meth:`Engine.cancel`),
keeps every finished record and marks each check without one ``error`` "not run: interrupted"; a second exits at
once. What a check is (its declaration, its judge) is :mod:`accelstack.validate`'s; an engine only runs them.

A drain takes a node out of service: through the engine's own way (Slurm: ``scontrol``), or the operator's command
(``--drain-cmd``, a template run through a shell), which works whatever the engine.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ConfigError
from ..results.records import Record, RecordSink, interrupt_now, utc_now, whole_record
from ..transport.fanout import RunInterrupted
from ..validate.checks import Check

KILL_WAIT_S = 15.0  # after Ctrl-C: how long the workers get to notice their commands were killed
SECOND_INTERRUPT_GRACE_S = 1.0
DRAIN_TIMEOUT_S = 120


# ----- drains -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DrainResult:
    """One drain: the node, why, the command that drained it, its exit status (None: it gave no end in time) and
    what it printed. What the fleet check records in ``drains.jsonl`` and node-check says on stderr."""

    host: str
    reason: str
    command: str
    exit_status: int | None
    output: str
    ts: str = ""
    run_id: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "ts": self.ts, "host": self.host, "reason": self.reason,
                "command": self.command, "exit_status": self.exit_status, "output": self.output}


def fill_drain_template(template: str, host: str, reason: str) -> str:
    """The operator's drain command (``--drain-cmd``) with ``{host}`` and ``{reason}`` replaced by shell-quoted
    values.

    Plain replacement rather than ``str.format``, so other braces in a template (awk, shell ``${VAR}``) stay.
    """
    return template.replace("{host}", shlex.quote(host)).replace("{reason}", shlex.quote(reason))


def run_drain_template(template: str, host: str, reason: str, *,
                       timeout_s: float = DRAIN_TIMEOUT_S) -> DrainResult:
    """Drain ``host`` with the operator's command, whatever the engine."""
    command = fill_drain_template(template, host, reason)
    try:
        # A shell, because the template is the operator's own command line (pipes, sudo, ssh to a controller).
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        return DrainResult(host, reason, command, None, f"timed out after {timeout_s:g}s", ts=utc_now())
    output = (done.stdout + done.stderr).strip()
    return DrainResult(host, reason, command, done.returncode, output[-2000:], ts=utc_now())


# ----- a run's records, and Ctrl-C --------------------------------------------------------------------------

class RunRecords:
    """A run's records as they arrive from the engine's workers: handed to the sink, and what is running now (for
    the progress display, and for marking what an interrupt cut short). Once the engine is cancelled, late records
    are dropped: they come from commands that were killed."""

    def __init__(self, sink: RecordSink | None, cancelled: threading.Event) -> None:
        self.sink = sink
        self.cancelled = cancelled
        self.records: list[Record] = []
        self.running: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def begin(self, host: str, check: str) -> None:
        with self._lock:
            self.running.add((host, check))
        begin = getattr(self.sink, "begin", None)
        if begin is not None:
            begin(host, check)

    def end(self, host: str, check: str) -> None:
        with self._lock:
            if self.cancelled.is_set():
                return  # still running when Ctrl-C came: the interrupt marks it
            self.running.discard((host, check))
        end = getattr(self.sink, "end", None)
        if end is not None:
            end(host, check)

    def emit(self, batch: Iterable[Record]) -> None:
        with self._lock:
            if self.cancelled.is_set():
                return
            self._keep(list(batch))

    def keep(self, batch: Iterable[Record]) -> None:
        """Records written whatever happened (the ``error`` records an interrupt leaves)."""
        with self._lock:
            self._keep(list(batch))

    def _keep(self, batch: list[Record]) -> None:
        with whole_record():  # in the run's records and in the sink both, or in neither
            self.records.extend(batch)
            if self.sink is not None:
                self.sink.add_all(batch)

    def cut_short(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self.running)


@contextlib.contextmanager
def interrupt_guard(cancel: Callable[[], None]) -> Iterator[None]:
    """SIGINT while a run is under way: the first starts ``cancel`` at once (in a thread, so the main thread is
    free to collect what finished) and raises KeyboardInterrupt; a second exits at once, 130, without a traceback.
    Only in the main thread (where signals are delivered)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    killers: list[threading.Thread] = []

    def handler(signum: int, frame: object) -> None:
        if killers:
            os.write(2, b"accelstack: interrupted again: exiting now\n")
            # The kills already sent get a moment to land (a local kill takes milliseconds), no more. A second
            # SIGINT can come while the first is still starting the killer (two signals microseconds apart, as
            # `timeout` forwards them): a thread not started yet cannot be joined.
            if killers[0].ident is not None:
                killers[0].join(SECOND_INTERRUPT_GRACE_S)
            os._exit(130)
        killer = threading.Thread(target=cancel, name="accelstack-cancel-all", daemon=True)
        killers.append(killer)
        killer.start()
        interrupt_now()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# ----- the interface ----------------------------------------------------------------------------------------

class Engine(ABC):
    """Where checks run: SSH (``engines/ssh``) or Slurm (``engines/slurm``); Kubernetes would be one more.

    ``name`` is the engine's name in a check's declared ``engines`` and on the command line (``--engine``).
    ``drain_template``, when given, is the operator's drain command (``--drain-cmd``): :meth:`drain` runs it
    instead of the engine's own way."""

    name: ClassVar[str]
    # The end of the line a run interrupted by Ctrl-C says, after what it kept.
    stopped: ClassVar[str] = "remote work stopped"

    def __init__(self, *, drain_template: str | None = None) -> None:
        self.drain_template = drain_template
        self.cancelled = threading.Event()

    # -- what an engine does ---------------------------------------------------------------------------------

    def start(self, checks: Sequence[Check], run: RunRecords) -> None:
        """Before the host phase: records the engine can give without running anything (Slurm: a node it cannot
        run a step on now gets its ``error`` records here)."""
        return None  # most engines know nothing before they run

    @abstractmethod
    def run_host_checks(self, checks: Sequence[Check], run: RunRecords, *, tier: str,
                        only: set[str] | None = None) -> None:
        """Every host-scope check of ``checks`` on every node, each check's records to ``run`` as it ends; a node
        that cannot be worked on gets ``error`` records, never an exception."""

    @abstractmethod
    def run_cluster_checks(self, checks: Sequence[Check], run: RunRecords, *, tier: str) -> None:
        """The cluster checks (the multi-node collective, and whatever else the engine runs across nodes) over the
        nodes the host phase reached (``run.records`` so far), with the ``tier``'s settings; records to ``run``."""

    def drain(self, node: str, reason: str) -> DrainResult:
        """Take ``node`` out of service: the operator's command when one was given, else the engine's own way."""
        if self.drain_template:
            return run_drain_template(self.drain_template, node, reason)
        return self.own_drain(node, reason)

    def own_drain(self, node: str, reason: str) -> DrainResult:
        """The engine's own way to drain a node; an engine without one (SSH: no scheduler) refuses."""
        raise ConfigError(f"--engine {self.name} has no way of its own to drain {node}: give --drain-cmd")

    @abstractmethod
    def cancel(self) -> None:
        """Stop the remote work under way (the first Ctrl-C, from a thread of its own). Sets :attr:`cancelled`."""

    def wait_idle(self) -> None:
        """After a cancel: give the workers a moment to notice their commands were killed."""
        return None  # nothing to wait for, unless the engine says otherwise

    @abstractmethod
    def interrupted(self, run: RunRecords, checks: Sequence[Check]) -> list[Record]:
        """After a cancel: one ``error`` record for each selected check and node that has none (not measured)."""

    # -- the run both engines share --------------------------------------------------------------------------

    def validate(self, checks: Sequence[Check], *, tier: str, only: set[str] | None = None,
                 sink: RecordSink | None = None) -> list[Record]:
        """The host checks, then the cluster checks (cheapest first: the declared timeout), every record to
        ``sink`` as its check ends; returns them all. On Ctrl-C the remote work is stopped, every check without a
        record gets an ``error`` "not run" record, and :class:`RunInterrupted` is raised."""
        run = RunRecords(sink, self.cancelled)
        host = [c for c in checks if c.scope == "host"]
        cluster = sorted((c for c in checks if c.scope == "cluster"), key=lambda c: (c.timeout, c.name))
        with interrupt_guard(self.cancel):
            try:
                self.start(checks, run)
                if host:
                    self.run_host_checks(host, run, tier=tier, only=only)
                if self.cancelled.is_set():
                    raise KeyboardInterrupt
                if cluster:
                    self.run_cluster_checks(cluster, run, tier=tier)
                if self.cancelled.is_set():
                    raise KeyboardInterrupt
            except KeyboardInterrupt:
                self.cancel()
                self.wait_idle()
                missing = self.interrupted(run, checks)
                run.keep(missing)
                raise RunInterrupted(f"interrupted: {len(run.records) - len(missing)} finished record(s) kept, "
                                     f"{len(missing)} check(s) marked not run; {self.stopped}") from None
        return run.records
