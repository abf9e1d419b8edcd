"""Real Slurm (Debian's slurmctld, slurmd, munge) on the session lab: the partition comes up, slurmd's health
check runs `accelstack node-check --drain` and drains a broken node with the cause, a downed link shows in sinfo."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from accelstack.lab.slurm import SlurmLab, parse_scontrol_node

from .conftest import run_cli

HEALTH_INTERVAL = 10


@pytest.fixture(scope="module")
def slurm(lab: object) -> Iterator[SlurmLab]:
    """Slurm over the session's four lab hosts, once for this module, stopped after it. The health check looks
    at the env checks only: it runs on every node every 10 s, and torch imports on 2 cores would crowd the tests."""
    the_slurm = SlurmLab(lab)  # type: ignore[arg-type]
    the_slurm.up(health_interval=HEALTH_INTERVAL, health_args=("--only", "env"))
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
    proc = run_cli("validate", "--engine", "slurm", "--only", "env,libraries", "--json", env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    by_host: dict[str, set[str]] = {}
    for record in records:
        by_host.setdefault(record["host"], set()).add(record["check"])
    assert sorted(by_host) == ["lab1", "lab2", "lab3", "lab4"]
    assert all({"env", "env.gloo_socket_ifname", "libraries"} <= checks for checks in by_host.values()), by_host
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
