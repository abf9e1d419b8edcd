"""Validation on real lab hosts: a 3-host gloo allreduce through torchrun over SSH, faults injected by real
means during the run (link down, slow link), simulated Ascend hosts with a missing device and an old CANN,
and a socket interface that does not exist. Uses its own lab (tag acv) so other suites' labs are never touched;
bisection on four hosts uses the session lab (tag act) with the same venv under a path of its own."""

from __future__ import annotations

import math
import shlex
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accelstack.engines.ssh.run import validate_inventory
from accelstack.inventory import load_inventory
from accelstack.results.records import Record
from accelstack.transport.fanout import HostPool

from .helpers import lab_ids
from .labtools import heal_all, lab_inventory, own_lab

# Salted like every test lab (ACCELSTACK_TEST_LAB_SALT), so two checkouts' runs never replace each other's hosts.
TAG, SUBNET = lab_ids("acv", "10.219")
HOSTS = 3
SIM_ROOT = "/opt/sim"


def validate(path: str | Path, limit: str | None = None, **options: Any) -> list[Record]:
    """As the task does: the inventory loaded and its hosts selected once, then validated."""
    inv = load_inventory(str(path))
    return validate_inventory(inv, inv.select(limit), **options)


@pytest.fixture(scope="module")
def vlab(as_root: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    with own_lab(tmp_path_factory.mktemp("acvroot"), TAG, SUBNET, HOSTS) as lab:
        yield lab


@pytest.fixture(autouse=True)
def runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))


@pytest.fixture()
def healthy(vlab: object) -> Iterator[object]:
    yield vlab
    heal_all(vlab)


def by_host(records: list[Record], check: str) -> dict[str, Record]:
    return {r.host: r for r in records if r.check == check}


def tagged_processes(lab: object, name: str) -> list[str]:
    """Processes inside a lab host that a validation run started (torchrun, ranks, listeners)."""
    host = lab.load()[name]  # type: ignore[attr-defined]
    out = subprocess.run(["nsenter", "-t", str(host.anchor_pid), "-m", "-p", "--", "ps", "-eo", "pid,args"],
                         capture_output=True, text=True).stdout
    netns = subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True, text=True).stdout.split()
    found = []
    for pid in netns:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "accelstack-run-" in args or "torch.distributed.run" in args:
            found.append(f"{pid} {args[:120]}")
    return found or [line for line in out.splitlines() if "accelstack-run-" in line]


def test_three_host_gloo_allreduce_is_correct(healthy: object, tmp_path: Path) -> None:
    records = validate(lab_inventory(healthy, tmp_path), only={"multinode", "ports", "clock"})
    multi = by_host(records, "multinode")
    assert sorted(multi) == ["lab1", "lab2", "lab3"]
    for name, record in multi.items():
        assert record.status == "pass", (name, record.summary, record.evidence.get("stderr_tail"))
        assert record.metrics["ranks"] == 6  # 3 nodes x 2 ranks, every one checked its result
        sizes = record.metrics["sizes"]
        assert [s["bytes"] for s in sizes] == [1 << 16, 1 << 20, 1 << 22]
        assert all(s["busbw_gbps"] > 0 for s in sizes)
    assert {r.metrics["node_rank"] for r in multi.values()} == {0, 1, 2}
    assert all(r.status == "pass" for r in by_host(records, "ports").values())
    assert all(r.status == "pass" for r in by_host(records, "clock").values())
    for name in ("lab1", "lab2", "lab3"):
        assert tagged_processes(healthy, name) == []


def test_link_down_during_the_run_fails_in_time_names_the_host_and_orphans_nothing(
        healthy: object, tmp_path: Path) -> None:
    deadline = 20  # the run is cut 6 s after lab2's ranks start, one rank a host: well inside it
    path = lab_inventory(healthy, tmp_path, multinode_deadline_s=deadline, cluster_nproc=1, cluster_sizes=[1 << 22],
                         cluster_iters=4000, cluster_size_budget_s=60)
    def cut_when_running() -> None:
        # Mid-run for real: once lab2's ranks exist and have had time to join the collective.
        end = time.monotonic() + 40
        while time.monotonic() < end and not tagged_processes(healthy, "lab2"):
            time.sleep(0.2)
        time.sleep(6)
        healthy.fault("lab2", "link-down")  # type: ignore[attr-defined]

    cutter = threading.Thread(target=cut_when_running, daemon=True)
    started = time.monotonic()
    cutter.start()
    records = validate(path, only={"multinode"})
    cutter.join(timeout=5)
    elapsed = time.monotonic() - started
    multi = by_host(records, "multinode")
    # Lost mid-run: named, but not measured, so error (which never drains), not fail.
    assert multi["lab2"].status == "error", multi["lab2"].summary
    assert "unreachable after the run: lab2" in multi["lab2"].summary
    assert multi["lab2"].evidence["at_fault"]["nodes"] == ["lab2"] and multi["lab2"].metrics["at_fault"] == []
    assert multi["lab1"].status == "warn" and "lab2" in multi["lab1"].summary
    # The deadline plus the isolation step's pairwise run, never paramiko's or gloo's own timeouts.
    assert elapsed < deadline + 8 + 60 + 20, elapsed
    healthy.heal("lab2")  # type: ignore[attr-defined]
    # The downed host lost its controller mid-run: its own deadline and `timeout` must have ended everything.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(tagged_processes(healthy, n) for n in ("lab1", "lab2", "lab3")):
        time.sleep(0.5)
    for name in ("lab1", "lab2", "lab3"):
        assert tagged_processes(healthy, name) == [], name


