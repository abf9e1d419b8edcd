"""``inv validate --engine slurm``: the host validators on every node of a partition with one ``srun``, no SSH.

Each node runs ``accelstack node-check --json`` (its own node file, rendered by provisioning) as one task of one
step; every line it prints is a record, which comes back here and goes into this run's ``results.jsonl`` with
``host`` = the Slurm node name. A node that is down, drained or not responding is not asked: it gets an
``error`` record per check, as an unreachable host does over SSH, and so does a node the step could not reach.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ConfigError
from ..results.records import Record, RecordSink
from .registry import Validator

# sinfo's long states a node can take a task in; anything else, or a trailing `*` (not responding), is not.
USABLE_STATES = ("idle", "mixed", "allocated", "completing")
LABEL = re.compile(r"^\s*(\d+):\s?(.*)$")
ALLOCATION_WAIT_S = 60


@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str

    @property
    def usable(self) -> bool:
        return not self.state.endswith(("*", "~", "#", "!", "%", "$", "@", "^", "-")) and \
            self.state.rstrip("+") in USABLE_STATES


def parse_sinfo_nodes(text: str) -> list[SlurmNode]:
    """``sinfo -h -N -o '%N %T'`` lines as nodes, first state seen per node (a node in two partitions is listed
    twice). Pure."""
    seen: dict[str, SlurmNode] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] not in seen:
            seen[parts[0]] = SlurmNode(parts[0], parts[1].lower())
    return list(seen.values())


def parse_step_output(text: str) -> tuple[list[dict], list[str]]:
    """The step's labelled output (``srun --label``): the JSON records, and every other line (for evidence).

    srun forwards a task's output in chunks and labels each chunk as a line of its own, so a long record arrives
    cut in pieces (``1: {..."stor`` then ``1: age"...}``): a task's chunks are joined until they parse. Pure."""
    found: list[dict] = []
    other: list[str] = []
    pending: dict[str, str] = {}
    for line in text.splitlines():
        match = LABEL.match(line)
        task, body = (match.group(1), match.group(2)) if match else ("", line)
        if task not in pending and not body.startswith("{"):
            if line.strip():
                other.append(line)
            continue
        joined = pending.pop(task, "") + body
        try:
            item = json.loads(joined)
        except ValueError:
            pending[task] = joined
            continue
        if isinstance(item, dict) and {"host", "check", "status"} <= set(item):
            found.append(item)
        else:
            other.append(f"{task}: {joined}" if task else joined)
    other += [f"{task}: {rest}" if task else rest for task, rest in pending.items()]
    return found, other


def _node_error(node: str, check: str, summary: str, evidence: dict, remedy: str) -> Record:
    return Record(host=node, check=check, status="error", summary=summary, evidence=evidence, remedy=remedy)


def step_command(nodes: list[str], *, tier: str, only: Iterable[str] | None, partition: str | None,
                 time_limit_min: int, command: str = "accelstack") -> list[str]:
    """One srun: one task per node, each running this node's checks; labelled lines, a time limit, and a bounded
    wait for the allocation (a drained node would otherwise queue the step for ever)."""
    argv = ["srun", f"--nodes={len(nodes)}", "--ntasks-per-node=1", f"--nodelist={','.join(nodes)}",
            f"--immediate={ALLOCATION_WAIT_S}", f"--time={time_limit_min}", "--label", "--chdir=/",
            "--job-name=accelstack-validate", "--kill-on-bad-exit=0"]
    if partition:
        argv.append(f"--partition={partition}")
    argv += [*shlex.split(command), "node-check", "--json", "--tier", tier]
    if only:
        argv += ["--only", ",".join(sorted(only))]
    return argv


