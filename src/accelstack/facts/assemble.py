"""From raw gathered text to :class:`Facts`: the probe's output, or a support bundle's saved outputs.

Pure: no I/O. A parser that rejects its input costs that one fact, which is recorded in ``probe_errors``;
the rest of the host's facts still come back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from accelstack.facts import parsers as p
from accelstack.facts.model import Facts
from accelstack.facts.probe import is_probe_output, read_probe_output
from accelstack.vendors import Vendor, vendors

T = TypeVar("T")

# A failed section whose fallback succeeded is not an error.
FALLBACKS = {"ip_addr": ("ip_addr_text", "net_sys"), "ip_addr_text": ("net_sys",), "ip_link_text": ("net_sys",)}
# The tool behind a section, for documents whose missing sections do not name it (hand-made bundles); each
# vendor adds its own (Vendor.tool_sections).
TOOL_SECTIONS = {"ip_addr": "ip"}


def tool_of(section: str) -> str | None:
    for vendor in vendors():
        if section in vendor.tool_sections:
            return vendor.tool_sections[section]
    return TOOL_SECTIONS.get(section)


class _Collector:
    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    def attempt(self, what: str, func: Callable[[str], T], text: str) -> T | None:
        try:
            return func(text)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            self.facts.probe_errors.append(f"{what}: {exc}")
            return None


class _Reading(_Collector):
    """What a vendor reads its facts section from (accelstack.vendors.FactsReading): the sections, the files, the
    host's PCI accelerators, and the collector of what failed to parse."""

    def __init__(self, facts: Facts, section: Callable[[str], str | None], files: dict[str, str | None]) -> None:
        super().__init__(facts)
        self._section = section
        self._files = files
        self.accelerators = facts.accelerators

    def section(self, name: str) -> str | None:
        return self._section(name)

    def file(self, *suffixes: str) -> str | None:
        return _file(self._files, *suffixes)

    def files_matching(self, pattern: str) -> list[tuple[str, str]]:
        return _files_matching(self._files, pattern)

    def json(self, text: str, what: str) -> Any:
        return _json(text, what)


def _file(files: dict[str, str | None], *suffixes: str) -> str | None:
    """The first present file whose path ends with one of ``suffixes``, in the order the suffixes are given.

    Matching by suffix lets the same code read the probe's absolute paths, any ``ascend_root``, and a
    bundle's relative copies.
    """
    for suffix in suffixes:
        for path in sorted(files):
            content = files[path]
            if content is not None and (path == suffix or path.endswith("/" + suffix.lstrip("/"))):
                return content
    return None


def _files_matching(files: dict[str, str | None], pattern: str) -> list[tuple[str, str]]:
    regex = re.compile(pattern)
    return [(path, text) for path, text in sorted(files.items()) if text is not None and regex.search(path)]


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(f"{what}: not valid JSON: {text[:200]!r}") from None


def parse_sections(sections: dict[str, str], files: dict[str, str | None]) -> Facts:
    """Facts from section outputs (name -> stdout text) and files (path -> content, None when absent).

    Names are the probe's (see ``accelstack/hostside/probes/facts_probe.sh``); a support bundle that saves outputs
    under the same names is parsed by the same code.
    """
    facts = Facts()
    c = _Collector(facts)

    def section(name: str) -> str | None:
        text = sections.get(name)
        return text if text is not None and text.strip() else None

    _basics(facts, c, section, files)
    _network(facts, c, section, files)
    reading = _Reading(facts, section, files)
    for vendor in vendors():
        _vendor_section(facts, vendor, reading)
    # The stack python: read from its files (stack_files), or, where they cannot tell, its own report (stack_python).
    stack = None
    if (text := section("stack_python")) is not None:
        stack = c.attempt("stack_python", p.parse_stack_python, text)
    elif (text := section("stack_files")) is not None:
        stack = c.attempt("stack_files", lambda t: p.parse_stack_files(t, files), text)
    if stack is not None:
        facts.stack_python_version = stack.version
        facts.stack_python = stack.executable
        facts.torch = stack.torch
    pip_list = section("pip_list")
    if facts.torch is not None and facts.torch.nccl is None and pip_list is not None:
        # A bundle from a probe that did not yet look for torch's NCCL: the stack python's pip list names the
        # NCCL wheel torch loads from.
        if (wheel := p.nccl_wheel_in_pip_list(pip_list)) is not None:
            facts.torch.nccl, facts.torch.nccl_from = wheel[1], f"pip list: {wheel[0]}=={wheel[1]}"
    return facts


