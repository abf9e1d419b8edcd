"""validators/device_perf.py: judging on recorded figures (the H100 capture's 793 TFLOP/s and 3.03 TB/s), the
PCIe link readers and judgement, timing with device events after a warm-up (through a device module that records
what it is asked), the measurements run on the cpu device, and the script's skip and error paths run for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelstack.validate import load_registry
from accelstack.validate.device_floors import load_device_floors

from .helpers import load_validator, load_vendor_hostside

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parent.parent
VALIDATORS = REPO / "src" / "accelstack" / "hostside" / "validators"
REFERENCE = (Path(__file__).resolve().parent / "data" / "h100" / "plain_torch_reference.txt").read_text()


perf = load_validator("device_perf")
nvidia = load_vendor_hostside("nvidia")
FLOORS = load_device_floors(vendor="nvidia")
H100 = perf.pick_row(FLOORS["device_rows"], ["NVIDIA H100 80GB HBM3"])


def plain_torch_figures() -> dict:
    line = next(x for x in REFERENCE.splitlines() if x.startswith("PLAIN_JSON "))
    return json.loads(line[len("PLAIN_JSON "):])


# ----- judging recorded figures -----

def test_the_h100_reference_figures_pass_their_own_floors() -> None:
    figures = plain_torch_figures()
    assert H100["sku"] == "H100 SXM"
    matmul = perf.judge_floor("perf.matmul", {"cuda:0": figures["matmul_bf16_8192_TFLOPs"]},
                              H100["min_matmul_bf16_tflops"], FLOORS["device_margin"], "TFLOP/s", "bf16 matmul",
                              H100["sku"])
    copy = perf.judge_floor("perf.copy", {"cuda:0": figures["d2d_copy_TBps_rw"]}, H100["min_copy_tbps"],
                            FLOORS["device_margin"], "TB/s", "device copy", H100["sku"])
    assert matmul["status"] == copy["status"] == "pass"
    assert matmul["metrics"]["min"] == pytest.approx(793.037, abs=1e-3)
    # The floors are 80 % of what plain torch measured on that H100, as thresholds.yml says.
    assert H100["min_matmul_bf16_tflops"] == pytest.approx(0.8 * figures["matmul_bf16_8192_TFLOPs"], rel=0.01)
    assert H100["min_copy_tbps"] == pytest.approx(0.8 * figures["d2d_copy_TBps_rw"], rel=0.01)


@pytest.mark.parametrize(("values", "status", "words"), [
    ({"cuda:0": 793.0, "cuda:1": 790.1}, "pass", "above the 634 TFLOP/s floor for H100 SXM"),
    ({"cuda:0": 793.0, "cuda:1": 650.0}, "warn", "cuda:1 within 10% of the 634 TFLOP/s floor"),
    ({"cuda:0": 793.0, "cuda:1": 410.0}, "fail", "cuda:1 below the 634 TFLOP/s floor for H100 SXM"),
    ({"cuda:0": 793.0, "cuda:1": "OutOfMemoryError: CUDA out of memory"}, "error", "not measured on cuda:1"),
    ({"cuda:0": "RuntimeError: boom"}, "error", "bf16 matmul not measured: cuda:0: RuntimeError: boom"),
])
def test_floor_judgement(values: dict, status: str, words: str) -> None:
    check = perf.judge_floor("perf.matmul", values, 634, 0.10, "TFLOP/s", "bf16 matmul", "H100 SXM")
    assert check["status"] == status and words in check["summary"], check["summary"]
    if status == "fail":
        assert "health" in check["remedy"]


def test_no_floor_reports_without_judging() -> None:
    ascend = load_device_floors(vendor="ascend")
    row = perf.pick_row(ascend["device_rows"], ["Ascend910B3"])
    check = perf.judge_floor("perf.copy", {"npu:0": 1.2}, row["min_copy_tbps"], 0.1, "TB/s", "copy", row["sku"])
    assert check["status"] == "pass" and "not judged: no floor for 910B" in check["summary"]
    unknown = perf.judge_floor("perf.copy", {"cuda:0": 0.5}, None, 0.1, "TB/s", "copy")
    assert "unknown SKU" in unknown["summary"]
    assert perf.pick_row(FLOORS["device_rows"], ["NVIDIA A100-SXM4-80GB"])["sku"] == "A100 SXM 80GB"
    assert perf.pick_row(FLOORS["device_rows"], ["NVIDIA A100 80GB PCIe"])["nvlinks"] is None
    assert perf.pick_row(FLOORS["device_rows"], ["Tesla T4"], "H200")["sku"] == "H200"  # the inventory says


# ----- PCIe link -----

def test_link_readers() -> None:
    assert [perf.pcie_gen(s) for s in ("32.0 GT/s PCIe", "16.0 GT/s PCIe", "8.0 GT/s PCIe", "5.0 GT/s",
                                       "2.5 GT/s PCIe", "Unknown", "")] == [5, 4, 3, 2, 1, None, None]
    assert nvidia.parse_smi_link("5, 5, 16, 16\n") == {"current_gen": 5, "max_gen": 5, "current_width": 16,
                                                      "max_width": 16}
    assert nvidia.parse_smi_link("[N/A], 5, 16, 16")["current_gen"] is None
    assert nvidia.parse_smi_link("") is None


def test_sysfs_link_is_read_under_the_simulation_root(tmp_path: Path) -> None:
    folder = tmp_path / "sys/bus/pci/devices/0000:18:00.0"
    folder.mkdir(parents=True)
    for name, value in (("current_link_speed", "16.0 GT/s PCIe"), ("max_link_speed", "32.0 GT/s PCIe"),
                        ("current_link_width", "8"), ("max_link_width", "16")):
        (folder / name).write_text(value + "\n")
    link = perf.read_sysfs_link("0000:18:00.0", str(tmp_path / "sys/bus/pci/devices"))
    assert link == {"current_gen": 4, "max_gen": 5, "current_width": 8, "max_width": 16}
    assert perf.read_sysfs_link("0000:99:00.0", str(tmp_path))["max_gen"] is None


def link(cur_g: int, max_g: int, cur_w: int, max_w: int, under_load: bool = True) -> dict:
    return {"current_gen": cur_g, "max_gen": max_g, "current_width": cur_w, "max_width": max_w,
            "under_load": under_load, "source": "sysfs"}


def test_link_judgement() -> None:
    assert perf.judge_link({"cuda:0": link(5, 5, 16, 16)}, H100)["status"] == "pass"
    narrow = perf.judge_link({"cuda:0": link(5, 5, 16, 16), "cuda:1": link(5, 5, 8, 16)}, H100)
    assert narrow["status"] == "fail" and narrow["summary"] == "cuda:1: link trained at x8 of x16"
    slow = perf.judge_link({"cuda:0": link(3, 5, 16, 16)}, H100)
    assert slow["status"] == "fail" and "Gen3 of Gen5 under load" in slow["summary"]
    idle = perf.judge_link({"cuda:0": link(1, 5, 16, 16, under_load=False)}, H100)
    assert idle["status"] == "warn" and "read while idle" in idle["summary"]
    slot = perf.judge_link({"cuda:0": link(4, 4, 16, 16)}, H100)
    assert slot["status"] == "warn" and "tops out at Gen4; H100 SXM is Gen5" in slot["summary"]
    unreadable = perf.judge_link({"cuda:0": link(None, None, 16, 16)}, H100)  # type: ignore[arg-type]
    assert unreadable["status"] == "error"


# ----- timing and measuring -----

class RecordingDevice:
    """A device module as torch.cuda / torch.npu present it (Event(enable_timing=True), synchronize), recording
    the order of what the timer does; each timed window lasts 250 ms by its events."""

    def __init__(self) -> None:
        self.log: list[str] = []
        device = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing, "timing events need enable_timing=True"

            def record(self) -> None:
                device.log.append("record")

            def synchronize(self) -> None:
                device.log.append("event-sync")

            def elapsed_time(self, end: object) -> float:
                return 250.0

        self.Event = Event

    def synchronize(self) -> None:
        self.log.append("sync")


def test_timing_uses_device_events_after_the_warm_up() -> None:
    device = RecordingDevice()
    seconds, seen = perf.timed(device, "cuda", lambda: device.log.append("op"), iters=3, warmup=2,
                               during=lambda: device.log.append("read-link") or "link")
    assert seconds == 0.25 and seen == "link"
    assert device.log == ["op", "op", "sync", "record", "op", "op", "op", "record", "read-link", "event-sync"]


def test_measurements_on_the_cpu_device_give_figures_in_their_units() -> None:
    cpu = perf.device_module(torch, "cpu")
    flops = perf.measure_matmul(torch, cpu, "cpu", torch.device("cpu"), 64, 2, 1)
    copy = perf.measure_copy(torch, cpu, "cpu", torch.device("cpu"), 1 << 20, 2, 1)
    h2d, d2h, seen = perf.measure_transfers(torch, cpu, "cpu", torch.device("cpu"), 1 << 16, 2, 1, 2,
                                            lambda: {"read": True})
    assert all(isinstance(v, float) and v > 0 for v in (flops, copy, h2d, d2h)) and seen == {"read": True}


class CpuAsGpus:
    """torch's cpu device presented as two GPUs of a named SKU with PCI addresses, so main()'s whole loop runs
    here: every call it makes on a device module is one torch.cuda and torch.npu also answer."""

    def __init__(self, name: str = "NVIDIA H100 80GB HBM3") -> None:
        self.name, self.current = name, None
        self.synchronize = torch.cpu.synchronize

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 2

    def get_device_name(self, index: int) -> str:
        return self.name

    def set_device(self, index: int) -> None:
        self.current = index

    def get_device_properties(self, index: int) -> object:
        return type("Props", (), {"pci_domain_id": 0, "pci_bus_id": 0x18 + index, "pci_device_id": 0})()


def sysfs_links(root: Path, links: dict[str, tuple[str, str, str, str]]) -> None:
    for address, values in links.items():
        folder = root / "sys/bus/pci/devices" / address
        folder.mkdir(parents=True)
        for name, value in zip(("current_link_speed", "max_link_speed", "current_link_width", "max_link_width"),
                               values, strict=True):
            (folder / name).write_text(value + "\n")


def test_main_measures_every_device_and_judges_against_the_sku(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.setattr(perf, "device_module", lambda _torch, kind: CpuAsGpus())
    monkeypatch.setenv("ACCELSTACK_SIM_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvidia-smi: the links come from sysfs
    sysfs_links(tmp_path, {"0000:18:00.0": ("32.0 GT/s PCIe", "32.0 GT/s PCIe", "16", "16"),
                           "0000:19:00.0": ("32.0 GT/s PCIe", "32.0 GT/s PCIe", "8", "16")})
    config = {"host": "n1", "vendor": "nvidia", "device_kind": "cpu", "perf_matmul_n": 64, "perf_copy_mb": 1,
              "perf_transfer_mb": 1, "perf_iters": 2, "perf_warmup": 1, "perf_link_load_iters": 2, **FLOORS}
    checks = {c["check"]: c for c in perf.main(config)}
    assert sorted(checks) == ["perf.copy", "perf.d2h", "perf.h2d", "perf.matmul", "perf.pcie"]
    # A cpu is far below an H100's floors: the judgement is the H100 row's, per device.
    assert checks["perf.matmul"]["status"] == "fail" and "below the 634 TFLOP/s floor for H100 SXM" in \
        checks["perf.matmul"]["summary"]
    assert set(checks["perf.copy"]["metrics"]["per_device"]) == {"cpu:0", "cpu:1"}
    assert checks["perf.h2d"]["metrics"]["floor"] == 52
    assert checks["perf.pcie"]["status"] == "fail" and checks["perf.pcie"]["summary"] == \
        "cpu:1: link trained at x8 of x16"
    assert checks["perf.pcie"]["metrics"]["links"]["cpu:0"] == "Gen5 x16 of Gen5 x16"
    assert checks["perf.matmul"]["evidence"]["sku"] == "H100 SXM"


# ----- the script, run for real -----

def run_perf(config: dict, pythonpath: str | None = None) -> dict[str, dict]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([sys.executable, str(VALIDATORS / "device_perf.py"), json.dumps(config)], env=env,
                          capture_output=True, text=True, timeout=120)
    return {c["check"]: c for c in json.loads(proc.stdout.strip().splitlines()[-1])["checks"]}


def test_registered_standard_with_the_stacks_python() -> None:
    by_check = {c: v for v in load_registry(VALIDATORS) for c in v.checks}
    assert by_check["perf"].tier == "standard" and by_check["perf"].python == "stack"


def test_script_skips_on_the_cpu_stack() -> None:
    checks = run_perf({"host": "n1", "vendor": "cpu"})
    assert checks["perf"]["status"] == "skip" and "cpu stack" in checks["perf"]["summary"]


def test_script_errors_without_a_device_or_with_a_broken_torch(tmp_path: Path) -> None:
    # This machine's torch is a cpu build (in-process: a second torch import would cost seconds).
    (check,) = perf.main({"host": "n1", "vendor": "nvidia", **FLOORS})
    assert check["check"] == "perf" and check["status"] == "error" and "torch sees no cuda device" in check["summary"]
    broken = tmp_path / "site" / "torch"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise OSError('libcudart.so.13: cannot open shared object file')\n")
    checks = run_perf({"host": "n1", "vendor": "nvidia"}, pythonpath=str(tmp_path / "site"))
    assert checks["perf"]["status"] == "error" and "libcudart.so.13" in checks["perf"]["summary"]


def test_the_link_is_read_from_the_simulated_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from accelstack_lab.simulated.hostside import install

    hostside = REPO / "accelstack_lab" / "simulated" / "hostside"
    devices = tmp_path / "devices.json"
    doc = install.nvidia_devices({"count": 2}, "580.159.04", "13.0")
    doc["devices"][1].update(pcie_current_gen=3, pcie_current_width=8)
    devices.write_text(json.dumps(doc))
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python3").symlink_to(sys.executable)
    (folder / "nvidia-smi").write_text((hostside / "nvidia_smi.py").read_text().replace("@@DEVICES_FILE@@",
                                                                                         str(devices)))
    (folder / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    # torch gives lowercase hex (0x2a); the tool is asked in its own spelling.
    assert nvidia.pcie_link("0000:18:00.0") == {"current_gen": 5, "max_gen": 5, "current_width": 16,
                                                  "max_width": 16}
    read = perf.link_reader("nvidia", "0000:2a:00.0")
    link = read()
    assert (link["current_gen"], link["current_width"], link["source"], link["under_load"]) == (3, 8, "nvidia-smi",
                                                                                                  True)
    check = perf.judge_link({"cuda:1": link}, H100)
    assert check["status"] == "fail" and check["summary"] == \
        "cuda:1: link trained at x8 of x16; cuda:1: link at Gen3 of Gen5 under load"
