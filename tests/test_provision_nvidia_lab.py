"""Provisioning the shipped NVIDIA stacks on real lab hosts: the driver, CUDA and system NCCL roles run the simulated
``NVIDIA-Linux-x86_64-<v>.run``, ``cuda_<v>_<driver>_linux.run`` and ``nccl_<v>-1+cuda<c>_x86_64.run`` with the
flags their defaults give, then facts, drift, the env file, a no-op second run and the devices check.

The shipped stacks pin ``system_nccl`` (a system NCCL for nccl-tests) at the release of ``nccl`` (the NCCL torch
loads, which comes with the torch wheel): the system_nccl role installs the first; the second has no torch here.

Only ``--roles nvidia_driver,cuda_toolkit,system_nccl,env``: the stacks pin torch+CUDA wheels (``2.7.1+cu128``,
``2.6.0+cu124``) that the lab repository does not hold (it has the real torch 2.13.0 CPU wheel only), so
``python_env`` is left out. For the devices check one host gets the CPU torch venv from the ``cpu`` stack at
the same ``/opt/accelstack/venv``.

Devices: the installers run over SSH, so this side's ``ACCELSTACK_SIM_DEVICES`` never reaches them (the Ascend
test passes none either); the simulated driver's default is what a host gets: 8 x "NVIDIA H100 80GB HBM3".

The lab here is this module's own (tag ``acn``, subnet 10.223, both moved by ACCELSTACK_TEST_LAB_SALT), two hosts,
torn down at the end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from accelstack.inventory import load_inventory
from accelstack.transport.fanout import HostPool

from .helpers import by_host, lab_ids, records, run_cli
from .labtools import host_root, provisioning_lab

TAG, SUBNET = lab_ids("acn", "10.223")
ROLES = "nvidia_driver,cuda_toolkit,system_nccl,env"
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="module")
def nlab(as_root: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    root = tmp_path_factory.mktemp("acn")
    with provisioning_lab(root, TAG, SUBNET, 2, ["nvidia-cuda12.8", "nvidia-cuda12.4", "cpu"]) as (lab, repo, base):
        base["vars"].update({"stack": "nvidia-cuda12.8", "accelerator": "nvidia", "expect_devices": 8,
                             "nccl_socket_ifname": "eth0"})
        inventories = {}
        for name, stack in (("cuda12.8", "nvidia-cuda12.8"), ("cuda12.4", "nvidia-cuda12.4"), ("cpu", "cpu")):
            doc = json.loads(json.dumps(base))
            doc["vars"]["stack"] = stack
            inventories[name] = root / f"{name}.yml"
            inventories[name].write_text(yaml.safe_dump(doc))
        manifest = yaml.safe_load((repo / "manifest.yml").read_text())["artifacts"]
        yield {"lab": lab, "root": root, "repo": repo, "manifest": manifest, **inventories}


def artifact_bytes(nlab: dict, pins: dict[str, str]) -> int:
    return sum(a["size"] for a in nlab["manifest"] if pins.get(a["component"]) == str(a["version"]))


def assert_stack(nlab: dict, inventory: Path, hosts: str, runs: Path, *, driver: str, cuda: str, nccl: str) -> None:
    """``inv facts`` shows the pinned versions and 8 GPUs; ``inv drift`` passes driver, CUDA and the system NCCL."""
    facts = run_cli("facts", "--inventory", str(inventory), "--limit", hosts, "--json", runs=runs)
    assert facts.returncode == 0, facts.stdout + facts.stderr
    got = records(facts)
    assert len(got) == len(hosts.split(","))
    for record in got:
        nvidia = record["evidence"]["facts"]["nvidia"]
        assert nvidia["driver_version"] == driver, record  # from the simulated nvidia-smi
        assert nvidia["cuda"] == cuda and nvidia["nccl"] == nccl
        # The system NCCL is the one the loader gives a program: the role's, through its ld.so.conf.d file.
        assert nvidia["nccl_loader_library"] == "/usr/local/nccl/lib/libnccl.so.2"
        assert [g["index"] for g in nvidia["gpus"]] == list(range(8))
        assert {g["name"] for g in nvidia["gpus"]} == {H100}
        assert {g["driver_version"] for g in nvidia["gpus"]} == {driver}
        assert f"NVIDIA driver {driver}, 8 GPUs" in record["summary"]

    drift = run_cli("drift", "--inventory", str(inventory), "--limit", hosts, "--json", runs=runs)
    checks = {(r["host"], r["check"]): r for r in records(drift)}
    for host in hosts.split(","):
        for component in ("nvidia_driver", "cuda", "system_nccl"):
            record = checks[(host, f"drift.{component}")]
            assert record["status"] == "pass", record
        # torch is not provisioned here (no CUDA wheels in the lab repository): drift says so, and so the NCCL
        # torch would load is not there either; the system NCCL does not stand in for it.
        assert checks[(host, "drift.torch")]["status"] == "fail"
        torch_nccl = checks[(host, "drift.nccl")]
        assert torch_nccl["status"] == "fail" and torch_nccl["evidence"]["installed"] is None, torch_nccl
        assert torch_nccl["evidence"]["system_nccl"] == nccl


def test_cuda128_stack_end_to_end_then_nothing_changes(nlab: dict, tmp_path: Path) -> None:
    inv = nlab["cuda12.8"]
    proc = run_cli("provision", "--inventory", str(inv), "--roles", ROLES, "--json", runs=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected_bytes = artifact_bytes(nlab, {"nvidia_driver": "580.65.06", "cuda": "12.8", "system_nccl": "2.26.2"})
    assert expected_bytes > 0
    first = by_host(proc)
    assert sorted(first) == ["lab1", "lab2"]
    steps = [r for r in records(proc) if r["check"].startswith("provision.") and r["host"] == "lab1"]
    for record in first.values():
        assert record["status"] == "pass", record
        # Six steps; the hostfile and launcher render again once nvidia-smi reports the 8 GPUs (slots=8).
        assert record["metrics"]["changed"] >= 6
        assert record["metrics"]["bytes_uploaded"] == expected_bytes
        assert record["metrics"]["reboot_required"] is True  # the driver notifies the reboot handler
    assert {r["check"] for r in steps} >= {"provision.nvidia_driver.driver", "provision.cuda_toolkit.toolkit",
                                           "provision.system_nccl.library", "provision.env.env-file"}
    assert all(r["status"] == "pass" for r in steps), steps

    usr_local = host_root(nlab["lab"], "lab1") / "usr_local"
    assert os.readlink(usr_local / "cuda") == "cuda-12.8"
    assert (usr_local / "nccl" / "lib" / "libnccl.so.2.26.2").is_file()
    # The system NCCL is on the loader's path through ld.so.conf.d (after torch's own RUNPATH), not in the env.
    assert "provision.system_nccl.loader-path" in {r["check"] for r in steps}
    with HostPool() as pool:
        cache = pool.connect(load_inventory(str(inv)).select("lab1")[0]).run("ldconfig -p", check=True).stdout
    assert "/usr/local/nccl/lib/libnccl.so.2" in cache
    assert (host_root(nlab["lab"], "lab1") / "opt" / "accelstack" / "etc" / "hostfile").read_text().splitlines() == [
        f"{SUBNET}.0.11 slots=8", f"{SUBNET}.0.12 slots=8"]

    assert_stack(nlab, inv, "lab1,lab2", tmp_path, driver="580.65.06", cuda="12.8.1", nccl="2.26.2")

    env = host_root(nlab["lab"], "lab1") / "profile.d" / "accelstack.sh"
    text = env.read_text()
    for line in ("export CUDA_HOME=/usr/local/cuda", 'export PATH="$CUDA_HOME/bin${PATH:+:$PATH}"',
                 'export LD_LIBRARY_PATH="$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"',
                 "export NCCL_SOCKET_IFNAME=eth0", "export NCCL_DEBUG=WARN"):
        assert line in text.splitlines(), text
    assert oct(env.stat().st_mode & 0o777) == "0o644"

    again = run_cli("provision", "--inventory", str(inv), "--roles", ROLES, "--json", runs=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    for record in by_host(again).values():
        # Nothing changes and nothing is uploaded; the driver's reboot stays pending until --reboot.
        assert record["metrics"] == {"changed": 0, "bytes_uploaded": 0, "reboot_required": True}, record
    assert [r["check"] for r in records(again)] == ["provision", "provision"]

    rebooted = run_cli("provision", "--inventory", str(inv), "--roles", ROLES, "--reboot", "--batch", "1", "--json",
                       runs=tmp_path)
    assert rebooted.returncode == 0, rebooted.stdout + rebooted.stderr
    assert {h: r["status"] for h, r in by_host(rebooted, "provision.reboot").items()} == {"lab1": "pass",
                                                                                         "lab2": "pass"}
    quiet = run_cli("provision", "--inventory", str(inv), "--roles", ROLES, "--json", runs=tmp_path)
    for record in by_host(quiet).values():
        assert record["metrics"] == {"changed": 0, "bytes_uploaded": 0, "reboot_required": False}, record


def test_devices_sees_8_gpus_and_torch_devices_a_cpu_torch(nlab: dict, tmp_path: Path) -> None:
    # The stack's venv, with the CPU torch from the cpu stack (the repository has no CUDA wheels).
    venv = run_cli("provision", "--inventory", str(nlab["cpu"]), "--roles", "python_env", "--limit", "lab1", "--json",
                   runs=tmp_path)
    assert venv.returncode == 0, venv.stdout + venv.stderr
    proc = run_cli("validate", "--inventory", str(nlab["cuda12.8"]), "--limit", "lab1", "--only",
                   "devices,torch_devices", "--json", runs=tmp_path)
    # nvidia-smi reports the 8 GPUs the inventory expects (devices, the health tier: no torch) ...
    devices = by_host(proc, "devices")["lab1"]
    assert devices["status"] == "pass", devices
    assert devices["metrics"]["tool_devices"] == 8 and devices["metrics"]["expect_devices"] == 8, devices
    assert devices["evidence"]["tool_exit"] == 0 and len(devices["evidence"]["gpus"]) == 8
    # ... and the CPU torch sees no accelerator through torch.accelerator, so torch_devices fails on the mismatch
    # between torch and the tool, as it should.
    record = by_host(proc, "torch_devices")["lab1"]
    assert record["metrics"] == {"tool_devices": 8, "torch_devices": 0}, record
    assert record["evidence"]["torch"] == {"imported": True, "torch": "2.13.0+cpu", "api": "torch.accelerator",
                                           "type": None, "count": 0}
    assert record["status"] == "fail"
    assert record["summary"] == "torch sees 0 of the 8 device(s) nvidia-smi reports"
    # The hardware answers, so the remedy points at the python side, not at the device.
    assert "has no nvidia backend" in record["remedy"] and "inv provision --limit lab1" in record["remedy"]
    assert proc.returncode == 1


def test_switch_to_cuda124_stack(nlab: dict, tmp_path: Path) -> None:
    """lab2 from the 12.8 stack to the 12.4 one: an older driver, a second toolkit and the link moved, NCCL 2.21.5."""
    inv = nlab["cuda12.4"]
    proc = run_cli("provision", "--inventory", str(inv), "--roles", ROLES, "--limit", "lab2", "--json", runs=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = by_host(proc)["lab2"]
    assert record["status"] == "pass" and record["metrics"]["changed"] >= 3
    assert record["metrics"]["bytes_uploaded"] == artifact_bytes(
        nlab, {"nvidia_driver": "550.54.15", "cuda": "12.4", "system_nccl": "2.21.5"})
    usr_local = host_root(nlab["lab"], "lab2") / "usr_local"
    assert os.readlink(usr_local / "cuda") == "cuda-12.4" and (usr_local / "cuda-12.8").is_dir()
    assert_stack(nlab, inv, "lab2", tmp_path, driver="550.54.15", cuda="12.4.1", nccl="2.21.5")
    again = run_cli("provision", "--inventory", str(inv), "--roles", ROLES, "--limit", "lab2", "--json", runs=tmp_path)
    metrics = by_host(again)["lab2"]["metrics"]
    assert metrics["changed"] == 0 and metrics["bytes_uploaded"] == 0, metrics
