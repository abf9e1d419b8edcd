"""The host phase: on one connection, upload the validators if missing, run the selected ones (the scripts of one
python together in one interpreter, one command), and turn what each printed into records (judged, with evidence:
:func:`accelstack.validate.judge.judge_output`), the same records each script gives when it runs alone. Runs inside a
fan-out worker over SSH (or node-check's, on the node itself, on a local transport), and hands each check's records
on as soon as they are judged (``on_done``), so they are on disk and on screen while the host's later checks still
run."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import AccelstackError
from ...facts.gather import probe, probe_options_for
from ...results.records import Record, error_record
from ...stacks import drift_records, load_matrix
from ...stacks.context import HostContext
from ...transport.connection import Transport
from ...validate.checks import Check
from ...validate.judge import NOT_STARTED, dmesg_lines, judge_output, unparsable_record
from ...validate.thresholds import Thresholds
from .remote import command_for, ensure_uploaded, python_for

DMESG_COMMAND = "dmesg -T 2>/dev/null | tail -n 3000 || dmesg 2>/dev/null | tail -n 3000"


def versions_records(transport: Transport, ctx: HostContext) -> list[Record]:
    """Installed against the stack: the drift layer's records, renamed into this run's vocabulary. The probe reads
    only what installed versions are read from (its ``components`` scope): no network or disk reads, no
    ``npu-smi``, and no ``nvidia-smi`` where the loaded driver's version file answers (the health tier reads the
    vendor tool once, in its batch)."""
    started = time.monotonic()
    facts = probe(transport, dataclasses.replace(probe_options_for(ctx.host, ctx), scope="components"))
    records = drift_records(ctx.host.name, ctx.stack, facts.components(), load_matrix())
    for record in records:
        record.check = "versions." + record.check.split(".", 1)[-1]
        record.duration_s = round(time.monotonic() - started, 3)
    return records


def script_command(validator: Check, ctx: HostContext, remote: str, config: dict[str, Any]) -> str:
    """The one command that runs this check's script alone on the host (what a person re-runs by hand)."""
    assert validator.script is not None
    return command_for(f"{remote}/{validator.script}", python_for(validator, ctx.python),
                       validator.run_config(config), timeout=validator.timeout)


def run_script(transport: Transport, validator: Check, ctx: HostContext, remote: str,
               config: dict[str, Any], thresholds: Thresholds) -> list[Record]:
    command = script_command(validator, ctx, remote, config)
    started = time.monotonic()
    try:
        result = transport.run(command, timeout=validator.timeout + 15)
    except AccelstackError as err:
        return [error_record(ctx.host.name, check, err, time.monotonic() - started) for check in validator.checks]
    return judge_output(ctx.host.name, validator, config, thresholds, command=command, stdout=result.stdout,
                        stderr=result.stderr, exit_status=result.exit_status, duration=time.monotonic() - started)


def _below_floor(validator: Check, records: list[Record]) -> bool:
    return validator.rerun_below_floor and any(
        validator.owns(r.check) and r.status == "fail" and "below the" in r.summary for r in records)


def run_validator(transport: Transport, validator: Check, ctx: HostContext, remote: str,
                  config: dict[str, Any], thresholds: Thresholds, first: list[Record] | None = None) -> list[Record]:
    """Run once (or take ``first``, the records a batch already has); for a check declared ``rerun_below_floor``,
    a bandwidth result below its floor is run again before it fails the host (healthy nodes fluctuate: Azure NHC's
    repeat-until-pass, https://github.com/Azure/azurehpc/pull/690 and /pull/628)."""
    records = first if first is not None else run_script(transport, validator, ctx, remote, config, thresholds)
    if not _below_floor(validator, records):
        return records
    by_check = {r.check: r for r in records}
    again = run_script(transport, validator, ctx, remote, config, thresholds)
    for record in again:
        before = by_check.get(record.check)
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


# The host-side runner of several scripts in one interpreter (hostside/validators/_batch.py), and the margin its own
# hard limit gets over the sum of its runs' limits (a python start, and the torch import of a stack batch).
BATCH_SCRIPT = "_batch.py"
BATCH_MARGIN_S = 20.0


def batch_run(validator: Check) -> dict[str, Any]:
    """One run of a batch: the script, the checks its errors are reported for, its limit and what the run adds to
    the host config."""
    assert validator.script is not None
    stem = validator.script[: -len(".py")]
    name = stem if len(validator.checks) > 1 or validator.mode is not None else validator.checks[0]
    return {"script": validator.script, "name": name, "checks": list(validator.checks),
            "timeout": validator.timeout, **validator.run_config({})}


