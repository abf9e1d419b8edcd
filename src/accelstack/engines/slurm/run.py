"""The Slurm engine: the host checks on every node of a partition with one ``srun``, no SSH; the multi-node
allreduce as one Slurm step of its own (:mod:`.collective`); drains through ``scontrol`` (:mod:`.drain`). Every
Slurm command goes through the engine's client (:mod:`.client`), which tests replace.

Each node runs ``accelstack node-check --json`` (its own node file, rendered by provisioning) as one task of one
step; every line it prints is a record, which comes back here and goes into this run's ``results.jsonl`` with
``host`` = the Slurm node name. A node that is down, drained or not responding is not asked: it gets an
``error`` record per check, as an unreachable host does over SSH, and so does a node the step could not reach.
Which nodes, and what each is sent with an inventory: :mod:`.nodes`.
"""

from __future__ import annotations

import math
import os
import shlex
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import ConfigError
from ...inventory import Host, Inventory
from ...results.records import Record, RecordSink, interrupted_record
from ...validate.checks import Check
from ...validate.registry import load_registry, select
from ...validate.thresholds import load_thresholds
from ..base import DrainResult, Engine, RunRecords
from ..collective import DEFAULT_DEADLINE, new_tag
from ..node import check_tier
from .client import Client, SlurmClient
from .collective import SlurmCollective, multinode_slurm
from .drain import drain_node
from .nodes import Selection, node_table, node_vars_env, select_nodes
from .nodes import select as select_selection
from .parse import LabelledOutput, common_gres, gres_request, is_record, parse_gres_count

ALLOCATION_WAIT_S = 60


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


