"""Pure parsers: tool output and version files (text) -> dataclasses. No I/O here.

Error policy, per kind of input:

- Structured formats (JSON from ``ip -j addr``, the probe's own JSON parts, ``version.json``, ``nvidia-smi -q -x``
  XML): malformed input raises ``ValueError`` naming the format and showing the start of the text. Such text
  is machine-written, so garbage means something upstream broke and hiding it would be wrong. A JSON value of
  the wrong shape is ValueError too (not TypeError): to the caller it is the same malformed input.
- Human-oriented text (tables, ``key=value`` files, banners): parsers are lenient. Empty or unrecognised input
  returns an empty result (empty list, ``None`` fields); unrecognised lines are skipped. Vendors change these
  layouts between releases, and one odd line must not cost us the rest of a host's facts.

Every sample these were written against is under ``tests/data/captures/`` with its source.
"""

from __future__ import annotations

import ast
import csv
import ipaddress
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from accelstack.facts.model import (
    Address,
    Interface,
    NpuChip,
    NpuProcess,
    NvidiaGpu,
    PciDevice,
    TorchFacts,
)
from accelstack.vendors import vendor_of_pci

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

_NA = {"", "na", "n/a", "[n/a]", "[not supported]", "not supported", "-", "none", "unknown"}


def _snippet(text: str) -> str:
    return repr(text[:200])


def _num(value: str | None) -> float | None:
    if value is None or value.strip().lower() in _NA:
        return None
    match = re.match(r"\s*(-?\d+(?:\.\d+)?)", value)
    return float(match.group(1)) if match else None


def _int(value: str | None) -> int | None:
    number = _num(value)
    return int(number) if number is not None else None


def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: not valid JSON ({exc}): {_snippet(text or '')}") from None


def parse_key_values(text: str, sep: str = "=") -> dict[str, str]:
    """``key=value`` lines (version.info, install.info, os-release); blank lines and ``#`` comments skipped.

    Later keys win, as a shell sourcing the file would see them. Surrounding quotes are removed.
    """
    result: dict[str, str] = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or sep not in line:
            continue
        key, _, value = line.partition(sep)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        result[key.strip()] = value
    return result


# --- host basics ------------------------------------------------------------------------------------------


@dataclass
class OsRelease:
    name: str | None = None
    id: str | None = None
    version_id: str | None = None
    pretty_name: str | None = None
    fields: dict[str, str] = field(default_factory=dict)


def parse_os_release(text: str) -> OsRelease:
    """``/etc/os-release``. Lenient."""
    fields = parse_key_values(text)
    return OsRelease(
        name=fields.get("NAME"),
        id=fields.get("ID"),
        version_id=fields.get("VERSION_ID"),
        pretty_name=fields.get("PRETTY_NAME"),
        fields=fields,
    )


@dataclass
class Meminfo:
    total_kib: int | None = None
    available_kib: int | None = None
    values_kib: dict[str, int] = field(default_factory=dict)  # HugePages_* are counts, not KiB


_MEMINFO_LINE = re.compile(r"^([\w()]+):[ \t]+(\d+)", re.MULTILINE)


def parse_meminfo(text: str) -> Meminfo:
    """``/proc/meminfo``. Lenient."""
    # One scan of the whole text (a match per line cost a quarter of a millisecond a host at facts time).
    values = {name: int(number) for name, number in _MEMINFO_LINE.findall(text or "")}
    return Meminfo(
        total_kib=values.get("MemTotal"), available_kib=values.get("MemAvailable"), values_kib=values
    )


def parse_ip_json(text: str) -> list[Interface]:
    """``ip -j addr``. Raises ValueError on text that is not the JSON list iproute2 prints."""
    data = _load_json(text, "ip -j addr")
    if not isinstance(data, list):
        raise ValueError(f"ip -j addr: expected a JSON list: {_snippet(text)}")
    interfaces = []
    for item in data:
        if not isinstance(item, dict) or "ifname" not in item:
            continue  # iproute2 prints {} for links in other namespaces on some versions
        addresses = [
            Address(
                family=str(a.get("family", "")),
                address=str(a.get("local", "")),
                prefixlen=a.get("prefixlen"),
                scope=a.get("scope"),
            )
            for a in item.get("addr_info", [])
            if isinstance(a, dict) and a.get("local")
        ]
        flags = item.get("flags") or []
        interfaces.append(
            Interface(
                name=str(item["ifname"]),
                state=item.get("operstate"),
                mtu=item.get("mtu"),
                up="UP" in flags,
                addresses=addresses,
            )
        )
    return interfaces


