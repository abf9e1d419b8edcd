"""Ascend's pure parsers: the HDK's and CANN's version files (``version.info``, ``*_install.info``, ``version.cfg``,
NNAL's), ``npu-smi info`` and its ``-t board`` view, ``hccn_tool -ip -g`` and ``/etc/hccn.conf``. Text ->
dataclasses, no I/O; the error policy of :mod:`accelstack.facts.parsers` (human-oriented text is read leniently:
Huawei changes these layouts between releases). Every sample they were written against is under ``tests/data/``
with its source, and each has a case under ``tests/data/facts/<parser>/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..parsing import number as _num
from ..parsing import parse_key_values
from ..parsing import whole as _int
from .facts import NpuChip, NpuProcess


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