class SlurmEngine(Engine):
    """Checks through Slurm: the nodes of ``selection`` (sinfo's, with their inventory hosts' contexts when an
    inventory maps them), in ``partition``; ``command`` is how a node runs accelstack (default
    ``$ACCELSTACK_NODE_COMMAND``, else ``accelstack``); ``deadline_s`` is the multi-node step's; ``client`` runs
    Slurm's commands (default: on this machine)."""

    name = "slurm"
    stopped = "the Slurm step was cancelled"

    def __init__(self, selection: Selection, *, partition: str | None = None,
                 overrides: dict[str, Any] | None = None, command: str | None = None,
                 deadline_s: float | None = None, client: Client | None = None,
                 drain_template: str | None = None) -> None:
        super().__init__(drain_template=drain_template)
        self.client = client or SlurmClient()
        self.selection = selection
        self.partition = partition
        self.overrides = dict(overrides or {})
        self.command = command or os.environ.get("ACCELSTACK_NODE_COMMAND", "accelstack")
        self.deadline_s = deadline_s
        names = [n.name for n in selection.nodes]
        contexts = selection.contexts
        # Vars too many and too varied for one environment variable are bad input: exit 3 before any srun.
        self.env = node_vars_env({n: dict(contexts[n].vars) if n in contexts else dict(self.overrides)
                                  for n in names})
        self.usable = [n.name for n in selection.nodes if n.usable]
        self._table: dict[str, dict[str, str]] | None = None
        self._silent: list[str] = []  # usable nodes that gave no host record
        self._steps: set[str] = set()  # job names of the steps under way: what Ctrl-C cancels
        self._lock = threading.Lock()

    @classmethod
    def for_nodes(cls, partition: str | None, nodes: str | None, *, inventory: Inventory | None = None,
                  hosts: Sequence[Host] = (), overrides: dict[str, Any] | None = None, client: Client | None = None,
                  **options: Any) -> SlurmEngine:
        """The engine for the partition's nodes (or ``nodes``, a Slurm hostlist), each mapped to its host of the
        loaded ``inventory`` when one is given. A node the partition lacks, or that no host matches, is a
        ConfigError (exit 3) before any srun."""
        client = client or SlurmClient()
        selection = select_selection(client, partition, nodes, inventory, hosts, overrides)
        return cls(selection, partition=partition, overrides=overrides, client=client, **options)

    # -- the engine ------------------------------------------------------------------------------------------

    def node_table(self) -> dict[str, dict[str, str]]:
        """Every node's fields (address, devices, a drained node's reason): one scontrol call a run."""
        if self._table is None:
            self._table = node_table(self.client)
        return self._table

    def start(self, checks: Sequence[Check], run: RunRecords) -> None:
        """The nodes Slurm cannot run a step on now (down, drained, not responding) are not asked: an ``error``
        record per check each, with Slurm's own reason."""
        table = self.node_table()
        # Each node file names its own stack, so the record names come from the nodes; these are for errors only.
        names = [c.name for c in checks if c.scope == "host"] + \
            (["multinode"] if any(c.scope == "cluster" and "multinode" in c.checks for c in checks) else [])
        for node in self.selection.nodes:
            if not node.usable:
                info = table.get(node.name, {}).get("Reason", "")
                run.emit([_node_error(node.name, check, f"Slurm node {node.name} is {node.state}"
                                      + (f" ({info})" if info else "") + ": not validated",
                                      {"slurm_state": node.state, "slurm_reason": info},
                                      f"scontrol show node {node.name}; resume it (scontrol update "
                                      f"nodename={node.name} state=resume) once fixed") for check in names])

    def run_host_checks(self, checks: Sequence[Check], run: RunRecords, *, tier: str,
                        only: set[str] | None = None) -> None:
        """The host checks, one srun over the usable nodes (one per distinct device set, so each node is given all
        its devices: :func:`~.parse.gres_request`), each record handed on as it arrives. Ctrl-C cancels the step
        (scancel by its job name) and keeps what already arrived."""
        if not self.usable:
            return
        table = self.node_table()
        groups: dict[str | None, list[str]] = {}
        for name in self.usable:
            groups.setdefault(gres_request(table.get(name, {}).get("Gres", "")), []).append(name)
        for request, group in groups.items():
            self._silent += self._host_step(list(checks), group, run, tier=tier, only=only, gres=request)

    def _host_step(self, validators: list[Check], usable: list[str], run: RunRecords, *, tier: str,
                   only: set[str] | None, gres: str | None) -> list[str]:
        """One srun over ``usable``; returns the nodes that gave no record."""
        error_checks = [v.name for v in validators]
        total = sum(v.timeout for v in validators) + 30
        host_only = {c for c in only if any(c in v.checks or c == v.name for v in validators)} if only else None
        job_name = new_tag().replace("accelstack-run-", "accelstack-validate-")  # this step's alone, for scancel
        argv = step_command(usable, tier=tier, only=host_only, partition=self.partition,
                            time_limit_min=max(1, math.ceil(total / 60)), command=self.command,
                            job_name=job_name, gres=gres)
        reported: dict[str, list[str]] = {}
        members = set(usable)
        parser = LabelledOutput(wanted=is_record)

        def arrived(line: str) -> None:
            for _task, item in parser.feed(line):
                if item.get("host") not in members:
                    continue
                record = Record.from_dict(item)
                record.run_id = ""
                reported.setdefault(record.host, []).append(record.check)
                run.emit([record])

        started = time.monotonic()
        with self._lock:
            self._steps.add(job_name)
        try:
            done = self.client.stream(argv, timeout=ALLOCATION_WAIT_S + total + 30, env=self.env, on_line=arrived)
        except KeyboardInterrupt:
            self.client.cancel(job_name)
            raise
        finally:
            with self._lock:
                self._steps.discard(job_name)
        duration = round(time.monotonic() - started, 3)
        silent = [n for n in usable if n not in reported]
        tail = (done.stderr.strip().splitlines() + parser.finish())[-20:]
        evidence = {"command": shlex.join(argv), "stderr_tail": tail, "slurm_step_s": duration}
        # A node that answered, then was cut off (time limit, OOM, reboot): each check it never reported is error.
        run.emit(unreported_records(reported, validators, code=done.returncode, evidence=evidence))
        if silent:
            run.emit([_node_error(name, check, f"the Slurm step gave no records from {name} (srun exited "
                                               f"{done.returncode})", evidence,
                                  f"scontrol show node {name}; run accelstack node-check on it by hand")
                      for name in silent for check in error_checks])
        return silent

    def run_cluster_checks(self, checks: Sequence[Check], run: RunRecords, *, tier: str) -> None:
        """The multi-node allreduce as one Slurm step over the nodes that answered the host step (the only cluster
        check Slurm runs: :meth:`checks` refuses the others)."""
        if not any("multinode" in c.checks for c in checks) or not self.usable:
            return
        members = [n for n in self.usable if n not in self._silent]
        run.emit([_node_error(name, "multinode", f"not run: {name} gave no host records through Slurm",
                              {"slurm_step": "host checks"},
                              f"scontrol show node {name}; run accelstack node-check on it")
                  for name in self._silent])
        if members:
            run.emit(self.multinode(members))

    def multinode(self, members: list[str]) -> list[Record]:
        info = self.node_table()
        contexts = self.selection.contexts
        first: dict[str, Any] = dict(contexts[members[0]].vars) if members[0] in contexts else dict(self.overrides)
        nproc = first.get("cluster_nproc") or first.get("nproc_per_node")
        if not nproc:
            counts = [parse_gres_count(info.get(n, {}).get("Gres", "")) for n in members]
            # One rank per device where Slurm knows the devices; else the CPU stack's two, as over SSH.
            nproc = min(counts) if all(counts) else 2
        thresholds = load_thresholds().with_overrides(first.get("thresholds"), where="inventory var thresholds")
        step = SlurmCollective(
            ntasks_per_node=int(nproc), partition=self.partition,
            node_addrs={n: info[n]["NodeAddr"] for n in members if info.get(n, {}).get("NodeAddr")},
            accelerator=str(first["accelerator"]) if first.get("accelerator") else None,
            thresholds=thresholds, env=self.env, command=self.command,
            gres=common_gres([info.get(n, {}).get("Gres", "") for n in members]),
            usable=lambda names: {n.name for n in select_nodes(self.client, self.partition, ",".join(names))
                                  if n.usable},
            client=self.client)
        deadline = float(self.deadline_s or first.get("multinode_deadline_s") or DEFAULT_DEADLINE)
        started = time.monotonic()
        batch = multinode_slurm(members, step, deadline_s=deadline)
        for record in batch:
            record.duration_s = record.duration_s or round(time.monotonic() - started, 3)
        return batch

    def cancel(self) -> None:
        self.cancelled.set()
        with self._lock:
            names = sorted(self._steps)
        for name in names:
            self.client.cancel(name)

    def interrupted(self, run: RunRecords, checks: Sequence[Check]) -> list[Record]:
        # A node Slurm could not use already has its error records; the others get one per check left.
        return interrupted_records(run.records, self.usable, [c for c in checks if c.scope == "host"],
                                   multinode=any(c.scope == "cluster" and "multinode" in c.checks for c in checks))

    def own_drain(self, node: str, reason: str) -> DrainResult:
        """``scontrol update nodename=NODE state=drain reason=...``, no shell."""
        return drain_node(self.client, node, reason)


