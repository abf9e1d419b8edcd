"""``accelstack node-check``: this node's host validators, run here, with no SSH and no inventory.

The node's stack and settings come from the file provisioning renders on it (role env, ``templates/node.yml.j2``,
``/etc/accelstack/node.yml``): the stack's pins and paths as ``stacks/<name>.yml`` writes them, the stack's python
and the inventory vars the validators read. The checks are the ones ``inv validate`` runs over SSH, through the
same code (:func:`accelstack.engines.ssh.host.run_host` on a local transport), so the records and the exit codes are
the same. Its default tier, ``health``, is made to be Slurm's ``HealthCheckProgram`` (it reads vendor tools, sysfs
and files, imports no torch and opens no device, so it runs beside jobs); ``quick`` is for a job prolog. With
``drain`` a ``fail`` drains the node through ``scontrol`` with the cause in the reason; an ``error`` (the check could
not run) and a ``skip`` (a device another process holds) never drain.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError, StackError
from ...inventory import Host
from ...results.records import Record, RecordSink
from ...stacks import Stack, preflight_stack
from ...stacks.context import HostContext
from ...stacks.model import parse_stack
from ...yamlfile import MarkedDict, kind_name, load_marked_file

NODE_FILE = Path("/etc/accelstack/node.yml")
# health (the default): vendor tools, sysfs, files and package metadata, no torch and no device context, safe beside
# a running job: what HealthCheckProgram runs. quick adds torch and the communication library's init (a prolog).
NODE_TIERS = ("health", "quick", "standard")
DEFAULT_NODE_TIER = "health"
NODE_FIELDS = ("node", "stack", "stack_python", "runs_dir", "keep_runs", "vars")
# A health check every 5 minutes is 288 run folders a day on every node: the newest 500 are kept by default.
DEFAULT_KEEP_RUNS = 500
# Slurm keeps a reason of any length, but `sinfo -R` shows 20 characters and `scontrol show node` one line: the
# check's name and the start of its summary are what a person needs; the records hold the rest.
REASON_LIMIT = 160
SCONTROL_TIMEOUT = 15.0
# Set by `validate --engine slurm` for each node's step: the inventory's vars for the node (validate.slurm's
# NODE_VARS_ENV; a test holds the two names together). Without it validate.slurm is not imported.
CONTROL_VARS_ENV = "ACCELSTACK_NODE_VARS"


@dataclass
class NodeFile:
    """``/etc/accelstack/node.yml`` as read: where it is, the stack, and the vars the validators get."""

    path: Path
    node: str
    stack: Stack
    vars: dict[str, Any] = field(default_factory=dict)
    runs_dir: str | None = None
    keep_runs: int = DEFAULT_KEEP_RUNS  # node-check runs kept in the runs folder; 0 keeps every one


def load_node_file(path: Path | None = None) -> NodeFile:
    """Read and check a node file; every problem is a ConfigError naming the file (and line), exit 3."""
    path = path or Path(os.environ.get("ACCELSTACK_NODE_FILE") or NODE_FILE)
    if not path.is_file():
        raise ConfigError(f"no node file at {path}",
                          hint="inv provision renders it (role env); or point --config at one")
    data = load_marked_file(path, error=StackError)  # a syntax error is a StackError (a ConfigError) at file:line
    if not isinstance(data, MarkedDict):
        raise ConfigError("a node file must be a mapping", where=f"{path}:1",
                          hint=f"fields: {', '.join(NODE_FIELDS)}")
    unknown = [key for key in data if key not in NODE_FIELDS]
    if unknown:
        raise ConfigError(f"unknown field {unknown[0]!r}", where=f"{path}:{data.line_of(unknown[0])}",
                          hint=f"fields: {', '.join(NODE_FIELDS)}")
    if "stack" not in data:
        raise ConfigError("missing required field 'stack' (the stack file's fields, as provisioning writes them)",
                          where=f"{path}:{data.line}")
    stack = _parse_node_stack(data["stack"], path)
    node_vars = data.get("vars") or {}
    if not isinstance(node_vars, Mapping):
        raise ConfigError("'vars' must be a mapping of variable names to values",
                          where=f"{path}:{data.line_of('vars')}")
    merged: dict[str, Any] = {"stack": stack.name}
    if stack.env:
        merged["env"] = dict(stack.env)
    for key, value in node_vars.items():
        if key == "env" and isinstance(value, Mapping):
            merged["env"] = {**merged.get("env", {}), **dict(value)}
        else:
            merged[str(key)] = value
    node_name = _text_field(data, "node", path)
    stack_python = _text_field(data, "stack_python", path)
    runs_dir = _text_field(data, "runs_dir", path)
    if stack_python:
        merged["stack_python"] = stack_python
    keep = data.get("keep_runs")
    if keep is None:
        keep = DEFAULT_KEEP_RUNS
    elif isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ConfigError(f"'keep_runs' must be a whole number >= 0 (0 keeps every run), not {keep!r}",
                          where=f"{path}:{data.line_of('keep_runs')}")
    return NodeFile(path=path, node=node_name or "", stack=stack, vars=merged, runs_dir=runs_dir or None,
                    keep_runs=keep)


def _text_field(data: MarkedDict, key: str, path: Path) -> str | None:
    """A field that names one thing (the node, a python, a folder): a string, or a number written without quotes;
    None when absent or empty. A list or a mapping there is a mistake, refused at its line, never its repr."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"'{key}' must be a single name or path, not {kind_name(value)}",
                          where=f"{path}:{data.line_of(key)}")
    return str(value)


