"""The SSH engine's cluster checks: clock skew, port reachability, and the multi-node allreduce through torchrun
started over SSH on every host, with bisection (:mod:`accelstack.validate.isolate`) that names the node or link at
fault. Each is a check's declared runner, called ``runner(check, run)`` with a :class:`ClusterRun`.

Nothing started here may outlive the run. Every remote command runs under ``timeout -k`` (its process group is
killed at the deadline even if this machine loses the host), every rank has its own deadline and dies with its
launcher (PR_SET_PDEATHSIG), and every process carries a unique run tag in its argv, so ``pkill -f <tag>`` on each
reachable host removes whatever is left the moment one node fails.
"""

from __future__ import annotations

import json
import random
import shlex
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import AccelstackError
from ...results.records import Record, Status
from ...stacks.context import HostContext
from ...transport.connection import CommandResult, Transport
from ...validate.checks import Check
from ...validate.isolate import Blame, Group, Isolation, bisect, blame_records
from ...validate.judge import (
    Judge,
    judge_isolation_run,
    judge_multinode_bandwidth,
    log_lines,
    parse_document,
    tail,
)
from ...validate.thresholds import Thresholds
from ...vendors import get_vendor
from ..collective import DEFAULT_DEADLINE, NodeChecks, cluster_sweep, new_tag
from .remote import ENV_FILE, SYSTEM_PYTHON, ensure_uploaded

DEFAULT_RENDEZVOUS_PORT = 29500
KILL_GRACE = 3.0

Connect = Callable[[HostContext], Transport]


@dataclass
class Member:
    ctx: HostContext
    transport: Transport
    remote: str
    config: dict[str, Any]

    @property
    def name(self) -> str:
        return self.ctx.host.name


@dataclass
class NodeResult(NodeChecks):
    member: Member
    node_rank: int
    command: str
    result: CommandResult | None = None
    error: AccelstackError | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    duration_s: float = 0.0

    def reason(self) -> str:
        if self.error is not None:
            return self.error.message
        for check in self.checks:
            if check.get("status") != "pass":
                return str(check.get("summary"))
        if self.result is not None and not self.checks:
            lines = tail(self.result.stderr, 1) or tail(self.result.stdout, 1)
            return f"exit {self.result.exit_status}" + (f": {lines[0]}" if lines else "")
        return "no result"


@dataclass
class RunResult:
    nodes: list[NodeResult]
    tag: str
    wall_s: float
    deadline_s: float

    @property
    def passed(self) -> bool:
        return all(n.passed for n in self.nodes)

    @property
    def busbw(self) -> float | None:
        values = [n.busbw for n in self.nodes if n.busbw is not None]
        return min(values) if values else None


def kill_command(tag: str) -> str:
    """The command that ends every process of this run on a host. The tag is ours alone (random), so this matches
    only processes this run started. Its first letter goes in brackets: the pattern still matches the tag in the
    ranks' command lines, and no longer the shell that runs pkill, whose command line holds the pattern as written.
    Matching it killed that shell, the transport returned, and pkill outlived the sweep on the host."""
    pattern = f"[{tag[0]}]{tag[1:]}" if tag[:1].isalnum() and tag.replace("-", "").isalnum() else tag
    return f"pkill -KILL -f {shlex.quote(pattern)} >/dev/null 2>&1; true"


def torchrun_command(member: Member, *, nnodes: int, node_rank: int, master: str, port: int, tag: str,
                     deadline_s: float, pair: bool = False) -> str:
    config = dict(member.config, mode="cluster", run_tag=tag, deadline_s=max(5.0, deadline_s - 3))
    config.update(cluster_sweep(member.config, pair))
    config["collective_timeout_s"] = max(5.0, min(float(config.get("collective_timeout_s") or 600),
                                                  deadline_s - 8))
    nproc = int(member.config.get("cluster_nproc") or member.config.get("nproc") or 1)
    exports = {f"{k}": v for k, v in (member.config.get("socket_ifnames") or {}).items()}
    exports["ACCELSTACK_RUN_TAG"] = tag
    exports["OMP_NUM_THREADS"] = "1"
    env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in sorted(exports.items()))
    script = f"{member.remote}/collectives.py"
    argv = [member.ctx.python, "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--node-rank={node_rank}",
            f"--nproc-per-node={nproc}", f"--master-addr={master}", f"--master-port={port}", "--max-restarts=0",
            # Without it node 0 advertises its hostname to the workers' store, which other nodes may not resolve.
            f"--local-addr={member.ctx.host.address}",
            "--monitor-interval=0.5", script, json.dumps(config, sort_keys=True)]
    return (f"[ -r {ENV_FILE} ] && . {ENV_FILE} >/dev/null 2>&1; cd /var/tmp && {env} "
            f"timeout -k 3 {max(1, int(deadline_s))} " + " ".join(shlex.quote(a) for a in argv))