def slurm_checks(tier: str, only: set[str] | None) -> list[Check]:
    """What ``--engine slurm`` runs of the selection: the checks declared for it (``engines``): the host checks
    (node-check's tiers) and the multi-node step. Asking by name for a check Slurm does not run (clock, ports) is
    exit 3."""
    check_tier(tier)  # what node-check runs on a node
    registry = load_registry()
    validators = select(registry, tier, only)
    ssh_only = sorted(c for v in validators if "slurm" not in v.engines for c in v.checks if only and c in only)
    if ssh_only:
        cluster = [c for v in registry if v.scope == "cluster" and "slurm" in v.engines for c in v.checks]
        raise ConfigError(f"--engine slurm runs the host checks and {', '.join(cluster)}; {', '.join(ssh_only)} "
                          "need --engine ssh")
    return [v for v in validators if "slurm" in v.engines]


def validate_slurm(validators: list[Check], *, tier: str, only: set[str] | None = None,
                   partition: str | None = None, nodes: str | None = None,
                   reporter: RecordSink | None = None, command: str | None = None,
                   inventory: Inventory | None = None, hosts: Sequence[Host] = (),
                   overrides: dict[str, Any] | None = None, deadline_s: float | None = None,
                   selection: Selection | None = None, client: Client | None = None) -> list[Record]:
    """Validate the partition's nodes (or ``nodes``, a Slurm hostlist) through one srun, then the multi-node
    allreduce as one Slurm step when it is selected; records to ``reporter`` as they are parsed. With the loaded
    ``inventory`` (and its ``hosts``), each node is checked with its host's vars. ``selection``: what
    :func:`~.nodes.select` found for these same arguments a moment ago (else it is asked now). Bad input (a node the
    partition lacks, a node no inventory host matches) is a ConfigError before any srun; Slurm's own failures are
    error records, never exceptions."""
    client = client or SlurmClient()
    selection = selection or select_selection(client, partition, nodes, inventory, hosts, overrides)
    engine = SlurmEngine(selection, partition=partition, overrides=overrides, command=command,
                         deadline_s=deadline_s, client=client)
    return engine.validate(validators, tier=tier, only=only, sink=reporter)


def interrupted_records(records: list[Record], nodes: list[str], validators: list[Check], *,
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
    return [interrupted_record(node, check, cut_short=False,
                               rerun=f"inv validate --engine slurm --nodes {node} --only {check}")
            for node in nodes for check, name in checks if not done(node, check, name)]


def unreported_records(reported: dict[str, list[str]], validators: list[Check], *, code: int,
                       evidence: dict[str, Any]) -> list[Record]:
    """For each node that gave some records (``reported``: node -> its record checks), an ``error`` record for
    each selected validator that gave none there: the step ended before the node reported it, so it was not
    measured, as the SSH engine marks a check that did not finish. Pure."""
    missing = []
    for node, checks in reported.items():
        named = set(checks)
        heads = named | {c.split(".", 1)[0] for c in checks}  # what Check.owns matches, for all at once
        missing += [(node, v) for v in validators if v.name not in named and not heads.intersection(v.checks)]
    return [_node_error(node, v.name, f"the Slurm step ended (srun exited {code}) before it reported {v.name} "
                        f"on {node}", {**evidence, "exit_status": code},
                        f"scontrol show node {node}; sacct for the step; re-run: inv validate --engine slurm "
                        f"--nodes {node} --only {v.checks[0]}")
            for node, v in missing]
