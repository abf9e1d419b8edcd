"""SIMULATED AMD Instinct devices for the lab's simulated ``amd-smi`` (``hostside/amd_smi.py``): the devices file it
reads, and the tool installed into a folder. Lab-only, named so; the product never imports it.

MI300X: 192 GB HBM3 (196592 MB as amd-smi reports it), gfx942, PCIe Gen5 x16, 750 W; MI250X: each of its two GCDs
a device of 64 GB HBM2e, gfx90a, Gen4 x16, 560 W per module (the vendors' datasheets; AMD vendor floors.yml).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

TOOL = Path(__file__).resolve().parent / "hostside" / "amd_smi.py"

SKUS: dict[str, dict[str, Any]] = {
    "MI300X": {"name": "AMD Instinct MI300X", "device_id": "0x74a1", "gfx": "gfx942", "compute_units": 304,
               "vram_total_mb": 196592, "max_pcie_width": 16, "max_pcie_speed": 32, "pcie_gen": 5,
               "power_cap_w": 750, "idle_power_w": 131, "slowdown_hotspot_c": 100, "slowdown_mem_c": 95,
               "vbios": "113-M3000100-102"},
    "MI250X": {"name": "AMD Instinct MI250X", "device_id": "0x740c", "gfx": "gfx90a", "compute_units": 110,
               "vram_total_mb": 65520, "max_pcie_width": 16, "max_pcie_speed": 16, "pcie_gen": 4,
               "power_cap_w": 560, "idle_power_w": 91, "slowdown_hotspot_c": 100, "slowdown_mem_c": 94,
               "vbios": "113-D65201-046"},
}
# The bus addresses of an 8-GPU MI300X platform's OAMs.
BUS_IDS = ("0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0", "0000:85:00.0", "0000:a6:00.0",
           "0000:c6:00.0", "0000:e5:00.0")


def amd_devices(spec: dict[str, Any], host: str = "lab") -> dict[str, Any]:
    """The simulated amd-smi's devices file: ``{"count": 8, "sku": "MI300X", "rocm": "6.2.2", "driver": "6.8.5",
    "format": "list" | "gpu_data"}``; every device healthy and idle."""
    count = int(spec.get("count", 8))
    sku = SKUS[str(spec.get("sku", "MI300X"))]
    devices = []
    for i in range(count):
        digest = hashlib.sha256(f"{host}/amd/{i}".encode()).hexdigest()
        devices.append({
            "index": i, "present": True, "name": sku["name"], "device_id": sku["device_id"], "gfx": sku["gfx"],
            "compute_units": sku["compute_units"], "bus_id": BUS_IDS[i] if i < len(BUS_IDS) else f"0000:{i:02x}:00.0",
            "uuid": f"{digest[:8]}-0000-1000-80{digest[8:10]}-{digest[10:22]}", "serial": "0x" + digest[:16].upper(),
            "vbios": sku["vbios"], "numa_node": 0 if i < max(1, count // 2) else 1,
            "vram_total_mb": sku["vram_total_mb"], "vram_used_mb": 283, "max_pcie_width": sku["max_pcie_width"],
            "max_pcie_speed": sku["max_pcie_speed"], "pcie_gen": sku["pcie_gen"], "pcie_width": sku["max_pcie_width"],
            "pcie_speed": 2.5, "power_cap_w": sku["power_cap_w"], "power_w": sku["idle_power_w"] + i % 3,
            "slowdown_hotspot_c": sku["slowdown_hotspot_c"], "slowdown_mem_c": sku["slowdown_mem_c"],
            "temp_hotspot": 38 + i % 4, "temp_mem": 31 + i % 3, "gfx_activity": 0, "ecc_correctable": 0,
            "ecc_uncorrectable": 0, "ecc_deferred": 0, "bad_pages": [], "processes": []})
    return {"simulated": True, "vendor": "amd", "rocm": str(spec.get("rocm", "6.2.2")),
            "driver": str(spec.get("driver", "6.8.5")), "format": str(spec.get("format", "list")),
            "devices": devices}


def install_amd_smi(folder: Path, devices_file: Path) -> Path:
    """The simulated amd-smi as ``folder/amd-smi``, reading ``devices_file``."""
    tool = folder / "amd-smi"
    tool.write_text(TOOL.read_text().replace("@@DEVICES_FILE@@", str(devices_file)))
    tool.chmod(0o755)
    return tool


def fault(devices_file: Path, index: int, **values: Any) -> None:
    """Write a fault into one simulated device (the knobs: hostside/amd_smi.py's docstring)."""
    doc = json.loads(devices_file.read_text())
    doc["devices"][index].update(values)
    devices_file.write_text(json.dumps(doc))