_IP_LINK = re.compile(r"^\d+:\s+([^:@\s]+)(?:@\S+)?:\s+<([^>]*)>(.*)$")
_IP_ADDR = re.compile(r"^\d+:\s+(\S+)\s+(inet6?)\s+([0-9a-fA-F.:]+)(?:/(\d+))?(.*)$")


def parse_ip_oneline(addr_text: str, link_text: str = "") -> list[Interface]:
    """``ip -o addr`` plus ``ip -o link``: the fallback for iproute2 without ``-j``. Lenient.

    ``-o addr`` has neither MTU nor state, and lists only links with an address, so ``-o link`` supplies the
    rest when it is there.
    """
    by_name: dict[str, Interface] = {}
    for line in (link_text or "").splitlines():
        match = _IP_LINK.match(line.strip())
        if not match:
            continue
        name, flags, rest = match.group(1), match.group(2).split(","), match.group(3)
        mtu = re.search(r"\bmtu (\d+)", rest)
        state = re.search(r"\bstate (\S+)", rest)
        by_name[name] = Interface(
            name=name,
            state=state.group(1) if state else None,
            mtu=int(mtu.group(1)) if mtu else None,
            up="UP" in flags,
        )
    for line in (addr_text or "").splitlines():
        match = _IP_ADDR.match(line.strip())
        if not match:
            continue
        name = match.group(1)
        scope = re.search(r"\bscope (\S+)", match.group(5))
        iface = by_name.setdefault(name, Interface(name=name))
        iface.addresses.append(
            Address(
                family=match.group(2),
                address=match.group(3),
                prefixlen=int(match.group(4)) if match.group(4) else None,
                scope=scope.group(1) if scope else None,
            )
        )
    return list(by_name.values())


_IFF_UP = 0x1
_IPV6_SCOPES = {"00": "global", "20": "link", "10": "host", "40": "site"}


def parse_sys_class_net(text: str, if_inet6: str = "") -> list[Interface]:
    """Interfaces read without iproute2: the probe's ``net_sys`` section (JSON ``[{name, operstate, mtu, flags,
    ipv4, netmask}]`` from ``/sys/class/net`` and the SIOCGIFADDR/SIOCGIFNETMASK ioctls) plus the text of
    ``/proc/net/if_inet6`` for IPv6. The state is upper-cased as ``ip`` prints it. Raises ValueError when the
    section is not that JSON list."""
    data = _load_json(text, "net_sys")
    if not isinstance(data, list):
        raise ValueError(f"net_sys: expected a JSON list: {_snippet(text)}")
    inet6 = parse_proc_if_inet6(if_inet6)
    interfaces = []
    for item in data:
        if not isinstance(item, dict) or not item.get("name"):
            continue
        name = str(item["name"])
        try:
            flag_bits = int(str(item.get("flags") or "0"), 16)
        except ValueError:
            flag_bits = 0
        addresses = []
        if item.get("ipv4"):
            prefix = None
            if item.get("netmask"):
                try:
                    prefix = bin(int.from_bytes(bytes(int(o) for o in str(item["netmask"]).split(".")), "big")
                                 ).count("1")
                except ValueError:
                    prefix = None
            addresses.append(Address("inet", str(item["ipv4"]), prefix))
        addresses.extend(inet6.get(name, []))
        state = item.get("operstate")
        mtu = item.get("mtu")
        interfaces.append(Interface(name=name, state=str(state).upper() if state else None,
                                    mtu=_int(str(mtu)) if mtu is not None else None,
                                    up=bool(flag_bits & _IFF_UP), addresses=addresses))
    return interfaces


def parse_proc_if_inet6(text: str) -> dict[str, list[Address]]:
    """``/proc/net/if_inet6`` -> {interface: [inet6 Address]}, the address with its colons back. Lenient: other
    lines are skipped."""
    found: dict[str, list[Address]] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) < 6 or len(parts[0]) != 32:
            continue
        try:
            prefix, scope = int(parts[2], 16), parts[3]
            address = str(ipaddress.IPv6Address(int(parts[0], 16)))  # compressed, as ip prints it
        except ValueError:
            continue
        found.setdefault(parts[5], []).append(Address("inet6", address, prefix, _IPV6_SCOPES.get(scope, scope)))
    return found




