"""Drift on lab hosts whose installed versions the test sets: the real version files at the real paths (in the
formats the vendor writes) and pip metadata in the stack's venv, read back by `inv drift` over SSH."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from accelstack.inventory import load_inventory
from accelstack.transport.fanout import HostPool
from accelstack_lab.simulated import formats, versions

from .helpers import run_cli

STACK = "ascend-910b-cann8.1.rc1"
VENV = "/opt/accelstack/venv"


def installed_files(*, driver: str, firmware: str, cann: str, arch: str = "x86_64") -> dict[str, str]:
    release = versions.cann_release(cann)
    toolkit = "/usr/local/Ascend/ascend-toolkit/latest"
    return {
        "/usr/local/Ascend/driver/version.info": formats.driver_version_info(versions.driver_release(driver)),
        "/usr/local/Ascend/firmware/version.info":
            formats.firmware_version_info(versions.firmware_release(firmware, driver)),
        f"{toolkit}/{arch}-linux/ascend_toolkit_install.info": formats.toolkit_install_info(release, arch),
        f"{toolkit}/version.cfg": formats.version_cfg(release, ("runtime", "opp_kernel")),
        f"{toolkit}/opp_kernel/version.info": formats.component_version_info(release, "opp_kernel"),
        "/usr/local/Ascend/nnal/atb/latest/version.info": formats.nnal_version_info(cann, arch),
    }


def dist_info(name: str, version: str) -> dict[str, str]:
    site = f"{VENV}/lib/python3.11/site-packages"
    return {f"{site}/{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
            f"{site}/{name}-{version}.dist-info/RECORD": ""}


def put_files(transport: object, files: dict[str, str]) -> None:
    script = ["set -e"]
    for path, text in files.items():
        script.append(f"mkdir -p {shlex.quote(str(Path(path).parent))}")
        script.append(f"printf %s {shlex.quote(text)} > {shlex.quote(path)}")
    transport.run("; ".join(script), check=True, timeout=60)  # type: ignore[attr-defined]


@pytest.fixture()
def ascend_host(healthy_lab: object, tmp_path: Path):  # type: ignore[no-untyped-def]
    """lab1 named as an Ascend 8.1.RC1 host in an inventory of its own; its /usr/local and /opt cleaned after."""
    doc = yaml.safe_load(healthy_lab.inventory.read_text())  # type: ignore[attr-defined]
    doc["vars"]["stack"] = STACK
    path = tmp_path / "ascend.yml"
    path.write_text(yaml.safe_dump(doc))
    host = load_inventory(str(path)).select("lab1")[0]
    with HostPool() as pool:
        transport = pool.connect(host)
        transport.run(f"rm -rf /usr/local/Ascend {VENV} && /usr/bin/python3 -m venv --without-pip {VENV}",
                      check=True, timeout=120)
        yield path, transport
        transport.run(f"rm -rf /usr/local/Ascend {VENV}", timeout=60)


def drift_records(inventory: Path, tmp_path: Path) -> tuple[int, dict[str, dict]]:
    proc = run_cli("drift", "--inventory", str(inventory), "--limit", "lab1", "--json",
                   env={"ACCELSTACK_RUNS": str(tmp_path / "runs")})
    assert proc.returncode in (0, 1), proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, {r["check"]: r for r in records}


def test_a_host_at_its_pins_shows_no_drift(ascend_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inventory, transport = ascend_host
    put_files(transport, {**installed_files(driver="24.1.rc2", firmware="7.3.0.1.231", cann="8.1.RC1"),
                          **dist_info("torch", "2.5.1"), **dist_info("torch_npu", "2.5.1")})
    code, records = drift_records(inventory, tmp_path)
    statuses = {check: r["status"] for check, r in records.items()}
    assert code == 0, statuses
    for component in ("ascend_driver", "ascend_firmware", "cann_toolkit", "torch", "torch_npu", "python"):
        assert statuses[f"drift.{component}"] == "pass", records[f"drift.{component}"]


def test_an_older_cann_under_the_pinned_torch_npu_fails_with_the_rule(ascend_host,  # type: ignore[no-untyped-def]
                                                                       tmp_path: Path) -> None:
    inventory, transport = ascend_host
    # The failure this tool exists to prevent: torch_npu 2.5.1 on CANN 8.0.RC2.
    put_files(transport, {**installed_files(driver="24.1.rc2", firmware="7.3.0.1.231", cann="8.0.RC2"),
                          **dist_info("torch", "2.5.1"), **dist_info("torch_npu", "2.5.1")})
    code, records = drift_records(inventory, tmp_path)
    assert code == 1
    cann = records["drift.cann_toolkit"]
    assert cann["status"] == "fail"
    assert "8.0.RC2" in cann["summary"] and "torch_npu" in cann["summary"]
    assert cann["remedy"] and "inv provision --limit lab1" in cann["remedy"]
    assert records["drift.torch_npu"]["status"] == "pass"  # the component that moved is the one blamed


def test_a_newer_driver_than_pinned_is_a_warning_not_a_failure(ascend_host,  # type: ignore[no-untyped-def]
                                                               tmp_path: Path) -> None:
    inventory, transport = ascend_host
    put_files(transport, {**installed_files(driver="25.0.rc1.1", firmware="7.3.0.1.231", cann="8.1.RC1"),
                          **dist_info("torch", "2.5.1"), **dist_info("torch_npu", "2.5.1")})
    code, records = drift_records(inventory, tmp_path)
    assert records["drift.ascend_driver"]["status"] == "warn", records["drift.ascend_driver"]
    assert "25.0.rc1.1" in records["drift.ascend_driver"]["summary"]
    assert code == 0
