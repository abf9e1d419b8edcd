"""A validation run: host validators fanned out over the fleet, then the cluster validators across it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..context import HostContext, resolve_contexts
from ..fanout import FanoutOptions, Fleet
from ..inventory import load_inventory
from ..records import Record, RecordSink, RunWriter
from .cluster import DEFAULT_DEADLINE, clock_records, multinode, ports_records, prepare_members
from .config import host_config
from .host import run_host
from .registry import Validator, load_registry, select, validators_dir
from .results import host_error_record
from .thresholds import Thresholds, load_thresholds

DEFAULT_RENDEZVOUS_PORT = 29500


def thresholds_for(contexts: dict[str, HostContext], base: Thresholds) -> dict[str, Thresholds]:
    return {name: base.with_overrides(ctx.vars.get("thresholds"), where=f"host {name} var thresholds")
            for name, ctx in contexts.items()}


def validate_hosts(fleet: Fleet, contexts: dict[str, HostContext], validators: list[Validator], *,
                   tier: str, reporter: RecordSink | None = None, folder: Path | None = None,
                   deadline_s: float | None = None) -> list[Record]:
    """Every selected validator on every host; records are handed to ``reporter`` as they arrive."""
    folder = folder or validators_dir()
    base = load_thresholds()
    per_host = thresholds_for(contexts, base)
    configs = {name: host_config(ctx, tier=tier) for name, ctx in contexts.items()}
    records: list[Record] = []

    def emit(batch: list[Record]) -> None:
        records.extend(batch)
        if reporter is not None:
            reporter.add_all(batch)

    hosts = [ctx.host for ctx in contexts.values()]
    if any(v.scope == "host" for v in validators):
        for outcome in fleet.map(hosts, lambda t: run_host(t, contexts[t.host.name], validators, folder,
                                                          per_host[t.host.name], tier=tier,
                                                          config=configs[t.host.name])):
            if outcome.value is not None:
                emit(outcome.value)
            else:
                assert outcome.error is not None
                emit([host_error_record(outcome.host, outcome.error, outcome.duration_s)])
    cluster = [v for v in validators if v.scope == "cluster"]
    if not cluster:
        return records
    # Hosts that answered nothing in the host phase (unreachable) are not asked to join a collective.
    down = {r.host for r in records if r.status == "error" and "Unreachable" in str(r.evidence.get("error"))}
    ordered = [ctx for ctx in contexts.values() if ctx.host.name not in down]
    members, errors = prepare_members(ordered, lambda ctx: fleet.connect(ctx.host), folder, configs)
    if any("multinode" in v.checks for v in cluster):
        # The multi-node check could not run on it (unreachable, upload refused): `error`, not `fail`. An
        # unreachable node is no evidence of a bad node, and a `fail` here would have the fleet check drain it.
        for record in errors:
            record.check = "multinode"
    emit(errors)
    first = ordered[0].vars if ordered else {}
    rendezvous = int(first.get("rendezvous_port") or DEFAULT_RENDEZVOUS_PORT)
    names = {c for v in cluster for c in v.checks}
    if "clock" in names and members:
        emit(clock_records(members, base))
    if "ports" in names and len(members) >= 2:
        emit(ports_records(members, rendezvous_port=rendezvous))
    if "multinode" in names and members:
        deadline = float(deadline_s or first.get("multinode_deadline_s") or DEFAULT_DEADLINE)
        started = time.monotonic()
        batch = multinode(members, per_host[members[0].name], deadline_s=deadline,
                          port=int(first["rendezvous_port"]) if first.get("rendezvous_port") else None)
        for record in batch:
            record.duration_s = record.duration_s or round(time.monotonic() - started, 3)
        emit(batch)
    return records


def validate_inventory(inventory: str | None, *, tier: str = "standard", limit: str | None = None,
                       only: set[str] | None = None, reporter: RecordSink | None = None,
                       forks: int = 64, deadline_s: float | None = None,
                       overrides: dict[str, Any] | None = None,
                       connect_timeout: float | None = None) -> list[Record]:
    """Validate an inventory's hosts (the embedded local one when ``inventory`` is None) and return the
    records; the nightly fleet check calls this. Bad input raises ConfigError before any host is touched."""
    validators = select(load_registry(), tier, only)
    inv = load_inventory(inventory)
    hosts = inv.select(limit)
    # Preflight is validation's first step too: an incompatible pin is refused before any host is touched.
    contexts = resolve_contexts(hosts, overrides=overrides)
    own_writer = None
    if reporter is None:
        own_writer = RunWriter("validate", meta={"inventory": str(inv.path), "limit": limit, "tier": tier})
    try:
        fanout = FanoutOptions(forks=int(forks))
        if connect_timeout is not None:
            fanout.connect_timeout = connect_timeout
        with Fleet(fanout) as fleet:
            return validate_hosts(fleet, contexts, validators, tier=tier, reporter=reporter or own_writer,
                                  deadline_s=deadline_s)
    finally:
        if own_writer is not None:
            own_writer.close()