def parse_pci_devices(text: str) -> list[PciDevice]:
    """The probe's ``pci`` section: a JSON list of sysfs values. Raises ValueError on malformed JSON."""
    data = _load_json(text, "pci")
    if not isinstance(data, list):
        raise ValueError(f"pci: expected a JSON list: {_snippet(text)}")
    devices = []
    for item in data:
        if not isinstance(item, dict) or not item.get("slot"):
            continue
        vendor_id = str(item.get("vendor") or "").lower()
        numa = _int(item.get("numa_node"))
        devices.append(
            PciDevice(
                bus_id=str(item["slot"]).lower(),
                vendor=vendor_of_pci(vendor_id) or "other",
                vendor_id=vendor_id,
                device_id=(str(item["device"]).lower() if item.get("device") else None),
                pci_class=item.get("class"),
                numa_node=numa if numa is not None and numa >= 0 else None,
            )
        )
    return devices


# --- NVIDIA -----------------------------------------------------------------------------------------------


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


def parse_cpu_list(text: str) -> list[int]:
    """A kernel CPU list (``0-31,64-95``) -> CPU numbers. Raises ValueError on anything else."""
    cpus: list[int] = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not match:
            raise ValueError(f"not a CPU list: {_snippet(text)}")
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else start
        cpus.extend(range(start, end + 1))
    return cpus


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


# --- Ascend -----------------------------------------------------------------------------------------------


def _bracket_list(value: str | None) -> list[str]:
    """``[V100R001C29],[V100R001C30]`` -> items; ``[7.0.0,7.1.99]`` stays one item (a range)."""
    return re.findall(r"\[([^\]]*)\]", value or "")


@dataclass
class AscendVersionInfo:
    """Driver or firmware ``version.info``."""

    version: str | None = None  # Version=
    package_version: str | None = None  # absent from older drivers (24.1.rc1 and before)
    innerversion: str | None = None
    ascendhal_version: str | None = None
    compatible_version: list[str] = field(default_factory=list)  # driver: CANN innerversion families
    compatible_version_fw: list[str] = field(default_factory=list)  # driver: allowed firmware range(s)
    compatible_version_drv: list[str] = field(default_factory=list)  # firmware: allowed driver ranges
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def release(self) -> str | None:
        """The package version a person installs; ``package_version`` falls back to ``Version`` as other
        tools do, which is right for the driver and the firmware's own number for firmware."""
        return self.package_version or self.version


def parse_ascend_version_info(text: str) -> AscendVersionInfo:
    """``/usr/local/Ascend/{driver,firmware}/version.info``. Lenient."""
    f = parse_key_values(text)
    return AscendVersionInfo(
        version=f.get("Version") or f.get("version"),
        package_version=f.get("package_version"),
        innerversion=f.get("Innerversion") or f.get("innerversion"),
        ascendhal_version=f.get("ascendhal_version"),
        compatible_version=_bracket_list(f.get("compatible_version")),
        compatible_version_fw=_bracket_list(f.get("compatible_version_fw")),
        compatible_version_drv=_bracket_list(f.get("compatible_version_drv")),
        fields=f,
    )


@dataclass
class AscendInstallInfo:
    """``ascend_toolkit_install.info`` / ``ascend_ops_install.info``."""

    package_name: str | None = None
    version: str | None = None
    innerversion: str | None = None
    arch: str | None = None
    path: str | None = None
    compatible_version: list[str] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)


def parse_ascend_install_info(text: str) -> AscendInstallInfo:
    """CANN ``*_install.info``. Lenient."""
    f = parse_key_values(text)
    return AscendInstallInfo(
        package_name=f.get("package_name"),
        version=f.get("version"),
        innerversion=f.get("innerversion"),
        arch=f.get("arch"),
        path=f.get("path"),
        compatible_version=_bracket_list(f.get("compatible_version")),
        fields=f,
    )


@dataclass
class CannComponentVersion:
    internal: str  # 7.7.0.1.238
    release: str | None  # 8.1.RC1


@dataclass
class CannVersionCfg:
    """``ascend-toolkit/latest/version.cfg``: ``<component>_<running|upgrade|installed>_version=[internal:release]``.

    The internal -> release pairing is read from the file itself, so it holds for that install; we do not
    derive one from the other elsewhere.
    """

    entries: dict[str, CannComponentVersion] = field(default_factory=dict)  # "toolkit_running" -> ...

    def running(self, component: str) -> CannComponentVersion | None:
        return self.entries.get(f"{component}_running")


