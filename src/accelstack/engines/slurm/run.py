"""``inv validate --engine slurm``: the host validators on every node of a partition with one ``srun``, no SSH.

Each node runs ``accelstack node-check --json`` (its own node file, rendered by provisioning) as one task of one
step; every line it prints is a record, which comes back here and goes into this run's ``results.jsonl`` with
``host`` = the Slurm node name. A node that is down, drained or not responding is not asked: it gets an
``error`` record per check, as an unreachable host does over SSH, and so does a node the step could not reach.
The multi-node allreduce then runs as one Slurm step of its own (:mod:`.slurm_collective`).

With an inventory, each Slurm node is the inventory host that names it (``slurm_node: NAME``), else the host of
that name, else the host whose address (``ansible_host``) has it as short hostname. That host's vars (stack,
accelerator, expect_devices, socket interfaces, thresholds...) are sent to the node with the step
(``ACCELSTACK_NODE_VARS``) and override the node file's; records keep the Slurm node name as ``host``.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import math
import os
import queue
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ...errors import ConfigError
from ...results.records import Record, RecordSink
from ...transport.fanout import RunInterrupted
from ...validate.registry import Validator
from ..ssh.cluster import new_tag

if TYPE_CHECKING:
    from ...flows.nodecheck.run import NodeFile
    from ...inventory import Host, Inventory
    from ...stacks.context import HostContext
    from ...transport.fanout import Fleet

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


class LabelledOutput:
    """``srun --label`` output fed a line at a time: each JSON object as it is whole, with its task's label, and
    every other line (for evidence). The one parser of both steps' output (host checks, multi-node).

    srun forwards a task's output in chunks and labels each chunk as a line of its own, so a long line arrives
    cut in pieces (``1: {..."stor`` then ``1: age"...}``): a task's chunks are joined until they parse. Pure."""

    def __init__(self, wanted: Callable[[dict[str, Any]], bool] | None = None) -> None:
        self.wanted = wanted  # which objects the caller reads; the others are kept with the other lines
        self.other: list[str] = []
        self._pending: dict[str, str] = {}

    def feed(self, line: str) -> list[tuple[str, dict[str, Any]]]:
        """The ``(task, object)`` this line completes (none or one)."""
        match = LABEL.match(line)
        task, body = (match.group(1), match.group(2)) if match else ("", line)
        if task not in self._pending and not body.startswith("{"):
            if line.strip():
                self.other.append(line)
            return []
        joined = self._pending.pop(task, "") + body
        # A chunk cut inside an object rarely ends in "}": wait for the rest instead of failing a parse on each.
        if not joined.rstrip().endswith("}"):
            self._pending[task] = joined
            return []
        try:
            item = json.loads(joined)
        except ValueError:
            self._pending[task] = joined
            return []
        if isinstance(item, dict) and (self.wanted is None or self.wanted(item)):
            return [(task, item)]
        self.other.append(f"{task}: {joined}" if task else joined)
        return []

    def finish(self) -> list[str]:
        """Every line that was not an object, with the pieces of one that never became whole."""
        return self.other + [f"{task}: {rest}" if task else rest for task, rest in self._pending.items()]


def is_record(item: dict[str, Any]) -> bool:
    return {"host", "check", "status"} <= set(item)


def parse_step_output(text: str) -> tuple[list[dict], list[str]]:
    """The host step's whole labelled output: the JSON records, and every other line (for evidence). Pure."""
    parser = LabelledOutput(wanted=is_record)
    found = [item for line in text.splitlines() for _task, item in parser.feed(line)]
    return found, parser.finish()


# ----- names and vars from an inventory -------------------------------------------------------------------

NODE_VARS_ENV = "ACCELSTACK_NODE_VARS"
# The inventory vars a node's checks read (what the node file carries, and the cluster sweep's settings): every
# var validate.config.host_config, the context and node-check read from a host's vars (a test reads them all).
NODE_VARS = ("stack", "stack_python", "expect_devices", "accelerator", "backend", "nccl_socket_ifname",
             "hccl_socket_ifname", "gloo_socket_ifname", "ascend_install_path", "checkpoint_dir", "checkpoint_fs",
             "checkpoint_size_gb", "collective_timeout_s", "storage_probe_mb", "min_shm_gb", "validate_sizes",
             "validate_iters", "validate_warmup", "validate_size_budget_s", "thresholds", "device_thresholds", "env",
             "env_file", "nproc_per_node", "health_xid_window_s", "cluster_sizes", "cluster_iters", "cluster_warmup",
             "cluster_size_budget_s", "cluster_nproc")