# What a slowed link needs to show: one rank a host (torch starting on 2 cores is most of a run's time; the
# link carries the same bytes with one rank or two) and one size of the fleet sweep (the slowed fleet run fails
# at any size; the isolation runs have a sweep of their own).
ONE_RANK_ONE_SIZE: dict[str, Any] = {"cluster_nproc": 1, "cluster_sizes": [1 << 20]}


def test_slow_link_drops_busbw_and_isolation_names_the_slow_host(healthy: object, tmp_path: Path) -> None:
    healthy.fault("lab3", "link-slow")  # type: ignore[attr-defined]
    try:
        records = validate(lab_inventory(healthy, tmp_path, **ONE_RANK_ONE_SIZE), only={"multinode"})
    finally:
        healthy.heal("lab3")  # type: ignore[attr-defined]
    multi = by_host(records, "multinode")
    assert multi["lab3"].status == "fail", multi["lab3"].summary
    assert multi["lab3"].evidence["at_fault"]["nodes"] == ["lab3"]
    assert multi["lab1"].status == "warn" and "lab3" in multi["lab1"].summary
    # Three nodes have no halves to bisect: the ring of pairs, where lab3 fails with both known-good peers.
    runs = {tuple(sorted(r["hosts"])): r for r in multi["lab1"].evidence["isolation"]["runs"] if r["round"]}
    assert runs[("lab1", "lab2")]["status"] == "pass"
    assert {runs[("lab2", "lab3")]["status"], runs[("lab1", "lab3")]["status"]} == {"fail"}
    busbw = multi["lab1"].metrics.get("busbw_gbps")
    assert busbw is None or busbw < 0.05


def test_bisection_names_the_slowed_node_among_four_in_log2_rounds(healthy_lab: object, lab_venv: Any,
                                                                     tmp_path: Path) -> None:
    # The session lab's four hosts, with a venv of their own so the session lab's /opt/accelstack stays as other
    # suites expect it.
    python = lab_venv("/opt/acv-bisect")
    healthy_lab.fault("lab4", "link-slow")  # type: ignore[attr-defined]
    try:
        records = validate(lab_inventory(healthy_lab, tmp_path, stack_python=python, **ONE_RANK_ONE_SIZE),
                           only={"multinode"})
    finally:
        healthy_lab.heal("lab4")  # type: ignore[attr-defined]
    multi = by_host(records, "multinode")
    assert sorted(multi) == ["lab1", "lab2", "lab3", "lab4"]
    assert multi["lab4"].status == "fail" and "at fault: lab4" in multi["lab4"].summary, multi["lab4"].summary
    assert multi["lab4"].evidence["at_fault"] == {"nodes": ["lab4"], "links": []}
    assert all(multi[n].status == "warn" for n in ("lab1", "lab2", "lab3"))
    isolation = multi["lab1"].evidence["isolation"]
    rounds = math.ceil(math.log2(4))
    # One-sided: the half {lab1, lab2} runs and passes, so {lab3, lab4} holds the fault without a run of its
    # own; then the suspects with known-good partners. At most ceil(log2 n) + 1 extra runs.
    assert isolation["extra_runs"] <= rounds + 1, isolation
    first = {tuple(r["hosts"]): r["status"] for r in isolation["runs"] if r["round"] == 1}
    assert first == {("lab1", "lab2"): "pass"}
    failed = [r for r in isolation["runs"] if r["round"] >= 1 and r["status"] == "fail"]
    assert all("lab4" in r["hosts"] for r in failed)
    assert isolation["wall_s"] > 0 and all(r["wall_s"] > 0 for r in isolation["runs"] if r["round"])