def _basics(
    facts: Facts, c: _Collector, section: Callable[[str], str | None], files: dict[str, str | None]
) -> None:
    if (text := section("hostname")) is not None:
        facts.hostname = text.strip()
    if (text := section("uname")) is not None:
        uname = c.attempt("uname", lambda t: _json(t, "uname"), text)
        if isinstance(uname, dict):
            facts.kernel, facts.arch = uname.get("release"), uname.get("machine")
    os_release = _file(files, "/etc/os-release") or section("os_release")
    if os_release is not None:
        info = p.parse_os_release(os_release)
        facts.os_name, facts.os_id, facts.os_version = info.name, info.id, info.version_id
    meminfo = _file(files, "/proc/meminfo") or section("meminfo")
    if meminfo is not None:
        facts.mem_total_kib = p.parse_meminfo(meminfo).total_kib
    if (text := section("cpu_count")) is not None:
        facts.cpus = c.attempt("cpu_count", lambda t: int(t.strip()), text)
    if (text := section("numa_nodes")) is not None:
        nodes = c.attempt("numa_nodes", lambda t: _json(t, "numa_nodes"), text) or []
        facts.numa_nodes = sorted(int(n[4:]) for n in nodes if isinstance(n, str) and n[4:].isdigit())
    if (text := section("probe_python")) is not None:
        facts.python_version = text.strip()
    if (text := section("pci")) is not None:
        facts.accelerators = c.attempt("pci", p.parse_pci_devices, text) or []
    if (text := section("shm")) is not None:
        shm = c.attempt("shm", lambda t: _json(t, "shm"), text)
        if isinstance(shm, dict):
            facts.shm_bytes = shm.get("total")
    if (text := section("memlock")) is not None:
        limit = c.attempt("memlock", lambda t: _json(t, "memlock"), text)
        if isinstance(limit, dict) and "soft" in limit:
            soft = limit["soft"]
            facts.memlock = None if soft == "unlimited" else int(soft)
            facts.memlock_known = True
    if (text := section("disk_free")) is not None:
        free = c.attempt("disk_free", lambda t: _json(t, "disk_free"), text)
        if isinstance(free, dict):
            facts.disk_free = {str(k): (int(v) if v is not None else None) for k, v in free.items()}


def _network(
    facts: Facts, c: _Collector, section: Callable[[str], str | None], files: dict[str, str | None]
) -> None:
    text = section("ip_addr")
    if text is not None and text.lstrip().startswith("["):
        facts.interfaces = c.attempt("ip_addr", p.parse_ip_json, text) or []
    elif (addr := section("ip_addr_text")) is not None:
        facts.interfaces = p.parse_ip_oneline(addr, section("ip_link_text") or "")
    elif (sysfs := section("net_sys")) is not None:
        # No iproute2 (minimal images, containers): /sys/class/net and ioctls, as the env validator reads them.
        inet6 = _file(files, "/proc/net/if_inet6") or ""
        facts.interfaces = c.attempt("net_sys", lambda t: p.parse_sys_class_net(t, inet6), sysfs) or []


def _vendor_section(facts: Facts, vendor: Vendor, reading: _Reading) -> None:
    """The vendor's section of the facts (its Vendor.read_facts), kept when the host shows anything of it."""
    section = vendor.read_facts(reading)
    if section is not None:
        facts.vendor_facts[vendor.name] = section


def parse_probe_output(text: str) -> Facts:
    """What the probe printed (its framed output, or a probe document as JSON, as bundles keep it) -> Facts.

    Raises ValueError (with the first 200 characters) when ``text`` is neither. See :func:`parse_probe_document`.
    """
    if is_probe_output(text):
        return parse_probe_document(read_probe_output(text))
    try:
        doc = json.loads(text)
    except ValueError:
        raise ValueError(f"facts probe output is neither the probe's framed text nor JSON: {text[:200]!r}") from None
    if not isinstance(doc, dict) or "probe" not in doc:
        raise ValueError(f"facts probe output is not a probe document: {text[:200]!r}")
    return parse_probe_document(doc)


def parse_probe_document(doc: dict[str, Any]) -> Facts:
    """The probe document -> Facts.

    A document with ``fatal`` (a probe that could not run at all) gives Facts carrying that in ``probe_errors``:
    the caller decides. A section that failed is recorded in ``probe_errors``; a tool that is not installed in
    ``missing_tools``.
    """
    raw_sections = doc.get("sections") or {}
    files = {str(k): v for k, v in (doc.get("files") or {}).items()}
    texts: dict[str, str] = {}
    missing: list[str] = []
    errors: list[str] = []
    for name, sec in sorted(raw_sections.items()):
        if not isinstance(sec, dict):
            continue
        if sec.get("missing"):
            missing.append(str(sec.get("tool") or tool_of(name) or name))
        elif sec.get("timeout"):
            errors.append(f"{name}: `{sec.get('cmd')}` timed out")
        elif sec.get("rc") != 0:
            fallbacks = [raw_sections.get(other) for other in FALLBACKS.get(name, ())]
            if any(isinstance(f, dict) and f.get("rc") == 0 for f in fallbacks):
                continue  # e.g. iproute2 without -j: expected on old distributions, and covered
            detail = (sec.get("err") or sec.get("out") or "").strip().splitlines()
            errors.append(
                f"{name}: `{sec.get('cmd')}` exited {sec.get('rc')}" + (f": {detail[0]}" if detail else "")
            )
        else:
            texts[name] = str(sec.get("out") or "")
    facts = parse_sections(texts, files)
    facts.missing_tools = sorted(set(missing))
    facts.probe_errors = [str(e) for e in doc.get("errors") or []] + errors + facts.probe_errors
    if doc.get("fatal"):
        facts.probe_errors.insert(0, str(doc["fatal"]))
    return facts
