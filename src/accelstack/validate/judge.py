"""From a validator's output to records: parse the JSON document, attach evidence, judge what the control side
judges (device count and health with the facts parsers, bandwidth against thresholds). Pure: no I/O."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from ..errors import HostUnreachable
from ..inventory.model import Host
from ..results.records import STATUSES, Record, Status, error_record
from ..vendors import get_vendor
from .config import inventory_of
from .thresholds import Thresholds, judge

TAIL_LINES = 20
# What a person reading a failed collective wants first: NCCL's WARN lines and result strings, torch's watchdog,
# torch_npu's ERR codes and CANN's E?#### codes (the signatures in data/signatures.yml name their sources).
LOG_LINE = re.compile(r"NCCL (INFO|WARN)|NCCL error|HCCL|hccl|ERR\d{5}|E[IHJ]\d{4}|[Gg]loo|ProcessGroup|Watchdog|"
                      r"[Tt]imed? ?out|Connection (reset|closed|refused)|RuntimeError|Error:")
# Words, not substrings: "npu" inside "input" once attached a keyboard line to a GPU failure.
DMESG_LINE = re.compile(r"NVRM: Xid|Xid \(|fallen off the bus|Out of memory|oom-kill|oom_reaper|Killed process|"
                        r"(?<![a-z])(?:hccl|davinci|npu)(?![a-z])", re.IGNORECASE)
# A check's control-side judgement of one of its records (its declaration's ``judge``, validate/checks/).
Judge = Callable[[Record, Mapping[str, Any], Thresholds], Record]


class Judged(Protocol):
    """What judging a script's output needs of its check (a :class:`~accelstack.validate.checks.Check`): the
    names of its records, and the judge of each."""

    @property
    def checks(self) -> tuple[str, ...]: ...

    def judge_for(self, record_check: str) -> Judge | None: ...


def parse_document(stdout: str) -> list[dict[str, Any]]:
    """The checks of the last ``{"checks": [...]}`` line; library noise before it is ignored."""
    for line in reversed((stdout or "").strip().splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("checks"), list):
            return [c for c in doc["checks"] if isinstance(c, dict)]
    raise ValueError("no JSON document with 'checks' in the validator's output")


def tail(text: str, lines: int = TAIL_LINES) -> list[str]:
    return (text or "").rstrip().splitlines()[-lines:]


def log_lines(text: str, limit: int = 20) -> list[str]:
    return [line for line in (text or "").splitlines() if LOG_LINE.search(line)][-limit:]


def dmesg_lines(text: str, limit: int = 20) -> list[str]:
    return [line for line in (text or "").splitlines() if DMESG_LINE.search(line)][-limit:]


def to_record(host: str, item: Mapping[str, Any], *, command: str, stdout: str = "", stderr: str = "",
              duration_s: float = 0.0) -> Record:
    status = item.get("status")
    if status not in STATUSES:
        status = "error"
    evidence = dict(item.get("evidence") or {})
    evidence.setdefault("command", command)
    if status in ("fail", "error", "warn"):
        if stderr.strip():
            evidence.setdefault("stderr_tail", tail(stderr))
        lines = log_lines(stderr + "\n" + stdout)
        if lines:
            evidence.setdefault("log_lines", lines)
    return Record(host=host, check=str(item.get("check") or "unknown"), status=status,  # type: ignore[arg-type]
                  summary=str(item.get("summary") or ""), metrics=dict(item.get("metrics") or {}),
                  evidence=evidence, remedy=item.get("remedy"), duration_s=round(duration_s, 3))


# GNU timeout's words when it cannot start the command it was given (exit 127: not there, 126: not runnable).
NOT_STARTED = re.compile(r"timeout: failed to run command [‘'`]?(?P<path>[^’'`:]+)[’'`]?: (?P<why>.+)")


def rerun_command(task: str, host: str, inventory: str | None = None, *extra: str) -> str:
    """The command a person runs to do ``task`` again on this one host: ``inv validate --inventory X --limit H``."""
    parts = ["inv", task] + (["--inventory", shlex.quote(inventory)] if inventory else [])
    return " ".join(parts + ["--limit", shlex.quote(host), *extra])


def unparsable_record(host: str, check: str, *, command: str, stdout: str, stderr: str, exit_status: int,
                      duration_s: float = 0.0, inventory: str | None = None) -> Record:
    """The ``error`` record of a validator that printed no document, naming why it did not run where the shell
    says so: a python that is not there is a stack that is not provisioned on the host."""
    evidence = {"command": command, "exit_status": exit_status, "stdout_tail": tail(stdout),
                "stderr_tail": tail(stderr), "log_lines": log_lines(stderr + "\n" + stdout)}
    missing = NOT_STARTED.search(stderr or "")
    if missing and exit_status in (126, 127):
        python = missing.group("path")
        evidence["python"] = python
        again = rerun_command("validate", host, inventory, "--only", check.split(".")[0])
        if "/" in python:
            summary = (f"the stack is not provisioned on {host}: its python {python} "
                       f"{'does not exist' if exit_status == 127 else 'cannot run'} ({missing.group('why')})")
            remedy = (f"{rerun_command('provision', host, inventory)} installs the stack (its python and "
                      f"packages), then {again}")
        else:
            summary = f"{python} is not installed on {host} ({missing.group('why')}): the validators need it"
            remedy = f"install the OS's {python} package on {host} (apt-get/yum install {python}), then {again}"
        return Record(host=host, check=check, status="error", summary=summary, evidence=evidence, remedy=remedy,
                      duration_s=round(duration_s, 3))
    if exit_status in (124, 137) and not (stdout or "").strip():
        summary = f"the validator was killed at its time limit (exit {exit_status}) before it printed a result"
        remedy = ("a hung tool or device is the usual cause: see the log lines and dmesg, then "
                  + rerun_command("validate", host, inventory, "--only", check.split(".")[0]))
    else:
        summary = f"the validator printed no result (exit {exit_status})" + (
            f": {tail(stderr, 1)[0]}" if stderr.strip() else "")
        remedy = "run the command (evidence.command) on the host by hand and read what it prints"
    return Record(host=host, check=check, status="error", summary=summary, evidence=evidence, remedy=remedy,
                  duration_s=round(duration_s, 3))


def host_error_record(host: Host, err: BaseException, duration_s: float = 0.0) -> Record:
    """The one record of a host the run could not work on at all: ``connect`` when it could not be reached
    (none of its checks ran, so none gets a record of its own), ``host`` when its work broke or overran the
    per-host deadline. The remedy is the command that checks that host again."""
    check = "connect" if isinstance(err, HostUnreachable) else "host"
    record = error_record(host.name, check, err, duration_s)
    again = rerun_command("validate", host.name, inventory_of(host.source))
    if check == "connect":
        record.summary = f"unreachable, no check ran: {record.summary}"
        record.remedy = f"check that {host.name} is up and its sshd answers, then re-check it: {again}"
    else:
        record.remedy = f"see the evidence, then re-check it: {again}"
    return record


# ----- control-side judgement -----

def _health_counts(vendor: str, output: str, evidence: Mapping[str, Any] | None = None) -> tuple[int, list[str]]:
    """Devices the vendor tool reports and the ones that are not healthy: the GPUs the script read from
    ``nvidia-smi -q -x`` (``evidence.gpus``), else the tool's own text (``npu-smi info``, or the ``--query-gpu`` CSV
    of older records)."""
    return get_vendor(vendor).device_counts(output, evidence or {})


def tool_failure(tool: str, exit_status: Any, output: str) -> str | None:
    """Why a vendor tool gave nothing to judge (missing, hung, failed), or None when it answered (exit 0)."""
    if exit_status in (0, None):
        return None
    last = tail(output, 1)[0] if (output or "").strip() else "no output"
    if exit_status == 127:
        return f"{tool} is not installed ({last})"
    if exit_status == 124:
        return f"{tool} did not answer ({last})"
    return f"{tool} failed (exit {exit_status}: {last})"


def _tool_error(record: Record, tool: str, why: str, config: Mapping[str, Any], what: str,
                keep_summary: bool = True) -> Record:
    record.status = "error"
    record.summary = f"{why}: {what} not measured" + (f"; {record.summary}" if keep_summary and record.summary
                                                        else "")
    host = str(config.get("host") or "<host>")
    record.remedy = (f"{tool} must answer before anything can train: install or repair the stack's driver "
                     f"({rerun_command('provision', host, config.get('inventory'))}); a hung tool points at a "
                     f"wedged device (dmesg)")
    return record


def judge_devices(record: Record, config: Mapping[str, Any], thresholds: Thresholds | None = None) -> Record:
    """Count against ``expect_devices`` and health, from the tool output the script sent back. A tool that is
    missing, hangs, fails or prints what the parser cannot read is ``error``: nothing was counted. (A judge:
    ``thresholds`` is not used.)"""
    vendor = str(config.get("vendor") or "cpu")
    if not get_vendor(vendor).has_devices or record.status == "skip" or "tool_exit" not in record.evidence:
        return record  # cpu: no vendor tool; no tool_exit: the script itself broke (its own error record)
    # A torch that does not import (no torch_npu on the host) still leaves the tool's count to judge.
    expect = config.get("expect_devices")
    output = str(record.evidence.get("tool_output") or "")
    tool = str(get_vendor(vendor).tool)
    failed = tool_failure(tool, record.evidence.get("tool_exit"), output)
    if failed:
        return _tool_error(record, tool, failed, config, "the devices were")
    count, unhealthy = _health_counts(vendor, output, record.evidence)
    if count == 0 and output.strip():
        return _tool_error(record, tool, f"{tool}'s output is not understood ({tail(output, 1)[0][:120]})",
                           config, "the devices were")
    torch_count = record.metrics.get("torch_devices")
    record.metrics.update(tool_devices=count, expect_devices=expect)
    problems = []
    if expect is not None and count != int(expect):
        problems.append(f"{tool} reports {count} device(s), {expect} expected")
    elif count == 0:
        problems.append(f"{tool} reports no device on a {vendor} stack")
    if unhealthy:
        problems.append("unhealthy: " + "; ".join(unhealthy[:8]))
    if torch_count is not None and torch_count != count and not record.evidence.get("visible_devices"):
        problems.append(f"torch sees {torch_count} of the {count} device(s) {tool} reports")
        if torch_count == 0 and count:
            # The hardware answers and torch sees nothing: the python side, not the device, is what to fix.
            torch = record.evidence.get("torch") or {}
            backend = get_vendor(vendor).torch_build
            record.remedy = record.remedy or (
                f"torch {torch.get('torch') or '?'} in the stack's python has no {vendor} backend; it needs "
                f"{backend}: inv provision --limit {config.get('host') or '<host>'} installs the stack's pins")
    if record.status in ("fail", "error") and problems:
        problems.insert(0, record.summary)
    if problems:
        record.status = "fail"
        record.summary = "; ".join(problems)
        record.remedy = record.remedy or (
            "drain the host and check the missing/unhealthy device: dmesg, the vendor tool's detail view, "
            "reseat or RMA; then "
            + rerun_command("validate", str(config.get("host") or "<host>"), config.get("inventory"), "--only",
                            "devices"))
    elif record.status == "pass":
        record.summary = f"{count} device(s) healthy; " + record.summary
    elif record.status == "error":
        record.summary = f"{tool}: {count} device(s) healthy; " + record.summary
    return record


def judge_memory(record: Record, config: Mapping[str, Any], thresholds: Thresholds | None = None) -> Record:
    """Device memory already in use, and the processes holding it (a foreign job, a stale rank). A tool that is
    missing, fails or prints nothing the parser reads is ``error``, never a pass. (A judge: ``thresholds`` is not
    used.)"""
    if record.check != "memory.devices" or record.status in ("error", "skip"):
        return record
    vendor = str(config.get("vendor") or "cpu")
    output = str(record.evidence.get("tool_output") or "")
    tool = str(get_vendor(vendor).tool)
    failed = tool_failure(tool, record.evidence.get("tool_exit"), output) or tool_failure(
        f"{tool} --query-compute-apps", record.evidence.get("apps_exit"), str(record.evidence.get("apps_output")))
    if failed:
        return _tool_error(record, tool, failed, config, "device memory was", keep_summary=False)
    min_free = float(config.get("min_device_free_fraction") or 0.9)
    memory = get_vendor(vendor).device_memory(output, str(record.evidence.get("apps_output") or ""), min_free)
    devices, busy, procs = memory.devices, memory.busy, memory.processes
    if not devices:
        return _tool_error(record, tool, f"{tool} lists no device whose memory can be read"
                           + (f" ({tail(output, 1)[0][:120]})" if output.strip() else ""), config,
                           "device memory was", keep_summary=False)
    record.metrics.update(busy_devices=len(busy), foreign_processes=len(procs))
    if busy or procs:
        record.status = "warn" if not busy else "fail"
        record.summary = "; ".join(busy[:4] + (["processes: " + ", ".join(procs[:4])] if procs else []))
        record.remedy = "stop the processes holding device memory (a stale job or rank) before training"
    else:
        record.summary = f"device memory free (at least {min_free:.0%} on every device), no foreign process"
    return record


# The rows of data/thresholds.yml the multi-node check is judged against: it runs one allreduce across the hosts.
MULTINODE_ROWS = ("multi-node", "allreduce")


def judge_bandwidth(record: Record, *, accelerator: str | None, scope: str, thresholds: Thresholds,
                    collective: str | None = None) -> Record:
    """Turn a passing sweep into pass/warn/fail against the floor for its accelerator, scope, collective (default:
    the record's own check, ``allreduce``) and ranks."""
    if record.status != "pass" or record.metrics.get("busbw_gbps") is None:
        return record
    collective = collective or record.check
    ranks = int(record.metrics.get("ranks") or 0)
    row = thresholds.lookup(accelerator, scope, collective, ranks)
    status, why = judge(float(record.metrics["busbw_gbps"]), row, thresholds.margin)
    if not (accelerator or "").strip():
        why = "not judged: the inventory names no `accelerator` (e.g. H100, 910B) to pick a floor for"
    record.status = status
    record.summary = f"{record.summary}; {why}"
    record.metrics["threshold_gbps"] = row.min_busbw_gbps if row else None
    record.evidence["threshold"] = row.describe() if row else None
    if status == "fail":
        record.remedy = record.remedy or (
            "re-run once idle; if it stays low, check the links (NVLink/HCCS/IB counters, netem/tc, MTU) and the "
            "NIC/socket interface the backend uses")
    elif status == "warn":
        record.remedy = record.remedy or (
            "close to the floor: re-run once idle; if it stays there, compare with the baseline (inv report) "
            "and check the links before it falls below")
    return record


def judge_single_node_bandwidth(record: Record, config: Mapping[str, Any], thresholds: Thresholds) -> Record:
    """A single-node sweep's record against the single-node floor for the host's accelerator."""
    return judge_bandwidth(record, accelerator=config.get("accelerator"), scope="single-node", thresholds=thresholds)


def judge_multinode_bandwidth(record: Record, config: Mapping[str, Any], thresholds: Thresholds) -> Record:
    """A multi-node run's record (one per node) against the multi-node allreduce floor for its accelerator and
    the run's ranks (:data:`MULTINODE_ROWS`)."""
    scope, collective = MULTINODE_ROWS
    return judge_bandwidth(record, accelerator=config.get("accelerator"), scope=scope, thresholds=thresholds,
                           collective=collective)


# A run this far below the best run so far (of as many nodes or more) is slow even when it clears the floor: one
# bad node or link among good ones.
SLOW_PAIR_FRACTION = 0.5


def judge_isolation_run(busbw: float | None, *, failure: str | None, accelerator: str | None, ranks: int,
                        thresholds: Thresholds, best: float, than: str = "run") -> tuple[str, str]:
    """One run of a group of nodes while isolating a fault (a bisection group, a pair), as both engines judge it:
    one that failed (``failure``: why), is under the multi-node floor for its ``ranks``, or is under half the best
    run so far (``best``) is a fail. Returns the status and why. Pure."""
    if failure is not None:
        return "fail", failure
    value = busbw or 0.0
    row = thresholds.lookup(accelerator, *MULTINODE_ROWS, ranks)
    status, why = judge(value, row, thresholds.margin)
    if status == "fail":
        return "fail", f"{value:.4f} GB/s, {why}"
    if best and value < SLOW_PAIR_FRACTION * best:
        return "fail", f"{value:.4f} GB/s, under half the best {than}'s {best:.4f} GB/s"
    return "pass", f"{value:.4f} GB/s"


def judge_output(host: str, check: Judged, config: Mapping[str, Any], thresholds: Thresholds, *, command: str,
                 stdout: str, stderr: str, exit_status: int, duration: float) -> list[Record]:
    """What one check's script printed on ``host``, as its judged records (or the one ``error`` record each of a
    script that printed no document)."""
    try:
        items = parse_document(stdout)
    except ValueError:
        return [unparsable_record(host, name, command=command, stdout=stdout, stderr=stderr,
                                  exit_status=exit_status, duration_s=duration, inventory=config.get("inventory"))
                for name in check.checks]
    records = [to_record(host, item, command=command, stdout=stdout, stderr=stderr, duration_s=duration)
               for item in items]
    return [judge_record(record, config, thresholds, check.judge_for(record.check)) for record in records]


def judge_record(record: Record, config: Mapping[str, Any], thresholds: Thresholds, judge: Judge | None = None) -> Record:
    """A host record's judgement: its check's own ``judge`` (the check's declaration names it, see
    :meth:`accelstack.validate.checks.Check.judge_for`), then :func:`never_pass_a_failed_tool`."""
    if judge is not None:
        record = judge(record, config, thresholds)
    return never_pass_a_failed_tool(record)


def never_pass_a_failed_tool(record: Record) -> Record:
    """The last word on every host record: a ``pass`` or ``warn`` whose own evidence shows its tool missing or
    failing (``tool_exit`` not 0) measured nothing, so it is ``error``, whatever check printed it."""
    exit_status = record.evidence.get("tool_exit")
    if record.status not in ("pass", "warn") or exit_status in (0, None):
        return record
    output = str(record.evidence.get("tool_output") or "")
    # A validator names its tool's command in evidence; the control side's own wrapper (`[ -r env ] && ...`)
    # names no tool.
    words = str(record.evidence.get("command") or "").split()
    tool = words[0] if words and words[0][0] not in "[(-" else "its tool"
    why = tool_failure(tool, exit_status, output) or f"{tool} exited {exit_status}"
    record.summary = f"{why}: not measured, though the check said {record.status}: {record.summary}"
    record.status = "error"
    record.remedy = record.remedy or f"make {tool} answer on the host, then re-run this check"
    return record


def worst(statuses: Iterable[str]) -> Status:
    order = {"fail": 4, "error": 3, "warn": 2, "pass": 1, "skip": 0}
    best: Status = "skip"
    for status in statuses:
        if order.get(status, 0) > order[best]:
            best = status  # type: ignore[assignment]
    return best
