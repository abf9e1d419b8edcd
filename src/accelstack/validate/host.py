"""The host phase: on one connection, upload the validators if missing, run each selected one as one command,
and turn what it printed into records (judged, with evidence). Runs inside a fan-out worker, and hands each
check's records on the moment that check ends (``on_done``), so they are on disk and on screen while the
rest of the host's checks still run."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import AccelstackError
from ..facts.gather import probe, probe_options_for
from ..results.records import Record, error_record
from ..stacks import drift_records, load_matrix
from ..transport.connection import Transport
from ..transport.context import HostContext
from .registry import Validator
from .remote import command_for, ensure_uploaded, python_for
from .results import dmesg_lines, parse_document, refine, to_record, unparsable_record
from .thresholds import Thresholds

DMESG_COMMAND = "dmesg -T 2>/dev/null | tail -n 3000 || dmesg 2>/dev/null | tail -n 3000"


def versions_records(transport: Transport, ctx: HostContext) -> list[Record]:
    """Installed against the stack: the drift layer's records, renamed into this run's vocabulary."""
    started = time.monotonic()
    facts = probe(transport, probe_options_for(ctx.host, ctx))
    records = drift_records(ctx.host.name, ctx.stack, facts.components(), load_matrix())
    for record in records:
        record.check = "versions." + record.check.split(".", 1)[-1]
        record.duration_s = round(time.monotonic() - started, 3)
    return records


def run_script(transport: Transport, validator: Validator, ctx: HostContext, remote: str,
               config: dict[str, Any], thresholds: Thresholds) -> list[Record]:
    assert validator.script is not None
    script = f"{remote}/{validator.script}"
    config = dict(config)
    if validator.mode is not None:  # a script with several uses (collectives.py) is told which one
        config["mode"] = validator.mode
    if validator.mode == "sweep":
        config["collectives"] = list(validator.checks)
    # The script's own deadline sits inside the shell's hard limit, so it reports before it is killed.
    config["deadline_s"] = max(5.0, validator.timeout - 10)
    command = command_for(script, python_for(validator, ctx.python), config, timeout=validator.timeout)
    started = time.monotonic()
    try:
        result = transport.run(command, timeout=validator.timeout + 15)
    except AccelstackError as err:
        return [error_record(ctx.host.name, check, err, time.monotonic() - started) for check in validator.checks]
    duration = time.monotonic() - started
    try:
        items = parse_document(result.stdout)
    except ValueError:
        return [unparsable_record(ctx.host.name, check, command=command, stdout=result.stdout,
                                  stderr=result.stderr, exit_status=result.exit_status, duration_s=duration,
                                  inventory=config.get("inventory"))
                for check in validator.checks]
    records = [to_record(ctx.host.name, item, command=command, stdout=result.stdout, stderr=result.stderr,
                         duration_s=duration) for item in items]
    return [refine(record, config, thresholds, validator.judge_for(record.check)) for record in records]


def _below_floor(validator: Validator, records: list[Record]) -> bool:
    return validator.rerun_below_floor and any(
        validator.owns(r.check) and r.status == "fail" and "below the" in r.summary for r in records)


def run_validator(transport: Transport, validator: Validator, ctx: HostContext, remote: str,
                  config: dict[str, Any], thresholds: Thresholds) -> list[Record]:
    """Run once; for a check declared ``rerun_below_floor``, a bandwidth result below its floor is run again
    before it fails the host (healthy nodes fluctuate: Azure NHC's repeat-until-pass, anchors.md 3)."""
    records = run_script(transport, validator, ctx, remote, config, thresholds)
    if not _below_floor(validator, records):
        return records
    first = {r.check: r for r in records}
    again = run_script(transport, validator, ctx, remote, config, thresholds)
    for record in again:
        before = first.get(record.check)
        record.metrics["reruns"] = 1
        if before is None:
            continue
        record.metrics["first_busbw_gbps"] = before.metrics.get("busbw_gbps")
        if before.status == "fail" and record.status in ("pass", "warn"):
            record.status = "warn"
            record.summary = (f"flaky: first run {before.metrics.get('busbw_gbps')} GB/s was below the floor, the "
                              f"re-run passed; {record.summary}")
            record.remedy = f"watch this host: re-run inv validate --only {record.check} on it when idle"
        elif record.status == "fail":
            record.summary = f"below the floor twice (first {before.metrics.get('busbw_gbps')} GB/s); " + \
                record.summary
    return again


OnStart = Callable[[Validator], None]
OnDone = Callable[[Validator, list[Record]], None]


def run_host(transport: Transport, ctx: HostContext, validators: list[Validator], folder: Path,
             thresholds: Thresholds, *, tier: str, config: dict[str, Any], on_start: OnStart | None = None,
             on_done: OnDone | None = None, stop: Callable[[], bool] | None = None) -> list[Record]:
    """Every selected host-scope validator on one host; one outcome, never an exception for a check. A check
    with a script runs it on the host; one without (``versions``) runs its declared ``runner(transport, ctx)``.

    ``on_start``/``on_done`` are called as each validator starts and ends (its records judged and complete);
    once ``stop()`` is true (Ctrl-C) no further validator starts."""
    records: list[Record] = []
    host_validators = [v for v in validators if v.scope == "host"]
    scripts = [v for v in host_validators if v.script is not None]
    remote = ""
    if scripts:
        try:
            remote, _uploaded = ensure_uploaded(transport, folder)
        except AccelstackError as err:
            for validator in host_validators:
                batch = [error_record(ctx.host.name, c, err) for c in validator.checks]
                records.extend(batch)
                if on_done is not None:
                    on_done(validator, batch)
            return records
    dmesg = _Dmesg(transport)
    for validator in host_validators:
        if stop is not None and stop():
            break
        if on_start is not None:
            on_start(validator)
        if validator.script is None:  # computed on this side (versions): its declared runner
            try:
                batch = validator.run_function()(transport, ctx)
            except AccelstackError as err:
                batch = [error_record(ctx.host.name, check, err) for check in validator.checks]
        else:
            batch = run_validator(transport, validator, ctx, remote, config, thresholds)
        if not (stop is not None and stop()):
            dmesg.attach(batch)
        records.extend(batch)
        if on_done is not None:
            on_done(validator, batch)
    return records


class _Dmesg:
    """Kernel lines (Xid, OOM killer, NPU driver) on the failed records: one extra command per host, only on
    the first failure; later failed records get the same lines."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.lines: list[str] | None = None

    def attach(self, records: list[Record]) -> None:
        bad = [r for r in records if r.status in ("fail", "error")]
        if not bad:
            return
        if self.lines is None:
            try:
                self.lines = dmesg_lines(self.transport.run(DMESG_COMMAND, timeout=20).stdout)
            except AccelstackError:
                self.lines = []
        if self.lines:
            for record in bad:
                record.evidence.setdefault("dmesg", self.lines)


def attach_dmesg(transport: Transport, records: list[Record]) -> None:
    """Kernel lines on the failed records of ``records`` (one command, only on failure)."""
    _Dmesg(transport).attach(records)