def parse_cann_version_cfg(text: str) -> CannVersionCfg:
    """CANN ``version.cfg``. Lenient."""
    cfg = CannVersionCfg()
    for key, value in parse_key_values(text).items():
        match = re.fullmatch(r"(\w+)_(running|upgrade|installed)_version", key)
        items = _bracket_list(value)
        if not match or not items:
            continue
        internal, _, release = items[0].partition(":")
        cfg.entries[f"{match.group(1)}_{match.group(2)}"] = CannComponentVersion(
            internal=internal.strip(), release=release.strip() or None
        )
    return cfg


@dataclass
class NnalVersionInfo:
    name: str | None = None  # Ascend-cann-atb
    version: str | None = None  # 8.1.RC1
    build_version: str | None = None  # 8.1.RC1.B150
    platform: str | None = None
    branch: str | None = None
    commit: str | None = None


def parse_nnal_version_info(text: str) -> NnalVersionInfo:
    """``nnal/atb/<version>/version.info`` (``key : value`` lines, indented). Lenient."""
    info = NnalVersionInfo()
    for key, value in parse_key_values(text, sep=":").items():
        lowered = key.lower()
        if lowered.endswith(" version"):
            info.build_version = value
        elif lowered.startswith("ascend-"):
            info.name, info.version = key, value
        elif lowered == "platform":
            info.platform = value
        elif lowered == "branch":
            info.branch = value
        elif lowered == "commit id":
            info.commit = value
    return info


@dataclass
class NpuSmiInfo:
    version: str | None = None
    chips: list[NpuChip] = field(default_factory=list)
    processes: list[NpuProcess] = field(default_factory=list)


_PAIR_OR_TOKEN = re.compile(r"(\S+?)\s*/\s*(\S+)|(\S+)")
_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
# Header words -> our field stems. Matched by prefix: the 310P header truncates "Hugepages-Usage(page".
_NPU_COLUMNS = (
    ("power", "power"),
    ("temp", "temp"),
    ("hugepages", "hugepages"),
    ("aicore", "aicore"),
    ("memory-usage", "memory"),
    ("hbm-usage", "hbm"),
)
_DEFAULT_ROW1 = ["power", "temp", "hugepages"]
_DEFAULT_ROW2 = ["aicore", "memory", "hbm"]


def _npu_columns(cell: str) -> list[str]:
    names = []
    for word in cell.split():
        lowered = word.lower()
        for prefix, stem in _NPU_COLUMNS:
            if lowered.startswith(prefix):
                names.append(stem)
                break
        else:
            names.append(lowered)
    return names


def _npu_values(cell: str) -> list[tuple[str, str | None]]:
    """Tokens of a table cell, joining ``a / b`` pairs (also ``41052/ 65536``, the 5-digit hazard)."""
    values: list[tuple[str, str | None]] = []
    for match in _PAIR_OR_TOKEN.finditer(cell):
        if match.group(3) is not None:
            values.append((match.group(3), None))
        else:
            values.append((match.group(1), match.group(2)))
    return values


def _apply_npu_columns(chip: NpuChip, names: list[str], cell: str) -> None:
    for name, (value, total) in zip(names, _npu_values(cell), strict=False):
        if name == "power":
            chip.power_w = _num(value)
        elif name == "temp":
            chip.temp_c = _num(value)
        elif name == "aicore":
            chip.aicore_pct = _num(value)
        elif name == "hugepages":
            chip.hugepages_used, chip.hugepages_total = _int(value), _int(total)
        elif name == "memory":
            chip.memory_used_mb, chip.memory_total_mb = _int(value), _int(total)
        elif name == "hbm":
            chip.hbm_used_mb, chip.hbm_total_mb = _int(value), _int(total)


