"""Typed facts about one host, as the plan and the validators consume them.

Everything here is plain data: ``to_dict()`` gives JSON-able dicts (stored in result records and history) and
``from_dict()`` reads them back, so facts gathered on one run can be compared with facts from another.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from ..stacks.components import COMPONENTS, InstalledVersions, installed_versions
from ..vendors import vendors

if TYPE_CHECKING:
    from typing_extensions import Self

# The vocabulary stacks pin and facts report, and how each component is read from these facts: one table, in
# accelstack.stacks.components, shared by facts, drift, validate and provisioning.
COMPONENT_KEYS = COMPONENTS


@functools.cache
def _facts_vendors() -> dict[str, type]:
    """The vendors with a facts section, by name: the section's dataclass."""
    return {v.name: v.facts_type for v in vendors() if v.facts_type is not None}


class _Record:
    """to_dict/from_dict for the dataclasses below; nested types are read from the annotations."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return typing.cast("Self", _build(cls, data))


def _build(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _build(args[0], value) if len(args) == 1 else value
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_build(item, v) for v in value]
    if origin is dict:
        _key, item = typing.get_args(tp)
        return {k: _build(item, v) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ValueError(f"{tp.__name__}: expected a mapping, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        # Unknown keys are ignored so facts stored by a newer accelstack still load.
        return tp(**{k: _build(hints[k], v) for k, v in value.items() if k in names})
    return value


@dataclass
class Address(_Record):
    family: str  # "inet" or "inet6"
    address: str
    prefixlen: int | None = None
    scope: str | None = None


@dataclass
class Interface(_Record):
    name: str
    state: str | None = None  # operstate: UP, DOWN, UNKNOWN (loopback and many virtual links)
    mtu: int | None = None
    up: bool = (
        False  # the administrative UP flag, which is what "can carry traffic" needs alongside an address
    )
    addresses: list[Address] = field(default_factory=list)


@dataclass
class PciDevice(_Record):
    bus_id: str  # 0000:c1:00.0, lower case as sysfs writes it
    vendor: str  # the vendor whose PCI vendor id it has (accelstack.vendors: nvidia, ascend), else "other"
    vendor_id: str  # 0x10de
    device_id: str | None = None  # 0xd802
    pci_class: str | None = None  # 0x120000 (processing accelerator) or 0x030200 (3D controller)
    numa_node: int | None = None  # None when the platform reports -1 (no affinity)


@dataclass
class TorchFacts(_Record):
    version: str | None = None  # torch.__version__ with its local build tag (2.11.0+cu130), else the package's
    dist_version: str | None = None  # the package metadata's version: pip's wheels drop the tag there (2.11.0)
    cuda: str | None = None  # CUDA torch was built with; None for CPU and NPU builds
    git_version: str | None = None
    hip: str | None = None
    location: str | None = None
    torch_npu: str | None = None
    torch_npu_git_version: str | None = None
    torch_npu_location: str | None = None
    nccl: str | None = None  # the NCCL torch loads: its wheel's (nvidia-nccl-cuXX) or one bundled in torch/lib
    nccl_library: str | None = None  # that library's path, when the probe found it
    nccl_from: str | None = None  # how the version was read, for a person: "nvidia-nccl-cu13 metadata", ...


@dataclass
class Facts(_Record):
    hostname: str | None = None
    os_name: str | None = None  # os-release NAME
    os_id: str | None = None  # os-release ID: debian, openEuler, kylin
    os_version: str | None = None  # os-release VERSION_ID
    kernel: str | None = None
    arch: str | None = None
    cpus: int | None = None
    mem_total_kib: int | None = None
    numa_nodes: list[int] = field(default_factory=list)
    python_version: str | None = None  # the python that ran the probe (the host's python3)
    stack_python: str | None = None  # the configured python that torch lives in
    stack_python_version: str | None = None
    interfaces: list[Interface] = field(default_factory=list)
    accelerators: list[PciDevice] = field(default_factory=list)
    shm_bytes: int | None = None
    memlock: int | None = None  # soft RLIMIT_MEMLOCK in bytes; None means unlimited (see memlock_known)
    memlock_known: bool = False  # False when the probe could not read the limit, so None is not "unlimited"
    disk_free: dict[str, int | None] = field(default_factory=dict)
    torch: TorchFacts | None = None
    missing_tools: list[str] = field(default_factory=list)
    probe_errors: list[str] = field(default_factory=list)
    # Each vendor's section by the vendor's name (Vendor.facts_type: NVIDIA's driver, GPUs and CUDA; Ascend's
    # driver, CANN and NPUs), None where the host shows nothing of it. In JSON each is a key of its own
    # ("nvidia": {...}), and each reads as an attribute of its name (facts.nvidia), as roles' `when:` do.
    vendor_facts: dict[str, Any] = field(default_factory=dict)

    def section(self, vendor: str) -> Any:
        """The vendor's section of these facts (its Vendor.facts_type), None when the host shows nothing of it."""
        return self.vendor_facts.get(vendor)

    def __getattr__(self, name: str) -> Any:
        # Only for names that are no field: a vendor with a facts section reads as its attribute (facts.nvidia).
        if name != "vendor_facts" and name in _facts_vendors():
            return self.__dict__.get("vendor_facts", {}).get(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _facts_vendors():
            self.vendor_facts[name] = value
        else:
            super().__setattr__(name, value)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        sections = data.pop("vendor_facts")
        data.update({name: sections.get(name) for name in _facts_vendors()})
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        kinds = _facts_vendors()
        facts = typing.cast("Self", _build(cls, {k: v for k, v in data.items() if k not in kinds}))
        for name, kind in kinds.items():
            if data.get(name) is not None:
                facts.vendor_facts[name] = _build(kind, data[name])
        return facts

    def components(self) -> InstalledVersions:
        """Installed versions under the stack's component keys (None: not installed or unknown), each read as
        :mod:`accelstack.stacks.components` says, the one definition drift, validate and provisioning share."""
        return installed_versions(self)

    def summary(self) -> str:
        """One line for a result record."""
        parts = []
        os_name = (self.os_name or "unknown OS").replace(" GNU/Linux", "")
        parts.append(f"{os_name} {self.os_version}" if self.os_version else os_name)
        parts.append(" ".join(p for p in (self.kernel, self.arch) if p) or "unknown kernel")
        parts.append(f"{self.cpus} CPUs" if self.cpus is not None else "? CPUs")
        if self.mem_total_kib is not None:
            parts.append(f"{self.mem_total_kib / 1024 / 1024:.1f} GiB")
        parts.append(f"{len(self.accelerators)} accelerators")
        for vendor in vendors():
            section = self.vendor_facts.get(vendor.name)
            if section is not None:
                parts.extend(vendor.facts_summary(section))
        if self.torch and self.torch.version:
            parts.append(f"torch {self.torch.version}")
            if self.torch.torch_npu:
                parts.append(f"torch_npu {self.torch.torch_npu}")
        else:
            parts.append("no torch")
        if self.probe_errors:
            parts.append(f"{len(self.probe_errors)} probe errors")
        return ", ".join(parts)