def validate_slurm(validators: list[Validator], *, tier: str, only: set[str] | None = None,
                   partition: str | None = None, nodes: str | None = None,
                   reporter: RecordSink | None = None, command: str | None = None) -> list[Record]:
    """Validate the partition's nodes (or ``nodes``, a Slurm hostlist) through one srun; records to
    ``reporter`` as they are parsed. Slurm's own failures are error records, never exceptions."""
    # Each node file names its own stack, so the record names come from the nodes; these are for errors only.
    error_checks = [v.name for v in validators if v.scope == "host"] or ["node-check"]
    listing = ["sinfo", "-h", "-N", "-o", "%N %T"]
    if partition:
        listing.append(f"--partition={partition}")
    if nodes:
        listing.append(f"--nodes={nodes}")
    proc = _run(listing, timeout=30)
    if proc.returncode != 0:
        raise ConfigError(f"sinfo exited {proc.returncode}: {proc.stderr.strip()[-300:] or 'no output'}",
                          hint="is SLURM_CONF set and slurmctld up? (scontrol ping)")
    found = parse_sinfo_nodes(proc.stdout)
    if not found:
        where = f"partition {partition}" if partition else "the default partition"
        raise ConfigError(f"Slurm lists no node{' matching ' + nodes if nodes else ''} in {where}")
    records: list[Record] = []

    def emit(batch: list[Record]) -> None:
        records.extend(batch)
        if reporter is not None:
            reporter.add_all(batch)

    for node in found:
        if not node.usable:
            info = _node_reason(node.name)
            emit([_node_error(node.name, check, f"Slurm node {node.name} is {node.state}"
                              + (f" ({info})" if info else "") + ": not validated",
                              {"slurm_state": node.state, "slurm_reason": info},
                              f"scontrol show node {node.name}; resume it (scontrol update nodename={node.name} "
                              "state=resume) once fixed") for check in error_checks])
    usable = [n.name for n in found if n.usable]
    if not usable:
        return records
    total = sum(v.timeout for v in validators if v.scope == "host") + 30
    argv = step_command(usable, tier=tier, only=only, partition=partition,
                        time_limit_min=max(1, math.ceil(total / 60)),
                        command=command or os.environ.get("ACCELSTACK_NODE_COMMAND", "accelstack"))
    started = time.monotonic()
    step = _run(argv, timeout=ALLOCATION_WAIT_S + total + 30, strip_runs=True)
    duration = round(time.monotonic() - started, 3)
    items, other = parse_step_output(step.stdout)
    answered: set[str] = set()
    batch = []
    for item in items:
        if item.get("host") not in usable:
            continue
        record = Record.from_dict(item)
        record.run_id = ""
        answered.add(record.host)
        batch.append(record)
    emit(batch)
    silent = [n for n in usable if n not in answered]
    if silent:
        tail = (step.stderr.strip().splitlines() + other)[-20:]
        emit([_node_error(name, check, f"the Slurm step gave no records from {name} (srun exited "
                                       f"{step.returncode})", {"command": shlex.join(argv), "stderr_tail": tail,
                                                                 "slurm_step_s": duration},
                          f"scontrol show node {name}; run accelstack node-check on it by hand")
              for name in silent for check in error_checks])
    return records


def _node_reason(name: str) -> str:
    proc = _run(["scontrol", "-o", "show", "node", name], timeout=15)
    from ..lab.slurm import parse_scontrol_node

    return parse_scontrol_node(proc.stdout).get("Reason", "") if proc.returncode == 0 else ""


class _Failed:
    returncode = 127
    stdout = ""

    def __init__(self, message: str) -> None:
        self.stderr = message


def _run(argv: list[str], *, timeout: float, strip_runs: bool = False) -> subprocess.CompletedProcess[str] | _Failed:
    env = dict(os.environ)
    if strip_runs:
        # The nodes keep their own copy in their node file's runs_dir; this run's folder is the control side's.
        env.pop("ACCELSTACK_RUNS", None)
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ConfigError(f"{argv[0]} is not on PATH: --engine slurm needs Slurm's client commands",
                          hint="apt-get install slurm-client, or run where sinfo and srun work") from None
    except subprocess.TimeoutExpired:
        return _Failed(f"{argv[0]} gave no answer within {timeout:.0f} s")


def validate_slurm_task(engine: str, *, tier: str, only: set[str] | None, json: bool, partition: str | None,
                        nodes: str | None) -> int:
    """The body of ``inv validate --engine slurm``: checks the flags, runs, reports; returns the exit code."""
    from ..nodecheck import check_tier
    from ..results.output import Reporter
    from ..results.records import RunWriter
    from .registry import load_registry, select

    if engine != "slurm":
        raise ConfigError(f"--engine {engine!r} is not one of ssh, slurm")
    check_tier(tier)  # what node-check runs on a node
    validators = select(load_registry(), tier, only)
    cluster = sorted(c for v in validators if v.scope == "cluster" for c in v.checks if only and c in only)
    if cluster:
        raise ConfigError(f"--engine slurm runs host checks only; {', '.join(cluster)} need --engine ssh")
    writer = RunWriter("validate", meta={"engine": "slurm", "partition": partition, "nodes": nodes, "tier": tier,
                                         "only": sorted(only) if only else None})
    reporter = Reporter(writer, json_lines=json, title=f"validate ({tier}, through Slurm)")
    try:
        validate_slurm(validators, tier=tier, only=only, partition=partition, nodes=nodes, reporter=reporter)
    except BaseException:
        writer.close()
        raise
    return reporter.finish()
