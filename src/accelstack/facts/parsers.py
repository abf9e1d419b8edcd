"""Pure parsers: tool output and version files (text) -> dataclasses. No I/O here.

Error policy, per kind of input:

- Structured formats (JSON from ``ip -j addr``, the probe's own JSON parts, ``version.json``, ``nvidia-smi -q -x``
  XML): malformed input raises ``ValueError`` naming the format and showing the start of the text. Such text
  is machine-written, so garbage means something upstream broke and hiding it would be wrong. A JSON value of
  the wrong shape is ValueError too (not TypeError): to the caller it is the same malformed input.
- Human-oriented text (tables, ``key=value`` files, banners): parsers are lenient. Empty or unrecognised input
  returns an empty result (empty list, ``None`` fields); unrecognised lines are skipped. Vendors change these
  layouts between releases, and one odd line must not cost us the rest of a host's facts.

Every sample these were written against is under ``tests/data/captures/`` with its source. A vendor's tools are read
by its own parsers, in its folder (``accelstack.vendors.<vendor>.parsers``), under the same policy; what both share
(numbers that may read N/A, ``key=value`` files) is :mod:`accelstack.vendors.parsing`.
"""

from __future__ import annotations

import ast
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

from accelstack.facts.model import Address, Interface, PciDevice, TorchFacts
from accelstack.vendors import vendor_of_pci
from accelstack.vendors.nvidia.parsers import parse_nccl_library_name
from accelstack.vendors.parsing import load_json as _load_json
from accelstack.vendors.parsing import parse_key_values
from accelstack.vendors.parsing import snippet as _snippet
from accelstack.vendors.parsing import whole as _int

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
    return stack_python_from(data)


def stack_python_from(data: dict[str, Any]) -> StackPython:
    """The stack python's report, in the shape its snippet prints (``stack_snippet.py``), as facts."""
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



_PYTHON_V = re.compile(r"^Python (\d+)\.(\d+)\.(\d+)")


def parse_stack_files(text: str, files: dict[str, str | None]) -> StackPython:
    """The probe's ``stack_files`` lines (the stack python read from its files, not started) and the ``version.py``
    files it sent (path -> text) -> the same :class:`StackPython` its snippet's JSON gives.

    Lines: ``executable PATH``, ``version Python X.Y.Z`` (what ``-V`` printed), ``package NAME DIR`` (where the
    package imports from), ``dist NAME VERSION ROOT`` (its dist-info's version, and the sys.path folder holding
    it), ``library PATH`` (a libnccl torch may load, in the order torch looks), ``wheel NAME VERSION`` (an
    nvidia-nccl wheel). Raises ValueError without a ``version`` line that names a python version.
    """
    python = executable = None
    packages: dict[str, dict[str, Any]] = {}
    libraries: list[str] = []
    wheels: dict[str, str] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "executable":
            executable = rest
        elif kind == "version" and (match := _PYTHON_V.match(rest.strip())):
            python = "%s.%s.%s" % match.groups()
        elif kind == "package":
            name, _, folder = rest.partition(" ")
            packages.setdefault(name, {})["package_dir"] = folder
        elif kind == "dist":
            name, version, root = (rest.split(" ", 2) + ["", ""])[:3]
            packages.setdefault(name, {}).update(version=version or None, location=root or None)
        elif kind == "library" and rest:
            libraries.append(rest)
        elif kind == "wheel":
            name, _, version = rest.partition(" ")
            if version:
                wheels[name] = version
    if python is None:
        raise ValueError(f"stack_files: no python version: {_snippet(text)}")
    report: dict[str, Any] = {"python": python, "executable": executable, "packages": {}}
    for key in ("torch", "torch_npu"):
        found = packages.get(key)
        if found is None:
            report["packages"][key] = None
            continue
        pdir = found.get("package_dir")
        report["packages"][key] = {
            "version": found.get("version"), "location": found.get("location"), "package_dir": pdir,
            "version_py": files.get(pdir.rstrip("/") + "/version.py") if pdir else None}
    if report["packages"]["torch"]:
        # "embedded" (the version a library carries) is read by the snippet: the probe sends these lines only where
        # a wheel names the version or no library was found.
        report["nccl"] = {"libraries": libraries, "wheels": wheels, "embedded": None}
    return stack_python_from(report)