def _parse_node(node: NodeResult) -> None:
    if node.result is None:
        return
    try:
        node.checks = parse_document(node.result.stdout)
    except ValueError:
        node.checks = []


def run_collective(members: Sequence[Member], *, deadline_s: float, port: int | None = None,
                   pair: bool = False) -> RunResult:
    """One torchrun per host, rendezvous on the first; on the first node failure the others are killed after
    a short grace, and at the end every reachable host is swept clean of the run's tag."""
    tag = new_tag()
    port = port or random.randint(20000, 29999)
    master = members[0].ctx.host.address
    nodes = [NodeResult(m, i, torchrun_command(m, nnodes=len(members), node_rank=i, master=master, port=port,
                                               tag=tag, deadline_s=deadline_s, pair=pair))
             for i, m in enumerate(members)]
    started = time.monotonic()

    def work(node: NodeResult) -> NodeResult:
        begun = time.monotonic()
        try:
            node.result = node.member.transport.run(node.command, timeout=deadline_s + 8)
        except AccelstackError as err:
            node.error = err
        node.duration_s = round(time.monotonic() - begun, 3)
        _parse_node(node)
        return node

    killed_at: float | None = None
    with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="accelstack-torchrun") as pool:
        futures = [pool.submit(work, node) for node in nodes]
        while not all(f.done() for f in futures):
            time.sleep(0.2)
            failed = [n for n, f in zip(nodes, futures, strict=False) if f.done() and not n.passed]
            if failed and killed_at is None:
                killed_at = time.monotonic()
            if killed_at is not None and time.monotonic() - killed_at > KILL_GRACE:
                sweep_tag(members, tag, skip={n.member.name for n, f in zip(nodes, futures, strict=False) if f.done()})
                killed_at = float("inf")
    sweep_tag(members, tag)
    return RunResult(nodes, tag, round(time.monotonic() - started, 3), deadline_s)


def sweep_tag(members: Sequence[Member], tag: str, skip: set[str] | None = None) -> None:
    todo = [m for m in members if m.name not in (skip or set())]

    def kill(member: Member) -> None:
        try:
            member.transport.run(kill_command(tag), timeout=5)
        except AccelstackError:
            pass  # unreachable: its own `timeout` and the ranks' deadlines end the processes there

    if todo:
        with ThreadPoolExecutor(max_workers=len(todo)) as pool:
            list(pool.map(kill, todo))


def reachable(members: Sequence[Member]) -> dict[str, bool]:
    def alive(member: Member) -> bool:
        try:
            return member.transport.run("true", timeout=5).ok
        except AccelstackError:
            return False

    with ThreadPoolExecutor(max_workers=max(1, len(members))) as pool:
        return dict(zip([m.name for m in members], pool.map(alive, members), strict=False))


def ring_rounds(count: int) -> list[list[tuple[int, int]]]:
    """The ring's edges (i, i+1) in rounds where no host is in two pairs at once. Pure."""
    if count < 2:
        return []
    edges = [(i, (i + 1) % count) for i in range(count)] if count > 2 else [(0, 1)]
    rounds: list[list[tuple[int, int]]] = []
    for edge in edges:
        for group in rounds:
            if not {edge[0], edge[1]} & {h for pair in group for h in pair}:
                group.append(edge)
                break
        else:
            rounds.append([edge])
    return rounds


