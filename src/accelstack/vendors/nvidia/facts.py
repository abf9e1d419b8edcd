"""NVIDIA's part of a host's facts: the loaded driver, the GPUs ``nvidia-smi`` lists, the CUDA toolkit, the system
NCCL; kept in a host's facts JSON under ``nvidia`` (read by :mod:`.reading`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class NvidiaGpu:
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    bus_id: str | None = None  # as nvidia-smi prints it: 8-hex-digit domain, 00000000:00:09.0
    driver_version: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    temperature_c: float | None = None
    utilization_pct: float | None = None


@dataclass
class NvidiaFacts:
    driver_version: str | None = None
    gpus: list[NvidiaGpu] = field(default_factory=list)
    cuda: str | None = (
        None  # the installed toolkit (version.json, version.txt, else nvcc), not the driver's max
    )
    nccl: str | None = None  # the system NCCL (component system_nccl); torch wheels carry their own
    nccl_libraries: list[str] = field(default_factory=list)
    nccl_loader_library: str | None = None  # the libnccl.so.2 the dynamic loader gives a program (ldconfig -p)
