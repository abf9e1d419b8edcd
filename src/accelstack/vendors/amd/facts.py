"""AMD's part of a host's facts: the loaded amdgpu driver, the GPUs ``amd-smi`` lists, the ROCm release at
``/opt/rocm``; kept in a host's facts JSON under ``amd`` (read by :mod:`.reading`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AmdGpu:
    index: int | None = None
    name: str | None = None  # asic.market_name (AMD Instinct MI300X), else the board's product name
    device_id: str | None = None  # PCI device id, 0x74a1
    bus_id: str | None = None  # as amd-smi prints it: 0000:83:00.0
    gfx: str | None = None  # the target graphics version (gfx942, gfx90a): what ROCm's kernels are built for
    vbios: str | None = None  # VBIOS (IFWI from amd-smi 26) version
    driver_version: str | None = None  # what amd-smi reports for the driver: the module, or the kernel's release
    memory_total_mib: int | None = None
    pcie_width_max: int | None = None
    pcie_speed_max_gts: float | None = None  # GT/s: 32 is Gen5
    numa_node: int | None = None


@dataclass
class AmdFacts:
    driver_version: str | None = None  # the loaded amdgpu module (/sys/module/amdgpu/version): DKMS builds only
    kernel_driver: str | None = None  # what amd-smi names instead when the driver is the kernel's own (in-tree)
    rocm: str | None = None  # /opt/rocm/.info/version, without its build number (6.2.0)
    smi_rocm: str | None = None  # the ROCm release `amd-smi version` reports for its library
    gpus: list[AmdGpu] = field(default_factory=list)