def test_the_health_tier_over_ssh_runs_its_checks_in_one_interpreter_per_host(healthy: object,
                                                                               tmp_path: Path) -> None:
    records = validate(lab_inventory(healthy, tmp_path), tier="health")
    families: dict[str, set[str]] = {}
    for record in records:
        families.setdefault(record.host, set()).add(record.check.split(".")[0])
    assert families == {h: {"devices", "env", "hccn", "health", "libraries", "topology", "versions"}
                        for h in ("lab1", "lab2", "lab3")}, families
    assert all(r.status in ("pass", "warn", "skip") for r in records), [
        (r.host, r.check, r.status, r.summary) for r in records if r.status not in ("pass", "warn", "skip")]
    # Each record names the command that runs its check alone (what a person re-runs), not the batch.
    env = next(r for r in records if r.check == "env")
    assert "/env.py '" in env.evidence["command"] and "_batch.py" not in env.evidence["command"]


def test_socket_ifname_naming_a_missing_interface_fails_env(healthy: object, tmp_path: Path) -> None:
    host = load_inventory(lab_inventory(healthy, tmp_path)).select("lab1")[0]
    with HostPool() as pool:
        pool.connect(host).run("printf 'export NCCL_SOCKET_IFNAME=ib9\\n' > /etc/profile.d/accelstack.sh",
                                check=True)
    try:
        records = validate(lab_inventory(healthy, tmp_path), only={"env"}, limit="lab1")
    finally:
        with HostPool() as pool:
            pool.connect(host).run("rm -f /etc/profile.d/accelstack.sh")
    env = {r.check: r for r in records}
    assert env["env"].status == "pass"  # the file is there and a login shell has it
    bad = env["env.nccl_socket_ifname"]
    assert bad.status == "fail" and "ib9" in bad.summary and "eth0" in bad.summary
    assert bad.remedy and "NCCL_SOCKET_IFNAME" in bad.remedy


@pytest.fixture()
def ascend_host(healthy: object, tmp_path: Path) -> Iterator[str]:
    """lab3 as a simulated Ascend 910B host: the simulated driver (npu-smi, 8 devices) and an old CANN's
    libhccl.so, under a private root in /opt, on the env file's PATH and LD_LIBRARY_PATH."""
    from accelstack_lab.simulated import native, packages, versions

    driver = tmp_path / "driver.run"
    driver.write_bytes(packages.ascend_driver("25.0.rc1.1", "x86_64").data)
    lib = tmp_path / "libhccl.so"
    lib.write_bytes(native.compile_shared(native.hccl_source(versions.FAULT_FIXTURE_CANN), "libhccl.so"))
    host = load_inventory(lab_inventory(healthy, tmp_path)).select("lab3")[0]
    libdir = f"{SIM_ROOT}/usr/local/Ascend/ascend-toolkit/latest/lib64"
    env_file = "\n".join([f"export PATH={SIM_ROOT}/usr/local/bin:$PATH", f"export LD_LIBRARY_PATH={libdir}",
                          "export HCCL_SOCKET_IFNAME=eth0", ""])
    with HostPool() as pool:
        t = pool.connect(host)
        t.run(f"mkdir -p {SIM_ROOT}/etc {libdir} /var/tmp/acv-sim", check=True)
        t.run(f"printf 'root:x:0:0::/root:/bin/sh\\nHwHiAiUser:x:1000:1000::/home/H:/bin/sh\\n' > "
              f"{SIM_ROOT}/etc/passwd && printf 'root:x:0:\\nHwHiAiUser:x:1000:\\n' > {SIM_ROOT}/etc/group",
              check=True)
        t.put(driver, "/var/tmp/acv-sim/driver.run")
        t.run(f"ACCELSTACK_SIM_ROOT={SIM_ROOT} bash /var/tmp/acv-sim/driver.run --full --quiet", check=True,
              timeout=120)
        t.put(lib, f"{libdir}/libhccl.so", mode=0o755)
        t.run(f"cat > /etc/profile.d/accelstack.sh <<'EOF'\n{env_file}EOF", check=True)
    yield "lab3"
    with HostPool() as pool:
        pool.connect(host).run(f"rm -rf {SIM_ROOT} /var/tmp/acv-sim /etc/profile.d/accelstack.sh")


