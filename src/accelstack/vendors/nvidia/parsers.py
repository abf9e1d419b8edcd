"""NVIDIA's pure parsers: ``/proc/driver/nvidia/version``, ``nvidia-smi`` (CSV, ``-q -x``, ``topo -m``), the CUDA
toolkit's version files and ``nvcc``, NCCL's header and library names, the dynamic loader's cache. Text ->
dataclasses, no I/O; the error policy of :mod:`accelstack.facts.parsers` (structured formats raise ValueError,
human-oriented text is read leniently). Every sample they were written against is under ``tests/data/`` with its
source, and each has a case under ``tests/data/facts/<parser>/``.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..parsing import NA as _NA
from ..parsing import load_json as _load_json
from ..parsing import number as _num
from ..parsing import snippet as _snippet
from ..parsing import whole as _int
from .facts import NvidiaGpu

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

def parse_nvidia_proc_version(text: str) -> str | None:
    """``/proc/driver/nvidia/version`` -> the loaded kernel module's version (proprietary or open). Lenient."""
    match = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text or "")
    return match.group(1) if match else None


NVIDIA_QUERY_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "driver_version",
    "memory.total",
    "memory.used",
    "temperature.gpu",
    "utilization.gpu",
)


def parse_nvidia_smi_csv(text: str) -> list[NvidiaGpu]:
    """``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``. Lenient.

    With a header line, columns are matched by name (units in brackets dropped), so any field order works;
    without one, the probe's order (:data:`NVIDIA_QUERY_FIELDS`) is assumed. Lines with too few fields (the
    "NVIDIA-SMI has failed" message) are skipped.
    """
    rows = [r for r in csv.reader((text or "").splitlines(), skipinitialspace=True) if r]
    if not rows:
        return []
    columns: list[str] = list(NVIDIA_QUERY_FIELDS)
    first = [c.strip() for c in rows[0]]
    if "name" in first or "uuid" in first or "index" in first:
        columns = [re.sub(r"\s*\[.*\]$", "", c) for c in first]
        rows = rows[1:]
    gpus = []
    for row in rows:
        if len(row) < min(4, len(columns)):
            continue
        values = dict(zip(columns, (v.strip() for v in row), strict=False))

        def text_of(key: str, values: dict[str, str] = values) -> str | None:
            value = values.get(key)
            return None if value is None or value.lower() in _NA else value

        gpus.append(
            NvidiaGpu(
                index=_int(values.get("index")),
                name=text_of("name"),
                uuid=text_of("uuid"),
                bus_id=text_of("pci.bus_id"),
                driver_version=text_of("driver_version"),
                memory_total_mib=_int(values.get("memory.total")),
                memory_used_mib=_int(values.get("memory.used")),
                temperature_c=_num(values.get("temperature.gpu")),
                utilization_pct=_num(values.get("utilization.gpu")),
            )
        )
    return gpus


@dataclass
class NvidiaXmlGpu:
    bus_id: str | None = None
    product_name: str | None = None
    architecture: str | None = None
    uuid: str | None = None
    serial: str | None = None
    minor_number: int | None = None
    vbios_version: str | None = None
    mig_mode: str | None = None
    ecc_mode: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    temperature_c: float | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    pcie_gen_current: int | None = None
    pcie_width_current: str | None = None
    reset_required: str | None = None
    ecc_volatile_dram_uncorrectable: int | None = None


@dataclass
class NvidiaSmiLog:
    driver_version: str | None = None
    cuda_version: str | None = None  # the highest CUDA the driver supports, not the toolkit installed
    attached_gpus: int | None = None
    gpus: list[NvidiaXmlGpu] = field(default_factory=list)