def short_name(address: str) -> str:
    """``gpu07.dc1.example`` -> ``gpu07``; an IP address stays whole. Pure."""
    return address if re.fullmatch(r"[\d.]+|[0-9a-fA-F:]+", address or "") else (address or "").split(".")[0]


def map_node_names(slurm_names: Iterable[str], hosts: dict[str, tuple[str, str | None]]) -> dict[str, str]:
    """Slurm node name -> inventory host name. ``hosts`` is ``{host: (address, slurm_node var or None)}``. A node
    matches the host that names it (``slurm_node``), else the host of its name, else the host whose address has
    it as short hostname; a node no host matches is left out. Pure."""
    by_var = {var: host for host, (_addr, var) in hosts.items() if var}
    by_short: dict[str, str] = {}
    for host, (address, _var) in hosts.items():
        by_short.setdefault(short_name(address), host)
        by_short.setdefault(short_name(host), host)
    found: dict[str, str] = {}
    for name in slurm_names:
        match = by_var.get(name) or (name if name in hosts else None) or by_short.get(name)
        if match is not None:
            found[name] = match
    return found


def inventory_contexts(inventory: Inventory, hosts: Sequence[Host], slurm_names: list[str],
                       overrides: dict[str, Any] | None = None) -> dict[str, HostContext]:
    """The context of the host (of ``hosts``, from the loaded ``inventory``) that each Slurm node is; a node no
    host matches is a ConfigError (exit 3), before any srun."""
    from ...stacks.context import resolve_contexts

    mapping = map_node_names(slurm_names, {h.name: (h.address, str(h.vars["slurm_node"]) if h.vars.get("slurm_node")
                                                    else None) for h in hosts})
    missing = [n for n in slurm_names if n not in mapping]
    if missing:
        raise ConfigError(f"Slurm node(s) {', '.join(missing)} match no host of {inventory.path}",
                          hint="name the host as the node, give it `slurm_node: NAME`, or narrow --nodes")
    chosen = set(mapping.values())
    wanted = [h for h in hosts if h.name in chosen]
    contexts = resolve_contexts(wanted, overrides=overrides)
    return {name: contexts[host] for name, host in mapping.items()}


# Linux refuses to start a program with one environment string over 128 KiB (MAX_ARG_STRLEN): srun would not run.
NODE_VARS_MAX_BYTES = 120_000


def encode_node_vars(per_node: dict[str, dict[str, Any]]) -> str:
    """``ACCELSTACK_NODE_VARS``: each distinct set of vars once; the set most nodes share is the ``default``, and
    only the nodes with another set are named (a fleet has few sets: the text stays small at any node count, where
    naming every node made it grow with the fleet, past what one environment variable may hold). Pure."""
    sets: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    of_node: dict[str, int] = {}
    for name, values in sorted(per_node.items()):
        chosen = {k: values[k] for k in NODE_VARS if values.get(k) is not None}
        key = json.dumps(chosen, sort_keys=True, default=str)
        if key not in index:
            index[key] = len(sets)
            sets.append(chosen)
        of_node[name] = index[key]
    counts: dict[int, int] = {}
    for number in of_node.values():
        counts[number] = counts.get(number, 0) + 1
    default = max(counts, key=lambda number: (counts[number], -number)) if counts else 0
    nodes = {name: number for name, number in of_node.items() if number != default}
    return json.dumps({"sets": sets, "default": default, "nodes": nodes}, sort_keys=True, default=str)