def test_simulated_ascend_host_missing_a_device_and_with_an_old_cann(ascend_host: str, healthy: object,
                                                                     tmp_path: Path) -> None:
    from accelstack_lab.simulated import faults

    path = lab_inventory(healthy, tmp_path, stack="ascend-910b-cann8.2.rc1", accelerator="910B3", expect_devices=8)
    host = load_inventory(path).select(ascend_host)[0]
    with HostPool() as pool:
        pool.connect(host).run(faults.drop_device_command(3, root=SIM_ROOT), check=True)
    records = {r.check: r for r in validate(path, only={"devices", "libraries"}, limit=ascend_host)}
    devices = records["devices"]
    assert devices.status == "fail"
    assert "7 device(s), 8 expected" in devices.summary, devices.summary
    libraries = records["libraries"]
    assert libraries.status == "fail", libraries.summary
    assert "HcclCommInitRootInfoConfig" in libraries.summary
    assert libraries.evidence["libraries"]["libhccl.so"]["path"].startswith(SIM_ROOT)
    assert libraries.remedy and "CANN" in libraries.remedy and "torch_npu 2.6.0" in libraries.remedy
    assert shlex.quote("libraries") in libraries.evidence["command"] or "libraries.py" in libraries.evidence["command"]


@pytest.fixture()
def amd_host(healthy: object, tmp_path: Path) -> Iterator[str]:
    """lab2 as a simulated AMD MI300X host: the lab's simulated amd-smi (8 GPUs, a devices file of its own) under a
    private root in /opt, on the env file's PATH."""
    import json

    from accelstack_lab.simulated.amd import TOOL, amd_devices

    devices = f"{SIM_ROOT}/amd/devices.json"
    tool = tmp_path / "amd-smi"
    tool.write_text(TOOL.read_text().replace("@@DEVICES_FILE@@", devices))
    doc = tmp_path / "devices.json"
    doc.write_text(json.dumps(amd_devices({"count": 8}, host="lab2")))
    host = load_inventory(lab_inventory(healthy, tmp_path)).select("lab2")[0]
    with HostPool() as pool:
        t = pool.connect(host)
        t.run(f"mkdir -p {SIM_ROOT}/amd {SIM_ROOT}/opt/rocm/bin", check=True)
        t.put(tool, f"{SIM_ROOT}/opt/rocm/bin/amd-smi", mode=0o755)
        t.put(doc, devices)
        t.run(f"printf 'export PATH={SIM_ROOT}/opt/rocm/bin:$PATH\\nexport NCCL_SOCKET_IFNAME=eth0\\n' "
              f"> /etc/profile.d/accelstack.sh", check=True)
    yield "lab2"
    with HostPool() as pool:
        pool.connect(host).run(f"rm -rf {SIM_ROOT} /etc/profile.d/accelstack.sh")


def test_simulated_amd_host_end_to_end_pass_fault_and_a_held_gpu(amd_host: str, healthy: object,
                                                                  tmp_path: Path) -> None:
    """The AMD vendor's host-side half over SSH on a lab host: healthy passes, an uncorrectable ECC error written
    into GPU 3 fails health.ecc naming it, and a foreign process on GPU 0 makes the torch check skip naming it."""
    path = lab_inventory(healthy, tmp_path, stack="amd-mi300x-rocm6.2", accelerator="MI300X", expect_devices=8)
    host = load_inventory(path).select(amd_host)[0]
    records = {r.check: r for r in validate(path, only={"health", "devices"}, limit=amd_host)}
    assert {c: r.status for c, r in records.items() if c.startswith("health")} == {
        "health.ecc": "pass", "health.bad_pages": "pass", "health.temperature": "pass", "health.throttle": "pass",
        "health.power": "pass", "health.pcie": "pass"}, {c: r.summary for c, r in records.items()}
    assert records["health.ecc"].evidence["sku"] == "MI300X"
    assert records["devices"].metrics["tool_devices"] == 8, records["devices"].summary

    def edit(index: int, **values: object) -> None:
        import json
        code = ("import json,sys; p=sys.argv[1]; d=json.load(open(p)); d['devices'][%d].update(json.loads(sys.argv[2])); "
                "json.dump(d, open(p, 'w'))" % index)
        with HostPool() as pool:
            pool.connect(host).run(f"python3 -c {shlex.quote(code)} {SIM_ROOT}/amd/devices.json "
                                    f"{shlex.quote(json.dumps(values))}", check=True)

    edit(3, ecc_uncorrectable=2)
    records = {r.check: r for r in validate(path, only={"health"}, limit=amd_host)}
    ecc = records["health.ecc"]
    assert ecc.status == "fail" and ecc.summary == "gpu 3: 2 uncorrectable ECC error(s) in UMC", ecc.summary
    assert ecc.remedy and "RMA" in ecc.remedy
    edit(0, processes=[{"pid": 4242, "name": "python3", "vram_mb": 81920}], vram_used_mb=82203)
    torch = {r.check: r for r in validate(path, only={"torch_devices"}, limit=amd_host)}["torch_devices"]
    assert torch.status == "skip", (torch.status, torch.summary)
    assert torch.summary.startswith("gpu 0 is in use by pid 4242 python3 (81920 MiB)"), torch.summary
