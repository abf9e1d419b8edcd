"""The AMD ROCm vendor (``accelstack.vendors.amd``), the proof that a vendor is a folder.

- its host-side reads (``vendors/amd/hostside.py``) on the real amd-smi outputs AMD and users published
  (tests/data/amd/SOURCES.md): amd-smi's JSON is its text's tree with the keys in lower case, so a documented text
  output, read by the control side's text parser and written as JSON, is what the host side reads;
- every outcome each health check can give (pass, warn, fail, error, skip), from those outputs with one fault
  written in;
- the health validator run for real against the lab's simulated amd-smi (both JSON shapes), a held device that a
  check skips naming its holder, the devices and memory checks judged on the control side;
- the facts read from a probe document, the components a stack pins, its compatibility rows and its stack;
- RCCL's path: vendor ``amd`` takes torch's accelerator path with a backend that, like RCCL, refuses CPU tensors.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from accelstack.facts.assemble import parse_probe_document
from accelstack.validate.device_floors import load_device_floors
from accelstack.vendors import get_vendor, vendor_of_pci
from accelstack.vendors.amd import parsers
from accelstack_lab.simulated.amd import amd_devices, fault, install_amd_smi

from .helpers import load_validator, load_vendor_hostside
from .labtools import bin_dir

REPO = Path(__file__).resolve().parent.parent
VALIDATORS = REPO / "src" / "accelstack" / "hostside" / "validators"
DATA = Path(__file__).resolve().parent / "data" / "amd"
AMD_FLOORS = load_device_floors(vendor="amd")

amd = load_vendor_hostside("amd")
health = load_validator("device_health")
LIMITS = {**health.LIMITS, **amd.LIMITS}


def as_json(name: str) -> str:
    """A documented text output of amd-smi as the JSON amd-smi prints for it (lower-case keys)."""
    return json.dumps(parsers.parse_amd_smi_text((DATA / name).read_text()))


def read(name: str) -> str:
    return (DATA / name).read_text()


ECC_TEXT = as_json("amd_smi_metric_ecc_rocm6.1.1_changelog.txt")
THROTTLE_TEXT = as_json("amd_smi_metric_throttle_mi300_rocm6.3_changelog.txt")
POWER_JSON = read("amd_smi_metric_power_rocm6.1_changelog.json")
LIMIT_TEXT = as_json("amd_smi_static_limit_rocm6.2_changelog.txt")
STATIC_MI300A = as_json("amd_smi_static_mi300a_amdsmi_readme.txt")


def metric_gpu(**sections: Any) -> dict[str, Any]:
    """One GPU of ``amd-smi metric --json`` joined from the real sections (ECC, power, throttle), with edits."""
    ecc = json.loads(ECC_TEXT)[0]
    power = json.loads(POWER_JSON)[0]
    throttle = json.loads(THROTTLE_TEXT)[0]
    node = {"gpu": 0, "ecc": ecc["ecc"], "ecc_blocks": ecc["ecc_blocks"], "power": power["power"],
            "throttle": throttle["throttle"], "usage": {"gfx_activity": {"value": 0, "unit": "%"}},
            "temperature": {"edge": "N/A", "hotspot": {"value": 45, "unit": "C"}, "mem": {"value": 40, "unit": "C"}},
            "pcie": {"width": 16, "speed": {"value": 2.5, "unit": "GT/s"}}}
    for path, value in sections.items():
        target = node
        keys = path.split("__")
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = value
    return node


def gpus(*nodes: dict[str, Any]) -> list[dict]:
    return amd.parse_metric(json.dumps(list(nodes)))


STATIC = amd.parse_static(LIMIT_TEXT)  # GPU 0: 203 W cap, slowdown hotspot 110 C, VRAM 100 C


# ----- the host side's parsers on the real outputs ------------------------------------------------------------

def test_the_host_side_reads_the_documented_metric_sections() -> None:
    (ecc,) = amd.parse_metric(ECC_TEXT)
    assert ecc["ecc"] == {"uncorrectable": 0, "deferred": 0, "correctable": 0}
    assert set(ecc["ecc_blocks"]) == {"umc", "sdma"} and set(ecc["ecc_blocks"].values()) == {0}
    throttled = amd.parse_metric(THROTTLE_TEXT)
    assert [g["index"] for g in throttled] == [0, 1]
    assert throttled[0]["violations"] == {"prochot": False, "ppt": False, "socket_thermal": False,
                                          "vr_thermal": False, "hbm_thermal": False}
    (power,) = amd.parse_metric(POWER_JSON)
    assert power["power"] == {"socket_w": 10, "throttle_status": "UNTHROTTLED", "management": "ENABLED"}
    assert power["temperature"] == {"edge": None, "hotspot": None, "mem": None}  # not in a -p read: unknown


def test_the_host_side_reads_static_limits_and_the_bus_and_agrees_with_the_facts_parser() -> None:
    assert STATIC[0]["slowdown_hotspot_c"] == 110 and STATIC[0]["slowdown_mem_c"] == 100
    assert STATIC[0]["power_cap_w"] == 203 and STATIC[1]["power_cap_w"] == 213
    host = amd.parse_static(STATIC_MI300A)
    facts = parsers.parse_amd_smi_static(read("amd_smi_static_mi300a_amdsmi_readme.txt"))
    assert [(h["name"], h["bus_id"], h["max_pcie_width"], h["max_pcie_speed_gts"])
            for _, h in sorted(host.items())] == [(g.name, g.bus_id, g.pcie_width_max, g.pcie_speed_max_gts)
                                                  for g in facts]
    assert host[0]["slowdown_hotspot_c"] == 100 and host[0]["power_cap_w"] == 550
    assert host[0]["bad_page_threshold_exceeded"] is None  # the MI300A output has no such field


def test_the_host_side_reads_processes_as_the_facts_parser_does() -> None:
    for name in ("amd_smi_process_rocm6.2_changelog.json", "amd_smi_process_sudo_rocm6.2_changelog.txt"):
        text = read(name) if name.endswith(".json") else as_json(name)
        host = [dict(p, gpu=g) for g, procs in amd.parse_processes(text).items() for p in procs]
        assert host == parsers.parse_amd_smi_processes(read(name)), name
    assert amd.parse_processes(as_json("amd_smi_process_sudo_rocm6.2_changelog.txt"))[0][0]["memory_mib"] == 10342


def test_json_in_the_gpu_data_wrapper_and_after_a_warning_reads_the_same() -> None:
    wrapped = "WARNING: User is missing the following required groups: render, video.\n" + json.dumps(
        {"gpu_data": json.loads(POWER_JSON)})
    assert amd.parse_metric(wrapped) == amd.parse_metric(POWER_JSON)
    with pytest.raises(ValueError, match="amd-smi metric: no JSON document"):
        amd.parse_metric("Error: amdgpu driver not loaded\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        amd.parse_metric('[{"gpu": 0, ')


# ----- the outcome tables -------------------------------------------------------------------------------------

def test_ecc_outcomes() -> None:
    assert amd.judge_ecc(gpus(metric_gpu()))["status"] == "pass"
    ecc = json.loads(ECC_TEXT)[0]
    bad = copy.deepcopy(ecc)
    bad["ecc"]["total_uncorrectable_count"] = "2"
    bad["ecc_blocks"]["umc"]["uncorrectable_count"] = "2"
    check = amd.judge_ecc(gpus(metric_gpu(ecc=bad["ecc"], ecc_blocks=bad["ecc_blocks"])))
    assert check["status"] == "fail" and check["summary"] == "gpu 0: 2 uncorrectable ECC error(s) in UMC"
    assert check["metrics"]["uncorrectable"] == 2 and "RMA" in check["remedy"]
    deferred = dict(ecc["ecc"], total_deferred_count="1")
    check = amd.judge_ecc(gpus(metric_gpu(ecc=deferred)))
    assert check["status"] == "warn" and "deferred" in check["summary"]
    unsupported = {k: "N/A" for k in ecc["ecc"]}
    assert amd.judge_ecc(gpus(metric_gpu(ecc=unsupported)))["status"] == "skip"


def test_bad_pages_outcomes() -> None:
    one = gpus(metric_gpu())
    clean = {0: {"retired": 0, "pending": 0, "unreservable": 0}}
    assert amd.judge_bad_pages(one, STATIC, clean, 0, "", LIMITS)["status"] == "pass"
    pages = amd.parse_bad_pages(json.dumps([{"gpu": 0, "retired": [
        {"page_address": "0x1000", "page_size": "4 KB", "status": "RESERVED"}] * 3}]))
    assert pages == {0: {"retired": 3, "pending": 0, "unreservable": 0}}
    check = amd.judge_bad_pages(one, STATIC, pages, 0, "", LIMITS)
    assert check["status"] == "warn" and check["summary"] == "gpu 0: 3 retired page(s)"
    many = {0: {"retired": int(LIMITS["max_bad_pages"]), "pending": 0, "unreservable": 0}}
    assert amd.judge_bad_pages(one, STATIC, many, 0, "", LIMITS)["status"] == "fail"
    pending = amd.parse_bad_pages(json.dumps([{"gpu": 0, "retired": [{"status": "PENDING"}],
                                               "un_res": [{"page_address": "0x2000"}]}]))
    check = amd.judge_bad_pages(one, STATIC, pending, 0, "", LIMITS)
    assert check["status"] == "fail" and "pending" in check["summary"] and "could not be retired" in check["summary"]
    exceeded = {0: dict(STATIC[0], bad_page_threshold_exceeded=True)}
    assert amd.judge_bad_pages(one, exceeded, clean, 0, "", LIMITS)["status"] == "fail"
    assert amd.judge_bad_pages(one, exceeded, {}, 1, "boom", LIMITS)["status"] == "fail"
    assert amd.judge_bad_pages(one, STATIC, {}, 2, "bad-pages: not supported on this GPU", LIMITS)["status"] == "skip"
    check = amd.judge_bad_pages(one, STATIC, {}, 13, "Permission denied", LIMITS)
    assert check["status"] == "error" and "amd-smi bad-pages failed (exit 13" in check["summary"]


def test_temperature_outcomes_against_the_gpus_own_limits() -> None:
    assert amd.judge_temperature(gpus(metric_gpu()), STATIC, LIMITS)["status"] == "pass"
    warm = amd.judge_temperature(gpus(metric_gpu(temperature__hotspot={"value": 104, "unit": "C"})), STATIC, LIMITS)
    assert warm["status"] == "warn" and "within 10 C of its slowdown temperature 110 C" in warm["summary"]
    hot = amd.judge_temperature(gpus(metric_gpu(temperature__mem="101 C")), STATIC, LIMITS)
    assert hot["status"] == "fail" and hot["summary"] == "gpu 0: HBM 101 C >= its slowdown temperature 100 C"
    # Without the GPU's own limits (static did not answer), the absolute fallbacks.
    assert amd.judge_temperature(gpus(metric_gpu(temperature__hotspot=92)), {}, LIMITS)["status"] == "fail"
    unknown = metric_gpu(temperature={"edge": "N/A", "hotspot": "N/A", "mem": "N/A"})
    assert amd.judge_temperature(gpus(unknown), STATIC, LIMITS)["status"] == "skip"


def test_throttle_outcomes() -> None:
    assert amd.judge_throttle(amd.parse_metric(THROTTLE_TEXT), LIMITS)["status"] == "pass"
    thermal = metric_gpu(throttle__socket_thermal_violation_status="ACTIVE")
    check = amd.judge_throttle(gpus(thermal), LIMITS)
    assert check["status"] == "fail" and check["summary"] == "gpu 0: clocks held down by socket_thermal"
    ppt = metric_gpu(throttle__ppt_violation_status="ACTIVE")
    assert amd.judge_throttle(gpus(ppt), LIMITS)["status"] == "warn"
    busy = metric_gpu(throttle__ppt_violation_status="ACTIVE", usage={"gfx_activity": {"value": 97, "unit": "%"}})
    assert amd.judge_throttle(gpus(busy), LIMITS)["status"] == "pass"  # power-capped under load is normal
    # Before MI300 (no violation statuses): THROTTLE_STATUS while idle.
    (older,) = amd.parse_metric(POWER_JSON)
    assert amd.judge_throttle([older], LIMITS)["status"] == "pass"
    throttled = json.loads(POWER_JSON)
    throttled[0]["power"]["throttle_status"] = "THROTTLED"
    assert amd.judge_throttle(amd.parse_metric(json.dumps(throttled)), LIMITS)["status"] == "warn"
    silent = metric_gpu(throttle={}, power__throttle_status="N/A")
    assert amd.judge_throttle(gpus(silent), LIMITS)["status"] == "skip"


def test_power_outcomes() -> None:
    check = amd.judge_power(amd.parse_metric(POWER_JSON), STATIC, LIMITS)
    assert check["status"] == "pass" and check["summary"] == "1 GPU(s) at 10 W"
    near_cap = metric_gpu(power__socket_power={"value": 195, "unit": "W"})
    check = amd.judge_power(gpus(near_cap), STATIC, LIMITS)
    assert check["status"] == "warn" and check["summary"] == "gpu 0: 195 W of its 203 W cap while idle"
    assert amd.judge_power(gpus(metric_gpu(power__power_management="DISABLED")), STATIC, LIMITS)["status"] == "warn"
    assert amd.judge_power(gpus(metric_gpu(power__socket_power="N/A")), STATIC, LIMITS)["status"] == "skip"


def test_pcie_outcomes_judge_width_not_the_idle_speed() -> None:
    static = amd.parse_static(STATIC_MI300A)  # x16 Gen5 maximum
    check = amd.judge_pcie(gpus(metric_gpu()), static)
    assert check["status"] == "pass"  # 2.5 GT/s at idle is the GPU saving power, not a fault
    narrow = amd.judge_pcie(gpus(metric_gpu(pcie={"width": 8, "speed": "32 GT/s"})), static)
    assert narrow["status"] == "fail" and narrow["summary"] == "gpu 0: PCIe link x8 of x16"
    assert amd.judge_pcie(gpus(metric_gpu(pcie={"width": "N/A", "speed": "N/A"})), static)["status"] == "skip"
    assert amd.pcie_gen(32) == 5 and amd.pcie_gen(16.0) == 4 and amd.pcie_gen(None) is None


# ----- the validator, run for real against the lab's simulated amd-smi --------------------------------------

@pytest.fixture()
def amd_host(tmp_path: Path) -> Path:
    """Two simulated MI300X on PATH; returns the devices file to fault."""
    devices = tmp_path / "amd-devices.json"
    devices.write_text(json.dumps(amd_devices({"count": 2})))
    install_amd_smi(bin_dir(tmp_path), devices)
    return devices


def run_script(tmp_path: Path, script: str, config: dict[str, Any], **env: str) -> dict[str, dict]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ACCELSTACK_SIM")}
    environ.update(PATH=f"{bin_dir(tmp_path)}:/usr/bin:/bin", ACCELSTACK_SIM_ROOT=str(tmp_path / "no-root"), **env)
    proc = subprocess.run([sys.executable, str(VALIDATORS / script), json.dumps(config)], env=environ,
                          capture_output=True, text=True, timeout=120)
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"checks"')]
    assert lines, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return {c["check"]: c for c in json.loads(lines[-1])["checks"]}


def run_health(tmp_path: Path) -> dict[str, dict]:
    return run_script(tmp_path, "device_health.py", {"host": "n1", "vendor": "amd", "accelerator": "", **AMD_FLOORS})


HEALTHY = {"health.ecc": "pass", "health.bad_pages": "pass", "health.temperature": "pass", "health.throttle": "pass",
           "health.power": "pass", "health.pcie": "pass"}


@pytest.mark.parametrize("shape", ["list", "gpu_data"])
def test_script_passes_a_healthy_simulated_mi300x_host(tmp_path: Path, shape: str) -> None:
    devices = tmp_path / "amd-devices.json"
    devices.write_text(json.dumps(amd_devices({"count": 2, "format": shape})))
    install_amd_smi(bin_dir(tmp_path), devices)
    checks = run_health(tmp_path)
    assert {k: v["status"] for k, v in checks.items()} == HEALTHY, {k: v["summary"] for k, v in checks.items()}
    assert checks["health.ecc"]["evidence"]["sku"] == "MI300X"
    assert checks["health.temperature"]["summary"] == "2 GPU(s) at 38-39 C (hotspot)"


def test_script_fails_each_simulated_fault(amd_host: Path, tmp_path: Path) -> None:
    fault(amd_host, 0, ecc_uncorrectable=3, temp_hotspot=101, violations={"hbm_thermal": "ACTIVE"}, pcie_width=8)
    fault(amd_host, 1, bad_pages=[{"status": "PENDING"}])
    checks = run_health(tmp_path)
    assert {k: v["status"] for k, v in checks.items()} == {
        "health.ecc": "fail", "health.bad_pages": "fail", "health.temperature": "fail", "health.throttle": "fail",
        "health.power": "pass", "health.pcie": "fail"}
    assert checks["health.ecc"]["summary"] == "gpu 0: 3 uncorrectable ECC error(s) in UMC"
    assert checks["health.bad_pages"]["summary"] == ("gpu 1: 1 page retirement(s) pending (they apply at the next "
                                                     "GPU reset)")
    assert checks["health.throttle"]["summary"] == "gpu 0: clocks held down by hbm_thermal"


def test_script_warns_on_the_milder_faults(amd_host: Path, tmp_path: Path) -> None:
    fault(amd_host, 0, ecc_deferred=1, temp_hotspot=93, power_w=700, bad_pages=[{"status": "RESERVED"}] * 2)
    checks = run_health(tmp_path)
    assert {k: checks[k]["status"] for k in ("health.ecc", "health.temperature", "health.power",
                                              "health.bad_pages")} == dict.fromkeys(
        ("health.ecc", "health.temperature", "health.power", "health.bad_pages"), "warn")


def test_script_errors_when_amd_smi_is_missing_or_fails(amd_host: Path, tmp_path: Path) -> None:
    amd_host.write_text("{not json")  # the driver does not answer: the simulated amd-smi exits 1
    checks = run_health(tmp_path)
    assert list(checks) == ["health"] and checks["health"]["status"] == "error"
    assert "amd-smi metric failed (exit 1)" in checks["health"]["summary"]
    (bin_dir(tmp_path) / "amd-smi").unlink()
    checks = run_health(tmp_path)
    assert checks["health"]["status"] == "error" and "amd-smi not found" in checks["health"]["summary"]


def test_script_without_a_vendor_finds_amd_smi_on_the_host(amd_host: Path, tmp_path: Path) -> None:
    checks = run_script(tmp_path, "device_health.py", {"host": "n1", **AMD_FLOORS})
    assert {k: v["status"] for k, v in checks.items()} == HEALTHY


# ----- a device someone else holds: skip, naming the holder --------------------------------------------------

def test_a_foreign_process_makes_the_torch_check_skip_naming_it(amd_host: Path, tmp_path: Path) -> None:
    fault(amd_host, 0, processes=[{"pid": 4242, "name": "python3", "vram_mb": 81920}], vram_used_mb=82203)
    check = run_script(tmp_path, "torch_devices.py", {"host": "n1", "vendor": "amd"})["torch_devices"]
    assert check["status"] == "skip", check
    assert check["summary"] == ("gpu 0 is in use by pid 4242 python3 (81920 MiB): the torch check of device 0 "
                                "skipped: a device another process holds is not touched")
    # HIP_VISIBLE_DEVICES renumbers: torch's device 0 is GPU 1 there, which nobody holds.
    free = run_script(tmp_path, "torch_devices.py", {"host": "n1", "vendor": "amd"}, HIP_VISIBLE_DEVICES="1")
    assert free["torch_devices"]["status"] != "skip", free


# ----- the control side: devices and memory checks, facts, components, compat -----------------------------------

def simulated(tmp_path: Path, *args: str) -> str:
    return subprocess.run([str(bin_dir(tmp_path) / "amd-smi"), *args], capture_output=True, text=True,
                          check=True).stdout


def test_device_memory_names_busy_gpus_and_foreign_processes(amd_host: Path, tmp_path: Path) -> None:
    vendor = get_vendor("amd")
    idle = vendor.device_memory(simulated(tmp_path, "metric", "--json"), simulated(tmp_path, "process", "--json"), 0.9)
    assert (idle.devices, idle.busy, idle.processes) == (2, [], [])
    fault(amd_host, 1, processes=[{"pid": 77, "name": "train.py", "vram_mb": 180000}], vram_used_mb=180283)
    held = vendor.device_memory(simulated(tmp_path, "metric", "--json"), simulated(tmp_path, "process", "--json"), 0.9)
    assert held.busy == ["gpu 1: 180283/196592 MiB used"]
    assert held.processes == ["pid 77 train.py on gpu 1 (180000 MiB)"]
    assert vendor.device_memory("garbage", "", 0.9).devices == 0  # not understood: the judge's error


def test_the_devices_check_counts_what_amd_smi_lists(amd_host: Path, tmp_path: Path) -> None:
    check = run_script(tmp_path, "devices.py", {"host": "n1", "vendor": "amd"})["devices"]
    assert check["evidence"]["tool_exit"] == 0 and len(check["evidence"]["gpus"]) == 2
    assert get_vendor("amd").device_counts("", check["evidence"]) == (2, [])
    fault(amd_host, 1, present=False)
    check = run_script(tmp_path, "devices.py", {"host": "n1", "vendor": "amd"})["devices"]
    assert get_vendor("amd").device_counts("", check["evidence"]) == (1, [])


def probe_document(sections: dict[str, str], files: dict[str, str | None]) -> dict[str, Any]:
    return {"probe": 2, "sections": {name: {"rc": 0, "out": out, "cmd": name} for name, out in sections.items()},
            "files": files}


PCI = json.dumps([{"slot": "0000:05:00.0", "vendor": "0x1002", "device": "0x74a1", "class": "0x120000"},
                  {"slot": "0000:26:00.0", "vendor": "0x1002", "device": "0x74a1", "class": "0x120000"},
                  {"slot": "0000:c4:00.1", "vendor": "0x1002", "device": "0xab30", "class": "0x040300"}])


def test_facts_of_a_dkms_host_from_the_probe(amd_host: Path, tmp_path: Path) -> None:
    doc = probe_document({"amd_smi_static": simulated(tmp_path, "static", "--json"), "pci": PCI},
                         {"/sys/module/amdgpu/version": "6.8.5\n", "/opt/rocm/.info/version": "6.2.2-116\n"})
    facts = parse_probe_document(doc)
    section = facts.section("amd")
    assert (section.driver_version, section.rocm, len(section.gpus)) == ("6.8.5", "6.2.2", 2)
    assert section.gpus[0].name == "AMD Instinct MI300X" and section.gpus[0].memory_total_mib == 196592
    vendor = get_vendor("amd")
    # The audio function of a GPU has AMD's vendor id too; only the accelerators are the vendor's.
    assert [d.bus_id for d in facts.accelerators if vendor.owns(d)] == ["0000:05:00.0", "0000:26:00.0"]
    assert vendor.device_count(facts) == 2
    assert vendor.facts_rows(section) == [("amd", "amdgpu 6.8.5, ROCm 6.2.2, 2 GPU(s): AMD Instinct MI300X")]
    reads = {c.key: c.read(facts) for c in vendor.components()}
    assert reads == {"torch_rocm": None, "amdgpu_driver": "6.8.5", "rocm": "6.2.2"}


def test_facts_of_an_in_tree_driver_host_keep_the_kernel_release() -> None:
    doc = probe_document({"amd_smi_static": read("amd_smi_static_mi300a_amdsmi_readme.txt"),
                          "amd_smi_version": read("amd_smi_version_mi300x_rocm6.4_k8s_device_plugin_157.txt")},
                         {"/sys/module/amdgpu/version": None, "/opt/rocm/.info/version": "6.4.0-47\n"})
    facts = parse_probe_document(doc)
    section = facts.section("amd")
    assert section.driver_version is None and section.kernel_driver == "6.9.0-rc5+"
    assert (section.rocm, section.smi_rocm, len(section.gpus)) == ("6.4.0", "6.4.0", 4)
    assert get_vendor("amd").facts_rows(section)[0][1].startswith("amdgpu in-tree (6.9.0-rc5+), ROCm 6.4.0")


def test_facts_from_rocm_smi_where_amd_smi_is_not_there() -> None:
    facts = parse_probe_document(probe_document(
        {"rocm_smi": read("rocm_smi_product_use_vram_rx7900xt_marimo_9237.json")}, {}))
    assert [g.name for g in facts.section("amd").gpus] == ["Radeon RX 7900 XT"]


def test_a_host_without_anything_amd_has_no_amd_section() -> None:
    facts = parse_probe_document(probe_document({}, {"/sys/module/amdgpu/version": None}))
    assert facts.section("amd") is None


def test_torch_rocm_is_read_from_torch_version_hip() -> None:
    assert parsers.hip_release("6.2.41133-dd7f95766") == "6.2"
    assert parsers.hip_release(None) is None

    class Torch:
        hip = "6.2.41134-65d174c3e"

    class Facts:
        torch = Torch()

        def section(self, name: str) -> None:
            return None

    component = next(c for c in get_vendor("amd").components() if c.key == "torch_rocm")
    assert component.read(Facts()) == "6.2" and component.with_torch


def test_the_vendor_says_rccl_runs_under_torchs_nccl_backend_on_the_cuda_device_type() -> None:
    vendor = get_vendor("amd")
    assert (vendor.backend, vendor.torch_device, vendor.torch_plugin) == ("nccl", "cuda", None)
    assert vendor.socket_ifname_env == "NCCL_SOCKET_IFNAME"  # RCCL reads NCCL's variables
    assert vendor.visible_devices_env == ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
    assert vendor_of_pci("0x1002") == "amd" and vendor_of_pci("0x1022") is None  # 0x1022: AMD's CPUs
    assert "librccl.so.1" in vendor.required_symbols
    assert vendor.library_dirs({"venv": "/opt/accelstack/venv"}, {}) == [
        "/opt/accelstack/venv/lib/python3*/site-packages/torch/lib", "/opt/rocm/lib"]


def test_the_env_check_takes_hip_and_rocr_visible_devices() -> None:
    env = load_validator("env")
    assert "HIP_VISIBLE_DEVICES" in {k for m in env.vendor_modules() for k in m.VISIBLE_DEVICES}
    assert "ROCR_VISIBLE_DEVICES" in {k for m in env.vendor_modules() for k in m.VISIBLE_DEVICES}


def test_the_amd_stack_passes_preflight_and_a_mismatched_one_does_not() -> None:
    from accelstack.stacks.compat import check_components, check_stack
    from accelstack.stacks.model import load_stack

    stack = load_stack("amd-mi300x-rocm6.2")
    assert (stack.vendor, stack.backend) == ("amd", "nccl") and check_stack(stack) == []
    pins = {"torch": "2.6.0+rocm6.2.4", "torch_rocm": "6.2", "rocm": "6.2.4", "python": "3.11"}
    assert check_components(pins, "amd") == []  # hip says 6.2 for the +rocm6.2.4 wheel: the same build
    wrong = {"torch": "2.6.0+rocm6.3", "torch_rocm": "6.3", "python": "3.11"}
    assert [v.rule for v in check_components(wrong, "amd")] == ["torch-rocm-variant"]
    cpu = check_components({"torch": "2.5.1+cpu", "python": "3.11"}, "amd")
    assert [v.rule for v in cpu] == ["torch-rocm-variant"] and "CPU build" in cpu[0].message
    from dataclasses import replace

    from accelstack.stacks.model import Pin
    older = replace(stack, pins={**stack.pins, "rocm": Pin("rocm", "5.7.1", "prefix")})
    assert [v.rule for v in check_stack(older)] == ["device-rocm"]


def test_the_roles_install_the_driver_then_rocm_before_the_shared_ones() -> None:
    from accelstack.provision.roles import load_roles, select_roles

    roles = load_roles()
    assert [r.name for r in select_roles(roles, "amd")] == ["amdgpu_driver", "rocm", "python_env", "env"]
    assert roles["amdgpu_driver"].path.parent == get_vendor("amd").folder / "roles"
    assert [s.spec["component"] for s in roles["amdgpu_driver"].steps + roles["rocm"].steps] == [
        "amdgpu_driver", "rocm"]
    assert [r.name for r in select_roles(roles, "nvidia")][-2:] == ["python_env", "env"]


def test_the_diagnosis_tables_name_hip_rccl_and_amdgpu_failures() -> None:
    from accelstack.diagnose.tables import load_tables

    tables = load_tables()
    expect = {"HIP error: invalid device function": ("hip:hipErrorInvalidDeviceFunction",
                                                     "torch-build-mismatch"),
              "no ROCm-capable device is detected": ("hip:hipErrorNoDevice", "no-device"),
              "HIP failure": ("rccl:HIP failure", "nccl-internal"),
              "uncorrectable hardware errors detected": ("amdgpu-kernel:uncorrectable hardware errors detected",
                                                         "device-hardware")}
    for literal, (row_id, cause) in expect.items():
        row = tables.by_literal[literal]
        assert (row.id, row.cause, row.vendor) == (row_id, cause, "amd"), literal


# ----- RCCL's path: torch's accelerator path with a backend that refuses CPU tensors ----------------------------

FAKE = Path(__file__).resolve().parent / "fake_accelerator"


def test_collective_init_on_an_amd_stack_binds_the_device_like_rccl_needs() -> None:
    """RCCL, like NCCL, takes only device tensors. The amd vendor registers no torch plugin (ROCm's torch is a
    cuda-type build), so the validator must take torch's accelerator path on its own: here on the fake accelerator,
    with the ``refusing`` backend that raises NCCL's error for a CPU tensor (tests/fake_accelerator)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "LOCAL_", "WORLD_SIZE", "MASTER_"))}
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo",
               PYTHONPATH=os.pathsep.join([str(FAKE), env.get("PYTHONPATH", "")]))
    config = {"mode": "init", "backend": "refusing", "vendor": "amd", "deadline_s": 90}
    proc = subprocess.run([sys.executable, str(VALIDATORS / "collectives.py"), json.dumps(config)], env=env,
                          capture_output=True, text=True, timeout=150, cwd=str(REPO))
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"checks"')]
    assert lines, (proc.returncode, proc.stderr[-2000:])
    check = json.loads(lines[-1])["checks"][0]
    assert check["status"] == "pass", check
    assert check["evidence"]["device_id"] == "fakeaccel:0" and check["evidence"]["backend"] == "refusing"