def parse_npu_smi_info(text: str) -> NpuSmiInfo:
    """``npu-smi info``: the device table (two rows per chip) and the process table. Lenient.

    Column meanings come from the table's own header rows, so the A2 (HBM column), 910A (Memory and HBM),
    310P (no HBM, ``Chip Device``) and A3 (``Chip Phy-ID``, two chips per NPU) layouts all parse. A chip whose
    second row is missing (truncated output) is still reported with what its first row gave.
    """
    info = NpuSmiInfo()
    mode = ""
    row1_names, row2_names = list(_DEFAULT_ROW1), list(_DEFAULT_ROW2)
    current: NpuChip | None = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("+"):
            current = None  # a rule ends a chip's row pair
            continue
        if not line.startswith("|"):
            continue
        version = re.search(r"npu-smi\s+\S+\s+Version:\s*(\S+)", line)
        if version:
            info.version = version.group(1)
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        first = cells[0]
        if len(cells) >= 2 and "Process id" in cells[1]:
            mode, current = "proc", None
            continue
        if first.startswith("NPU") and len(cells) >= 3 and cells[1].startswith("Health"):
            mode, current = "dev", None
            row1_names = _npu_columns(cells[2])
            continue
        if first.startswith("Chip") and len(cells) >= 3 and cells[1].startswith("Bus-Id"):
            row2_names = _npu_columns(cells[2])
            continue
        if mode == "dev" and len(cells) >= 3:
            if current is None:
                match = re.match(r"^(\d+)\s+(\S.*)$", first)
                if not match:
                    continue
                current = NpuChip(
                    npu_id=int(match.group(1)), name=match.group(2).strip(), health=cells[1] or None
                )
                _apply_npu_columns(current, row1_names, cells[2])
                info.chips.append(current)
            else:
                ids = first.split()
                current.chip_id = _int(ids[0]) if ids else None
                current.phy_id = _int(ids[1]) if len(ids) > 1 else None
                current.bus_id = cells[1] if _BUS_ID.match(cells[1]) else None
                _apply_npu_columns(current, row2_names, cells[2])
                current = None
        elif mode == "proc" and len(cells) >= 2:
            ids = first.split()
            pid = _int(cells[1])
            if not ids or not ids[0].isdigit() or pid is None:
                continue  # "No running processes found in NPU 0"
            info.processes.append(
                NpuProcess(
                    npu_id=int(ids[0]),
                    chip_id=_int(ids[1]) if len(ids) > 1 else None,
                    pid=pid,
                    name=cells[2] if len(cells) > 2 else "",
                    memory_mb=_int(cells[3]) if len(cells) > 3 else None,
                )
            )
    return info


@dataclass
class NpuBoardInfo:
    """``npu-smi info -t board -i N`` (or ``-c C``): software (driver) and firmware versions, PCI identity."""

    npu_id: int | None = None
    chip_name: str | None = None
    software_version: str | None = None  # the driver version
    firmware_version: str | None = None
    bus_id: str | None = None
    vendor_id: str | None = None
    device_id: str | None = None  # 0xD801 = 910A, 0xD802 = 910B
    fields: dict[str, str] = field(default_factory=dict)


def parse_npu_smi_board(text: str) -> NpuBoardInfo:
    """``Key : value`` lines (tab or space indented). Lenient."""
    f = parse_key_values(text, sep=":")
    return NpuBoardInfo(
        npu_id=_int(f.get("NPU ID")),
        chip_name=f.get("Chip Name") or f.get("NPU Name"),
        software_version=f.get("Software Version"),
        firmware_version=f.get("Firmware Version"),
        bus_id=f.get("PCIe Bus Info"),
        vendor_id=f.get("PCI Vendor ID"),
        device_id=f.get("PCI Device ID"),
        fields=f,
    )


@dataclass
class HccnIp:
    ipaddr: str | None = None
    netmask: str | None = None


def parse_hccn_ip(text: str) -> HccnIp:
    """``hccn_tool -i N -ip -g``. Lenient: an unconfigured NPU prints nothing, which gives ``HccnIp()``."""
    f = parse_key_values(text, sep=":")
    return HccnIp(ipaddr=f.get("ipaddr") or None, netmask=f.get("netmask") or None)


# --- torch ------------------------------------------------------------------------------------------------


def parse_version_py(text: str) -> dict[str, str | None]:
    """Top-level ``name = 'literal'`` assignments of a generated ``version.py`` (torch's, torch_npu's).

    Read as data, never executed. Lenient: a file that does not parse gives ``{}``.
    """
    try:
        tree = ast.parse(text or "")
    except (SyntaxError, ValueError):
        return {}
    result: dict[str, str | None] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not isinstance(value, ast.Constant) or not (value.value is None or isinstance(value.value, str)):
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                result[target.id] = value.value
    return result


@dataclass
class StackPython:
    version: str | None = None
    executable: str | None = None
    torch: TorchFacts | None = None  # None when neither torch nor torch_npu is installed


