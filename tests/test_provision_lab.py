"""Provisioning real lab hosts over SSH: the cpu stack and a simulated Ascend stack end to end, idempotence,
a run killed mid-way, a corrupt artifact, --check touching nothing, rolling reboots and --retry-failed.

The lab here is this module's own (tag ``acp``, subnet 10.218), three hosts, torn down at the end.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from .helpers import REPO, by_host, cli_env, command, lab_ids, records, run_cli
from .labtools import host_root, provisioning_lab

TAG, SUBNET = lab_ids("acp", "10.218")
LAB_ASCEND = """\
name: lab-ascend
vendor: ascend
backend: hccl
description: LAB ONLY - simulated Ascend HDK 25.0.RC1.1 and CANN 8.2.RC1, the real torch CPU wheel, a simulated torch_npu.
components:
  python: "3.11"
  torch: {version: "2.13.0+cpu", match: release}
  torch_npu: "2.13.0"
  ascend_driver: "25.0.rc1.1"
  ascend_firmware: "7.7.0.1.231"
  cann_toolkit: "8.2.RC1"
  cann_kernels: "8.2.RC1"
paths:
  ascend_home: /usr/local/Ascend
  driver: /usr/local/Ascend/driver
  firmware: /usr/local/Ascend/firmware
  cann_toolkit: /usr/local/Ascend/ascend-toolkit
  cann_set_env: /usr/local/Ascend/ascend-toolkit/set_env.sh
  venv: /opt/accelstack/venv
  python: /opt/accelstack/venv/bin/python
devices: [910B3]
"""


@pytest.fixture(scope="module")
def plab(as_root: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    root = tmp_path_factory.mktemp("acp")
    (root / "stacks").mkdir()
    (root / "stacks" / "lab-ascend.yml").write_text(LAB_ASCEND)
    with provisioning_lab(root, TAG, SUBNET, 3, ["cpu", str(root / "stacks" / "lab-ascend.yml")]) as (lab, repo, base):
        # Lab hosts share /etc/passwd and /usr with this machine: no useradd, no apt-get on it.
        base["vars"].update({"ascend_run_user": "root", "ascend_run_group": "root", "ascend_driver_packages": []})
        cpu_inv = root / "cpu.yml"
        cpu_inv.write_text(yaml.safe_dump(base))
        ascend = json.loads(json.dumps(base))
        ascend["vars"]["stack"] = str(root / "stacks" / "lab-ascend.yml")
        ascend["vars"]["hccl_socket_ifname"] = "eth0"
        ascend_inv = root / "ascend.yml"
        ascend_inv.write_text(yaml.safe_dump(ascend))
        yield {"lab": lab, "root": root, "repo": repo, "cpu": cpu_inv, "ascend": ascend_inv}


def snapshot(plab: dict, host: str) -> str:
    """Every path, size, mode, mtime and content hash under the host's /opt, /usr/local and /etc/profile.d."""
    digest = hashlib.sha256()
    for sub in ("opt", "usr_local", "profile.d"):
        for path in sorted((host_root(plab["lab"], host) / sub).rglob("*")):
            st = path.lstat()
            digest.update(f"{path} {st.st_size} {st.st_mode} {st.st_mtime_ns}\n".encode())
            if path.is_file() and not path.is_symlink():
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def test_check_touches_nothing_and_shows_the_plan(plab: dict, tmp_path: Path) -> None:
    before = {h: snapshot(plab, h) for h in ("lab1", "lab2", "lab3")}
    proc = run_cli("provision", "--inventory", str(plab["cpu"]), "--check", "--json", runs=tmp_path)
    assert proc.returncode == 0, proc.stderr
    hosts = by_host(proc)
    assert sorted(hosts) == ["lab1", "lab2", "lab3"]
    for record in hosts.values():
        assert record["metrics"]["changes"] == 5
        assert record["metrics"]["bytes_to_transfer"] > 100_000_000  # the torch wheel
        assert "torch: absent -> 2.13.0+cpu" in json.dumps(record["evidence"])
    assert {h: snapshot(plab, h) for h in before} == before


