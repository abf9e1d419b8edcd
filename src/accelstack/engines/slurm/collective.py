"""The multi-node allreduce as one Slurm step: ``srun --nodes N --ntasks-per-node K accelstack node-collective``.

Every task is one rank. On its node, ``accelstack node-collective`` (:mod:`.node`) reads the node file (and the vars
the control side sent), builds the same config the SSH engine gives the worker, and execs the stack's python on
``collectives.py``, which takes its rank and rendezvous from Slurm's environment (SLURM_PROCID, SLURM_NTASKS,
SLURM_LOCALID; MASTER_ADDR is the step's first node, MASTER_PORT comes from the job and step ids). No SSH.

Local rank 0 of each node prints the node's result line, as under torchrun; ``srun --label`` tags each line with its
task. The records are judged as over SSH (thresholds per accelerator and rank count, busbw per size, every rank's
sums checked by the worker): wrong sums or a busbw under the floor are ``fail``; a step that timed out, a node that
failed under Slurm, or a node that gave no result is ``error`` (nothing was measured there). On a fail the nodes
are bisected (:mod:`accelstack.validate.isolate`), each group run as a Slurm step of its own, the groups of a round at once.

Nothing outlives the run: the step has a time limit (``srun --time``), every rank its own deadline, and a step
still there at the control side's deadline is cancelled (``scancel --name``: the job name carries the run tag).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...errors import AccelstackError
from ...results.records import Record, Status
from ...validate.isolate import Blame, Group, Isolation, bisect, blame_records
from ...validate.judge import judge_isolation_run, judge_multinode_bandwidth, log_lines, tail
from ...validate.thresholds import Thresholds
from ..collective import NodeChecks, new_tag
from .client import Client, SlurmClient
from .parse import INFO_KEY, LABEL, labelled_documents

ALLOCATION_WAIT_S = 60
# torch imports and the accelstack command's own start on every rank: the step's time limit allows for them.
STARTUP_ALLOWANCE_S = 30
KILL_AFTER_S = 15
# What srun prints when a node cannot run its tasks (Slurm 22.05, seen by this project on the lab's real Slurm with
# a lab host's link down: tests/test_slurm_collective.py).
NODE_FAILURE = re.compile(r"(?:failed on node|Node failure on|on failed node|error on node) ([A-Za-z0-9._-]+?)[:\s,]")
TIME_LIMIT = re.compile(r"DUE TO TIME LIMIT|TimeLimit|time limit", re.IGNORECASE)


@dataclass
class NodeOutcome(NodeChecks):
    """What one node of a step printed: its result (local rank 0's ``checks``) and its node line."""

    name: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


@dataclass
class StepResult:
    nodes: list[str]
    outcomes: dict[str, NodeOutcome]
    argv: list[str]
    returncode: int
    stderr: str
    wall_s: float
    deadline_s: float
    timed_out: bool
    tag: str
    ntasks_per_node: int

    @property
    def passed(self) -> bool:
        return all(self.outcomes[n].passed for n in self.nodes)

    @property
    def busbw(self) -> float | None:
        values = [o.busbw for o in self.outcomes.values() if o.busbw is not None]
        return min(values) if values else None

    def failed_nodes(self) -> list[str]:
        return failed_nodes(self.stderr, self.nodes)

    def reason(self, name: str) -> str:
        outcome = self.outcomes[name]
        for check in outcome.checks:
            if check.get("status") != "pass":
                return str(check.get("summary"))
        return no_result_summary(self, name)


def parse_collective_output(text: str, nodes: Sequence[str]) -> tuple[dict[str, NodeOutcome], list[str]]:
    """The step's output as one outcome per node. Each node's local rank 0 prints its node line
    (``{"accelstack_node": {"name": ...}}``) and then its result (``{"checks": [...]}``): the task label ties
    the two together. A result whose task printed no node line is placed by the host the worker names. Pure."""
    outcomes = {name: NodeOutcome(name) for name in nodes}
    node_of_task: dict[str, str] = {}
    documents, other = labelled_documents(text)
    for task, item in documents:
        info = item.get(INFO_KEY)
        if isinstance(info, dict) and info.get("name") in outcomes:
            node_of_task[task] = str(info["name"])
            outcomes[node_of_task[task]].info = info
    for task, item in documents:
        checks = item.get("checks")
        if not isinstance(checks, list):
            continue
        name = node_of_task.get(task)
        if name is None:
            hosts = {str((c.get("evidence") or {}).get("host")) for c in checks if isinstance(c, dict)}
            name = next((h for h in hosts if h in outcomes), None)
        if name is not None and not outcomes[name].checks:
            outcomes[name].checks = [c for c in checks if isinstance(c, dict)]
    for line in other:
        match = LABEL.match(line)
        name = node_of_task.get(match.group(1)) if match else None
        if name is not None:
            outcomes[name].lines.append(line)
    return outcomes, other


def failed_nodes(stderr: str, nodes: Sequence[str]) -> list[str]:
    """The nodes srun says it could not run tasks on (``Task launch ... failed on node lab4``, ``Node failure on
    lab4``). Pure."""
    named = {m.group(1) for m in NODE_FAILURE.finditer(stderr + "\n")}
    return [n for n in nodes if n in named]


def step_time_limit(seconds: float) -> str:
    """``srun --time`` as minutes:seconds (Slurm's own form), rounded up. Pure."""
    total = max(60, math.ceil(seconds))
    return f"{total // 60}:{total % 60:02d}"


def collective_command(nodes: Sequence[str], *, ntasks_per_node: int, spec: dict[str, Any], partition: str | None,
                       time_limit_s: float, tag: str, command: str = "accelstack",
                       gres: str | None = None) -> list[str]:
    """One srun: K tasks (ranks) on each node, labelled lines, a time limit, a bounded wait for the allocation,
    and the whole step ended when one rank exits non-zero (its peers would only wait for it). The nodes whole
    (``--exclusive``: a user job beside it would pull busbw under the floor) with their devices (``gres``:
    under ``ConstrainDevices=yes`` a step that asks for none sees none)."""
    argv = ["srun", f"--nodes={len(nodes)}", f"--ntasks-per-node={ntasks_per_node}",
            f"--ntasks={len(nodes) * ntasks_per_node}", f"--nodelist={','.join(nodes)}",
            f"--immediate={ALLOCATION_WAIT_S}", f"--time={step_time_limit(time_limit_s)}", "--label", "--chdir=/",
            f"--job-name={tag}", "--kill-on-bad-exit=1", "--distribution=block", "--exclusive"]
    if gres:
        argv.append(f"--gres={gres}")
    if partition:
        argv.append(f"--partition={partition}")
    return argv + [*shlex.split(command), "node-collective", "--spec", json.dumps(spec, sort_keys=True)]


def run_step(client: Client, nodes: Sequence[str], *, ntasks_per_node: int, deadline_s: float,
             partition: str | None, node_addrs: dict[str, str], pair: bool = False, command: str | None = None,
             env: dict[str, str] | None = None, gres: str | None = None) -> StepResult:
    """One multi-node step over ``nodes`` through ``client``; a step still running at the deadline is cancelled."""
    tag = new_tag()
    spec = {"deadline_s": deadline_s, "run_tag": tag, "pair": pair,
            "node_addrs": {n: node_addrs[n] for n in nodes if n in node_addrs}}
    argv = collective_command(nodes, ntasks_per_node=ntasks_per_node, spec=spec, partition=partition,
                              time_limit_s=deadline_s + STARTUP_ALLOWANCE_S, tag=tag,
                              command=command or os.environ.get("ACCELSTACK_NODE_COMMAND", "accelstack"),
                              gres=gres)
    started = time.monotonic()
    try:
        done = client.run(argv, env=env, timeout=ALLOCATION_WAIT_S + deadline_s + STARTUP_ALLOWANCE_S + KILL_AFTER_S)
    except KeyboardInterrupt:
        client.cancel(tag)
        raise
    wall = round(time.monotonic() - started, 3)
    stderr = done.stderr + (f"\naccelstack: the step gave no answer by its deadline: cancelled ({tag})"
                            if done.timed_out else "")
    if not done.ok:
        client.cancel(tag)  # a step srun left behind (srun killed, or lost its controller) ends here
    outcomes, _other = parse_collective_output(done.stdout, nodes)
    timed_out = done.timed_out or bool(TIME_LIMIT.search(stderr)) or any(
        "reached its deadline" in line for o in outcomes.values() for line in o.lines) or \
        "reached its deadline" in stderr
    return StepResult(list(nodes), outcomes, argv, done.returncode, stderr, wall, deadline_s, timed_out, tag,
                      ntasks_per_node)


def no_result_summary(step: StepResult, name: str) -> str:
    if step.timed_out:
        return f"no result within the {step.deadline_s:.0f} s deadline (the Slurm step was cancelled)"
    if name in step.failed_nodes():
        line = next((ln.strip() for ln in step.stderr.splitlines() if name in ln), "")
        return f"Slurm could not run the step on {name}: {line}"
    first = next((ln.strip() for ln in step.stderr.splitlines() if ln.strip()), "no output")
    return f"no result from {name}: the step ended (srun exited {step.returncode}) before it reported: {first}"


def node_record(step: StepResult, name: str, *, accelerator: str | None, thresholds: Thresholds) -> Record:
    """One node's ``multinode`` record, judged as over SSH. Pure."""
    outcome = step.outcomes[name]
    accelerator = accelerator or outcome.info.get("accelerator")  # without an inventory: the node file's
    evidence: dict[str, Any] = {"command": shlex.join(step.argv), "run_tag": step.tag, "engine": "slurm",
                                "deadline_s": step.deadline_s, "wall_s": step.wall_s, "exit_status": step.returncode,
                                "ntasks_per_node": step.ntasks_per_node}
    if outcome.lines:
        evidence["stdout_tail"] = outcome.lines[-20:]
    if step.stderr.strip():
        evidence["stderr_tail"] = tail(step.stderr)
        evidence["log_lines"] = log_lines(step.stderr + "\n" + "\n".join(outcome.lines))
    duration = step.wall_s
    if outcome.passed:
        check = outcome.checks[0]
        record = Record(host=name, check="multinode", status="pass", summary=str(check.get("summary")),
                        metrics=dict(check.get("metrics") or {}), evidence={**evidence, **(check.get("evidence") or {})},
                        duration_s=duration)
        record.metrics["wall_s"] = step.wall_s
        return judge_multinode_bandwidth(record, {"accelerator": accelerator}, thresholds)
    if outcome.checks:
        check = outcome.checks[0]
        evidence.update(check.get("evidence") or {})
        # fail: the worker measured wrong sums; error: it could not run the collective on this node.
        status: Status = "fail" if check.get("status") == "fail" else "error"
        return Record(host=name, check="multinode", status=status, summary=str(check.get("summary")),
                      metrics={**dict(check.get("metrics") or {}), "wall_s": step.wall_s}, evidence=evidence,
                      remedy=check.get("remedy") or "see the log lines and the isolation evidence",
                      duration_s=duration)
    # Nothing came back from this node: timed out, its node failed under Slurm, or the step was ended because
    # another rank failed. Nothing was measured here: error, which never drains.
    return Record(host=name, check="multinode", status="error", summary=no_result_summary(step, name),
                  metrics={"wall_s": step.wall_s}, evidence=evidence,
                  remedy=f"scontrol show node {name}; the step's stderr is in the evidence", duration_s=duration)


def judge_step(step: StepResult, *, accelerator: str | None, thresholds: Thresholds, best: float) -> tuple[str, str]:
    """One isolation run (:func:`accelstack.validate.judge.judge_isolation_run`); without an inventory, the
    accelerator is the one the nodes' node files name."""
    failure = None if step.passed else next((step.reason(n) for n in step.nodes if not step.outcomes[n].passed),
                                            "failed")
    accelerator = accelerator or next((o.info.get("accelerator") for o in step.outcomes.values() if o.info), None)
    return judge_isolation_run(step.busbw, failure=failure, accelerator=accelerator,
                               ranks=len(step.nodes) * step.ntasks_per_node, thresholds=thresholds, best=best)


Step = Callable[..., StepResult]


class IsolationStopped(Exception):
    """An isolation step that Slurm did not run on its nodes (no allocation: nodes busy with another job, no
    controller; a node it could not launch on). It measured nothing, so it is no evidence against its nodes:
    the isolation stops rather than blame them."""


def not_launched(step: StepResult) -> str | None:
    """Why Slurm did not run ``step`` on its nodes, or ``None`` when it ran (a step that ran past its deadline
    ran: a hang is a finding). Pure."""
    if step.timed_out:
        return None
    lost = step.failed_nodes()
    if lost:
        return no_result_summary(step, lost[0])
    if step.returncode != 0 and not any(o.info or o.checks for o in step.outcomes.values()):
        first = next((ln.strip() for ln in step.stderr.splitlines() if ln.strip()), "no output")
        return f"srun exited {step.returncode} before any node started: {first}"
    return None


@dataclass
class SlurmCollective:
    """How this run's steps are launched: the ranks per node, the partition, each node's address (for the
    rendezvous), the accelerator and thresholds that judge the result, and the environment srun passes on."""

    ntasks_per_node: int
    partition: str | None
    node_addrs: dict[str, str]
    accelerator: str | None
    thresholds: Thresholds
    env: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    usable: Callable[[Sequence[str]], set[str]] | None = None  # which of these nodes Slurm can still run on
    gres: str | None = None  # srun --gres: the devices every node gives the step (none: Slurm manages none)
    client: Client = field(default_factory=SlurmClient)  # what runs srun and scancel

    def step(self, nodes: Sequence[str], *, deadline_s: float, pair: bool = False) -> StepResult:
        return run_step(self.client, nodes, ntasks_per_node=self.ntasks_per_node, deadline_s=deadline_s,
                        partition=self.partition, node_addrs=self.node_addrs, pair=pair, command=self.command,
                        env=self.env, gres=self.gres)


def bisect_steps(nodes: Sequence[str], run: SlurmCollective, *, deadline_s: float,
                 fleet_passed: bool | None) -> tuple[Isolation, dict[str, Any]]:
    """Bisection with a Slurm step per group; a round's groups (no node in two) run at once, as separate jobs."""
    details: dict[frozenset[str], dict[str, Any]] = {}
    bests: list[tuple[int, float]] = []
    started = time.monotonic()

    def run_round(groups: Sequence[Group]) -> list[bool]:
        with ThreadPoolExecutor(max_workers=max(1, len(groups)), thread_name_prefix="accelstack-slurm-isolate") as pool:
            steps = list(pool.map(lambda g: run.step(list(g), deadline_s=deadline_s, pair=True), groups))
        for group, step in zip(groups, steps, strict=True):
            why = not_launched(step)
            if why is not None:
                raise IsolationStopped(f"the step over {','.join(group)} did not run: {why}")
        bests.extend((len(g), s.busbw or 0.0) for g, s in zip(groups, steps, strict=True) if s.passed)
        outcomes = []
        for group, step in zip(groups, steps, strict=True):
            best = max([0.0] + [value for size, value in bests if size >= len(group)])
            status, why = judge_step(step, accelerator=run.accelerator, thresholds=run.thresholds, best=best)
            details[frozenset(group)] = {"detail": why, "busbw_gbps": step.busbw, "wall_s": step.wall_s,
                                         "run_tag": step.tag}
            outcomes.append(status == "pass")
        return outcomes

    isolation = bisect(list(nodes), run_round=run_round, fleet_passed=fleet_passed)
    runs = [{**row, **details.get(frozenset(row["hosts"]), {})} for row in isolation.evidence()]
    return isolation, {"runs": runs, "extra_runs": isolation.extra_runs, "rounds": isolation.rounds,
                       "wall_s": round(time.monotonic() - started, 3), "engine": "slurm"}


def multinode_slurm(nodes: Sequence[str], run: SlurmCollective, *, deadline_s: float) -> list[Record]:
    """The nodes in one Slurm step; on a fail (wrong sums, busbw under the floor) or a node that gave nothing,
    isolation by bisection over the nodes Slurm can still run on. A node lost under Slurm is ``error``."""
    if len(nodes) < 2:
        return [Record(host=n, check="multinode", status="skip",
                       summary="one node selected: nothing to run across nodes") for n in nodes]
    step = run.step(nodes, deadline_s=deadline_s)
    records = {n: node_record(step, n, accelerator=run.accelerator, thresholds=run.thresholds) for n in nodes}
    statuses = {r.status for r in records.values()}
    if statuses <= {"pass", "warn"}:
        return list(records.values())
    lost = set(step.failed_nodes())
    if run.usable is not None:
        try:
            lost |= set(nodes) - run.usable(nodes)
        except AccelstackError as err:  # sinfo failing now (no controller) is no bad input: the records stand
            for record in records.values():
                record.summary = (f"{record.summary}; not isolated: Slurm could not say which nodes it can still "
                                  f"run on ({' '.join(str(err).split())})")
            return list(records.values())
    live = [n for n in nodes if n not in lost]
    if len(live) < 2 or (statuses == {"error"} and not lost):
        return list(records.values())  # nobody left to run with, or nothing measured anywhere: no isolation
    not_isolated = "every smaller group passed or every run failed"
    try:
        isolation, evidence = bisect_steps(live, run, deadline_s=min(deadline_s, 60.0),
                                           fleet_passed=None if lost else False)
    except IsolationStopped as stopped:
        # Nothing is blamed on a step Slurm never ran: nobody is named, and the fleet step's failure stands as
        # when nothing is isolated.
        isolation, evidence, not_isolated = Isolation(), {"engine": "slurm", "stopped": str(stopped)}, str(stopped)
    words = Blame(
        lost_summary=lambda name: f"lost under Slurm: {name} could not run the step",
        lost_remedy=lambda name: (f"scontrol show node {name} (down, not responding?); bring it back, then inv "
                                  f"validate --engine slurm --nodes {name},<a known-good node> --only multinode"),
        again=lambda name: f"inv validate --engine slurm --nodes {name},<a known-good node> --only multinode",
        again_all="re-run inv validate --engine slurm --only multinode",
        shared_hint="check the switch, the socket interface settings and the first node's ports")
    return blame_records(records, isolation, evidence, lost, not_isolated, words)


# ----- the node side: `accelstack node-collective` ----------------------------------------------------------