def parse_stack_python(text: str) -> StackPython:
    """The probe's ``stack_python`` JSON. Raises ValueError on malformed JSON."""
    data = _load_json(text, "stack_python")
    if not isinstance(data, dict):
        raise ValueError(f"stack_python: expected a JSON object: {_snippet(text)}")
    packages = data.get("packages") or {}
    torch = packages.get("torch") or {}
    npu = packages.get("torch_npu") or {}
    facts = None
    if torch or npu:
        tv = parse_version_py(torch.get("version_py") or "")
        nv = parse_version_py(npu.get("version_py") or "")
        # torch.__version__ carries the build's local tag (2.11.0+cu130); pip's CUDA wheels leave it out of the
        # package metadata (2.11.0), so only __version__ can be compared with a pin that names the build.
        facts = TorchFacts(
            version=tv.get("__version__") or torch.get("version"),
            dist_version=torch.get("version"),
            cuda=tv.get("cuda"),
            git_version=tv.get("git_version"),
            hip=tv.get("hip"),
            location=torch.get("package_dir") or torch.get("location"),
            torch_npu=(npu.get("version") or nv.get("__version__")) if npu else None,
            torch_npu_git_version=nv.get("git_version"),
            torch_npu_location=(npu.get("package_dir") or npu.get("location")) if npu else None,
        )
        if torch:
            facts.nccl, facts.nccl_library, facts.nccl_from = torch_nccl(data.get("nccl"))
    return StackPython(version=data.get("python"), executable=data.get("executable"), torch=facts)


_NCCL_EMBEDDED = re.compile(r"^(\d+\.\d+\.\d+)")


def torch_nccl(found: Any) -> tuple[str | None, str | None, str | None]:
    """(version, library, how it was read) of the NCCL torch loads, from the stack snippet's ``nccl`` part:
    ``{"libraries": [paths, the one torch loads first], "wheels": {dist: version}, "embedded": text}``.

    A library in an ``nvidia/`` wheel folder has its wheel's version (``nvidia-nccl-cu13`` 2.28.9 installs
    ``nvidia/nccl/lib/libnccl.so.2``); otherwise the "NCCL version 2.28.9+cuda13.0" string the library carries,
    else a versioned file name. Lenient: anything else gives ``(None, None, None)``.
    """
    if not isinstance(found, dict):
        return None, None, None
    libraries = [str(x) for x in found.get("libraries") or [] if x]
    wheels = {str(k): str(v) for k, v in (found.get("wheels") or {}).items() if v}
    library = libraries[0] if libraries else None
    in_wheel = library is not None and "/nvidia/" in library
    if wheels and (in_wheel or library is None):
        name, version = next(iter(sorted(wheels.items(), reverse=True)))  # cu13 before cu12 before cu11
        how = f"{name} {version} package metadata" + ("" if library else " (its library was not found)")
        return version, library, how
    embedded = found.get("embedded")
    if library and isinstance(embedded, str) and (match := _NCCL_EMBEDDED.match(embedded.strip())):
        return match.group(1), library, f"'NCCL version {embedded.strip()}' in the library"
    if library and (from_name := parse_nccl_library_name(library)):
        return from_name, library, "the library's file name"
    return None, library, None


def parse_pip_freeze(text: str) -> dict[str, str]:
    """``pip list --format=freeze`` -> {normalised name: version}. Lenient: other lines are skipped."""
    packages: dict[str, str] = {}
    for line in (text or "").splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and name and version:
            packages[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return packages


def nccl_wheel_in_pip_list(text: str) -> tuple[str, str] | None:
    """(``nvidia-nccl-cu13``, ``2.28.9``): the NCCL wheel a pip list names, newest CUDA first; None without."""
    wheels = sorted(((n, v) for n, v in parse_pip_freeze(text).items() if re.fullmatch(r"nvidia-nccl(-cu\d+)?", n)),
                    reverse=True)
    return wheels[0] if wheels else None


def parse_hccn_conf(text: str) -> dict[int, str]:
    """``/etc/hccn.conf`` -> device id -> ``address_<id>``. Pure; other keys (netmask, netdetect, gateway, ...)
    and malformed lines are ignored."""
    addresses: dict[int, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key.startswith("address_") or not value:
            continue
        number = key[len("address_"):]
        if number.isdigit():
            addresses[int(number)] = value
    return addresses
