"""Vendors: everything that is one accelerator vendor's, behind one interface, found by name.

A stack names its vendor (``vendor: nvidia``); the rest of accelstack asks that vendor's :class:`Vendor` what it
needs (its backend, its torch device type, its components and how they are read from facts, its device tool and
how that tool's output is judged, its data files) and never compares a vendor's name itself: a test
(``tests/test_vendors.py``) walks every module outside this folder (the lab and the tests aside) for a string literal
naming a vendor, a comparison of a vendor with ``cpu``, or a list of vendors kept anywhere else. The vocabulary is
one: ``cpu``, ``nvidia``, ``ascend`` (a PCI vendor's own name, Huawei's for Ascend, is mapped to the vendor here, by
its PCI vendor id).

Layer: this package and every vendor's modules import only the base (``errors``, ``paths``) and each other; what a
vendor needs of an upper layer is handed to it (a :class:`FactsReading`, a compat matrix, the facts), so
``inventory``, ``stacks``, ``facts``, ``validate`` and ``provision`` import the vendors and not the other way round.

A vendor is a folder, ``vendors/<name>/``, found by :func:`get_vendor` and :func:`vendors` without a list to edit
(the registry imports ``accelstack.vendors.<name>`` and reads its ``VENDOR``). What a new vendor provides, all in
its folder (``nvidia/`` is the fullest example):

``__init__.py``
    ``VENDOR = <YourVendor>()``, a subclass of :class:`Vendor` that sets the class attributes (name, label, order,
    backend, torch device type and the module that registers it, the build a torch needs, PCI vendor ids and
    classes, visible-devices and socket-interface variables, its tool and the probe sections behind it, the library
    symbols torch needs, the collective timeout, the pins ``stack.list`` shows, its compat rule sets or its
    :class:`ToolkitRules`, its error-code format) and overrides what differs from the accelerator defaults:
    :meth:`Vendor.components` (each :class:`Component` with how it is read from facts), ``component_details``,
    ``stack_fields``, ``facts_type``/``read_facts``/``facts_rows``/``facts_summary``, ``device_count``,
    ``library_dirs``, ``libraries_remedy``, ``device_counts`` and ``device_memory`` (the control side's judgement
    of its tool's output), ``collective_ports``, ``sweep``, ``host_defaults``.
``parsers.py``, ``facts.py``, ``reading.py``
    The pure parsers of its tools' output (each with a case under ``tests/data/facts/<parser>/``; shared helpers in
    :mod:`.parsing`), its facts dataclass (kept in a host's facts JSON under the vendor's name, read as
    ``facts.<name>`` in roles), and how that section is read from the probe's sections and files.
``hostside.py``
    The host-side half (stdlib only, Python 3.6 syntax, run on the hosts): its tool's location, reads, parsers,
    health judgement, device list, who holds a device, memory reads; uploaded beside the validators as
    ``vendor_<name>.py`` and loaded by the config's ``vendor`` (``_common.vendor_module``). The interface is written
    in ``cpu/hostside.py``.
``floors.yml``
    Its collective bandwidth floors (``rows``), per-SKU device floors (``devices``) and health limits
    (``device_health``), each with a source, read with the vendor-neutral ``data/thresholds.yml``.
``compat.yml`` (or the project's ``compat/<name>.yml``, which wins)
    Its compatibility rows with sources, in the tables its rules read (for a toolkit vendor: ``<toolkit>_driver``,
    ``torch_<toolkit>``, ``<library>``, ``device_<toolkit>``, named by its :class:`ToolkitRules`).
``diagnose/*.yml``
    Its error taxonomies (format: ``data/diagnose/README.md``), read with the vendor-neutral ones.
``roles/<role>/`` (or the project's ``roles/<role>/``, which wins)
    The Ansible-layout roles that install its components; their ``meta.yml`` names the vendor.

``probe.sh``
    Its part of the facts probe (POSIX sh, run in the probe's one round trip; ``accelstack.facts.probe`` puts each
    vendor's part, its PCI ids (``pci_vendor_ids``) and its tools' folders (``tool_dirs``) into the probe).
``templates/``
    Its part of the shared templates (``env.sh.j2``: the environment file's lines for its toolkit).

Files outside its folder that a new vendor touches (AMD ROCm's, for example): a stack under ``stacks/``
(``vendor: amd``), an example; the README's table of components, regenerated from the vendors
(``accelstack.stacks.components.readme_table``); and its simulation in the lab (a simulated ``amd-smi`` and
installers: test tooling, not the product). Nothing of the engine changes: no registry list, no branch, no table of
the compatibility rules, of the checks or of the host-side validators.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..errors import ConfigError

T = TypeVar("T")

# What a table row of any vendor-scoped data says when it applies to every vendor (diagnosis tables, roles).
ANY = "any"
# How a pin matches by default (``accelstack.stacks.versions.MatchMode``).
MATCH_MODES = ("exact", "release", "prefix")


@dataclass(frozen=True)
class Component:
    """One key of the vocabulary that stacks pin and facts report.

    A vendor's own components (:meth:`Vendor.component`) apply to its stacks alone; the vendor-neutral ones
    (``python``, ``torch``) live in ``accelstack.stacks.components`` and apply to every stack."""

    key: str
    vendors: frozenset[str]  # stacks of these vendors may pin it
    required: frozenset[str]  # ... and these must
    critical: frozenset[str]  # on these a host without it cannot train: missing is a drift `fail`, else `warn`
    match: str  # how a pin is matched unless the stack says otherwise (MATCH_MODES)
    copy: str  # which copy counts as installed, for a person (drift evidence, README)
    installed_by: str  # the role that installs it, and how
    read: Callable[[Any], str | None]  # facts -> the installed version
    internal_release: bool = False  # an internal build number is compared as the release it belongs to (compat)
    with_torch: bool = False  # comes with the torch wheel: the pip step that installs torch owns it


@dataclass(frozen=True)
class ToolkitRules:
    """A vendor whose stacks pin a toolkit, the driver it needs and a torch built for it (NVIDIA: CUDA; AMD: ROCm)
    names its components here, and the compat engine's toolkit rules (``accelstack.stacks.compat``) judge them
    from its tables, named after the toolkit: ``<toolkit>_driver`` (toolkit -> minimum driver), optionally
    ``<toolkit>_family`` (the floor below which nothing of a major release runs), ``torch_<toolkit>`` (torch
    series -> the toolkit builds published for it), ``<library>`` (torch series + toolkit -> the collective library
    its wheel pins) and ``device_<toolkit>`` (device types -> minimum toolkit and driver). Rule ids follow the
    names: ``<toolkit>-driver``, ``<torch_build>-driver``, ``torch-<toolkit>-variant``, ``<torch_build>-<toolkit>``,
    ``torch-<library>``, ``device-<toolkit>``, ``driver-branch``."""

    toolkit: str  # the toolkit's component (cuda)
    torch_build: str  # the component of the toolkit torch was built with (torch_cuda)
    driver: str  # the driver's component (nvidia_driver)
    label: str  # the toolkit for a person (CUDA)
    tag_prefix: str  # torch's local version tag for a build of it: cu (cu124 = 12.4), rocm (rocm6.2)
    torch_attr: str  # torch.version's attribute that names it (cuda, hip)
    library: str | None = None  # the collective library's component that torch's wheel pins (nccl)
    branch_field: str | None = None  # the stack field naming the driver branch (nvidia_driver_branch)
    background_source: str | None = None  # the source of the background facts (a major mismatch's warning)
    branch_source: str = ""  # where "branch Rnnn is driver major nnn" is written


class FactsReading(Protocol):
    """What a vendor reads its facts from (the probe's sections and files), as ``facts/assemble.py`` hands it."""

    @property
    def accelerators(self) -> Sequence[Any]:
        """The host's PCI accelerators (``PciDevice``: ``.vendor`` is a vendor's name)."""

    def section(self, name: str) -> str | None:
        """A section's output (None when absent, failed or empty)."""

    def file(self, *suffixes: str) -> str | None:
        """The first present file whose path ends with one of ``suffixes``, in that order."""

    def files_matching(self, pattern: str) -> list[tuple[str, str]]:
        """Every present file whose path matches the regular expression, sorted by path."""

    def attempt(self, what: str, func: Callable[[str], T], text: str) -> T | None:
        """``func(text)``, or None with the failure kept in the host's ``probe_errors``."""

    def json(self, text: str, what: str) -> Any:
        """``text`` as JSON; ValueError naming ``what`` and showing the text's start otherwise."""


@dataclass(frozen=True)
class DeviceMemory:
    """The control side's reading of the vendor tool's memory view: devices read, the busy ones, foreign
    processes (each one line for a person)."""

    devices: int
    busy: list[str]
    processes: list[str]


class Vendor:
    """One accelerator vendor. Subclasses set the class attributes and override what differs; the defaults are
    those of an accelerator vendor (the cpu vendor overrides them for a host without one)."""

    name: str = ""  # the stack's `vendor:`, the folder's name
    label: str = ""  # for a person: NVIDIA, Ascend
    order: int = 50  # where it sorts in listings and tables
    backend: str = ""  # torch.distributed's backend name (nccl, hccl, gloo)
    torch_device: str | None = None  # torch's device type (cuda, npu); None: no device
    torch_plugin: str | None = None  # the module that registers the device type with torch (torch_npu)
    torch_build: str = ""  # what a torch needs to see the devices, for a remedy ("a CUDA build")
    pci_vendor_ids: tuple[str, ...] = ()  # 0x10de
    tool_dirs: tuple[str, ...] = ()  # folders its tools live in off PATH (/usr/local/cuda/bin)
    pci_classes: tuple[str, ...] = ()  # PCI class prefixes of its accelerators (0x0302: 3D controller)
    visible_devices_env: tuple[str, ...] = ()  # the first is what the env file writes
    socket_ifname_env: str | None = None  # the backend's socket-interface variable
    tool: str | None = None  # the device tool (nvidia-smi)
    # What the ``health`` check reads and judges with the tool, for its help and the README's table of checks.
    health_read: str = ""  # the tool call it reads (`nvidia-smi -q -x`)
    health_help: str = ""  # the aspects it judges, each with its rule
    tool_sections: Mapping[str, str] = {}  # probe section -> the tool behind it, for documents that do not say
    required_symbols: Mapping[str, Sequence[str]] = {}  # library -> symbols torch needs it to export
    has_devices: bool = True
    # Error codes its libraries print on a failure (Ascend's EI0002): a regular expression with a ``code`` group,
    # the literals every match holds (the diagnosis prefilter), what to do with a code its tables do not list, and
    # where the format is documented. Its tables' ``codes:`` name them (diagnose/*.yml).
    error_code: str | None = None
    error_code_anchors: tuple[str, ...] = ()
    error_code_wrappers: tuple[str, ...] = ()  # prefixes of codes that wrap another error (torch_npu's ERR)
    error_code_lookup: str = ""
    error_code_source: str = ""
    # Codes its numbering marks as errors the caller can fix (its arguments, the job's environment, the versions it
    # chose) rather than the library's internal ones: a regular expression matched against the whole code. An
    # unlisted code of this kind is the launch's to fix, not the node's.
    error_code_user: str | None = None
    error_code_user_source: str = ""
    # The rule sets of stacks/compat.py that judge its components and stacks (its rows: compat/<name>.yml), beside
    # the toolkit rules its ToolkitRules select.
    compat_rules: tuple[str, ...] = ()
    toolkit: ToolkitRules | None = None
    # Its collective library addresses each device by an IP that provisioning reads from the host (Ascend's
    # /etc/hccn.conf, else hccn_tool) for a rank table (HCCL's).
    device_ips: bool = False
    rank_table: bool = False  # its collective library reads a rank table file (HCCL's rank_table.json): the env role writes one
    collective_timeout_s: float = 600.0  # the default per-collective timeout of a check

    # ---- what a stack pins -----------------------------------------------------------------------------------

    def components(self) -> tuple[Component, ...]:
        """The components only this vendor's stacks pin, in the order tables show them."""
        return ()

    def component(self, key: str, *, required: bool, critical: bool, match: str, copy: str, installed_by: str,
                  read: Callable[[Any], str | None], internal_release: bool = False,
                  with_torch: bool = False) -> Component:
        """One of its own components: only its stacks pin it."""
        mine = frozenset({self.name})
        return Component(key, mine, mine if required else frozenset(), mine if critical else frozenset(), match,
                         copy, installed_by, read, internal_release, with_torch)

    def component_details(self, facts: Any) -> dict[str, dict[str, Any]]:
        """Per component, which copy was judged and what else is installed beside it (drift's evidence)."""
        return {}

    # The pins `inv stack.list` shows for its stacks, in this order.
    listed_pins: tuple[str, ...] = ("torch", "python")

    def stack_fields(self) -> Mapping[str, str]:
        """Stack fields of this vendor's own (name -> what it is, for the message when one is missing)."""
        return {}

    # ---- facts -----------------------------------------------------------------------------------------------

    @property
    def facts_type(self) -> type | None:
        """The dataclass of its facts section (a host's facts JSON keeps it under the vendor's name)."""
        return None

    def read_facts(self, reading: FactsReading) -> Any | None:
        """Its facts section from the probe's sections and files; None when the host shows nothing of it."""
        return None

    def facts_rows(self, section: Any) -> list[tuple[str, str]]:
        """``(subject, text)`` rows of ``inv facts``'s table for its section."""
        return []

    def facts_summary(self, section: Any) -> list[str]:
        """Parts of the one-line facts summary for its section."""
        return []

    def device_count(self, facts: Any) -> int | None:
        """The devices its tool lists in a host's facts; None when the facts do not say."""
        return None

    def owns(self, device: Any) -> bool:
        """Whether a PCI device (``PciDevice``) is one of its accelerators."""
        return device.vendor == self.name

    # ---- validation ------------------------------------------------------------------------------------------

    def library_dirs(self, paths: Mapping[str, str], variables: Mapping[str, Any]) -> list[str]:
        """Globs of the folders its collective library lives in, for the libraries check."""
        return []

    def libraries_remedy(self, pins: Mapping[str, Any], host: str, matrix: Any) -> str | None:
        """The remedy of a libraries check that found missing symbols; None for the generic one."""
        return None

    def sweep(self, tier: str) -> dict[str, Any]:
        """The single-node collective sweep of a tier: sizes and iterations."""
        return dict(ACCELERATOR_SWEEPS[tier])

    def host_defaults(self) -> dict[str, Any]:
        """Config defaults where its hosts differ: storage probe MB, /dev/shm floor GB, ranks per node."""
        return {"storage_probe_mb": 1024, "min_shm_gb": 16, "nproc": None, "accelerator": ""}

    def collective_ports(self, config: Mapping[str, Any]) -> list[int]:
        """Ports its collective library listens on between hosts, beyond the rendezvous port."""
        return []

    def device_counts(self, tool_output: str, evidence: Mapping[str, Any]) -> tuple[int, list[str]]:
        """The devices check's tool output -> (devices it lists, lines for the unhealthy ones)."""
        return 0, []

    def device_memory(self, tool_output: str, apps_output: str, min_free: float) -> DeviceMemory:
        """The memory check's tool output -> its devices, the busy ones and the processes holding memory."""
        return DeviceMemory(0, [], [])

    # ---- data ------------------------------------------------------------------------------------------------

    @property
    def folder(self) -> Path:
        """The vendor's folder: its data files (floors, compat rows, diagnosis tables, roles, host-side module)."""
        module = importlib.import_module(type(self).__module__)
        return Path(module.__file__ or ".").resolve().parent

    def data(self, name: str) -> Path:
        return self.folder / name

    def floors_file(self) -> Path | None:
        """Its floors and limits (``floors.yml``: collective bandwidth rows, per-SKU device floors, health limits)."""
        path = self.data("floors.yml")
        return path if path.is_file() else None

    def roles_dir(self) -> Path | None:
        """The roles it ships (``roles/<role>/``, Ansible's layout); the project's ``roles/`` wins by name."""
        path = self.data("roles")
        return path if path.is_dir() else None

    def compat_file(self, root: Path) -> Path | None:
        """Its compatibility rows: the project's ``compat/<name>.yml`` under ``root`` (where operators add rows),
        else the one it ships (``compat.yml`` in its folder); None when it has neither."""
        for path in (root / "compat" / f"{self.name}.yml", self.data("compat.yml")):
            if path.is_file():
                return path
        return None

    def diagnosis_tables(self) -> list[Path]:
        """Its error taxonomies (``diagnose/*.yml``)."""
        return sorted((self.folder / "diagnose").glob("*.yml"))

    def hostside_module(self) -> Path | None:
        """Its host-side module (``hostside.py``), uploaded beside the validators as ``vendor_<name>.py``."""
        path = self.data("hostside.py")
        return path if path.is_file() else None

    def __repr__(self) -> str:
        return f"<vendor {self.name}>"


# The collective sweeps: accelerators get bigger messages (busbw floors are quoted at GB sizes).
ACCELERATOR_SWEEPS: dict[str, dict[str, Any]] = {
    "quick": {"sizes": [1 << 26], "iters": 10},
    "standard": {"sizes": [1 << 20, 1 << 26, 1 << 30], "iters": 20},
    "full": {"sizes": [1 << 20, 1 << 26, 1 << 30, 1 << 33], "iters": 50},
}


@functools.cache
def _names() -> tuple[str, ...]:
    return tuple(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_"))


@functools.cache
def _load(name: str) -> Vendor:
    module = importlib.import_module(f"{__name__}.{name}")
    vendor = getattr(module, "VENDOR", None)
    if not isinstance(vendor, Vendor) or vendor.name != name:
        raise ConfigError(f"{module.__name__} must define VENDOR, a Vendor named {name!r}")
    return vendor


def vendors() -> tuple[Vendor, ...]:
    """Every vendor, in its ``order``."""
    return tuple(sorted((_load(name) for name in _names()), key=lambda v: (v.order, v.name)))


def vendor_names() -> tuple[str, ...]:
    return tuple(v.name for v in vendors())


def get_vendor(name: Any) -> Vendor:
    """The vendor of a stack's ``vendor:`` (or a config's); a ConfigError naming the known ones otherwise."""
    if isinstance(name, str) and name in _names():
        return _load(name)
    raise ConfigError(f"vendor {name!r} is not one of {', '.join(vendor_names())}")


def is_vendor(name: Any) -> bool:
    return isinstance(name, str) and name in _names()


def vendor_of_pci(vendor_id: str) -> str | None:
    """The vendor whose PCI vendor id this is (``0x10de`` -> ``nvidia``), None for another."""
    wanted = vendor_id.lower()
    return next((v.name for v in vendors() if wanted in v.pci_vendor_ids), None)
