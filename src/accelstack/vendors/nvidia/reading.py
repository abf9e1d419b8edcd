"""NVIDIA's facts read from the probe's sections and files, and shown: :func:`read_facts`, the facts table's rows
and the summary's parts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .facts import NvidiaFacts
from .parsers import (
    parse_cuda_version_json,
    parse_cuda_version_txt,
    parse_ldconfig_cache,
    parse_nccl_header,
    parse_nccl_library_name,
    parse_nvcc_version,
    parse_nvidia_proc_version,
    parse_nvidia_smi_csv,
)

if TYPE_CHECKING:
    from .. import FactsReading


def read_facts(reading: FactsReading, owns: Callable[[Any], bool]) -> NvidiaFacts | None:
    """The NVIDIA section of a host's facts from the probe's sections and files; None when the host shows nothing
    of its vendor's (``owns`` tells the vendor's PCI devices)."""
    nv = NvidiaFacts()
    proc = reading.file("/proc/driver/nvidia/version")
    if proc is not None:
        nv.driver_version = parse_nvidia_proc_version(proc)
    if (text := reading.section("nvidia_smi")) is not None:
        nv.gpus = parse_nvidia_smi_csv(text)
        if nv.driver_version is None:
            nv.driver_version = next((g.driver_version for g in nv.gpus if g.driver_version), None)
    version_json = reading.file("/usr/local/cuda/version.json")
    if version_json is not None:
        nv.cuda = reading.attempt("cuda version.json", parse_cuda_version_json, version_json)
    if nv.cuda is None and (version_txt := reading.file("/usr/local/cuda/version.txt")) is not None:
        nv.cuda = parse_cuda_version_txt(version_txt)
    if nv.cuda is None and (text := reading.section("nvcc")) is not None:
        nv.cuda = parse_nvcc_version(text)
    if (text := reading.section("nccl_libs")) is not None:
        libs = reading.attempt("nccl_libs", lambda t: reading.json(t, "nccl_libs"), text) or []
        nv.nccl_libraries = [str(x) for x in libs]
    if (text := reading.section("nccl_loader")) is not None:
        nv.nccl_loader_library = next(iter(parse_ldconfig_cache(text, "libnccl.so.2")), None)
    loader_file = (reading.section("nccl_loader_file") or "").strip() or None
    nv.nccl = _system_nccl(nv, reading, loader_file)
    has_device = any(owns(d) for d in reading.accelerators)
    if not (nv.driver_version or nv.gpus or nv.cuda or nv.nccl or nv.nccl_libraries or has_device):
        return None
    return nv


def _usr(path: str) -> str:
    # /lib/x86_64-linux-gnu is /usr/lib/x86_64-linux-gnu on a merged-/usr system: one folder for comparing.
    return path[len("/usr"):] if path.startswith("/usr/") else path


def _system_nccl(nv: NvidiaFacts, reading: FactsReading, loader_file: str | None = None) -> str | None:
    """The system NCCL's version: of the library the loader gives a program linking -lnccl when ``ldconfig -p``
    named one (the versioned file its name leads to, else one beside it, else the nccl.h of its prefix), otherwise
    the first nccl.h, else the first versioned library found (a host with one system NCCL, the usual case, reads
    the same either way)."""
    headers = [(path, parse_nccl_header(text)) for path, text in reading.files_matching(r"(^|/)nccl\.h$")]
    if loader_file and (version := parse_nccl_library_name(loader_file)):
        return version
    if nv.nccl_loader_library:
        folder = _usr(nv.nccl_loader_library.rsplit("/", 1)[0])
        beside = [lib for lib in nv.nccl_libraries if _usr(lib.rsplit("/", 1)[0]) == folder]
        if version := next((v for v in map(parse_nccl_library_name, beside) if v), None):
            return version
        prefix = folder.rsplit("/", 1)[0]
        if version := next((v for path, v in headers if v and _usr(path) == f"{prefix}/include/nccl.h"), None):
            return version
    if version := next((v for _path, v in headers if v), None):
        return version
    return next((v for v in map(parse_nccl_library_name, nv.nccl_libraries) if v), None)


def facts_rows(nv: NvidiaFacts) -> list[tuple[str, str]]:
    return [("nvidia", f"driver {nv.driver_version or '-'}, CUDA {nv.cuda or '-'}, system NCCL {nv.nccl or '-'}, "
                       f"{len(nv.gpus)} GPU(s)" + (f": {nv.gpus[0].name}" if nv.gpus else ""))]


def facts_summary(nv: NvidiaFacts) -> list[str]:
    return [f"NVIDIA driver {nv.driver_version}, {len(nv.gpus)} GPUs"] if nv.driver_version else []