def _parse_node_stack(section: Any, path: Path) -> Stack:
    """The ``stack:`` section, checked as a stack file is. parse_stack ties a stack's name to its file's name, so
    it is handed that name, and any error it raises is pointed back at the node file."""
    name = section.get("name") if isinstance(section, Mapping) else None
    stand_in = path.with_name(f"{name}.yml") if isinstance(name, str) and name else path
    try:
        return parse_stack(section, stand_in)
    except StackError as err:
        err.where = (err.where or "").replace(str(stand_in), str(path)) or str(path)
        raise


# The flags of `node-check`, by parameter name: True for one that takes a value. The invoke task
# (accelstack.tasks.nodecheck) and its invoke-free command (tasks.direct) declare the same parameters (a test holds
# them together), and the console script parses a plain `accelstack node-check ...` line with this table (cli.py).
NODE_CHECK_FLAGS: dict[str, bool] = {"tier": True, "only": True, "json": False, "drain": False, "config": True,
                                     "node": True}


def node_check(*, tier: str = DEFAULT_NODE_TIER, only: str | None = None, json_lines: bool = False,
               drain: bool = False, config: str | None = None, node: str | None = None) -> NodeCheckResult:
    """``accelstack node-check``: check the flags and the node file (a problem is a ConfigError, exit 3, before
    anything runs), run the tier's checks here, write and show the records, keep the newest runs, drain on a
    fail when asked. Returns the records, the exit code (0 pass/warn/skip, 1 a fail, 2 an error) and the drain."""
    from ...results.output import Reporter
    from ...results.records import RunWriter, prune_runs, runs_dir
    from ...validate.registry import load_registry, select
    from ...values import only_checks

    check_tier(tier)
    wanted = only_checks(only)
    select(load_registry(), tier, wanted)  # a bad --only is exit 3 before anything runs
    node_file = load_node_file(Path(config) if config else None)
    name = node or slurm_node_name()
    if os.environ.get(CONTROL_VARS_ENV):
        # Under `validate --engine slurm --inventory`: the inventory's vars for this node, over the node file's.
        from ...engines.slurm.run import apply_control_vars

        apply_control_vars(node_file, name)
    ctx = node_context(node_file, name)
    # $ACCELSTACK_RUNS first, as everywhere (set but blank is unset: runs_dir's rule); then the node file's folder
    # (slurmd starts a health check in /, where a ./runs would land).
    from_env = os.environ.get("ACCELSTACK_RUNS", "").strip()
    base = None if from_env or not node_file.runs_dir else Path(node_file.runs_dir)
    writer = RunWriter("node-check", base=runs_dir(base),
                       meta={"node": name, "node_file": str(node_file.path), "tier": tier,
                             "only": sorted(wanted) if wanted else None, "drain": bool(drain)})
    reporter = Reporter(writer, json_lines=json_lines, total_hosts=1, title=f"node-check {name} ({tier})")
    records = run_node_check(ctx, tier=tier, only=wanted, reporter=reporter)
    code = reporter.finish()
    prune_runs(writer.path.parent, "node-check", node_file.keep_runs, node=name)  # a check every few minutes adds up
    reason = drain_reason(records) if drain else None
    return NodeCheckResult(records, code, drain_node(name, reason) if reason is not None else None)


