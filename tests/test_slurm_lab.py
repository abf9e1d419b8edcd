"""Real Slurm (Debian's slurmctld, slurmd, munge) on the session lab: the partition comes up, slurmd's health
check runs `accelstack node-check --drain` and drains a broken node with the cause, a downed link shows in sinfo;
validation and the fleet check run through Slurm (host checks with one srun, the multi-node allreduce as one
step), with Slurm node names mapped to inventory hosts, drains through scontrol, and never a drain on `error`."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from accelstack.engines.slurm.parse import parse_scontrol_node
from accelstack_lab.slurm import SlurmLab

from .helpers import run_cli

HEALTH_INTERVAL = 10
DRAINS = "drains.jsonl"


@pytest.fixture(scope="module")
def slurm(lab: object) -> Iterator[SlurmLab]:
    """Slurm over the session's four lab hosts, once for this module, stopped after it, with the health check
    `inv lab.up --slurm` gives every slurmd (node-check's health tier, every 10 s here). ``up`` itself is the test
    that four nodes come up within its 30 s while each slurmd runs that check as it starts (with the torch-importing
    quick tier they did not: `inv lab.up --hosts 4 --slurm` exited 3 with the nodes `unknown*`)."""
    the_slurm = SlurmLab(lab)  # type: ignore[arg-type]
    the_slurm.up(health_interval=HEALTH_INTERVAL)
    assert "node-check --tier health --drain" in the_slurm.health_script.read_text()
    yield the_slurm
    the_slurm.down()


def wait_for(slurm: SlurmLab, node: str, prefix: str, timeout: float) -> str:
    """The node's state once it starts with ``prefix`` (``idle`` means responding: not ``idle*``)."""
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = slurm.node_states().get(node, "")
        if state.startswith(prefix) and (prefix != "idle" or state == "idle"):
            return state
        time.sleep(0.5)
    return state


def test_parse_scontrol_node_keeps_a_reason_with_spaces_and_equals() -> None:
    line = ("NodeName=lab3 Arch=x86_64 CoresPerSocket=2 State=IDLE+DRAIN ThreadsPerCore=1 "
            "Reason=accelstack: env.gloo_socket_ifname: GLOO_SOCKET_IFNAME=ib9 (inventory): no match [root@2026]\n")
    info = parse_scontrol_node(line)
    assert info["NodeName"] == "lab3" and info["State"] == "IDLE+DRAIN"
    assert info["Reason"].startswith("accelstack: env.gloo_socket_ifname: GLOO_SOCKET_IFNAME=ib9 (inventory)")


def test_up_waits_longer_for_more_nodes_only_when_each_runs_a_health_check_as_it_starts() -> None:
    from accelstack_lab.slurm import START_TIMEOUT, idle_timeout

    assert idle_timeout(4, 2, health_check=False) == idle_timeout(64, 2, health_check=False) == START_TIMEOUT
    # 64 slurmds' start-up health checks on two cores: more than the 30 s that four needed.
    assert idle_timeout(64, 2, health_check=True) >= START_TIMEOUT + 30
    assert idle_timeout(64, 16, health_check=True) < idle_timeout(64, 2, health_check=True)


def test_each_lab_node_keeps_its_runs_in_a_folder_of_its_own(tmp_path: Path) -> None:
    # One folder for every node made each node-check's pruning read all the other nodes' runs: node-side work
    # that grew with the lab, which a node with its own disk never does.
    from accelstack.engines.node import load_node_file
    from accelstack_lab import Lab

    slurm = SlurmLab(Lab(tmp_path, tag="acz", state_dir=tmp_path / "state"))
    first, second = (load_node_file(slurm.write_node_file(name)) for name in ("lab1", "lab2"))
    assert first.runs_dir == str(slurm.node_runs("lab1")) and second.runs_dir == str(slurm.node_runs("lab2"))
    assert first.runs_dir != second.runs_dir


def test_four_idle_nodes_run_one_step_under_their_own_names(slurm: SlurmLab) -> None:
    assert slurm.node_states() == {f"lab{i}": "idle" for i in range(1, 5)}
    proc = slurm.run("srun", "--immediate=10", "--time=1", "-N4", "--ntasks-per-node=1", "hostname", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == ["lab1", "lab2", "lab3", "lab4"]


def test_the_health_check_drains_a_broken_node_with_the_cause(slurm: SlurmLab) -> None:
    # lab3's node file now names an interface it does not have: its `env` check fails at the next health check.
    slurm.write_node_file("lab3", overrides={"gloo_socket_ifname": "ib9"})
    try:
        state = wait_for(slurm, "lab3", "drain", timeout=HEALTH_INTERVAL * 4 + 30)
        assert state.startswith("drain"), (state, (slurm.dir / "nodes" / "lab3" / "health.out").read_text())
        reason = slurm.node_info("lab3")["Reason"]
        assert reason.startswith("accelstack: env.gloo_socket_ifname: GLOO_SOCKET_IFNAME=ib9"), reason
        # Only the broken node: the healthy ones passed the same check.
        assert {n: s for n, s in slurm.node_states().items() if n != "lab3"} == {
            "lab1": "idle", "lab2": "idle", "lab4": "idle"}
    finally:
        slurm.write_node_file("lab3")
        slurm.run("scontrol", "update", "nodename=lab3", "state=resume")
    assert wait_for(slurm, "lab3", "idle", timeout=30) == "idle"


def test_a_node_whose_link_is_down_goes_down_and_comes_back_after_heal(slurm: SlurmLab, healthy_lab: object) -> None:
    healthy_lab.fault("lab4", "link-down")  # type: ignore[attr-defined]
    # SlurmdTimeout=10: about 35 s measured (reference/slurm-lab.md 8).
    state = wait_for(slurm, "lab4", "down", timeout=90)
    assert state.startswith("down"), state
    assert slurm.node_info("lab4")["Reason"].startswith("Not responding")
    healthy_lab.heal("lab4")  # type: ignore[attr-defined]
    assert wait_for(slurm, "lab4", "idle", timeout=30) == "idle"


def test_validate_through_slurm_records_every_node_and_a_drained_one_is_error(slurm: SlurmLab,
                                                                               tmp_path: Path) -> None:
    env = {"ACCELSTACK_RUNS": str(tmp_path), "SLURM_CONF": str(slurm.conf)}
    # The health tier, as a 1,000-node health pass would run it: every node's records, nothing of the quick tier.
    proc = run_cli("validate", "--engine", "slurm", "--tier", "health", "--json", env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    by_host: dict[str, set[str]] = {}
    for record in records:
        by_host.setdefault(record["host"], set()).add(record["check"])
    assert sorted(by_host) == ["lab1", "lab2", "lab3", "lab4"]
    assert all({"env", "env.gloo_socket_ifname", "libraries", "devices", "health", "topology", "hccn",
                "versions.torch"} <= checks for checks in by_host.values()), by_host
    assert not any(c in checks for checks in by_host.values() for c in ("torch_devices", "collective_init"))
    (run,) = list(tmp_path.iterdir())
    on_disk = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(on_disk) == len(records) and {r["run_id"] for r in on_disk} == {run.name}

    slurm.run("scontrol", "update", "nodename=lab2", "state=drain", "reason=test: out for repair", check=True)
    try:
        proc = run_cli("validate", "--engine", "slurm", "--only", "env", "--json", env=env, timeout=300)
    finally:
        slurm.run("scontrol", "update", "nodename=lab2", "state=resume")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lab2 = [json.loads(line) for line in proc.stdout.splitlines() if '"lab2"' in line]
    assert [r["status"] for r in lab2] == ["error"]
    assert "drained" in lab2[0]["summary"] and "out for repair" in lab2[0]["summary"]


SSH_MULTINODE_METRICS = {"ranks", "sizes", "algbw_gbps", "at_bytes", "busbw_gbps", "init_s", "node_rank", "wall_s",
                         "threshold_gbps"}


def mapped_inventory(slurm: SlurmLab, tmp_path: Path, **per_host: dict) -> str:
    """The lab's hosts under other names, each found as the README says: lab1 by its `slurm_node` var, lab2 and
    lab4 by name, lab3 by the short hostname of its address. One rank per node keeps the steps small."""
    doc = yaml.safe_load(Path(slurm.lab.inventory).read_text())
    doc["vars"].update({"cluster_nproc": 1, "multinode_deadline_s": 90})
    doc["hosts"] = {"rack1-a": {"address": "10.214.0.11", "slurm_node": "lab1"}, "lab2": {"address": "10.214.0.12"},
                    "x3": {"address": "lab3.lab.internal"}, "lab4": {"address": "10.214.0.14"}}
    for host, values in per_host.items():
        doc["hosts"][host].update(values)
    doc["groups"] = {"lab": {"hosts": list(doc["hosts"])}}
    path = tmp_path / "mapped.yml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def json_records(proc: object) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]  # type: ignore[attr-defined]


def test_the_multinode_allreduce_runs_as_one_slurm_step_and_passes(slurm: SlurmLab, tmp_path: Path) -> None:
    # A node resumed by an earlier test can show `idle*` for a moment: start with all four responding.
    slurm.wait_idle(["lab1", "lab2", "lab3", "lab4"], timeout=60)
    env = {"ACCELSTACK_RUNS": str(tmp_path / "runs"), "SLURM_CONF": str(slurm.conf)}
    proc = run_cli("validate", "--engine", "slurm", "--inventory", mapped_inventory(slurm, tmp_path),
                   "--only", "multinode", "--json", env=env, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    multi = {r["host"]: r for r in json_records(proc)}
    assert sorted(multi) == ["lab1", "lab2", "lab3", "lab4"]  # the Slurm names, whatever the inventory calls them
    for name, record in multi.items():
        assert record["check"] == "multinode" and record["status"] == "pass", (name, record["summary"])
        assert SSH_MULTINODE_METRICS <= set(record["metrics"]), record["metrics"]  # the SSH engine's record
        assert record["metrics"]["ranks"] == 4  # cluster_nproc 1 from the inventory: one task per node
        assert [s["bytes"] for s in record["metrics"]["sizes"]] == [1 << 16, 1 << 20, 1 << 22]
        assert all(s["busbw_gbps"] > 0 for s in record["metrics"]["sizes"])
        assert record["evidence"]["host"] == name and record["evidence"]["engine"] == "slurm"
        assert record["evidence"]["command"].startswith("srun --nodes=4 --ntasks-per-node=1")
    assert {r["metrics"]["node_rank"] for r in multi.values()} == {0, 1, 2, 3}
    (run,) = list((tmp_path / "runs").iterdir())
    on_disk = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert sorted(r["host"] for r in on_disk) == sorted(multi) and {r["run_id"] for r in on_disk} == {run.name}
    # The step left nothing allocated: each node is idle once slurmd has reported the step's end ("completing" is
    # that report under way, longer while the node's health check runs beside it on two busy cores).
    assert {n: wait_for(slurm, n, "idle", timeout=30) for n in ("lab1", "lab2", "lab3", "lab4")} == {
        f"lab{i}": "idle" for i in range(1, 5)}


def test_fleet_check_through_slurm_drains_a_failed_node_with_scontrol_and_not_an_errored_one(
        slurm: SlurmLab, tmp_path: Path) -> None:
    # x3 (Slurm's lab3) names an interface it does not have in the inventory: its env check fails there.
    slurm.wait_idle(["lab1", "lab2", "lab3", "lab4"], timeout=60)
    inventory = mapped_inventory(slurm, tmp_path, x3={"gloo_socket_ifname": "ib9"})
    env = {"ACCELSTACK_RUNS": str(tmp_path / "runs"), "SLURM_CONF": str(slurm.conf)}
    reports = tmp_path / "reports"
    slurm.run("scontrol", "update", "nodename=lab2", "state=drain", "reason=test: out for repair", check=True)
    try:
        proc = run_cli("fleet-check", "--engine", "slurm", "--inventory", inventory, "--only", "env", "--drain",
                       "--reports-dir", str(reports), "--json", env=env, timeout=300)
        states = slurm.node_states()
        lab2, lab3 = slurm.node_info("lab2"), slurm.node_info("lab3")
    finally:
        for node in ("lab2", "lab3"):
            slurm.run("scontrol", "update", f"nodename={node}", "state=resume")
        slurm.wait_idle(["lab2", "lab3"], timeout=60)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = json_records(proc)
    status = {(r["host"], r["check"]): r["status"] for r in records}
    assert status[("lab3", "env.gloo_socket_ifname")] == "fail"
    assert status[("lab2", "env")] == "error"
    assert all(status[(n, "env.gloo_socket_ifname")] == "pass" for n in ("lab1", "lab4"))
    assert states["lab3"].startswith("drain") and lab3["Reason"].startswith("accelstack: env.gloo_socket_ifname")
    # lab2 keeps the reason it was drained with: its error drained nothing. The healthy nodes are untouched.
    assert lab2["Reason"].startswith("test: out for repair") and states["lab1"] == "idle" and states["lab4"] == "idle"
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    drains = [json.loads(line) for line in (run / "drains.jsonl").read_text().splitlines()]
    assert [(d["host"], d["exit_status"]) for d in drains] == [("lab3", 0)]
    assert drains[0]["command"].startswith("scontrol update nodename=lab3 state=drain")
    assert sorted(p.name for p in reports.iterdir()) == ["accelstack.prom", "junit.xml", "report.html",
                                                         "summary.json"]
    assert json.loads((run / "fleet-check.json").read_text())["drain_breaker"]["tripped"] is False


def test_a_node_whose_slurmd_stopped_is_error_and_the_fleet_check_drains_nothing(slurm: SlurmLab,
                                                                                   tmp_path: Path) -> None:
    env = {"ACCELSTACK_RUNS": str(tmp_path / "runs"), "SLURM_CONF": str(slurm.conf)}
    slurm.wait_idle(["lab1", "lab2", "lab3", "lab4"], timeout=60)  # every node responding before the fault
    pid = int((slurm.dir / "nodes" / "lab4" / "mypid").read_text())
    os.kill(pid, signal.SIGTERM)
    try:
        proc = run_cli("fleet-check", "--engine", "slurm", "--inventory", mapped_inventory(slurm, tmp_path),
                       "--only", "multinode", "--drain", "--reports-dir", str(tmp_path / "reports"), "--json",
                       env=env, timeout=500)
        states = slurm.node_states()
    finally:
        slurm._start_slurmd(slurm.lab.load()["lab4"])
        restarted = time.monotonic()
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    multi = {r["host"]: r for r in json_records(proc) if r["check"] == "multinode"}
    assert multi["lab4"]["status"] == "error", multi["lab4"]["summary"]
    # Slurm either still listed lab4 (the step could not launch there; the others ran again without it) or had
    # already marked it not responding (it was not asked): either way the three others were measured good.
    assert all(multi[n]["status"] in ("pass", "warn") for n in ("lab1", "lab2", "lab3")), {
        n: (r["status"], r["summary"], r["evidence"].get("stderr_tail")) for n, r in multi.items()}
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert not (run / DRAINS).exists()
    assert not any(s.startswith("drain") for s in states.values()), states
    # A reconfigure makes the restarted slurmd register at once (reference/slurm-lab.md 8), once it listens.
    while time.monotonic() - restarted < 60 and slurm.node_states().get("lab4") != "idle":
        slurm.reconfigure()
        time.sleep(1)
    assert slurm.node_states().get("lab4") == "idle"


def test_a_step_past_its_deadline_is_cancelled_and_every_node_is_error(slurm: SlurmLab, tmp_path: Path) -> None:
    slurm.wait_idle(["lab1", "lab2", "lab3", "lab4"], timeout=60)
    env = {"ACCELSTACK_RUNS": str(tmp_path / "runs"), "SLURM_CONF": str(slurm.conf)}
    # 5 s: every rank reaches its deadline before its collective ends (torch alone takes longer to import here).
    proc = run_cli("validate", "--engine", "slurm", "--nodes", "lab[1-2]", "--only", "multinode", "--deadline", "5",
                   "--set", "cluster_nproc=1", "--json", env=env, timeout=200)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    multi = {r["host"]: r for r in json_records(proc)}
    assert sorted(multi) == ["lab1", "lab2"]
    for record in multi.values():
        assert record["status"] == "error" and "no result within the 5 s deadline" in record["summary"], record
        assert "isolation" not in record["evidence"]  # nothing was measured: nothing to isolate
    assert wait_for(slurm, "lab1", "idle", timeout=30) == "idle"  # the step is gone


def test_nodes_the_partition_lacks_are_exit_3_before_any_srun(slurm: SlurmLab, tmp_path: Path) -> None:
    env = {"ACCELSTACK_RUNS": str(tmp_path), "SLURM_CONF": str(slurm.conf)}
    proc = run_cli("validate", "--engine", "slurm", "--nodes", "lab[3-6]", "--only", "env", env=env, timeout=60)
    assert proc.returncode == 3 and "--nodes names lab5, lab6, which the default partition does not have" in \
        proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not list(tmp_path.iterdir())
