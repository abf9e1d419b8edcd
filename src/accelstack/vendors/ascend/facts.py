"""Ascend's part of a host's facts: the HDK driver and firmware, CANN (toolkit, kernels, NNAL), ``npu-smi``'s NPUs
and processes; kept in a host's facts JSON under ``ascend`` (read by :mod:`.reading`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class NpuChip:
    """One row pair of ``npu-smi info``: an NPU's chip (A3 boards show two chips per NPU id)."""

    npu_id: int
    chip_id: int | None = None
    phy_id: int | None = None
    name: str | None = None
    health: str | None = None
    power_w: float | None = None
    temp_c: float | None = None
    bus_id: str | None = None
    aicore_pct: float | None = None
    memory_used_mb: int | None = None
    memory_total_mb: int | None = None
    hbm_used_mb: int | None = None
    hbm_total_mb: int | None = None
    hugepages_used: int | None = None
    hugepages_total: int | None = None


@dataclass
class NpuProcess:
    npu_id: int
    chip_id: int | None
    pid: int
    name: str = ""
    memory_mb: int | None = None


@dataclass
class AscendFacts:
    driver: str | None = None  # driver version.info package_version, else Version
    driver_ascendhal: str | None = None
    driver_compatible_cann: list[str] = field(default_factory=list)  # innerversion families, V100R001C21
    firmware: str | None = None  # firmware version.info Version, e.g. 7.7.0.1.231
    cann_toolkit: str | None = None  # release name, 8.1.RC1
    cann_internal: str | None = None  # internal number from version.cfg, 7.7.0.1.238
    cann_innerversion: str | None = None  # V100R001C21SPC001B238
    cann_kernels: str | None = None
    nnal: str | None = None
    npu_smi_version: str | None = None
    npus: list[NpuChip] = field(default_factory=list)
    processes: list[NpuProcess] = field(default_factory=list)
