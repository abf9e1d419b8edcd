"""A validation run: host validators fanned out over the fleet, then the cluster validators across it.

Each check's records go to the sink the moment the check ends. Ctrl-C kills what every host runs for the run
(Fleet.cancel), keeps every finished record, writes an ``error`` record for each check that did not finish
("not run: interrupted": it could not measure) and raises RunInterrupted; a second Ctrl-C exits at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...inventory import Host, Inventory
from ...results.records import Record, RecordSink, RunWriter
from ...stacks.context import HostContext, resolve_contexts
from ...transport.connection import Transport
from ...transport.fanout import FanoutOptions, Fleet, RunInterrupted
from ...validate.judge import host_error_record
from ...validate.registry import Validator, load_registry, select, validators_dir
from ...validate.thresholds import Thresholds, load_thresholds
from .cluster import DEFAULT_RENDEZVOUS_PORT, ClusterRun, prepare_members
from .host import run_host, tier_config

__all__ = ["DEFAULT_RENDEZVOUS_PORT", "interrupt_guard", "thresholds_for", "validate_hosts", "validate_inventory"]

KILL_WAIT_S = 15.0  # after Ctrl-C: how long the workers get to notice their commands were killed
SECOND_INTERRUPT_GRACE_S = 1.0


def thresholds_for(contexts: dict[str, HostContext], base: Thresholds) -> dict[str, Thresholds]:
    return {name: base.with_overrides(ctx.vars.get("thresholds"), where=f"host {name} var thresholds")
            for name, ctx in contexts.items()}


class _Collector:
    """The run's records as they arrive from every worker: handed to the sink, and what is running now (for the
    progress display and for marking what an interrupt cut short). After Ctrl-C, late records are dropped: they
    come from commands that were killed."""

    def __init__(self, fleet: Fleet, reporter: RecordSink | None) -> None:
        self.fleet = fleet
        self.reporter = reporter
        self.records: list[Record] = []
        self.running: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def begin(self, host: str, check: str) -> None:
        with self._lock:
            self.running.add((host, check))
        begin = getattr(self.reporter, "begin", None)
        if begin is not None:
            begin(host, check)

    def end(self, host: str, check: str) -> None:
        with self._lock:
            if self.fleet.cancelled.is_set():
                return  # still running when Ctrl-C came: the interrupt marks it
            self.running.discard((host, check))
        end = getattr(self.reporter, "end", None)
        if end is not None:
            end(host, check)

    def emit(self, batch: list[Record]) -> None:
        with self._lock:
            if self.fleet.cancelled.is_set():
                return
            self.records.extend(batch)
            if self.reporter is not None:
                self.reporter.add_all(batch)

    def done(self, host: str, check: str) -> bool:
        prefix = check + "."
        return any(r.host == host and (r.check == check or r.check.startswith(prefix)) for r in self.records)

    def interrupted(self, contexts: dict[str, HostContext], validators: list[Validator]) -> list[Record]:
        """After a cancel: one ``error`` record for every selected check that has none, written to the sink."""
        with self._lock:
            cut = set(self.running)
            missing = []
            # A host already given one `connect`/`host` record could not be worked on: nothing more to mark.
            whole = {r.host for r in self.records if r.check in ("connect", "host")}
            for name in contexts:
                if name in whole:
                    continue
                for validator in validators:
                    for check in validator.checks:
                        if self.done(name, check) or (validator.needs_peers and len(contexts) < 2):
                            continue
                        summary = ("interrupted (Ctrl-C) before it finished: not measured" if (name, check) in cut
                                   else "not run: the run was interrupted (Ctrl-C)")
                        missing.append(Record(host=name, check=check, status="error", summary=summary,
                                              evidence={"error": "interrupted"},
                                              remedy=f"re-run: inv validate --limit {name} --only {check}"))
            self.records.extend(missing)
            if self.reporter is not None:
                self.reporter.add_all(missing)
            return missing


def validate_hosts(fleet: Fleet, contexts: dict[str, HostContext], validators: list[Validator], *,
                   tier: str, reporter: RecordSink | None = None, folder: Path | None = None,
                   deadline_s: float | None = None) -> list[Record]:
    """Every selected validator on every host; records are handed to ``reporter`` as each check ends.

    On Ctrl-C (KeyboardInterrupt here) the remote work is killed, every check without a record gets an
    ``error`` "not run" record, and :class:`RunInterrupted` is raised."""
    collector = _Collector(fleet, reporter)
    try:
        _validate(fleet, contexts, validators, collector, tier=tier, folder=folder or validators_dir(),
                  deadline_s=deadline_s)
    except KeyboardInterrupt:
        fleet.cancel()
        fleet.wait_idle(KILL_WAIT_S)
        missing = collector.interrupted(contexts, validators)
        kept = len(collector.records) - len(missing)
        raise RunInterrupted(f"interrupted: {kept} finished record(s) kept, {len(missing)} check(s) marked "
                             "not run; remote work stopped") from None
    return collector.records


def _validate(fleet: Fleet, contexts: dict[str, HostContext], validators: list[Validator], collector: _Collector,
              *, tier: str, folder: Path, deadline_s: float | None) -> None:
    base = load_thresholds()
    per_host = thresholds_for(contexts, base)
    configs = {name: tier_config(ctx, tier) for name, ctx in contexts.items()}
    emit = collector.emit
    finished: dict[str, set[str]] = {name: set() for name in contexts}
    given_up: set[str] = set()

    def host_work(transport: Transport) -> list[Record]:
        name = transport.host.name

        def on_start(validator: Validator) -> None:
            for check in validator.checks:
                collector.begin(name, check)

        def on_done(validator: Validator, batch: list[Record]) -> None:
            if name in given_up:
                return  # the fan-out already reported this host (per-host deadline)
            finished[name].add(validator.name)
            emit(batch)
            for check in validator.checks:
                collector.end(name, check)

        return run_host(transport, contexts[name], validators, folder, per_host[name], tier=tier,
                        config=configs[name], on_start=on_start, on_done=on_done,
                        stop=fleet.cancelled.is_set)

    hosts = [ctx.host for ctx in contexts.values()]
    if any(v.scope == "host" for v in validators):
        for outcome in fleet.map(hosts, host_work):
            if outcome.error is not None:
                # The host could not be worked on (unreachable, per-host deadline): one record for the host,
                # whose remedy re-checks it, naming the checks it did not get to.
                given_up.add(outcome.host.name)
                record = host_error_record(outcome.host, outcome.error, outcome.duration_s)
                record.evidence["not_run"] = [c for v in validators if v.scope == "host"
                                              and v.name not in finished[outcome.host.name] for c in v.checks]
                emit([record])
    if fleet.cancelled.is_set():
        raise KeyboardInterrupt
    # Cheapest first (the declared timeout), so a long collective does not hold back the quick checks.
    cluster = sorted((v for v in validators if v.scope == "cluster"), key=lambda v: (v.timeout, v.name))
    if not cluster:
        return
    records = collector.records
    # Hosts that answered nothing in the host phase (unreachable) are not asked to join a collective.
    down = {r.host for r in records if r.status == "error" and "Unreachable" in str(r.evidence.get("error"))}
    ordered = [ctx for ctx in contexts.values() if ctx.host.name not in down]
    members, errors = prepare_members(ordered, lambda ctx: fleet.connect(ctx.host), folder, configs)
    owner = next((v for v in cluster if v.owns_join_errors), None)
    if owner is not None:
        # A check that measures what the host could not join for (multinode) records it: `error`, not `fail`. An
        # unreachable node is no evidence of a bad node, and a `fail` here would have the fleet check drain it.
        for record in errors:
            record.check = owner.checks[0]
    emit(errors)
    run = ClusterRun(members, base, per_host, dict(ordered[0].vars) if ordered else {}, deadline_s)
    # Selected hosts that cannot join (unreachable, upload refused): a survivor left alone measured nothing.
    lost = sorted(set(contexts) - {m.name for m in members})
    for validator in cluster:
        if not members:
            break
        if validator.needs_peers and len(members) == 1 and lost:
            emit([Record(host=members[0].name, check=check, status="error",
                         summary=f"no peer to run with: {', '.join(lost)} could not be reached, so nothing was "
                                 "measured between nodes",
                         evidence={"unreachable_peers": lost},
                         remedy=f"reach {', '.join(lost)} again, then inv validate --only {check}")
                  for check in validator.checks])
            continue
        for member in members:
            for check in validator.checks:
                collector.begin(member.name, check)
        emit(validator.run_function()(validator, run))
        for member in members:
            for check in validator.checks:
                collector.end(member.name, check)
        if fleet.cancelled.is_set():
            raise KeyboardInterrupt


@contextlib.contextmanager
def interrupt_guard(fleet: Fleet) -> Iterator[None]:
    """SIGINT while a run is under way: the first starts killing the remote work at once (in a thread, so the
    main thread is free to collect what finished) and raises KeyboardInterrupt; a second exits at once, 130,
    without a traceback. Only in the main thread (where signals are delivered)."""
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
        killer = threading.Thread(target=fleet.cancel, name="accelstack-cancel-all", daemon=True)
        killers.append(killer)
        killer.start()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def validate_inventory(inventory: Inventory, hosts: Sequence[Host], *,
                       tier: str = "standard", only: set[str] | None = None, reporter: RecordSink | None = None,
                       forks: int = 64, deadline_s: float | None = None,
                       overrides: dict[str, Any] | None = None, connect_timeout: float | None = None) -> list[Record]:
    """Validate ``hosts`` of the loaded ``inventory`` (the task loads and selects them, once) and return the
    records; the nightly fleet check and ``diagnose --host`` call this. Bad input raises ConfigError before any
    host is touched."""
    validators = select(load_registry(), tier, only)
    # Preflight is validation's first step too: an incompatible pin is refused before any host is touched.
    contexts = resolve_contexts(list(hosts), overrides=overrides)
    own_writer = None
    if reporter is None:
        own_writer = RunWriter("validate", meta={"inventory": str(inventory.path), "tier": tier,
                                                 "hosts": [host.name for host in hosts]})
    interrupted = False
    try:
        fanout = FanoutOptions(forks=int(forks))
        if connect_timeout is not None:
            fanout.connect_timeout = connect_timeout
        with Fleet(fanout) as fleet, interrupt_guard(fleet):
            return validate_hosts(fleet, contexts, validators, tier=tier, reporter=reporter or own_writer,
                                  deadline_s=deadline_s)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if own_writer is not None:
            own_writer.close(interrupted=interrupted)