def parse_nvidia_smi_xml(text: str) -> NvidiaSmiLog:
    """``nvidia-smi -q -x``. Parsed by tag name, unknown tags ignored (the DTD changes per driver branch).

    Raises ValueError on text that is not well-formed XML with an ``nvidia_smi_log`` root.
    """
    import xml.etree.ElementTree as ET  # only bundles and the health check read XML: facts never pay for it

    try:
        root = ET.fromstring(text or "")
    except ET.ParseError as exc:
        raise ValueError(f"nvidia-smi -q -x: not well-formed XML ({exc}): {_snippet(text or '')}") from None
    if root.tag != "nvidia_smi_log":
        raise ValueError(f"nvidia-smi -q -x: root element is <{root.tag}>, expected <nvidia_smi_log>")

    def get(node: Element, path: str) -> str | None:
        value = node.findtext(path)
        if value is None:
            return None
        value = value.strip()
        return None if value.lower() in _NA else value

    gpus = []
    for gpu in root.findall("gpu"):
        gpus.append(
            NvidiaXmlGpu(
                bus_id=gpu.get("id"),
                product_name=get(gpu, "product_name"),
                architecture=get(gpu, "product_architecture"),
                uuid=get(gpu, "uuid"),
                serial=get(gpu, "serial"),
                minor_number=_int(get(gpu, "minor_number")),
                vbios_version=get(gpu, "vbios_version"),
                mig_mode=get(gpu, "mig_mode/current_mig"),
                ecc_mode=get(gpu, "ecc_mode/current_ecc"),
                memory_total_mib=_int(get(gpu, "fb_memory_usage/total")),
                memory_used_mib=_int(get(gpu, "fb_memory_usage/used")),
                temperature_c=_num(get(gpu, "temperature/gpu_temp")),
                power_draw_w=_num(
                    get(gpu, "gpu_power_readings/power_draw") or get(gpu, "power_readings/power_draw")
                    # driver 570+ prints average and instant draw instead (the real H100 on 580.159.04)
                    or get(gpu, "gpu_power_readings/average_power_draw")
                    or get(gpu, "gpu_power_readings/instant_power_draw")
                ),
                power_limit_w=_num(
                    get(gpu, "gpu_power_readings/current_power_limit")
                    or get(gpu, "power_readings/power_limit")
                ),
                pcie_gen_current=_int(get(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
                pcie_width_current=get(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width"),
                reset_required=get(gpu, "gpu_reset_status/reset_required"),
                ecc_volatile_dram_uncorrectable=_int(get(gpu, "ecc_errors/volatile/dram_uncorrectable")),
            )
        )
    return NvidiaSmiLog(
        driver_version=get(root, "driver_version"),
        cuda_version=get(root, "cuda_version"),
        attached_gpus=_int(get(root, "attached_gpus")),
        gpus=gpus,
    )


@dataclass
class TopoMatrix:
    """``nvidia-smi topo -m``: links between devices, and each GPU's CPU and NUMA affinity."""

    devices: list[str] = field(
        default_factory=list
    )  # column labels: GPU0.., NIC0.. (or mlx5_0 on old drivers)
    links: dict[str, dict[str, str]] = field(default_factory=dict)  # links["GPU0"]["GPU1"] == "NV12"
    cpu_affinity: dict[str, str | None] = field(default_factory=dict)
    numa_affinity: dict[str, str | None] = field(default_factory=dict)
    gpu_numa_id: dict[str, str | None] = field(default_factory=dict)
    nic_names: dict[str, str] = field(default_factory=dict)  # NIC0 -> mlx5_0, from the "NIC Legend"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEVICE_LABEL = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+)$")
_AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


def parse_nvidia_topo(text: str) -> TopoMatrix:
    """``nvidia-smi topo -m``, tab- or space-separated, with or without ANSI underline escapes. Lenient."""
    topo = TopoMatrix()
    extra: list[str] = []
    in_nic_legend = False
    for raw in _ANSI.sub("", text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Legend:"):
            in_nic_legend = False
            continue
        if line.startswith("NIC Legend"):
            in_nic_legend = True
            continue
        if in_nic_legend:
            match = re.match(r"^(NIC\d+):\s*(\S+)", line)
            if match:
                topo.nic_names[match.group(1)] = match.group(2)
            continue
        if not topo.devices:
            names = [n.strip() for n in re.split(r"\t+|\s{2,}", line) if n.strip()]
            if (
                len(names) >= 2
                and _DEVICE_LABEL.match(names[0])
                and (_DEVICE_LABEL.match(names[1]) or names[1] in _AFFINITY_COLUMNS)
            ):
                topo.devices = [n for n in names if _DEVICE_LABEL.match(n)]
                extra = [n for n in names if n in _AFFINITY_COLUMNS]
            continue
        tokens = line.split()
        if not tokens or not _DEVICE_LABEL.match(tokens[0]) or len(tokens) < len(topo.devices) + 1:
            continue
        label = tokens[0]
        topo.links[label] = dict(zip(topo.devices, tokens[1 : len(topo.devices) + 1], strict=False))
        rest = tokens[len(topo.devices) + 1 :]
        if label.startswith("GPU") and rest:
            values = dict(zip(extra, rest, strict=False))
            topo.cpu_affinity[label] = values.get("CPU Affinity")
            numa = values.get("NUMA Affinity")
            topo.numa_affinity[label] = None if numa is None or numa.lower() in _NA else numa
            gpu_numa = values.get("GPU NUMA ID")
            topo.gpu_numa_id[label] = None if gpu_numa is None or gpu_numa.lower() in _NA else gpu_numa
    return topo


def parse_cuda_version_json(text: str) -> str | None:
    """``/usr/local/cuda/version.json`` (CUDA >= 11.1) -> ``12.4.1``. Raises ValueError on malformed JSON."""
    data = _load_json(text, "cuda version.json")
    cuda = data.get("cuda") if isinstance(data, dict) else None
    version = cuda.get("version") if isinstance(cuda, dict) else None
    return str(version) if version else None


def parse_cuda_version_txt(text: str) -> str | None:
    """``/usr/local/cuda/version.txt`` (CUDA <= 11.0): ``CUDA Version 10.2.89``. Lenient."""
    match = re.search(r"CUDA Version\s+(\d+\.\d+(?:\.\d+)?)", text or "")
    return match.group(1) if match else None


def parse_nvcc_version(text: str) -> str | None:
    """``nvcc --version`` -> ``12.4.131`` (the ``V`` build number), else the ``release 12.4``. Lenient."""
    match = re.search(r"release\s+(\d+\.\d+)(?:,\s*V(\d+\.\d+\.\d+))?", text or "")
    if not match:
        return None
    return match.group(2) or match.group(1)


def parse_nccl_header(text: str) -> str | None:
    """``nccl.h`` NCCL_MAJOR/MINOR/PATCH (+ NCCL_SUFFIX) -> ``2.21.5``. Lenient."""
    parts = {}
    for name in ("MAJOR", "MINOR", "PATCH"):
        match = re.search(rf"^\s*#define\s+NCCL_{name}\s+(\d+)", text or "", re.MULTILINE)
        if not match:
            return None
        parts[name] = match.group(1)
    suffix = re.search(r'^\s*#define\s+NCCL_SUFFIX\s+"([^"]*)"', text or "", re.MULTILINE)
    version = f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"
    return version + suffix.group(1) if suffix and suffix.group(1) else version


def parse_nccl_library_name(path: str) -> str | None:
    """``/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5`` -> ``2.21.5``; ``libnccl.so.2`` alone says too little."""
    match = re.search(r"libnccl\.so\.(\d+\.\d+\.\d+)$", path or "")
    return match.group(1) if match else None


_LDCONFIG_ENTRY = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S.*?)\s*$")


def parse_ldconfig_cache(text: str, soname: str | None = None) -> list[str]:
    """``ldconfig -p`` lines -> the paths of ``soname`` (every library without one), in the cache's order: the
    dynamic loader takes the first, which is the one in the folder ld.so.conf names first. Lenient: the header
    line and anything else are skipped."""
    paths = []
    for line in (text or "").splitlines():
        match = _LDCONFIG_ENTRY.match(line)
        if match and (soname is None or match.group(1) == soname):
            paths.append(match.group(3))
    return paths
