"""Draining a node through Slurm: ``scontrol update nodename=NODE state=drain reason=...``, an argument vector (no
shell), through the Slurm client. node-check drains its own node on a ``fail``; the fleet check drains through the
Slurm engine. A reason names the first failed check and the start of its summary: Slurm keeps a reason of any
length, but ``sinfo -R`` shows 20 characters and ``scontrol show node`` one line; the records hold the rest."""

from __future__ import annotations

import shlex

from ...results.records import Record, utc_now
from ..base import DrainResult
from .client import QUERY_TIMEOUT_S, Client, SlurmMissing

REASON_LIMIT = 160


def drain_reason(records: list[Record], limit: int = REASON_LIMIT) -> str | None:
    """``accelstack: <check>: <summary>`` for the first failed check, on one line and cut to ``limit``; None when
    nothing failed. Errors never drain: a check that could not run is no evidence against the node."""
    failed = [r for r in records if r.status == "fail"]
    if not failed:
        return None
    first = failed[0]
    summary = " ".join(first.summary.split())
    more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
    reason = f"accelstack: {first.check}: {summary}"
    if len(reason) + len(more) > limit:
        reason = reason[: max(0, limit - len(more) - 3)].rstrip() + "..."
    return reason + more


def drain_argv(node: str, reason: str) -> list[str]:
    # An argument vector, no shell: scontrol takes `reason=...` whole, whatever the summary holds.
    return ["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"]


def drain_node(client: Client, node: str, reason: str, *, timeout: float = QUERY_TIMEOUT_S) -> DrainResult:
    """Drain ``node``; what scontrol said, never an exception (a node-check that could not drain says so)."""
    argv = drain_argv(node, reason)
    command = shlex.join(argv)
    try:
        done = client.run(argv, timeout=timeout)
    except SlurmMissing:
        return DrainResult(node, reason, command, 127, "scontrol is not on PATH", ts=utc_now())
    if done.timed_out:
        return DrainResult(node, reason, command, None, f"scontrol gave no answer within {timeout:.0f} s",
                           ts=utc_now())
    text = (done.stderr or done.stdout).strip().splitlines()
    return DrainResult(node, reason, command, done.returncode,
                       f"scontrol exited {done.returncode}" + (f": {text[-1]}" if text else ""), ts=utc_now())