def test_cpu_stack_end_to_end_then_nothing_changes(plab: dict, tmp_path: Path) -> None:
    proc = run_cli("provision", "--inventory", str(plab["cpu"]), "--limit", "lab1,lab2", "--json", runs=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = by_host(proc)
    for name in ("lab1", "lab2"):
        assert first[name]["status"] == "pass", first[name]
        assert first[name]["metrics"]["changed"] == 5
        assert first[name]["metrics"]["bytes_uploaded"] > 100_000_000
    assert "provision.python_env.venv" in {r["check"] for r in records(proc)}

    facts = run_cli("facts", "--inventory", str(plab["cpu"]), "--limit", "lab1,lab2", "--json", runs=tmp_path)
    for record in records(facts):
        torch = record["evidence"]["facts"]["torch"]
        assert torch["version"] == "2.13.0+cpu", record

    # A login shell on the host sources the rendered env file.
    env = host_root(plab["lab"], "lab1") / "profile.d" / "accelstack.sh"
    assert "export GLOO_SOCKET_IFNAME=eth0" in env.read_text()
    assert oct(env.stat().st_mode & 0o777) == "0o644"

    again = run_cli("provision", "--inventory", str(plab["cpu"]), "--limit", "lab1,lab2", "--json", runs=tmp_path)
    assert again.returncode == 0, again.stderr
    for record in by_host(again).values():
        assert record["metrics"] == {"changed": 0, "bytes_uploaded": 0, "reboot_required": False}, record
    assert [r["check"] for r in records(again)] == ["provision", "provision"]


def _file_is_whole(path: Path, marker: str) -> bool:
    """A version file or env file that exists holds its whole content (ends with its last expected key)."""
    if not path.exists():
        return True
    return marker in path.read_text(errors="replace")


def test_ascend_stack_killed_mid_run_converges_and_reboots_in_batches(plab: dict, tmp_path: Path) -> None:
    usr_local = host_root(plab["lab"], "lab3") / "usr_local"
    runs = tmp_path / "runs"
    proc = subprocess.Popen(command("accelstack", "provision", "--inventory", str(plab["ascend"]), "--limit", "lab3",
                                    "--json"), cwd=REPO, env=cli_env(runs=runs),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    # Kill the control side once the driver is in and the next packages are on their way.
    while time.monotonic() < deadline and not (usr_local / "Ascend" / "driver" / "version.info").exists():
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (usr_local / "Ascend" / "driver" / "version.info").exists(), "the driver install never started"
    for path, marker in ((usr_local / "Ascend" / "driver" / "version.info", "package_version="),
                         (usr_local / "Ascend" / "firmware" / "version.info", "compatible_version_drv="),
                         (host_root(plab["lab"], "lab3") / "profile.d" / "accelstack.sh", "HCCL_SOCKET_IFNAME")):
        assert _file_is_whole(path, marker), path

    # The killed run counts as failed for lab3: --retry-failed picks it up, with a reboot in batches of 1.
    again = run_cli("provision", "--inventory", str(plab["ascend"]), "--retry-failed", "--reboot", "--batch", "1",
                    "--json", runs=runs)
    assert again.returncode == 0, again.stdout + again.stderr
    hosts = by_host(again)
    assert list(hosts) == ["lab3"] and hosts["lab3"]["status"] == "pass"
    assert hosts["lab3"]["metrics"]["changed"] >= 1
    assert by_host(again, "provision.reboot")["lab3"]["status"] == "pass"

    facts = records(run_cli("facts", "--inventory", str(plab["ascend"]), "--limit", "lab3", "--json", runs=runs))[0]
    components = facts["evidence"]["facts"]
    assert components["ascend"]["driver"] == "25.0.rc1.1"
    assert components["ascend"]["firmware"] == "7.7.0.1.231"
    assert components["ascend"]["cann_toolkit"] == "8.2.RC1"
    assert components["torch"]["torch_npu"] == "2.13.0"
    table = json.loads((host_root(plab["lab"], "lab3") / "opt" / "accelstack" / "etc" / "rank_table.json").read_text())
    assert table["version"] == "1.0" and table["server_list"][0]["device"][0].get("device_ip")
    env = (host_root(plab["lab"], "lab3") / "profile.d" / "accelstack.sh").read_text()
    assert "/usr/local/Ascend/driver/lib64/driver" in env and "export HCCL_SOCKET_IFNAME=eth0" in env

    third = run_cli("provision", "--inventory", str(plab["ascend"]), "--limit", "lab3", "--json", runs=runs)
    assert by_host(third)["lab3"]["metrics"] == {"changed": 0, "bytes_uploaded": 0, "reboot_required": False}


def test_bad_checksum_installs_nothing(plab: dict, tmp_path: Path) -> None:
    bad = tmp_path / "bad-repo"
    shutil.copytree(plab["repo"], bad, symlinks=True, ignore=shutil.ignore_patterns(".build-cache"))
    driver = next(bad.glob("Ascend-hdk-910b-npu-driver_*.run"))
    data = bytearray(driver.read_bytes())
    data[-10] ^= 0xFF  # same size, different content
    driver.unlink()
    driver.write_bytes(bytes(data))
    before = snapshot(plab, "lab1")
    proc = run_cli("provision", "--inventory", str(plab["ascend"]), "--limit", "lab1", "--repo", str(bad), "--json",
                   runs=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    record = by_host(proc)["lab1"]
    assert record["status"] == "error" and "sha256" in record["summary"] and driver.name in record["summary"]
    assert not (host_root(plab["lab"], "lab1") / "usr_local" / "Ascend").exists()
    assert snapshot(plab, "lab1") == before


def test_unreachable_host_is_an_error_and_the_rest_go_on(plab: dict, tmp_path: Path) -> None:
    lab = plab["lab"]
    lab.fault("lab2", "sshd-stop")  # type: ignore[attr-defined]
    try:
        proc = run_cli("provision", "--inventory", str(plab["cpu"]), "--limit", "lab1,lab2", "--json", runs=tmp_path)
    finally:
        lab.heal("lab2")  # type: ignore[attr-defined]
    assert proc.returncode == 2
    hosts = by_host(proc)
    assert hosts["lab2"]["status"] == "error" and hosts["lab1"]["status"] == "pass"
    retry = run_cli("provision", "--inventory", str(plab["cpu"]), "--retry-failed", "--json", runs=tmp_path)
    assert retry.returncode == 0, retry.stderr
    assert list(by_host(retry)) == ["lab2"]


def test_interface_missing_on_a_host_is_refused_before_touching_it(plab: dict, tmp_path: Path) -> None:
    doc = yaml.safe_load(Path(plab["cpu"]).read_text())
    doc["vars"]["gloo_socket_ifname"] = "ib0"
    inv = tmp_path / "bad-ifname.yml"
    inv.write_text(yaml.safe_dump(doc))
    before = snapshot(plab, "lab1")
    proc = run_cli("provision", "--inventory", str(inv), "--limit", "lab1", "--json", runs=tmp_path)
    assert proc.returncode == 2
    record = by_host(proc)["lab1"]
    assert record["status"] == "error" and "ib0" in record["summary"]
    assert snapshot(plab, "lab1") == before