def run_batch(transport: Transport, validators: list[Check], ctx: HostContext, remote: str,
              config: dict[str, Any], thresholds: Thresholds) -> tuple[list[tuple[Check, list[Record]]],
                                                                        list[Check]]:
    """Several scripts of one python in one interpreter on the host (one start-up, one torch import, one read of
    each vendor tool), one command. Returns each reported validator with its judged records, exactly as
    :func:`run_script` would judge that script alone (its own command in the evidence, its own output), and the
    validators the batch did not report (it stopped at a check that hung): the caller runs those one by one."""
    python = python_for(validators[0], ctx.python)
    limit = sum(v.timeout for v in validators) + BATCH_MARGIN_S
    document = {"config": config, "runs": [batch_run(v) for v in validators]}
    command = command_for(f"{remote}/{BATCH_SCRIPT}", python, document, timeout=limit)
    started = time.monotonic()
    try:
        result = transport.run(command, timeout=limit + 15)
    except AccelstackError as err:
        elapsed = time.monotonic() - started
        return [(v, [error_record(ctx.host.name, check, err, elapsed) for check in v.checks]) for v in validators], []
    reported: dict[int, dict[str, Any]] = {}
    for line in result.stdout.splitlines():
        if not line.startswith('{"batch"'):
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("batch"), int) and 0 <= doc["batch"] < len(validators):
            reported[doc["batch"]] = doc
    commands = [script_command(v, ctx, remote, config) for v in validators]
    if not reported and result.exit_status in (126, 127) and NOT_STARTED.search(result.stderr or ""):
        # The python is not there: each check's record says so, as it would had the check run alone.
        elapsed = time.monotonic() - started
        return [(v, [unparsable_record(ctx.host.name, check, command=commands[i], stdout=result.stdout,
                                       stderr=result.stderr, exit_status=result.exit_status, duration_s=elapsed,
                                       inventory=config.get("inventory")) for check in v.checks])
                for i, v in enumerate(validators)], []
    done: list[tuple[Check, list[Record]]] = []
    left: list[Check] = []
    for index, validator in enumerate(validators):
        doc = reported.get(index)
        if doc is None:
            left.append(validator)
            continue
        stdout = f"{doc.get('stdout') or ''}\n{json.dumps({'checks': doc.get('checks') or []}, default=str)}\n"
        done.append((validator, judge_output(ctx.host.name, validator, config, thresholds, command=commands[index],
                                             stdout=stdout, stderr=str(doc.get("stderr") or ""),
                                             exit_status=124 if doc.get("timed_out") else 0,
                                             duration=float(doc.get("duration_s") or 0.0))))
    return done, left


def host_groups(validators: list[Check]) -> list[list[Check]]:
    """The host-scope checks in the order the host runs them: the system-python scripts in one interpreter (the
    health tier's checks: vendor tools, sysfs, files), the control-side ones (``versions``), then the stack-python
    scripts in one interpreter (what needs torch or a device context). Within a group, the registry's order."""
    system = [v for v in validators if v.script is not None and v.python != "stack"]
    computed = [[v] for v in validators if v.script is None]
    stack = [v for v in validators if v.script is not None and v.python == "stack"]
    return [group for group in [system, *computed, stack] if group]


OnStart = Callable[[Check], None]
OnDone = Callable[[Check, list[Record]], None]


def run_host(transport: Transport, ctx: HostContext, validators: list[Check], folder: Path,
             thresholds: Thresholds, *, tier: str, config: dict[str, Any], on_start: OnStart | None = None,
             on_done: OnDone | None = None, stop: Callable[[], bool] | None = None) -> list[Record]:
    """Every selected host-scope validator on one host; one outcome, never an exception for a check. Scripts of
    one python run together in one interpreter (:func:`run_batch`); a check without a script (``versions``) runs
    its declared ``runner(transport, ctx)`` here.

    ``on_start``/``on_done`` are called as each validator starts and ends (its records judged and complete);
    once ``stop()`` is true (Ctrl-C) no further validator starts."""
    records: list[Record] = []
    host_validators = [v for v in validators if v.scope == "host"]
    scripts = [v for v in host_validators if v.script is not None]
    remote = ""

    def finish(validator: Check, batch: list[Record]) -> None:
        if not (stop is not None and stop()):
            dmesg.attach(batch)
        records.extend(batch)
        if on_done is not None:
            on_done(validator, batch)

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
    for group in host_groups(host_validators):
        if stop is not None and stop():
            break
        for validator in group:
            if on_start is not None:
                on_start(validator)
        singles = group
        if len(group) > 1:
            done, singles = run_batch(transport, group, ctx, remote, config, thresholds)
            for validator, first in done:
                finish(validator, run_validator(transport, validator, ctx, remote, config, thresholds, first))
        for validator in singles:
            if stop is not None and stop():
                break
            if validator.script is None:  # computed on this side (versions): its declared runner
                try:
                    batch = validator.run_function()(transport, ctx)
                except AccelstackError as err:
                    batch = [error_record(ctx.host.name, check, err) for check in validator.checks]
            else:
                batch = run_validator(transport, validator, ctx, remote, config, thresholds)
            finish(validator, batch)
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
