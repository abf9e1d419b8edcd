"""From raw gathered text to :class:`Facts`: the probe's output, or a support bundle's saved outputs.

Pure: no I/O. A parser that rejects its input costs that one fact, which is recorded in ``probe_errors``;
the rest of the host's facts still come back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from accelstack.facts import parsers as p
from accelstack.facts.model import AscendFacts, Facts, NvidiaFacts
from accelstack.facts.probe import is_probe_output, read_probe_output
from accelstack.vendors import get_vendor

T = TypeVar("T")

# A failed section whose fallback succeeded is not an error.
FALLBACKS = {"ip_addr": ("ip_addr_text", "net_sys"), "ip_addr_text": ("net_sys",), "ip_link_text": ("net_sys",)}
# The tool behind a section, for documents whose missing sections do not name it (hand-made bundles).
TOOL_SECTIONS = {"nvidia_smi": "nvidia-smi", "nvcc": "nvcc", "npu_smi": "npu-smi", "ip_addr": "ip"}


class _Collector:
    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    def attempt(self, what: str, func: Callable[[str], T], text: str) -> T | None:
        try:
            return func(text)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            self.facts.probe_errors.append(f"{what}: {exc}")
            return None


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
    facts.nvidia = _nvidia(facts, c, section, files)
    facts.ascend = _ascend(facts, c, section, files)
    text = section("stack_python")
    if text is not None:
        stack = c.attempt("stack_python", p.parse_stack_python, text)
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


def _nvidia(
    facts: Facts, c: _Collector, section: Callable[[str], str | None], files: dict[str, str | None]
) -> NvidiaFacts | None:
    nv = NvidiaFacts()
    proc = _file(files, "/proc/driver/nvidia/version")
    if proc is not None:
        nv.driver_version = p.parse_nvidia_proc_version(proc)
    if (text := section("nvidia_smi")) is not None:
        nv.gpus = p.parse_nvidia_smi_csv(text)
        if nv.driver_version is None:
            nv.driver_version = next((g.driver_version for g in nv.gpus if g.driver_version), None)
    version_json = _file(files, "/usr/local/cuda/version.json")
    if version_json is not None:
        nv.cuda = c.attempt("cuda version.json", p.parse_cuda_version_json, version_json)
    if nv.cuda is None and (version_txt := _file(files, "/usr/local/cuda/version.txt")) is not None:
        nv.cuda = p.parse_cuda_version_txt(version_txt)
    if nv.cuda is None and (text := section("nvcc")) is not None:
        nv.cuda = p.parse_nvcc_version(text)
    if (text := section("nccl_libs")) is not None:
        libs = c.attempt("nccl_libs", lambda t: _json(t, "nccl_libs"), text) or []
        nv.nccl_libraries = [str(x) for x in libs]
    if (text := section("nccl_loader")) is not None:
        nv.nccl_loader_library = next(iter(p.parse_ldconfig_cache(text, "libnccl.so.2")), None)
    loader_file = (section("nccl_loader_file") or "").strip() or None
    nv.nccl = _system_nccl(nv, files, loader_file)
    has_device = any(get_vendor("nvidia").owns(d) for d in facts.accelerators)
    if not (nv.driver_version or nv.gpus or nv.cuda or nv.nccl or nv.nccl_libraries or has_device):
        return None
    return nv


def _usr(path: str) -> str:
    # /lib/x86_64-linux-gnu is /usr/lib/x86_64-linux-gnu on a merged-/usr system: one folder for comparing.
    return path[len("/usr"):] if path.startswith("/usr/") else path


def _system_nccl(nv: NvidiaFacts, files: dict[str, str | None], loader_file: str | None = None) -> str | None:
    """The system NCCL's version: of the library the loader gives a program linking -lnccl when ``ldconfig -p``
    named one (the versioned file its name leads to, else one beside it, else the nccl.h of its prefix), otherwise
    the first nccl.h, else the first versioned library found (a host with one system NCCL, the usual case, reads
    the same either way)."""
    headers = [(path, p.parse_nccl_header(text)) for path, text in _files_matching(files, r"(^|/)nccl\.h$")]
    if loader_file and (version := p.parse_nccl_library_name(loader_file)):
        return version
    if nv.nccl_loader_library:
        folder = _usr(nv.nccl_loader_library.rsplit("/", 1)[0])
        beside = [lib for lib in nv.nccl_libraries if _usr(lib.rsplit("/", 1)[0]) == folder]
        if version := next((v for v in map(p.parse_nccl_library_name, beside) if v), None):
            return version
        prefix = folder.rsplit("/", 1)[0]
        if version := next((v for path, v in headers if v and _usr(path) == f"{prefix}/include/nccl.h"), None):
            return version
    if version := next((v for _path, v in headers if v), None):
        return version
    return next((v for v in map(p.parse_nccl_library_name, nv.nccl_libraries) if v), None)


def _pick(candidates: Iterable[str | None]) -> str | None:
    return next((x for x in candidates if x), None)


def _ascend(
    facts: Facts, c: _Collector, section: Callable[[str], str | None], files: dict[str, str | None]
) -> AscendFacts | None:
    asc = AscendFacts()
    driver_text = _file(files, "driver/version.info")
    if driver_text is not None:
        driver = p.parse_ascend_version_info(driver_text)
        asc.driver = driver.release
        asc.driver_ascendhal = driver.ascendhal_version
        asc.driver_compatible_cann = driver.compatible_version
    firmware_text = _file(files, "firmware/version.info")
    if firmware_text is not None:
        asc.firmware = p.parse_ascend_version_info(firmware_text).version

    # CANN <= 8.3 lives under ascend-toolkit/latest, 8.5+ under cann/; a host can have both during an
    # upgrade, and set_env.sh of the older layout is what most launch scripts still source, so it wins.
    install = [
        p.parse_ascend_install_info(text)
        for _, text in _files_matching(
            files, r"ascend-toolkit/latest/[^/]+-linux/ascend_toolkit_install\.info$"
        )
        + _files_matching(files, r"cann/[^/]+-linux/ascend_toolkit_install\.info$")
    ]
    cfg_text = _file(files, "ascend-toolkit/latest/version.cfg", "cann/version.cfg")
    cfg = p.parse_cann_version_cfg(cfg_text) if cfg_text is not None else p.CannVersionCfg()
    runtime_text = _file(files, "ascend-toolkit/latest/runtime/version.info")
    runtime = p.parse_key_values(runtime_text) if runtime_text is not None else {}
    toolkit_cfg = cfg.running("toolkit") or cfg.running("runtime")
    asc.cann_toolkit = _pick([i.version for i in install] + [toolkit_cfg.release if toolkit_cfg else None])
    asc.cann_internal = _pick([toolkit_cfg.internal if toolkit_cfg else None, runtime.get("Version")])
    asc.cann_innerversion = _pick(i.innerversion for i in install)

    # [I] which file names the kernels (opp_kernel) package is inferred from the 8.1.RC1 tree and the 8.5+
    # docs, not from an installer's own statement: version.cfg's opp_kernel entry, else opp_kernel's
    # version.info version_dir, else the 8.5+ ascend_ops_install.info.
    kernel_cfg = cfg.running("opp_kernel")
    kernel_info_text = _file(files, "ascend-toolkit/latest/opp_kernel/version.info")
    kernel_info = p.parse_key_values(kernel_info_text) if kernel_info_text is not None else {}
    ops = [p.parse_ascend_install_info(t) for _, t in _files_matching(files, r"ascend_ops_install\.info$")]
    asc.cann_kernels = _pick(
        [kernel_cfg.release if kernel_cfg else None, kernel_info.get("version_dir")]
        + [o.version for o in ops]
    )

    nnal_files = _files_matching(files, r"nnal/atb/[^/]+/version\.info$")
    # "latest" is what set_env.sh activates; otherwise the last versioned folder in sort order.
    nnal_files.sort(key=lambda item: (item[0].endswith("/latest/version.info"), item[0]))
    if nnal_files:
        asc.nnal = p.parse_nnal_version_info(nnal_files[-1][1]).version

    if (text := section("npu_smi")) is not None:
        info = p.parse_npu_smi_info(text)
        asc.npu_smi_version, asc.npus, asc.processes = info.version, info.chips, info.processes

    has_device = any(get_vendor("ascend").owns(d) for d in facts.accelerators)
    if not (asc.driver or asc.firmware or asc.cann_toolkit or asc.nnal or asc.npus or has_device):
        return None
    return asc


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
            missing.append(str(sec.get("tool") or TOOL_SECTIONS.get(name) or name))
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
