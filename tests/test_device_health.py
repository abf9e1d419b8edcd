"""validators/device_health.py and the vendors' host-side halves it runs (vendors/nvidia/hostside.py,
vendors/ascend/hostside.py): the parsers on the real H100 capture (and copies edited to carry one fault each), the
judgements, and the script run for real against the lab's simulated nvidia-smi / npu-smi for every outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelstack.errors import ConfigError
from accelstack.validate import load_registry, select
from accelstack.validate.device_floors import load_device_floors
from accelstack.vendors.ascend.parsers import parse_npu_smi_info
from accelstack.vendors.nvidia.parsers import parse_nvidia_smi_xml
from accelstack_lab.simulated import drop_device_command
from accelstack_lab.simulated.hostside import install

from .helpers import load_validator, load_vendor_hostside
from .labtools import bin_dir

REPO = Path(__file__).resolve().parent.parent
VALIDATORS = REPO / "src" / "accelstack" / "hostside" / "validators"
DATA = Path(__file__).resolve().parent / "data"
H100_XML = (DATA / "h100" / "nvidia_smi_q_x_h100_580.159.04.xml").read_text()
A100_XML = (DATA / "captures" / "derived_nvidia_smi_q_x_a100_535.54.03.xml").read_text()
NPU_TABLE = (DATA / "captures" / "npu_smi_info_910b3_a2_25.2.0.txt").read_text()
HOSTSIDE = REPO / "accelstack_lab" / "simulated" / "hostside"
NVIDIA_FLOORS = load_device_floors(vendor="nvidia")


health = load_validator("device_health")
nvidia = load_vendor_hostside("nvidia")
ascend = load_vendor_hostside("ascend")
common = load_validator("_common")
LIMITS = {**health.LIMITS, **nvidia.LIMITS, **ascend.LIMITS}


def edit(text: str, old: str, new: str, count: int = 1) -> str:
    """A copy of a capture with one fault written in; the edit must hit, or the test would prove nothing."""
    assert old in text, old
    return text.replace(old, new, count)


def gpus_of(text: str) -> list[dict]:
    return nvidia.parse_smi_xml(text)


# ----- the real H100 capture -----

def test_the_real_h100_capture_parses_and_agrees_with_the_facts_parser() -> None:
    (gpu,) = gpus_of(H100_XML)
    facts = parse_nvidia_smi_xml(H100_XML).gpus[0]
    assert (gpu["bus_id"], gpu["name"], gpu["ecc_mode"]) == (facts.bus_id, facts.product_name, facts.ecc_mode)
    assert gpu["temperature"]["gpu_c"] == facts.temperature_c == 37
    assert gpu["ecc"]["aggregate"] == {"uncorrectable": 0, "correctable": 122}
    assert gpu["remapped"]["correctable"] == 1 and gpu["remapped"]["pending"] is False
    assert gpu["retired"] == {"single_bit": None, "double_bit": None, "pending": None}  # N/A on Hopper
    assert gpu["reasons"]["gpu_idle"] is True and gpu["reasons"]["sw_power_cap"] is False
    assert gpu["temperature"]["tlimit_headroom_c"] == 50 and gpu["temperature"]["slow_tlimit_c"] == -2
    assert gpu["pcie"] == {"max_gen": 5, "current_gen": 5, "device_max_gen": 5, "max_width": 16,
                           "current_width": 16}


def test_the_real_h100_is_healthy_check_by_check() -> None:
    gpus = gpus_of(H100_XML)
    row = common.pick_row(NVIDIA_FLOORS["device_rows"], [g["name"] for g in gpus])
    assert row["sku"] == "H100 SXM"
    verdicts = {c["check"]: c["status"] for c in (
        nvidia.judge_ecc(gpus), nvidia.judge_remapped_rows(gpus), nvidia.judge_retired_pages(gpus, LIMITS),
        nvidia.judge_throttle(gpus, LIMITS), nvidia.judge_gpu_temperature(gpus, LIMITS),
        nvidia.judge_persistence(gpus), nvidia.judge_nvlink(gpus, row, "", 0))}
    # 122 lifetime correctable errors and one remapped row are the normal life of HBM, not a fault.
    assert verdicts == {"health.ecc": "pass", "health.remapped_rows": "pass", "health.retired_pages": "skip",
                        "health.throttle": "pass", "health.temperature": "pass", "health.persistence": "pass",
                        "health.nvlink": "skip"}


def test_ecc_volatile_fails_aggregate_warns_and_disabled_warns() -> None:
    volatile = edit(H100_XML, "<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>2</dram_uncorrectable>")
    check = nvidia.judge_ecc(gpus_of(volatile))
    assert check["status"] == "fail" and "gpu 0: 2 uncorrectable ECC error(s) since the driver loaded" in \
        check["summary"] and check["metrics"]["volatile_uncorrectable"] == 2 and "RMA" in check["remedy"]
    lifetime = H100_XML.replace("<dram_uncorrectable>0</dram_uncorrectable>\n\t\t\t\t<sram_threshold_exceeded>",
                                "<dram_uncorrectable>3</dram_uncorrectable>\n\t\t\t\t<sram_threshold_exceeded>")
    assert lifetime != H100_XML
    check = nvidia.judge_ecc(gpus_of(lifetime))
    assert check["status"] == "warn" and "3 uncorrectable ECC error(s) in its lifetime" in check["summary"]
    disabled = edit(H100_XML, "<current_ecc>Enabled</current_ecc>", "<current_ecc>Disabled</current_ecc>")
    assert nvidia.judge_ecc(gpus_of(disabled))["status"] == "warn"
    sram = edit(H100_XML, "<sram_threshold_exceeded>No", "<sram_threshold_exceeded>Yes")
    assert nvidia.judge_ecc(gpus_of(sram))["status"] == "fail"
    # A GPU without ECC counters (a workstation part) is not passed on counters it does not have.
    uncounted = H100_XML
    for scope in ("volatile", "aggregate"):
        start, end = uncounted.index(f"<{scope}>"), uncounted.index(f"</{scope}>")
        uncounted = uncounted[:start] + f"<{scope}>N/A" + uncounted[end:]
    assert nvidia.judge_ecc(gpus_of(uncounted))["status"] == "skip"


def test_remapped_rows_pending_and_failure_fail_and_exhausted_banks_warn() -> None:
    pending = edit(H100_XML, "<remapped_row_pending>No", "<remapped_row_pending>Yes")
    check = nvidia.judge_remapped_rows(gpus_of(pending))
    assert check["status"] == "fail" and "pending" in check["summary"] and check["metrics"]["pending"] == 1
    failure = edit(H100_XML, "<remapped_row_failure>No", "<remapped_row_failure>Yes")
    assert "row remapping failed" in nvidia.judge_remapped_rows(gpus_of(failure))["summary"]
    banks = edit(H100_XML, "<row_remapper_histogram_none>0", "<row_remapper_histogram_none>1")
    assert nvidia.judge_remapped_rows(gpus_of(banks))["status"] == "warn"
    # The A100 reference output reports remapped rows as N/A: nothing to judge there.
    assert nvidia.judge_remapped_rows(gpus_of(A100_XML))["status"] == "skip"


def test_retired_pages_on_a_pre_ampere_shape() -> None:
    counted = H100_XML.replace("<retired_count>N/A</retired_count>", "<retired_count>2</retired_count>")
    assert nvidia.judge_retired_pages(gpus_of(counted), LIMITS)["status"] == "warn"
    many = H100_XML.replace("<retired_count>N/A</retired_count>", "<retired_count>30</retired_count>")
    check = nvidia.judge_retired_pages(gpus_of(many), LIMITS)
    assert check["status"] == "fail" and "60 retired pages (>= 60)" in check["summary"]
    pending = edit(counted, "<pending_retirement>N/A", "<pending_retirement>Yes")
    assert "pending" in nvidia.judge_retired_pages(gpus_of(pending), LIMITS)["summary"]


def test_throttle_reasons_active_while_idle() -> None:
    hw = edit(H100_XML, "<clocks_event_reason_hw_slowdown>Not Active", "<clocks_event_reason_hw_slowdown>Active")
    check = nvidia.judge_throttle(gpus_of(hw), LIMITS)
    assert check["status"] == "fail" and "gpu 0: clocks held down by hw_slowdown" in check["summary"]
    cap = edit(H100_XML, "<clocks_event_reason_sw_power_cap>Not Active", "<clocks_event_reason_sw_power_cap>Active")
    assert nvidia.judge_throttle(gpus_of(cap), LIMITS)["status"] == "warn"
    # Under load the power cap is what it is for: not a finding.
    busy = edit(cap, "<gpu_util>0 %</gpu_util>", "<gpu_util>97 %</gpu_util>")
    assert nvidia.judge_throttle(gpus_of(busy), LIMITS)["status"] == "pass"
    # Older drivers name the section clocks_throttle_reasons.
    old = hw.replace("clocks_event_reason", "clocks_throttle_reason")
    assert nvidia.judge_throttle(gpus_of(old), LIMITS)["status"] == "fail"


def test_temperature_against_the_gpus_own_limit() -> None:
    hot = edit(H100_XML, "<gpu_temp_tlimit>50 C", "<gpu_temp_tlimit>5 C")
    check = nvidia.judge_gpu_temperature(gpus_of(hot), LIMITS)
    assert check["status"] == "warn" and "within 10 C of its slowdown limit" in check["summary"]
    at_limit = edit(H100_XML, "<gpu_temp_tlimit>50 C", "<gpu_temp_tlimit>-3 C")
    assert nvidia.judge_gpu_temperature(gpus_of(at_limit), LIMITS)["status"] == "fail"
    # The A100 reference output has no limit: the absolute fallback judges it.
    assert nvidia.judge_gpu_temperature(gpus_of(A100_XML), LIMITS)["status"] == "pass"
    hot_a100 = edit(A100_XML, "<gpu_temp>27 C", "<gpu_temp>93 C")
    assert nvidia.judge_gpu_temperature(gpus_of(hot_a100), LIMITS)["status"] == "fail"


def test_persistence_and_nvlink() -> None:
    off = edit(H100_XML, "<persistence_mode>Enabled", "<persistence_mode>Disabled")
    check = nvidia.judge_persistence(gpus_of(off))
    assert check["status"] == "warn" and "nvidia-persistenced" in check["remedy"]
    two = gpus_of(H100_XML) * 2
    two[1] = dict(two[1], index=1)
    row = {"sku": "H100 SXM", "nvlinks": 4}
    status = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)\n" + "".join(f"\t Link {i}: 26.562 GB/s\n" for i in range(4))
              + "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
              "\t Link 2: 26.562 GB/s\n\t Link 3: <inactive>\n")
    assert nvidia.parse_nvlink_status(status) == {0: {"active": 4, "inactive": []},
                                                  1: {"active": 2, "inactive": [1, 3]}}
    check = nvidia.judge_nvlink(two, row, status, 0)
    assert check["status"] == "fail" and check["summary"] == "gpu 1: 2 of 4 NVLinks active (down: 1,3)"
    assert nvidia.judge_nvlink(two, row, "nvidia-smi: NVML error", 3)["status"] == "error"
    assert nvidia.judge_nvlink(two, {"sku": "A100", "nvlinks": None}, "", 0)["status"] == "skip"


KERNEL_LOG = """[  10.1] nvidia: module license 'NVIDIA' taints kernel.
[1234.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
[1240.0] NVRM: Xid (PCI:0000:5e:00): 31, pid=77, name=python, Ch 00000008, intr 10000000. MMU Fault
[1300.0] input: Power Button as /devices/LNXSYSTM:00/input/input0
"""


def test_xid_severity_from_the_reference() -> None:
    xids = nvidia.parse_xids(KERNEL_LOG)
    assert [(b, x) for b, x, _ in xids] == [("0000:3b:00", 79), ("0000:5e:00", 31)]
    check = nvidia.judge_xids(KERNEL_LOG, 0, "dmesg")
    assert check["status"] == "fail" and check["summary"].startswith("Xid 79 (fallen off the bus): drain and reset")
    assert "Xid 31 (memory page fault) on 0000:5e:00" in check["summary"]
    assert nvidia.judge_xids(KERNEL_LOG.splitlines()[2], 0, "dmesg")["status"] == "warn"
    # The multi-line form with no Xid number, and the severity table's corners.
    assert nvidia.parse_xids("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.")[0][1] == 79
    assert nvidia.xid_severity(48)[0] == "fail" and nvidia.xid_severity(13)[0] == "warn"
    assert "not classified" in nvidia.xid_severity(999)[1]
    assert nvidia.judge_xids(KERNEL_LOG.splitlines()[3], 0, "dmesg")["status"] == "pass"
    refused = nvidia.judge_xids("dmesg: read kernel buffer failed: Operation not permitted", 1, "dmesg")
    assert refused["status"] == "error" and "dmesg_restrict" in refused["remedy"]


DRIVER_LOAD = "[ 90000.0] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n"


def test_xids_outside_the_window_or_before_a_driver_reload_are_history_not_failures() -> None:
    # KERNEL_LOG's Xid 79 is at 1234.5 s: with the host up 100000 s it is 27 h old, past the 24 h window.
    old = nvidia.judge_xids(KERNEL_LOG, 0, "dmesg", uptime_s=100000.0)
    assert old["status"] == "pass" and old["metrics"] == {"xids": 0, "xids_older": 2}, old
    assert "no Xid in the kernel log of the last 24.0 h (2 older Xid(s)" in old["summary"]
    assert old["evidence"]["older_xid_lines"][0].startswith("[1234.5] NVRM: Xid (PCI:0000:3b:00): 79")
    # The same log an hour after the Xid: judged, fatal, with its age.
    recent = nvidia.judge_xids(KERNEL_LOG, 0, "dmesg", uptime_s=1234.5 + 3600)
    assert recent["status"] == "fail" and "Xid 79 (fallen off the bus): drain and reset on 0000:3b:00 (1.0 h ago)" \
        in recent["summary"] and recent["metrics"] == {"xids": 2, "xids_older": 0}
    # A wider window (an inventory's health_xid_window_s) judges it again; no window judges every Xid since boot.
    assert nvidia.judge_xids(KERNEL_LOG, 0, "dmesg", uptime_s=100000.0, window_s=7 * 86400)["status"] == "fail"
    assert nvidia.judge_xids(KERNEL_LOG, 0, "dmesg", uptime_s=100000.0, window_s=None)["status"] == "fail"
    # A driver reload after the Xid (the repair): history even inside the window; a later Xid is judged again.
    reloaded = nvidia.judge_xids(KERNEL_LOG + DRIVER_LOAD, 0, "dmesg", uptime_s=91000.0, window_s=None)
    assert reloaded["status"] == "pass" and reloaded["evidence"]["driver_loaded_at_s"] == 90000.0, reloaded
    assert reloaded["summary"] == ("no Xid in the kernel log since the driver loaded (90000 s after boot) (2 older "
                                   "Xid(s) in the evidence: history, not judged)")
    again = KERNEL_LOG + DRIVER_LOAD + "[90500.0] NVRM: Xid (PCI:0000:3b:00): 48, pid=9, name=python, DBE\n"
    check = nvidia.judge_xids(again, 0, "dmesg", uptime_s=91000.0)
    assert check["status"] == "fail" and check["summary"].startswith("Xid 48 (double-bit ECC)")
    assert check["metrics"] == {"xids": 1, "xids_older": 2}
    # A recent memory page fault alone is still the warn it was.
    assert nvidia.judge_xids(KERNEL_LOG.splitlines()[2], 0, "dmesg", uptime_s=1300.0)["status"] == "warn"
    # Unknown uptime or an unstamped line cannot be aged: judged, never passed unread.
    assert nvidia.judge_xids(KERNEL_LOG, 0, "dmesg", uptime_s=None)["status"] == "fail"
    unstamped = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    assert nvidia.judge_xids(unstamped, 0, "dmesg", uptime_s=100000.0)["status"] == "fail"
    assert common.parse_uptime("350735.47 1400000.00\n") == 350735.47 and common.parse_uptime("") is None
    # journalctl -o short-monotonic stamps lines as dmesg does.
    journal = "[ 1234.500000] gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, fallen off the bus."
    assert common.log_seconds(journal) == 1234.5
    assert nvidia.judge_xids(journal, 0, "journalctl -k -b", uptime_s=100000.0)["status"] == "pass"


# ----- Ascend parsers on the reference capture -----

def test_npu_table_parser_agrees_with_the_facts_parser() -> None:
    chips, processes = ascend.parse_npu_table(NPU_TABLE)
    facts = parse_npu_smi_info(NPU_TABLE)
    assert [(c["npu_id"], c["health"], c["temp"], c["aicore"], c["hbm_used"], c["hbm_total"]) for c in chips] == \
        [(c.npu_id, c.health, c.temp_c, c.aicore_pct, c.hbm_used_mb, c.hbm_total_mb) for c in facts.chips]
    assert processes == [{"npu_id": 2, "pid": 1333928, "name": "?", "memory_mb": 37709}]
    assert ascend.judge_npu_status(chips, {})["status"] == "pass"
    assert ascend.judge_npu_temperature(chips, LIMITS)["summary"] == "8 NPU chip(s) at 32-38 C"
    # NPU 2 holds 41052 of 65536 MB for pid 1333928: in use, said so.
    check = ascend.judge_npu_hbm(chips, processes, LIMITS)
    assert check["status"] == "warn" and check["summary"] == "npu 2: 41052/65536 MB HBM in use by pid 1333928"
    assert ascend.judge_npu_aicore(chips, processes, LIMITS)["status"] == "pass"
    # The 310P table has no HBM column: nothing to judge there, rather than a missing HBM on every chip.
    p310, procs = ascend.parse_npu_table((DATA / "captures" / "npu_smi_info_310p3_23.0.rc3.txt").read_text())
    assert p310 and ascend.judge_npu_hbm(p310, procs, LIMITS)["status"] == "skip"
    chips[0] = dict(chips[0], hbm_total=None)
    assert ascend.judge_npu_hbm(chips, processes, LIMITS)["summary"].startswith("npu 0: no HBM reported")


def test_npu_ecc_and_health_judgements() -> None:
    ecc_text = "\tNPU ID                                   : 1\n\tHBM Double Bit Error Count               : 0\n" \
               "\tHBM Double Bit Aggregate Total Err Cnt   : 0\n"
    assert ascend.parse_kv(ecc_text)["HBM Double Bit Error Count"] == "0"
    assert ascend.judge_npu_ecc({1: ascend.parse_kv(ecc_text)})["status"] == "pass"
    assert ascend.judge_npu_ecc({1: {"HBM Double Bit Error Count": "1"}})["status"] == "fail"
    assert ascend.judge_npu_ecc({1: {"HBM Double Bit Aggregate Total Err Cnt": "4"}})["status"] == "warn"
    chips, _ = ascend.parse_npu_table(NPU_TABLE)
    chips[3]["health"] = "Critical"
    chips[5]["health"] = "Warning"
    check = ascend.judge_npu_status(chips, {3: {"Error Code": "80E01801"}})
    assert check["status"] == "fail" and check["summary"] == \
        "npu 3 chip 0: health Critical (error code 80E01801); npu 5 chip 0: health Warning"
    chips[6]["aicore"] = 60
    assert "npu 6: AI cores 60% busy with no process listed" in \
        ascend.judge_npu_aicore(chips, [], LIMITS)["summary"]


def test_registered_health_with_the_system_python_and_3_6_grammar() -> None:
    import ast

    by_check = {c: v for v in load_registry(VALIDATORS) for c in v.checks}
    assert by_check["health"].tier == "health" and by_check["health"].python == "system"
    assert "health" in {c for v in select(load_registry(VALIDATORS), "health") for c in v.checks}
    for path in (VALIDATORS / "device_health.py", HOSTSIDE / "nvidia_smi.py", HOSTSIDE / "npu_smi.py"):
        ast.parse(path.read_text(), feature_version=(3, 6))


# ----- the script, run for real against the simulated tools -----

def put_tool(folder: Path, name: str, source: str, **tokens: str) -> None:
    text = (HOSTSIDE / source).read_text()
    for key, value in tokens.items():
        text = text.replace(f"@@{key}@@", value)
    (folder / name).write_text(text)
    (folder / name).chmod(0o755)


def put_kernel_log(folder: Path, text: str, exit_status: int = 0) -> None:
    log = folder / "kernel.log"
    log.write_text(text)
    (folder / "dmesg").write_text(f"#!/bin/sh\ncat {log}\nexit {exit_status}\n")
    (folder / "dmesg").chmod(0o755)


@pytest.fixture()
def gpu_host(tmp_path: Path) -> Path:
    """Two simulated H100s on PATH and a clean kernel log; returns the devices file to fault."""
    folder = bin_dir(tmp_path)
    devices = tmp_path / "nvidia-devices.json"
    devices.write_text(json.dumps(install.nvidia_devices({"count": 2}, "580.159.04", "13.0")))
    put_tool(folder, "nvidia-smi", "nvidia_smi.py", DEVICES_FILE=str(devices))
    put_kernel_log(folder, "[ 1.0] Linux version 6.1.0\n")
    return devices


def run_health(tmp_path: Path, config: dict | None = None) -> dict[str, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELSTACK_SIM")}
    env.update(PATH=f"{bin_dir(tmp_path)}:/usr/bin:/bin", ACCELSTACK_SIM_ROOT=str(tmp_path / "no-root"))
    base = {"host": "n1", "vendor": "nvidia", "accelerator": "", **NVIDIA_FLOORS}
    proc = subprocess.run([sys.executable, str(VALIDATORS / "device_health.py"), json.dumps(config or base)],
                          env=env, capture_output=True, text=True, timeout=60)
    checks = json.loads(proc.stdout.strip().splitlines()[-1])["checks"]
    return {c["check"]: c for c in checks}


def fault(devices: Path, index: int, **values: object) -> None:
    doc = json.loads(devices.read_text())
    doc["devices"][index].update(values)
    devices.write_text(json.dumps(doc))


def test_script_passes_a_healthy_simulated_gpu_host(gpu_host: Path, tmp_path: Path) -> None:
    checks = run_health(tmp_path)
    assert {k: v["status"] for k, v in checks.items()} == {
        "health.ecc": "pass", "health.remapped_rows": "pass", "health.retired_pages": "skip",
        "health.throttle": "pass", "health.temperature": "pass", "health.persistence": "pass",
        "health.nvlink": "pass", "health.xid": "pass"}
    assert checks["health.nvlink"]["summary"] == "18 NVLinks active on each of 2 GPU(s)"
    assert checks["health.ecc"]["evidence"]["sku"] == "H100 SXM"


def test_script_fails_each_simulated_fault(gpu_host: Path, tmp_path: Path) -> None:
    subprocess.run(["sh", "-c", drop_device_command(1, vendor="nvidia", state="unhealthy", devices_file=str(gpu_host),
                                                    python=sys.executable)], check=True)
    fault(gpu_host, 0, remapped_row_pending="Yes", clocks_event_reasons=["gpu_idle", "hw_thermal_slowdown"],
          temperature_c=90, nvlinks_inactive=[5], persistence_mode="Disabled")
    put_kernel_log(bin_dir(tmp_path), KERNEL_LOG)
    checks = run_health(tmp_path)
    assert checks["health.ecc"]["status"] == "fail" and "gpu 1: 1 uncorrectable ECC error(s)" in \
        checks["health.ecc"]["summary"] and "gpu 1: the driver asks for a GPU reset" in checks["health.ecc"]["summary"]
    assert checks["health.remapped_rows"]["status"] == "fail" and "gpu 0" in checks["health.remapped_rows"]["summary"]
    assert checks["health.throttle"]["summary"] == "gpu 0: clocks held down by hw_thermal_slowdown"
    assert checks["health.temperature"]["status"] == "fail"  # 90 C, 3 C past an 87 C T.Limit: slowdown (-2)
    assert checks["health.persistence"]["status"] == "warn"
    assert checks["health.nvlink"]["summary"] == "gpu 0: 17 of 18 NVLinks active (down: 5)"
    assert checks["health.xid"]["status"] == "fail"


def test_script_warns_on_the_milder_faults(gpu_host: Path, tmp_path: Path) -> None:
    fault(gpu_host, 1, clocks_event_reasons=["gpu_idle", "sw_power_cap"], temperature_c=80,
          ecc_aggregate_uncorrectable=2)
    put_kernel_log(bin_dir(tmp_path), KERNEL_LOG.splitlines()[2] + "\n")
    checks = run_health(tmp_path)
    assert {k: checks[k]["status"] for k in ("health.throttle", "health.temperature", "health.ecc", "health.xid")} \
        == {"health.throttle": "warn", "health.temperature": "warn", "health.ecc": "warn", "health.xid": "warn"}


def test_script_errors_when_the_tool_is_missing_or_failing(gpu_host: Path, tmp_path: Path) -> None:
    gpu_host.write_text("{not json")  # the driver does not answer: nvidia-smi exits 9
    checks = run_health(tmp_path)
    assert list(checks) == ["health"] and checks["health"]["status"] == "error"
    assert "nvidia-smi -q -x failed (exit 9)" in checks["health"]["summary"]
    (bin_dir(tmp_path) / "nvidia-smi").unlink()
    checks = run_health(tmp_path)
    assert checks["health"]["status"] == "error" and "nvidia-smi not found" in checks["health"]["summary"]
    put_kernel_log(bin_dir(tmp_path), "dmesg: read kernel buffer failed: Operation not permitted\n", 1)


def test_script_errors_on_an_unreadable_kernel_log(gpu_host: Path, tmp_path: Path) -> None:
    put_kernel_log(bin_dir(tmp_path), "dmesg: read kernel buffer failed: Operation not permitted\n", 1)
    (bin_dir(tmp_path) / "journalctl").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir(tmp_path) / "journalctl").chmod(0o755)
    checks = run_health(tmp_path)
    assert checks["health.xid"]["status"] == "error" and checks["health.ecc"]["status"] == "pass"


def test_script_ages_xids_by_uptime_and_reads_the_journal_when_dmesg_is_refused(gpu_host: Path,
                                                                                tmp_path: Path) -> None:
    (tmp_path / "no-root" / "proc").mkdir(parents=True)
    (tmp_path / "no-root" / "proc" / "uptime").write_text("100000.00 190000.00\n")
    put_kernel_log(bin_dir(tmp_path), KERNEL_LOG)
    xid = run_health(tmp_path)["health.xid"]
    assert xid["status"] == "pass" and xid["metrics"] == {"xids": 0, "xids_older": 2}, xid["summary"]
    base = {"host": "n1", "vendor": "nvidia", "accelerator": "", **NVIDIA_FLOORS}
    wider = {**base, "device_health": {**NVIDIA_FLOORS["device_health"], "xid_window_s": 200000}}
    assert run_health(tmp_path, wider)["health.xid"]["status"] == "fail"
    # dmesg refused: journalctl's short-monotonic lines carry the same stamps; a recent one fails.
    put_kernel_log(bin_dir(tmp_path), "dmesg: read kernel buffer failed: Operation not permitted\n", 1)
    journal = bin_dir(tmp_path) / "journalctl"
    journal.write_text('#!/bin/sh\ncase "$*" in *short-monotonic*) ;; *) exit 2;; esac\n'
                       'echo "[99000.000000] gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, '
                       'GPU has fallen off the bus."\n')
    journal.chmod(0o755)
    xid = run_health(tmp_path)["health.xid"]
    assert xid["status"] == "fail" and "(0.3 h ago)" in xid["summary"], xid["summary"]


def test_script_skips_hosts_without_accelerators(tmp_path: Path) -> None:
    checks = run_health(tmp_path, {"host": "n1", "vendor": "cpu"})
    assert checks["health"]["status"] == "skip" and "cpu stack" in checks["health"]["summary"]
    checks = run_health(tmp_path, {"host": "n1"})  # no stack named and no vendor tool on the host
    assert checks["health"]["status"] == "skip" and "on this host: no accelerator" in checks["health"]["summary"]
    assert all(tool in checks["health"]["summary"] for tool in ("amd-smi", "npu-smi", "nvidia-smi"))


@pytest.fixture()
def npu_host(tmp_path: Path) -> Path:
    folder = bin_dir(tmp_path)
    devices = tmp_path / "ascend-devices.json"
    devices.write_text(json.dumps(install.ascend_devices({"count": 4})))
    put_tool(folder, "npu-smi", "npu_smi.py", DEVICES_FILE=str(devices), DRIVER_HOME=str(tmp_path / "driver"),
             FIRMWARE_HOME=str(tmp_path / "firmware"))
    return devices


def ascend_config() -> dict:
    return {"host": "n1", "vendor": "ascend", **load_device_floors(vendor="ascend")}


def test_script_on_a_simulated_npu_host(npu_host: Path, tmp_path: Path) -> None:
    checks = run_health(tmp_path, ascend_config())
    assert {k: v["status"] for k, v in checks.items()} == {
        "health.status": "pass", "health.ecc": "pass", "health.hbm": "pass", "health.temperature": "pass",
        "health.aicore": "pass"}
    fault(npu_host, 1, health="Critical", hbm_double_bit=1, temp_c=96)
    fault(npu_host, 2, health="Warning", hbm_used_mb=50000, aicore_pct=80, hbm_double_bit_aggregate=3)
    fault(npu_host, 3, hbm_used_mb=40000, processes=[{"pid": 4242, "name": "python", "memory_mb": 36600}])
    checks = run_health(tmp_path, ascend_config())
    assert checks["health.status"]["status"] == "fail" and checks["health.status"]["summary"] == \
        "npu 1 chip 0: health Critical (error code 80E01801); npu 2 chip 0: health Warning (error code 80E01801)"
    assert checks["health.ecc"]["status"] == "fail" and checks["health.ecc"]["metrics"] == \
        {"hbm_double_bit": 1, "hbm_double_bit_aggregate": 4}
    assert checks["health.temperature"]["status"] == "fail"
    assert checks["health.hbm"]["summary"] == ("npu 2: 50000/65536 MB HBM in use with no process listed; "
                                               "npu 3: 40000/65536 MB HBM in use by pid 4242")
    assert checks["health.aicore"]["summary"] == "npu 2: AI cores 80% busy with no process listed"


def test_script_errors_without_npu_smi_and_warns_on_a_warm_npu(npu_host: Path, tmp_path: Path) -> None:
    fault(npu_host, 0, temp_c=82)
    assert run_health(tmp_path, ascend_config())["health.temperature"]["status"] == "warn"
    (bin_dir(tmp_path) / "npu-smi").unlink()
    checks = run_health(tmp_path, ascend_config())
    assert checks["health"]["status"] == "error" and "npu-smi not found" in checks["health"]["summary"]


# ----- the per-SKU rows as data -----

def test_device_rows_have_sources_and_travel_per_vendor() -> None:
    import yaml

    from accelstack.errors import ConfigError
    from accelstack.paths import package_data
    from accelstack.vendors import vendors

    docs = [yaml.safe_load(package_data("thresholds.yml").read_text())]
    docs += [yaml.safe_load(path.read_text()) for path in (v.floors_file() for v in vendors()) if path]
    for doc in docs:  # every file names its own sources
        for row in doc.get("devices") or []:
            assert "vendor" not in row, row["sku"]  # the file it is in says whose it is
            for key in ("nvlinks_source", "matmul_source", "copy_source", "h2d_source", "pcie_source"):
                assert row[key] in doc["device_sources"], (row["sku"], key)
            for floor, ref in (("min_matmul_bf16_tflops", "ref_matmul_bf16_tflops"),
                               ("min_copy_tbps", "ref_copy_tbps")):
                if row[ref] is not None:  # 80 % of the reference figure unless a source says otherwise
                    assert row[floor] == pytest.approx(0.8 * row[ref], rel=0.01), (row["sku"], floor)
        if doc.get("device_health"):
            assert doc["device_health"]["source"] in doc["device_sources"]
    every = load_device_floors()
    assert set(every["device_health"]) >= {"temperature_warn_c", "max_retired_pages", "hbm_idle_used_fraction"}
    assert {"h100-capture", "npu-idle", "inferred-temperature"} <= set(every["device_sources"])
    assert "matmul_source" in every["device_rows"][0]
    floors = load_device_floors(vendor="nvidia")
    assert [r["sku"] for r in floors["device_rows"]] == ["H100/H200 NVL", "H100 SXM", "H200", "A100 SXM 80GB",
                                                          "A100 SXM", "A100"]
    # Substring matching with the more specific rows first: a PCIe NVL card is not held to 18 NVLinks, and a 40GB
    # A100 not to the 80GB part's memory bandwidth.
    by_name = {name: common.pick_row(floors["device_rows"], [name])["sku"] for name in (
        "NVIDIA H200 NVL", "NVIDIA H200", "NVIDIA H100 NVL", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB",
        "NVIDIA A100 80GB PCIe")}
    assert by_name == {"NVIDIA H200 NVL": "H100/H200 NVL", "NVIDIA H200": "H200", "NVIDIA H100 NVL": "H100/H200 NVL",
                       "NVIDIA A100-SXM4-40GB": "A100 SXM", "NVIDIA A100-SXM4-80GB": "A100 SXM 80GB",
                       "NVIDIA A100 80GB PCIe": "A100"}
    assert "matmul_source" not in floors["device_rows"][0] and "source" not in floors["device_health"]
    # A vendor's limits travel to its hosts with the shared ones, not another vendor's.
    assert "max_retired_pages" in floors["device_health"] and "temperature_fail_c" in floors["device_health"]
    assert "hbm_idle_used_fraction" not in floors["device_health"]
    assert load_device_floors(vendor="cpu") == {}
    mine = load_device_floors(vendor="nvidia", overrides=[{"sku": "H100 SXM (site)", "match": ["H100"],
                                                           "min_matmul_bf16_tflops": 700}])
    assert common.pick_row(mine["device_rows"], ["NVIDIA H100 80GB HBM3"])["sku"] == "H100 SXM (site)"
    with pytest.raises(ConfigError):
        load_device_floors(overrides=[{"match": ["H100"]}])
    with pytest.raises(ConfigError):
        load_device_floors(overrides={"rows": []})


def tag_paths(node: object, prefix: str = "") -> set[str]:
    import xml.etree.ElementTree as ET

    assert isinstance(node, ET.Element)
    paths = set()
    for child in node:
        path = f"{prefix}/{child.tag}" if prefix else child.tag
        paths.add(path)
        paths |= tag_paths(child, path)
    return paths


def test_the_simulated_health_sections_have_the_real_captures_shape(gpu_host: Path, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    smi = bin_dir(tmp_path) / "nvidia-smi"
    simulated = subprocess.run([str(smi), "-q", "-x"], capture_output=True, text=True, timeout=30).stdout
    real_gpu = ET.fromstring(H100_XML).find("gpu")
    sim_gpu = ET.fromstring(simulated).find("gpu")
    sections = ("persistence_mode", "clocks_event_reasons", "ecc_errors", "retired_pages", "remapped_rows",
                "temperature", "pci/pci_gpu_link_info", "utilization/gpu_util")
    real = {p for p in tag_paths(real_gpu) if p.startswith(sections)}
    simulated_paths = {p for p in tag_paths(sim_gpu) if p.startswith(sections)}
    # Every health tag the simulation prints is one the real H100 prints, and it leaves out only the ones nothing
    # here reads (SRAM sources, repair flags, memory-temperature limits, other utilisations).
    assert simulated_paths <= real, simulated_paths - real
    assert {"remapped_rows/remapped_row_pending", "ecc_errors/aggregate/dram_uncorrectable",
            "clocks_event_reasons/clocks_event_reason_hw_slowdown", "temperature/gpu_temp_tlimit",
            "retired_pages/pending_retirement"} <= simulated_paths


def test_script_on_the_real_h100_capture_replayed(tmp_path: Path) -> None:
    """The real host's nvidia-smi output, replayed by a stand-in that prints the capture: the verdicts a correct
    accelstack gives on that H100 (healthy; one GPU, so NVLink has no peer; no page retirement on Hopper)."""
    folder = bin_dir(tmp_path)
    capture = DATA / "h100" / "nvidia_smi_q_x_h100_580.159.04.xml"
    (folder / "nvidia-smi").write_text(f'#!/bin/sh\n[ "$1 $2" = "-q -x" ] && exec cat {capture}\nexit 2\n')
    (folder / "nvidia-smi").chmod(0o755)
    put_kernel_log(folder, "[ 5.1] nvidia-nvlink: Nvlink Core is being initialized\n")
    checks = run_health(tmp_path)
    assert {k: v["status"] for k, v in checks.items()} == {
        "health.ecc": "pass", "health.remapped_rows": "pass", "health.retired_pages": "skip",
        "health.throttle": "pass", "health.temperature": "pass", "health.persistence": "pass",
        "health.nvlink": "skip", "health.xid": "pass"}
    assert checks["health.ecc"]["metrics"] == {"volatile_uncorrectable": 0, "aggregate_uncorrectable": 0,
                                               "aggregate_correctable": 122}
    assert checks["health.temperature"]["summary"] == "1 GPU(s) at 37 C"


def test_host_config_carries_the_vendors_rows_and_the_cpu_stack_none() -> None:
    from accelstack.inventory import load_inventory
    from accelstack.stacks.context import resolve_contexts
    from accelstack.validate.config import host_config

    gpu = next(iter(resolve_contexts(load_inventory(str(REPO / "inventories" / "gpu8.yml")).select(None)).values()))
    config = host_config(gpu)
    assert config["vendor"] == "nvidia" and config["device_margin"] == 0.10
    assert common.pick_row(config["device_rows"], ["NVIDIA H100 80GB HBM3"], config["accelerator"])["nvlinks"] == 18
    assert config["device_health"]["max_retired_pages"] == 60
    local = next(iter(resolve_contexts(load_inventory(str(REPO / "inventories" / "local.yml")).select(None)).values()))
    assert "device_rows" not in host_config(local)
    assert "xid_window_s" not in config["device_health"]  # the script's own default (24 h) then
    gpu.vars["health_xid_window_s"] = 3600
    assert host_config(gpu)["device_health"]["xid_window_s"] == 3600
    gpu.vars["health_xid_window_s"] = "a day"
    with pytest.raises(ConfigError, match="health_xid_window_s: 'a day' is not a number"):
        host_config(gpu)


def test_script_on_the_real_910b3_table_with_an_npu_smi_that_has_no_ecc_query(tmp_path: Path) -> None:
    """The reference's real A2 table replayed by a stand-in npu-smi that refuses ``-t ecc`` (as a tool without
    that query would): the table's verdicts stand and ECC, which could not be read, is an error."""
    folder = bin_dir(tmp_path)
    capture = DATA / "captures" / "npu_smi_info_910b3_a2_25.2.0.txt"
    (folder / "npu-smi").write_text(f'#!/bin/sh\n[ "$*" = "info" ] && exec cat {capture}\n'
                                    'echo "Usage: npu-smi info" >&2\nexit 1\n')
    (folder / "npu-smi").chmod(0o755)
    checks = run_health(tmp_path, ascend_config())
    assert {k: v["status"] for k, v in checks.items()} == {
        "health.status": "pass", "health.ecc": "error", "health.hbm": "warn", "health.temperature": "pass",
        "health.aicore": "pass"}
    assert checks["health.ecc"]["summary"].startswith("npu-smi info -t ecc -i 0 failed (exit 1)")
    assert checks["health.hbm"]["summary"] == "npu 2: 41052/65536 MB HBM in use by pid 1333928"