def isolate(names: Sequence[str], bad_pairs: set[tuple[str, str]], pairs: Sequence[tuple[str, str]],
            unreachable: set[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Hosts whose every pair is bad (while some pair is good) are at fault; a bad pair between two otherwise
    good hosts is a link at fault. Every pair bad names nobody: the fault is shared (switch, config). Pure."""
    nodes = sorted(unreachable)
    if not pairs or len(bad_pairs) == len(pairs):
        return nodes, []
    if pairs:
        for name in names:
            mine = [p for p in pairs if name in p]
            if mine and all(p in bad_pairs for p in mine) and name not in nodes:
                nodes.append(name)
    links = [p for p in sorted(bad_pairs) if p[0] not in nodes and p[1] not in nodes]
    return nodes, links


@dataclass
class PairResult:
    hosts: tuple[str, str]
    run: RunResult
    status: str = "pass"
    why: str = ""


def pairwise(members: Sequence[Member], thresholds: Thresholds, *, deadline_s: float) -> list[PairResult]:
    results: list[PairResult] = []
    for group in ring_rounds(len(members)):
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            runs = list(pool.map(lambda e: run_collective([members[e[0]], members[e[1]]], deadline_s=deadline_s,
                                                          pair=True), group))
        for edge, run in zip(group, runs, strict=False):
            results.append(PairResult((members[edge[0]].name, members[edge[1]].name), run))
    best = max((p.run.busbw or 0.0 for p in results if p.run.passed), default=0.0)
    for pair in results:
        pair.status, pair.why = judge_group(pair.run, members[:2], thresholds, best, than="pair")
    return results


def judge_group(run: RunResult, members: Sequence[Member], thresholds: Thresholds, best: float, *,
                than: str = "run") -> tuple[str, str]:
    """One isolation run of ``members`` (:func:`accelstack.validate.judge.judge_isolation_run`)."""
    nproc = int(members[0].config.get("cluster_nproc") or members[0].config.get("nproc") or 1)
    failure = None if run.passed else next((n.reason() for n in run.nodes if not n.passed), "failed")
    return judge_isolation_run(run.busbw, failure=failure, accelerator=members[0].config.get("accelerator"),
                               ranks=len(members) * nproc, thresholds=thresholds, best=best, than=than)


def bisect_members(members: Sequence[Member], thresholds: Thresholds, *, deadline_s: float,
                   fleet_passed: bool | None = False) -> tuple[Isolation, dict[str, Any]]:
    """Bisection over the live members: each round's disjoint groups run at once, on ports of their own. A run is
    held to the best run so far of as many nodes or more: one-sided bisection mixes pairs with runs of most of the
    fleet (the rest), whose busbw on shared hosts need not match a pair's."""
    by_name = {m.name: m for m in members}
    details: dict[frozenset[str], dict[str, Any]] = {}
    bests: list[tuple[int, float]] = []  # (nodes, busbw) of every run that completed
    started = time.monotonic()

    def run_round(groups: Sequence[Group]) -> list[bool]:
        base = random.randint(20000, 29000)
        with ThreadPoolExecutor(max_workers=max(1, len(groups)), thread_name_prefix="accelstack-isolate") as pool:
            runs = list(pool.map(lambda item: run_collective([by_name[n] for n in item[1]], deadline_s=deadline_s,
                                                             port=base + item[0], pair=True), enumerate(groups)))
        bests.extend((len(g), r.busbw or 0.0) for g, r in zip(groups, runs, strict=True) if r.passed)
        outcomes = []
        for group, run in zip(groups, runs, strict=True):
            best = max([0.0] + [value for size, value in bests if size >= len(group)])
            status, why = judge_group(run, [by_name[n] for n in group], thresholds, best)
            details[frozenset(group)] = {"detail": why, "busbw_gbps": run.busbw, "wall_s": run.wall_s}
            outcomes.append(status == "pass")
        return outcomes

    isolation = bisect([m.name for m in members], run_round=run_round, fleet_passed=fleet_passed)
    runs = [{**row, **details.get(frozenset(row["hosts"]), {})} for row in isolation.evidence()]
    evidence = {"runs": runs, "extra_runs": isolation.extra_runs, "rounds": isolation.rounds,
                "wall_s": round(time.monotonic() - started, 3)}
    return isolation, evidence


def multinode(members: Sequence[Member], thresholds: Thresholds, *, deadline_s: float = DEFAULT_DEADLINE,
              port: int | None = None, judge: Judge = judge_multinode_bandwidth) -> list[Record]:
    """The whole fleet in one torchrun job; on failure or low busbw, isolation (reachability, then bisection).
    ``judge``: the check's declared judge of each node's passing record."""
    if len(members) < 2:
        return [Record(host=m.name, check="multinode", status="skip",
                       summary="one host selected: nothing to run across nodes") for m in members]
    run = run_collective(members, deadline_s=deadline_s, port=port)
    records: dict[str, Record] = {}
    for node in run.nodes:
        records[node.member.name] = node_record(node, run, thresholds, judge)
    bad = [r for r in records.values() if r.status == "fail"]
    if not bad and run.passed:
        return list(records.values())
    if records and all(r.status == "error" for r in records.values()):
        return list(records.values())  # no node could run the collective: nothing measured to isolate
    alive = reachable(members)
    unreachable = {n for n, ok in alive.items() if not ok}
    live = [m for m in members if alive[m.name]]
    # The live nodes ran together only when none was lost; otherwise the first round runs them without the lost.
    isolation, isolation_evidence = bisect_members(live, thresholds, deadline_s=min(deadline_s, 60.0),
                                                   fleet_passed=None if unreachable else False)
    words = Blame(
        lost_summary=lambda name: f"unreachable after the run: {name} could not be checked",
        lost_remedy=lambda name: (f"reach {name} again (ssh, its link: ip link, cabling, switch port), then inv "
                                  f"validate --limit {name} --only multinode with a known-good peer"),
        again=lambda name: f"inv validate --limit {name} --only multinode with a known-good peer",
        again_all="re-run inv validate --only multinode",
        shared_hint="check the switch, the socket interface settings and the rendezvous host's ports on every node")
    return blame_records(records, isolation, isolation_evidence, unreachable, not_isolated(isolation, live), words)


def not_isolated(isolation: Isolation, live: Sequence[Member]) -> str:
    if len(live) == 2 and not isolation.good:
        return "two nodes, and no third known-good node to tell the node from the link"
    if isolation.extra_runs and all(t.passed for t in isolation.trials if t.round > 0):
        return "every smaller group passed: the fault shows only at full scale (or is intermittent)"
    if not isolation.good:
        return "every run failed, whatever the nodes"
    suspects = sorted({n for g in isolation.unresolved for n in g})
    return "suspects " + ", ".join(suspects) if suspects else "no node or link explains the failure"


def node_record(node: NodeResult, run: RunResult, thresholds: Thresholds,
                judge: Judge = judge_multinode_bandwidth) -> Record:
    name = node.member.name
    evidence: dict[str, Any] = {"command": node.command, "run_tag": run.tag, "node_rank": node.node_rank,
                                "deadline_s": run.deadline_s, "wall_s": run.wall_s}
    if node.result is not None:
        evidence["stdout_tail"] = tail(node.result.stdout)
        evidence["stderr_tail"] = tail(node.result.stderr)
        evidence["log_lines"] = log_lines(node.result.stderr + "\n" + node.result.stdout)
        evidence["exit_status"] = node.result.exit_status
    if node.passed:
        check = node.checks[0]
        record = Record(host=name, check="multinode", status="pass", summary=str(check.get("summary")),
                        metrics=dict(check.get("metrics") or {}), evidence={**evidence, **(check.get("evidence") or {})},
                        duration_s=node.duration_s)
        record.metrics["wall_s"] = run.wall_s
        return judge(record, node.member.config, thresholds)
    timed_out = node.error is not None and isinstance(node.error, TimeoutError) or (
        node.result is not None and node.result.exit_status in (124, 137))
    summary = (f"no result within the {run.deadline_s:.0f} s deadline" if timed_out else node.reason())
    if node.checks:
        evidence.update(node.checks[0].get("evidence") or {})
    # The worker could not run the collective (its own `error`): nothing was measured on this node.
    status: Status = "error" if node.checks and node.checks[0].get("status") == "error" else "fail"
    return Record(host=name, check="multinode", status=status, summary=summary,
                  metrics={"wall_s": run.wall_s, "node_rank": node.node_rank}, evidence=evidence,
                  remedy="see the isolation evidence and the log lines", duration_s=node.duration_s)


# ----- clock -----

def clock_records(members: Sequence[Member], thresholds: Thresholds) -> list[Record]:
    """Each host's clock against the fleet's median, measured over the open connections (error: rtt/2)."""
    def sample(member: Member) -> tuple[str, float | None, float, str]:
        try:
            before = time.time()
            result = member.transport.run("date +%s.%N", timeout=10)
            after = time.time()
            remote = float(result.stdout.strip())
            return member.name, remote - (before + after) / 2, (after - before) / 2, ""
        except (AccelstackError, ValueError) as err:
            return member.name, None, 0.0, str(err)

    with ThreadPoolExecutor(max_workers=max(1, len(members))) as pool:
        samples = list(pool.map(sample, members))
    return judge_clock(samples, thresholds)


def judge_clock(samples: Sequence[tuple[str, float | None, float, str]], thresholds: Thresholds) -> list[Record]:
    """``(host, offset from this machine or None, error bound, why not read)`` per host -> its clock record."""
    offsets = [o for _n, o, _e, _w in samples if o is not None]
    median = statistics.median(offsets) if offsets else 0.0
    records = []
    for name, offset, error, why in samples:
        if offset is None:
            records.append(Record(host=name, check="clock", status="error", summary=f"could not read the clock: {why}",
                                  remedy=f"run `date +%s.%N` on {name}: it must print seconds since the epoch"))
            continue
        skew = offset - median
        metrics = {"skew_s": round(skew, 4), "offset_from_control_s": round(offset, 4), "error_s": round(error, 4)}
        size = abs(skew) - error
        if size > thresholds.clock_fail_s:
            status, remedy = "fail", "sync the clock (chrony/ntpd) and keep it synced: logs across ranks must line up"
        elif size > thresholds.clock_warn_s:
            status, remedy = "warn", "check chrony/ntpd on this host"
        else:
            status, remedy = "pass", None
        records.append(Record(host=name, check="clock", status=status,  # type: ignore[arg-type]
                              summary=f"{skew:+.3f} s from the fleet median (±{error:.3f} s)", metrics=metrics,
                              remedy=remedy))
    return records


# ----- ports -----

def port_list(config: dict[str, Any], rendezvous_port: int) -> list[int]:
    # The vendor's collective library's own ports too (HCCL_IF_BASE_PORT's 32 on Ascend).
    return [rendezvous_port, *get_vendor(config.get("vendor") or "cpu").collective_ports(config)]


def ports_records(members: Sequence[Member], *, rendezvous_port: int, listen_s: float = 30.0) -> list[Record]:
    """Bind the ports on every host, then probe the rendezvous host and each host's ring neighbour."""
    if len(members) == 1:
        return [Record(host=members[0].name, check="ports", status="skip",
                       summary="one host selected: no other node to reach its ports from")]
    tag = new_tag()
    listen: dict[str, dict[str, Any]] = {}

    def start(member: Member) -> tuple[str, dict[str, Any] | str]:
        config = {"role": "listen", "ports": port_list(member.config, rendezvous_port), "listen_s": listen_s,
                  "run_tag": tag}
        out = f"/var/tmp/accelstack/{tag}-{member.name}.out"
        script = f"{member.remote}/ports.py"
        command = (f"nohup timeout -k 2 {int(listen_s)} {SYSTEM_PYTHON} {shlex.quote(script)} "
                   f"{shlex.quote(json.dumps(config))} > {shlex.quote(out)} 2>&1 < /dev/null & "
                   f"for i in 1 2 3 4 5 6 7 8 9 10; do [ -s {shlex.quote(out)} ] && break; sleep 0.2; done; "
                   f"cat {shlex.quote(out)}; rm -f {shlex.quote(out)}")
        try:
            result = member.transport.run(command, timeout=15)
            line = result.stdout.strip().splitlines()[0] if result.stdout.strip() else "{}"
            return member.name, json.loads(line)
        except (AccelstackError, ValueError, IndexError) as err:
            return member.name, str(err)

    with ThreadPoolExecutor(max_workers=max(1, len(members))) as pool:
        for name, value in pool.map(start, members):
            listen[name] = value if isinstance(value, dict) else {"error": value}

    def probe(index: int) -> Record:
        member = members[index]
        peers = []
        first = members[0]
        if index != 0:
            peers.append({"host": first.name, "address": first.ctx.host.address, "ports": [rendezvous_port]})
        neighbour = members[(index + 1) % len(members)]
        if neighbour is not member:
            ports = port_list(neighbour.config, rendezvous_port)
            peers.append({"host": neighbour.name, "address": neighbour.ctx.host.address,
                          "ports": ports if neighbour is not first or index == 0 else ports[1:]})
        taken = listen.get(member.name, {}).get("taken") or {}
        config = {"role": "probe", "peers": [p for p in peers if p["ports"]], "connect_timeout_s": 3}
        command = f"{SYSTEM_PYTHON} {shlex.quote(member.remote + '/ports.py')} {shlex.quote(json.dumps(config))}"
        try:
            result = member.transport.run(command, timeout=30 + 3 * sum(len(p["ports"]) for p in peers))
            item = parse_document(result.stdout)[0]
        except (AccelstackError, ValueError, IndexError) as err:
            return Record(host=member.name, check="ports", status="error", summary=f"port probe did not run: {err}")
        record = Record(host=member.name, check="ports", status=item.get("status", "error"),
                        summary=str(item.get("summary")), metrics=dict(item.get("metrics") or {}),
                        evidence={**(item.get("evidence") or {}), "command": command,
                                  "listener": listen.get(member.name)}, remedy=item.get("remedy"))
        if taken:
            record.status = "fail"
            record.summary = f"port(s) {', '.join(map(str, taken))} already in use here; " + record.summary
            record.remedy = "find and stop the stale process holding them (ss -ltnp), or choose other ports"
        return record

    with ThreadPoolExecutor(max_workers=max(1, len(members))) as pool:
        records = list(pool.map(probe, range(len(members))))
    sweep_tag(members, tag)
    return records


def prepare_members(contexts: Sequence[HostContext], connect: Connect, folder: Path,
                    configs: dict[str, dict[str, Any]]) -> tuple[list[Member], list[Record]]:
    """Connections and uploaded validators for the cluster phase; hosts that cannot take part get an error."""
    members: list[Member] = []
    errors: list[Record] = []
    for ctx in contexts:
        try:
            transport = connect(ctx)
            remote, _ = ensure_uploaded(transport, folder)
            members.append(Member(ctx, transport, remote, configs[ctx.host.name]))
        except AccelstackError as err:
            errors.append(Record(host=ctx.host.name, check="cluster", status="error",
                                 summary=f"cannot take part in the cluster checks: {err.message}",
                                 remedy=err.hint))
    return members, errors


# ----- the cluster phase's runners (declared as each cluster check's ``runner``) -----

@dataclass
class ClusterRun:
    """What a cluster check's runner gets: the hosts that joined the cluster phase (connected, validators
    uploaded), the run's thresholds (``base``) and each host's (its inventory's overrides), the first joined host's
    inventory vars (the rendezvous host's) and the run's ``--deadline`` (None: the inventory's or the default)."""

    members: list[Member]
    thresholds: Thresholds
    per_host: dict[str, Thresholds]
    vars: dict[str, Any]
    deadline_s: float | None = None

    @property
    def rendezvous_port(self) -> int:
        return int(self.vars.get("rendezvous_port") or DEFAULT_RENDEZVOUS_PORT)


# A cluster check's runner: ``runner(check, run)`` -> its records, for the joined hosts.
ClusterRunner = Callable[[Check, ClusterRun], list[Record]]


def run_clock(check: Check, run: ClusterRun) -> list[Record]:
    return clock_records(run.members, run.thresholds)


def run_ports(check: Check, run: ClusterRun) -> list[Record]:
    return ports_records(run.members, rendezvous_port=run.rendezvous_port)


def run_multinode(check: Check, run: ClusterRun) -> list[Record]:
    """The multi-node allreduce, judged by the check's declared judge against the rendezvous host's thresholds,
    within ``--deadline``, else the inventory's ``multinode_deadline_s``, else :data:`DEFAULT_DEADLINE`."""
    deadline = float(run.deadline_s or run.vars.get("multinode_deadline_s") or DEFAULT_DEADLINE)
    started = time.monotonic()
    port = int(run.vars["rendezvous_port"]) if run.vars.get("rendezvous_port") else None
    batch = multinode(run.members, run.per_host[run.members[0].name], deadline_s=deadline, port=port,
                      judge=check.judge or judge_multinode_bandwidth)
    for record in batch:
        record.duration_s = record.duration_s or round(time.monotonic() - started, 3)
    return batch