def node_vars_env(per_node: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The environment a step carries for these nodes' vars (none when no node has any); vars too many and too
    varied to travel in one environment variable are a ConfigError (exit 3) before any srun."""
    if not any(values.get(key) is not None for values in per_node.values() for key in NODE_VARS):
        return {}
    text = encode_node_vars(per_node)
    if len(NODE_VARS_ENV) + 1 + len(text.encode()) > NODE_VARS_MAX_BYTES:
        sets = len(json.loads(text)["sets"])
        raise ConfigError(f"the inventory vars of {len(per_node)} Slurm nodes ({sets} different sets) take "
                          f"{len(text.encode())} bytes in {NODE_VARS_ENV}; one environment variable holds 128 KiB",
                          hint="give nodes that share a role the same vars (group_vars), or validate fewer nodes "
                               "at once (--nodes)")
    return {NODE_VARS_ENV: text}


def decode_node_vars(text: str | None, name: str) -> dict[str, Any]:
    """This node's vars from ``ACCELSTACK_NODE_VARS`` (the set it is named with, else the default set); none when
    it is unset or empty. A value that is not what :func:`encode_node_vars` writes is a ConfigError naming the
    variable (exit 3), never silently no vars: the node would be judged by its node file alone. Pure."""
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise ConfigError(f"{NODE_VARS_ENV} is not JSON ({err}): {text[:60]!r}; validate --engine slurm sets "
                          "it, unset it to judge by the node file alone") from None
    try:
        number = doc["nodes"].get(name, doc.get("default"))
        if number is None:  # from a control side that named every node, and not this one
            return {}
        chosen = doc["sets"][number] if isinstance(number, int) else None
    except (KeyError, IndexError, TypeError, AttributeError):
        chosen = None
    if not isinstance(chosen, dict):
        raise ConfigError(f"{NODE_VARS_ENV} is not the vars validate --engine slurm sends ({{\"sets\": [...], "
                          f"\"default\": N, \"nodes\": {{...}}}}): {text[:60]!r}")
    return dict(chosen)


def apply_control_vars(node: NodeFile, name: str, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The vars the control side sent for this node (its inventory host's), over the node file's: a node
    validated with an inventory is judged by the inventory. Returns what was applied."""
    from ...stacks import load_stack

    extra = decode_node_vars((os.environ if environ is None else environ).get(NODE_VARS_ENV), name)
    if extra.get("stack") and extra["stack"] != node.stack.name:
        node.stack = load_stack(str(extra["stack"]))
    for key, value in extra.items():
        if key == "env" and isinstance(value, dict):
            node.vars["env"] = {**node.vars.get("env", {}), **value}
        else:
            node.vars[key] = value
    return extra


def _node_error(node: str, check: str, summary: str, evidence: dict, remedy: str) -> Record:
    return Record(host=node, check=check, status="error", summary=summary, evidence=evidence, remedy=remedy)


def step_command(nodes: list[str], *, tier: str, only: Iterable[str] | None, partition: str | None,
                 time_limit_min: int, command: str = "accelstack", job_name: str = "accelstack-validate",
                 gres: str | None = None) -> list[str]:
    """One srun: one task per node, each running this node's checks; labelled lines, a time limit, and a bounded
    wait for the allocation (a drained node would otherwise queue the step for ever). The nodes whole
    (``--exclusive``: no user job beside the bandwidth checks) with their devices (``gres``, the nodes' own
    :func:`gres_request`: under ``ConstrainDevices=yes`` a step that asks for none sees none). The health tier
    loads nothing (it reads vendor tools and files), so it does not take the nodes whole: a node whose other cores
    run a job is checked too."""
    argv = ["srun", f"--nodes={len(nodes)}", "--ntasks-per-node=1", f"--nodelist={','.join(nodes)}",
            f"--immediate={ALLOCATION_WAIT_S}", f"--time={time_limit_min}", "--label", "--chdir=/",
            f"--job-name={job_name}", "--kill-on-bad-exit=0"]
    if tier != "health":
        argv.append("--exclusive")
    if gres:
        argv.append(f"--gres={gres}")
    if partition:
        argv.append(f"--partition={partition}")
    argv += [*shlex.split(command), "node-check", "--json", "--tier", tier]
    if only:
        argv += ["--only", ",".join(sorted(only))]
    return argv


@dataclass(frozen=True)
class Selection:
    """The Slurm nodes a run validates (sinfo's, with their states) and, with an inventory, each one's host
    context: worked out once, when the flags are checked, and handed to the run."""

    nodes: list[SlurmNode]
    contexts: dict[str, HostContext]


def select(partition: str | None, nodes: str | None, inventory: Inventory | None = None, hosts: Sequence[Host] = (),
           overrides: dict[str, Any] | None = None) -> Selection:
    """The partition's nodes (or those ``nodes`` names) and their inventory hosts' contexts; a node the partition
    lacks, or one no inventory host matches, is a ConfigError (exit 3)."""
    found = select_nodes(partition, nodes)
    contexts = inventory_contexts(inventory, hosts, [n.name for n in found], overrides) \
        if inventory is not None else {}
    return Selection(found, contexts)


def validate_slurm(validators: list[Validator], *, tier: str, only: set[str] | None = None,
                   partition: str | None = None, nodes: str | None = None,
                   reporter: RecordSink | None = None, command: str | None = None,
                   inventory: Inventory | None = None, hosts: Sequence[Host] = (),
                   overrides: dict[str, Any] | None = None, deadline_s: float | None = None,
                   selection: Selection | None = None) -> list[Record]:
    """Validate the partition's nodes (or ``nodes``, a Slurm hostlist) through one srun, then the multi-node
    allreduce as one Slurm step when it is selected; records to ``reporter`` as they are parsed. With the loaded
    ``inventory`` (and its ``hosts``), each node is checked with its host's vars. ``selection``: what
    :func:`select` found for these same arguments a moment ago (else it is asked now). Bad input (a node the
    partition lacks, a node no inventory host matches) is a ConfigError before any srun; Slurm's own failures are
    error records, never exceptions."""
    selection = selection or select(partition, nodes, inventory, hosts, overrides)
    found, contexts = selection.nodes, selection.contexts
    names = [n.name for n in found]
    per_node = {n: dict(contexts[n].vars) if n in contexts else dict(overrides or {}) for n in names}
    env = node_vars_env(per_node)
    host_validators = [v for v in validators if v.scope == "host"]
    multinode = any(v.scope == "cluster" and "multinode" in v.checks for v in validators)
    # Each node file names its own stack, so the record names come from the nodes; these are for errors only.
    error_checks = [v.name for v in host_validators] + (["multinode"] if multinode else [])
    records: list[Record] = []
    steps = _Steps()

    def emit(batch: list[Record]) -> None:
        records.extend(batch)
        if reporter is not None:
            reporter.add_all(batch)

    from ..ssh.run import interrupt_guard

    try:
        # interrupt_guard only calls cancel() on the first Ctrl-C: here it scancels the step under way.
        with interrupt_guard(cast("Fleet", steps)):
            _validate_nodes(found, host_validators, multinode, error_checks, contexts, overrides or {}, tier=tier,
                            only=only, partition=partition, command=command, env=env, deadline_s=deadline_s,
                            emit=emit, steps=steps)
    except KeyboardInterrupt:
        # A node Slurm could not use already has its error records; the others get one per check left.
        missing = interrupted_records(records, [n.name for n in found if n.usable], host_validators,
                                      multinode=multinode)
        emit(missing)
        raise RunInterrupted(f"interrupted: {len(records) - len(missing)} finished record(s) kept, {len(missing)} "
                             "check(s) marked not run; the Slurm step was cancelled") from None
    return records


def _validate_nodes(found: list[SlurmNode], host_validators: list[Validator], multinode: bool,
                    error_checks: list[str], contexts: dict[str, HostContext], overrides: dict[str, Any], *,
                    tier: str, only: set[str] | None, partition: str | None, command: str | None,
                    env: dict[str, str], deadline_s: float | None, emit: Callable[[list[Record]], None],
                    steps: _Steps) -> None:
    # Every node's fields (address, devices, a drained node's reason) from one scontrol call, not one a node.
    table = _node_table()
    for node in found:
        if not node.usable:
            info = table.get(node.name, {}).get("Reason", "")
            emit([_node_error(node.name, check, f"Slurm node {node.name} is {node.state}"
                              + (f" ({info})" if info else "") + ": not validated",
                              {"slurm_state": node.state, "slurm_reason": info},
                              f"scontrol show node {node.name}; resume it (scontrol update nodename={node.name} "
                              "state=resume) once fixed") for check in error_checks])
    usable = [n.name for n in found if n.usable]
    if not usable:
        return
    silent: list[str] = []
    if host_validators:
        silent = _host_step(host_validators, usable, tier=tier, only=only, partition=partition, command=command,
                            env=env, emit=emit, steps=steps,
                            gres={n: gres_request(table.get(n, {}).get("Gres", "")) for n in usable})
    if multinode:
        members = [n for n in usable if n not in silent]
        emit([_node_error(name, "multinode", f"not run: {name} gave no host records through Slurm",
                          {"slurm_step": "host checks"}, f"scontrol show node {name}; run accelstack node-check on it")
              for name in silent])
        if members:
            emit(_multinode(members, contexts, overrides, partition=partition, env=env, command=command,
                            deadline_s=deadline_s, info=table))


def interrupted_records(records: list[Record], nodes: list[str], validators: list[Validator], *,
                        multinode: bool) -> list[Record]:
    """After Ctrl-C: an ``error`` record for each node and selected check that has no record yet (it could not be
    measured), as the SSH engine writes them. Pure."""
    # What each node reported, and every dotted head of it (``env`` for ``env.gloo_socket_ifname``): one pass
    # over the records, not one for each node and check.
    exact = {(r.host, r.check) for r in records}
    heads = {(r.host, r.check.rsplit(".", i)[0]) for r in records for i in range(1, r.check.count(".") + 1)}

    def done(node: str, check: str, name: str) -> bool:
        # An error for the whole validator (a node the step missed) carries the validator's name.
        return (node, check) in exact or (node, name) in exact or (node, check) in heads

    checks = [(c, v.name) for v in validators for c in v.checks] + ([("multinode", "multinode")] if multinode else [])
    return [Record(host=node, check=check, status="error", summary="not run: the run was interrupted (Ctrl-C)",
                   evidence={"error": "interrupted"},
                   remedy=f"re-run: inv validate --engine slurm --nodes {node} --only {check}")
            for node in nodes for check, name in checks if not done(node, check, name)]


def last_line(text: str, empty: str = "no output") -> str:
    """A client command's stderr as one line for a bad-input message: its last line that says something (Slurm
    prints the cause last). Pure."""
    lines = [" ".join(line.split()) for line in (text or "").splitlines() if line.strip()]
    return lines[-1][-300:] if lines else empty


def select_nodes(partition: str | None, nodes: str | None) -> list[SlurmNode]:
    """The partition's nodes (sinfo), or those of them ``nodes`` names; a name the partition lacks is exit 3."""
    listing = ["sinfo", "-h", "-N", "-o", "%N %T"]
    if partition:
        listing.append(f"--partition={partition}")
    proc = _run(listing, timeout=30)
    if proc.returncode != 0:
        raise ConfigError(f"sinfo exited {proc.returncode}: {last_line(proc.stderr)}",
                          hint="is SLURM_CONF set and slurmctld up? (scontrol ping)")
    found = parse_sinfo_nodes(proc.stdout)
    where = f"partition {partition}" if partition else "the default partition"
    if nodes:
        expanded = _run(["scontrol", "show", "hostnames", nodes], timeout=15)
        wanted = expanded.stdout.split() if expanded.returncode == 0 else []
        if not wanted:
            raise ConfigError(f"--nodes {nodes!r} is not a Slurm hostlist: "
                              f"{last_line(expanded.stderr, 'it names no node')}", hint="e.g. lab[1-4],gpu07")
        known = {n.name for n in found}
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise ConfigError(f"--nodes names {', '.join(unknown)}, which {where} does not have",
                              hint=f"sinfo -N{' -p ' + partition if partition else ''} lists its nodes")
        chosen = set(wanted)
        found = [n for n in found if n.name in chosen]
    if not found:
        raise ConfigError(f"Slurm lists no node in {where}")
    return found


def _host_step(validators: list[Validator], usable: list[str], *, tier: str, only: set[str] | None,
               partition: str | None, command: str | None, env: dict[str, str],
               emit: Callable[[list[Record]], None], steps: _Steps,
               gres: dict[str, str | None] | None = None) -> list[str]:
    """The host checks, one srun over the usable nodes (one per distinct device set, ``gres``: node -> its
    :func:`gres_request`, so each node is given all its devices), each record handed on as it arrives; returns the
    nodes that gave no record. Ctrl-C cancels the step (scancel by its job name) and keeps what already arrived."""
    groups: dict[str | None, list[str]] = {}
    for name in usable:
        groups.setdefault((gres or {}).get(name), []).append(name)
    silent: list[str] = []
    for request, group in groups.items():
        silent += _host_group(validators, group, tier=tier, only=only, partition=partition, command=command,
                              env=env, emit=emit, steps=steps, gres=request)
    return silent


def _host_group(validators: list[Validator], usable: list[str], *, tier: str, only: set[str] | None,
                partition: str | None, command: str | None, env: dict[str, str],
                emit: Callable[[list[Record]], None], steps: _Steps, gres: str | None) -> list[str]:
    error_checks = [v.name for v in validators]
    total = sum(v.timeout for v in validators) + 30
    host_only = {c for c in only if any(c in v.checks or c == v.name for v in validators)} if only else None
    job_name = new_tag().replace("accelstack-run-", "accelstack-validate-")  # this step's alone, for scancel
    argv = step_command(usable, tier=tier, only=host_only, partition=partition,
                        time_limit_min=max(1, math.ceil(total / 60)),
                        command=command or os.environ.get("ACCELSTACK_NODE_COMMAND", "accelstack"),
                        job_name=job_name, gres=gres)
    reported: dict[str, list[str]] = {}
    members = set(usable)

    def arrived(item: dict) -> None:
        if item.get("host") not in members:
            return
        record = Record.from_dict(item)
        record.run_id = ""
        reported.setdefault(record.host, []).append(record.check)
        emit([record])

    started = time.monotonic()
    with steps.running(job_name):
        code, stderr, other = _stream(argv, timeout=ALLOCATION_WAIT_S + total + 30, env=env, on_record=arrived)
    duration = round(time.monotonic() - started, 3)
    silent = [n for n in usable if n not in reported]
    tail = (stderr.strip().splitlines() + other)[-20:]
    # A node that answered, then was cut off (time limit, OOM, reboot): each check it never reported is error.
    emit(unreported_records(reported, validators, code=code,
                            evidence={"command": shlex.join(argv), "stderr_tail": tail, "slurm_step_s": duration}))
    if silent:
        emit([_node_error(name, check, f"the Slurm step gave no records from {name} (srun exited "
                                       f"{code})", {"command": shlex.join(argv), "stderr_tail": tail,
                                                    "slurm_step_s": duration},
                          f"scontrol show node {name}; run accelstack node-check on it by hand")
              for name in silent for check in error_checks])
    return silent


def unreported_records(reported: dict[str, list[str]], validators: list[Validator], *, code: int,
                       evidence: dict[str, Any]) -> list[Record]:
    """For each node that gave some records (``reported``: node -> its record checks), an ``error`` record for
    each selected validator that gave none there: the step ended before the node reported it, so it was not
    measured, as the SSH engine marks a check that did not finish. Pure."""
    missing = []
    for node, checks in reported.items():
        named = set(checks)
        heads = named | {c.split(".", 1)[0] for c in checks}  # what Validator.owns matches, for all at once
        missing += [(node, v) for v in validators if v.name not in named and not heads.intersection(v.checks)]
    return [_node_error(node, v.name, f"the Slurm step ended (srun exited {code}) before it reported {v.name} "
                        f"on {node}", {**evidence, "exit_status": code},
                        f"scontrol show node {node}; sacct for the step; re-run: inv validate --engine slurm "
                        f"--nodes {node} --only {v.checks[0]}")
            for node, v in missing]


def _stream(argv: list[str], *, timeout: float, env: dict[str, str],
            on_record: Callable[[dict], None]) -> tuple[int, str, list[str]]:
    """Run srun, handing each record of its labelled output to ``on_record`` as it is whole; returns srun's exit
    status (124 when it gave no end within ``timeout`` and was killed), its stderr and the other stdout lines.
    On KeyboardInterrupt srun is stopped (the step itself is the caller's to scancel) and nothing more is read.

    stdout is read in blocks (whatever the pipe holds, up to 64 KiB) and split into lines here: a thousand nodes
    print some ten thousand lines, and a queue hand-off per line cost more than parsing them."""
    full_env = {**os.environ, **env}
    # The nodes keep their own copy in their node file's runs_dir; this run's folder is the control side's.
    full_env.pop("ACCELSTACK_RUNS", None)
    try:
        proc = subprocess.Popen(argv, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ConfigError(f"{argv[0]} is not on PATH: --engine slurm needs Slurm's client commands",
                          hint="apt-get install slurm-client, or run where sinfo and srun work") from None
    blocks: queue.Queue[bytes | None] = queue.Queue()
    errors: list[bytes] = []
    assert proc.stdout is not None and proc.stderr is not None
    readers = [threading.Thread(target=_pump, args=(proc.stdout, blocks.put, True), daemon=True),
               threading.Thread(target=_pump, args=(proc.stderr, errors.append, False), daemon=True)]
    for reader in readers:
        reader.start()
    parser = LabelledOutput(wanted=is_record)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    partial = ""
    end = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            try:
                block = blocks.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            text = partial + (decoder.decode(block) if block is not None else decoder.decode(b"", final=True))
            lines = text.split("\n")
            partial = lines.pop() if block is not None else ""
            for line in lines:
                for _task, item in parser.feed(line.rstrip("\r")):
                    on_record(item)
            if block is None:
                break
    except BaseException:
        _stop(proc)
        raise
    if timed_out:
        _stop(proc)
    code = proc.wait()
    readers[1].join(5)
    stderr = b"".join(errors).decode("utf-8", "replace") + \
        (f"\naccelstack: {argv[0]} gave no answer within {timeout:.0f} s" if timed_out else "")
    return (124 if timed_out else code), stderr, parser.finish()


def _pump(stream: Any, put: Callable[[Any], None], mark_end: bool) -> None:
    """Hand on what ``stream`` gives as it comes (a block at a time, not waiting for a full buffer), then
    ``None`` at its end when ``mark_end``."""
    while True:
        block = stream.read1(65536)
        if not block:
            break
        put(block)
    if mark_end:
        put(None)


def _stop(proc: subprocess.Popen[Any]) -> None:
    """srun ends: SIGTERM (it signals the tasks and exits), SIGKILL after a few seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class _Steps:
    """The Slurm steps this run has under way, by job name: what the first Ctrl-C cancels (``cancel()``, called
    by :func:`accelstack.engines.ssh.run.interrupt_guard` in a thread of its own, as it cancels the SSH fleet)."""

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def running(self, name: str) -> Iterator[None]:
        with self._lock:
            self._names.add(name)
        try:
            yield
        except KeyboardInterrupt:
            self.cancel()
            raise
        finally:
            with self._lock:
                self._names.discard(name)

    def cancel(self) -> None:
        with self._lock:
            names = sorted(self._names)
        for name in names:
            with contextlib.suppress(ConfigError):  # no scancel: srun's own end and the time limit stop the step
                _run(["scancel", f"--name={name}"], timeout=15)


def gres_request(gres: str) -> str | None:
    """What a step asks for to see all of a node's devices: the device-like items of its ``Gres`` as Slurm reports
    them, socket bindings left out (``gpu:h100:8(S:0-1),shard:4`` -> ``gpu:h100:8``); ``None`` for a node with
    none (``(null)``). Pure."""
    items = [item.split("(")[0] for item in (gres or "").split(",")]
    wanted = [item for item in items if item.split(":")[0] in ("gpu", "npu") and parse_gres_count(item)]
    return ",".join(wanted) or None


def common_gres(gres: Sequence[str]) -> str | None:
    """One ``--gres`` for a step over nodes with these ``Gres``: theirs when they agree; else the fewest devices of
    the first kind, untyped (``gpu:4``), which every node can give; ``None`` when a node has none. Pure."""
    requests = [gres_request(g) for g in gres]
    if not requests or any(r is None for r in requests):
        return None
    if len(set(requests)) == 1:
        return requests[0]
    kind = str(requests[0]).split(":")[0]
    return f"{kind}:{min(parse_gres_count(str(r)) for r in requests)}"


def parse_gres_count(gres: str) -> int:
    """The device count of a node's ``Gres`` (``gpu:8``, ``gpu:h100:8(S:0-1)``, ``npu:8,shard:4``; ``(null)``:
    none), the first device-like one. Pure."""
    for item in (gres or "").split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] in ("gpu", "npu") and len(parts) >= 2 and parts[-1].isdigit():
            return int(parts[-1])
    return 0


def _multinode(members: list[str], contexts: dict[str, HostContext], overrides: dict[str, Any], *,
               partition: str | None, env: dict[str, str], command: str | None,
               deadline_s: float | None, info: dict[str, dict[str, str]]) -> list[Record]:
    from ...validate.thresholds import load_thresholds
    from ..ssh.cluster import DEFAULT_DEADLINE
    from .collective import SlurmCollective, multinode_slurm

    first: dict[str, Any] = dict(contexts[members[0]].vars) if members[0] in contexts else dict(overrides)
    nproc = first.get("cluster_nproc") or first.get("nproc_per_node")
    if not nproc:
        counts = [parse_gres_count(info.get(n, {}).get("Gres", "")) for n in members]
        # One rank per device where Slurm knows the devices; else the CPU stack's two, as over SSH.
        nproc = min(counts) if all(counts) else 2
    thresholds = load_thresholds().with_overrides(first.get("thresholds"), where="inventory var thresholds")
    run = SlurmCollective(ntasks_per_node=int(nproc), partition=partition,
                          node_addrs={n: info[n]["NodeAddr"] for n in members if info.get(n, {}).get("NodeAddr")},
                          accelerator=str(first["accelerator"]) if first.get("accelerator") else None,
                          thresholds=thresholds, env=env, command=command,
                          gres=common_gres([info.get(n, {}).get("Gres", "") for n in members]),
                          usable=lambda names: {n.name for n in select_nodes(partition, ",".join(names)) if n.usable})
    deadline = float(deadline_s or first.get("multinode_deadline_s") or DEFAULT_DEADLINE)
    started = time.monotonic()
    batch = multinode_slurm(members, run, deadline_s=deadline)
    for record in batch:
        record.duration_s = record.duration_s or round(time.monotonic() - started, 3)
    return batch


def parse_scontrol_node(text: str) -> dict[str, str]:
    """``scontrol -o show node`` output (one line, ``Key=Value`` pairs; ``Reason`` runs to the line's end and
    may hold spaces and ``=``) as a dict. Pure."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    info: dict[str, str] = {}
    head, sep, reason = line.partition(" Reason=")
    for item in head.split():
        key, eq, value = item.partition("=")
        if eq:
            info[key] = value
    if sep:
        info["Reason"] = reason.strip()
    return info


def _node_table() -> dict[str, dict[str, str]]:
    """``scontrol -o show node``: every node's fields (NodeAddr, Gres, Reason...) by name."""
    proc = _run(["scontrol", "-o", "show", "node"], timeout=15)
    table = {}
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        fields = parse_scontrol_node(line)
        if fields.get("NodeName"):
            table[fields["NodeName"]] = fields
    return table


class _Failed:
    returncode = 127
    stdout = ""

    def __init__(self, message: str) -> None:
        self.stderr = message


def _run(argv: list[str], *, timeout: float, strip_runs: bool = False,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str] | _Failed:
    env = {**os.environ, **(env or {})}
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




def slurm_validators(engine: str, tier: str, only: set[str] | None) -> list[Validator]:
    """What ``--engine slurm`` runs of the selection: the checks declared for it (``engines``): the host checks
    (node-check's tiers) and the multi-node step. Asking by name for a check Slurm does not run (clock, ports) is
    exit 3."""
    from ...flows.nodecheck.run import check_tier
    from ...validate.registry import load_registry, select

    if engine != "slurm":
        raise ConfigError(f"--engine {engine!r} is not one of ssh, slurm")
    check_tier(tier)  # what node-check runs on a node
    registry = load_registry()
    validators = select(registry, tier, only)
    ssh_only = sorted(c for v in validators if "slurm" not in v.engines for c in v.checks if only and c in only)
    if ssh_only:
        cluster = [c for v in registry if v.scope == "cluster" and "slurm" in v.engines for c in v.checks]
        raise ConfigError(f"--engine slurm runs the host checks and {', '.join(cluster)}; {', '.join(ssh_only)} "
                          "need --engine ssh")
    return [v for v in validators if "slurm" in v.engines]


# ----- the nightly fleet check through Slurm ----------------------------------------------------------------

def scontrol_drain(host: str, reason: str) -> Any:
    """A fleet-check drain through Slurm: ``scontrol update nodename=HOST state=drain reason=...``, no shell."""
    from ...flows.fleetcheck.run import DrainResult
    from ...flows.nodecheck.run import drain_node
    from ...results.records import utc_now

    outcome = drain_node(host, reason)
    status = 0 if outcome.ok else (127 if "not on PATH" in outcome.message else 1)
    return DrainResult(host, reason, shlex.join(outcome.command), status, outcome.message, ts=utc_now())