def slurm_node_name(environ: Mapping[str, str] | None = None) -> str:
    """The name Slurm knows this node by: ``SLURMD_NODENAME`` (set for prologs and jobs), else the short
    hostname, which is what slurmd registers under when no ``-N`` is given."""
    env = os.environ if environ is None else environ
    return env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def node_context(node: NodeFile, name: str) -> HostContext:
    preflight_stack(node.stack)
    host = Host(name=name, address="localhost", connection="local", vars=dict(node.vars), source=str(node.path))
    return HostContext(host, node.stack, dict(node.vars))


def check_tier(tier: str) -> None:
    if tier not in NODE_TIERS:
        raise ConfigError(f"--tier {tier!r} is not one of {', '.join(NODE_TIERS)}",
                          hint="the full tier's sweeps belong in a maintenance job: inv validate --tier full")


def run_node_check(ctx: HostContext, *, tier: str, only: set[str] | None = None,
                   reporter: RecordSink | None = None) -> list[Record]:
    """Every host-scope validator of the tier, here, through the code ``inv validate`` runs over SSH
    (:func:`accelstack.engines.ssh.host.run_host` on a local transport): the scripts of one python in one interpreter,
    so the health tier is one system python start and one read of each vendor tool. Records go to ``reporter`` as
    each check's are judged, so a health check that slurmd kills at its own timeout keeps what finished."""
    from ...engines.ssh.host import run_host, tier_config
    from ...transport.connection import LocalTransport
    from ...validate.registry import load_registry, select, validators_dir
    from ...validate.thresholds import load_thresholds

    validators = [v for v in select(load_registry(), tier, only) if v.scope == "host"]
    thresholds = load_thresholds().with_overrides(ctx.vars.get("thresholds"),
                                                  where=f"{ctx.host.source} vars.thresholds")
    config = tier_config(ctx, tier)
    transport = LocalTransport(ctx.host)

    def on_done(_validator: object, batch: list[Record]) -> None:
        if reporter is not None:
            reporter.add_all(batch)

    try:
        return run_host(transport, ctx, validators, validators_dir(), thresholds, tier=tier, config=config,
                        on_done=on_done)
    finally:
        transport.close()


# ----- drain ------------------------------------------------------------------------------------------------

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


@dataclass
class DrainOutcome:
    node: str
    reason: str
    command: list[str]
    ok: bool
    message: str = ""


@dataclass
class NodeCheckResult:
    """One node-check run: its records, its exit code and the drain it asked for (None: no drain asked)."""

    records: list[Record]
    code: int
    drain: DrainOutcome | None = None


def drain_command(node: str, reason: str) -> list[str]:
    # An argument vector, no shell: scontrol takes `reason=...` whole, whatever the summary holds.
    return ["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"]


def drain_node(node: str, reason: str, *, timeout: float = SCONTROL_TIMEOUT) -> DrainOutcome:
    command = drain_command(node, reason)
    try:
        proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return DrainOutcome(node, reason, command, False, "scontrol is not on PATH")
    except subprocess.TimeoutExpired:
        return DrainOutcome(node, reason, command, False, f"scontrol gave no answer within {timeout:.0f} s")
    text = (proc.stderr or proc.stdout).strip().splitlines()
    return DrainOutcome(node, reason, command, proc.returncode == 0,
                        f"scontrol exited {proc.returncode}" + (f": {text[-1]}" if text else ""))

