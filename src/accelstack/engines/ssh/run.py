"""The SSH engine: host checks fanned out over the fleet through one bounded pool of connections, then the cluster
checks across the hosts that answered (torchrun, ports, clock: :mod:`.cluster`).

Each check's records go to the sink the moment the check ends. Ctrl-C kills what every host runs for the run
(the pool's cancel), keeps every finished record, writes an ``error`` record for each check that did not finish
("not run: interrupted": it could not measure) and raises RunInterrupted; a second Ctrl-C exits at once
(:meth:`accelstack.engines.base.Engine.validate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...inventory import Host, Inventory
from ...results.records import Record, RecordSink, RunWriter, interrupted_record
from ...stacks.context import HostContext, resolve_contexts
from ...transport.connection import Transport
from ...transport.fanout import FanoutOptions, HostPool
from ...validate.checks import Check
from ...validate.config import tier_config
from ...validate.judge import host_error_record
from ...validate.registry import load_registry, select, validators_dir
from ...validate.thresholds import Thresholds, load_thresholds
from ..base import KILL_WAIT_S, Engine, RunRecords
from .cluster import ClusterRun, prepare_members
from .host import run_host

__all__ = ["SSHEngine", "thresholds_for", "validate_hosts", "validate_inventory"]


def thresholds_for(contexts: dict[str, HostContext], base: Thresholds) -> dict[str, Thresholds]:
    return {name: base.with_overrides(ctx.vars.get("thresholds"), where=f"host {name} var thresholds")
            for name, ctx in contexts.items()}


class SSHEngine(Engine):
    """Checks over SSH: the hosts of ``contexts`` (each host's stack and vars), worked on through ``pool`` (the
    run's pool of connections, opened once per host), the scripts uploaded from ``folder``; ``deadline_s`` is the
    multi-node collective's (``--deadline``: None leaves the inventory's, else the default)."""

    name = "ssh"

    def __init__(self, pool: HostPool, contexts: dict[str, HostContext], *, folder: Path | None = None,
                 deadline_s: float | None = None, drain_template: str | None = None) -> None:
        super().__init__(drain_template=drain_template)
        self.pool = pool
        self.cancelled = pool.cancelled  # the pool's: its workers stop starting checks once it is set
        self.contexts = contexts
        self.folder = folder or validators_dir()
        self.deadline_s = deadline_s
        self.thresholds = load_thresholds()
        self.per_host = thresholds_for(contexts, self.thresholds)
        self._configs: dict[str, dict[str, Any]] = {}

    def configs(self, tier: str) -> dict[str, dict[str, Any]]:
        """Each host's config for this run's tier (built once: both phases hand it to the scripts)."""
        if not self._configs:
            self._configs = {name: tier_config(ctx, tier) for name, ctx in self.contexts.items()}
        return self._configs

    def cancel(self) -> None:
        self.pool.cancel()

    def wait_idle(self) -> None:
        self.pool.wait_idle(KILL_WAIT_S)

    def run_host_checks(self, checks: Sequence[Check], run: RunRecords, *, tier: str,
                        only: set[str] | None = None) -> None:
        configs = self.configs(tier)
        finished: dict[str, set[str]] = {name: set() for name in self.contexts}
        given_up: set[str] = set()
        validators = list(checks)

        def host_work(transport: Transport) -> list[Record]:
            name = transport.host.name

            def on_start(validator: Check) -> None:
                for check in validator.checks:
                    run.begin(name, check)

            def on_done(validator: Check, batch: list[Record]) -> None:
                if name in given_up:
                    return  # the fan-out already reported this host (per-host deadline)
                finished[name].add(validator.name)
                run.emit(batch)
                for check in validator.checks:
                    run.end(name, check)

            return run_host(transport, self.contexts[name], validators, self.folder, self.per_host[name], tier=tier,
                            config=configs[name], on_start=on_start, on_done=on_done, stop=self.cancelled.is_set)

        for outcome in self.pool.map([ctx.host for ctx in self.contexts.values()], host_work):
            if outcome.error is not None:
                # The host could not be worked on (unreachable, per-host deadline): one record for the host,
                # whose remedy re-checks it, naming the checks it did not get to.
                given_up.add(outcome.host.name)
                record = host_error_record(outcome.host, outcome.error, outcome.duration_s)
                record.evidence["not_run"] = [c for v in validators if v.name not in finished[outcome.host.name]
                                              for c in v.checks]
                run.emit([record])

    def run_cluster_checks(self, checks: Sequence[Check], run: RunRecords, *, tier: str) -> None:
        configs = self.configs(tier)
        # Hosts that answered nothing in the host phase (unreachable) are not asked to join a collective.
        down = {r.host for r in run.records if r.status == "error" and "Unreachable" in str(r.evidence.get("error"))}
        ordered = [ctx for ctx in self.contexts.values() if ctx.host.name not in down]
        members, errors = prepare_members(ordered, lambda ctx: self.pool.connect(ctx.host), self.folder, configs)
        owner = next((c for c in checks if c.owns_join_errors), None)
        if owner is not None:
            # A check that measures what the host could not join for (multinode) records it: `error`, not `fail`.
            # An unreachable node is no evidence of a bad node, and a `fail` here would have the fleet check drain it.
            for record in errors:
                record.check = owner.checks[0]
        run.emit(errors)
        cluster = ClusterRun(members, self.thresholds, self.per_host, dict(ordered[0].vars) if ordered else {},
                             self.deadline_s)
        # Selected hosts that cannot join (unreachable, upload refused): a survivor left alone measured nothing.
        lost = sorted(set(self.contexts) - {m.name for m in members})
        for check in checks:
            if not members:
                break
            if check.needs_peers and len(members) == 1 and lost:
                run.emit([Record(host=members[0].name, check=name, status="error",
                                 summary=f"no peer to run with: {', '.join(lost)} could not be reached, so nothing "
                                         "was measured between nodes",
                                 evidence={"unreachable_peers": lost},
                                 remedy=f"reach {', '.join(lost)} again, then inv validate --only {name}")
                          for name in check.checks])
                continue
            for member in members:
                for name in check.checks:
                    run.begin(member.name, name)
            run.emit(check.run_function()(check, cluster))
            for member in members:
                for name in check.checks:
                    run.end(member.name, name)
            if self.cancelled.is_set():
                raise KeyboardInterrupt

    def interrupted(self, run: RunRecords, checks: Sequence[Check]) -> list[Record]:
        cut = run.cut_short()
        records = run.records
        missing = []
        # A host already given one `connect`/`host` record could not be worked on: nothing more to mark.
        whole = {r.host for r in records if r.check in ("connect", "host")}

        def done(host: str, check: str) -> bool:
            prefix = check + "."
            return any(r.host == host and (r.check == check or r.check.startswith(prefix)) for r in records)

        for name in self.contexts:
            if name in whole:
                continue
            for check in checks:
                for record_check in check.checks:
                    if done(name, record_check) or (check.needs_peers and len(self.contexts) < 2):
                        continue
                    missing.append(interrupted_record(
                        name, record_check, cut_short=(name, record_check) in cut,
                        rerun=f"inv validate --limit {name} --only {record_check}"))
        return missing


def validate_hosts(pool: HostPool, contexts: dict[str, HostContext], validators: list[Check], *,
                   tier: str, reporter: RecordSink | None = None, folder: Path | None = None,
                   deadline_s: float | None = None) -> list[Record]:
    """Every selected check on every host over ``pool``; records are handed to ``reporter`` as each check ends.
    On Ctrl-C the remote work is killed, every check without a record gets an ``error`` "not run" record, and
    :class:`~accelstack.transport.fanout.RunInterrupted` is raised."""
    engine = SSHEngine(pool, contexts, folder=folder, deadline_s=deadline_s)
    return engine.validate(validators, tier=tier, sink=reporter)


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
        with HostPool(fanout) as pool:
            return validate_hosts(pool, contexts, validators, tier=tier, reporter=reporter or own_writer,
                                  deadline_s=deadline_s)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if own_writer is not None:
            own_writer.close(interrupted=interrupted)
