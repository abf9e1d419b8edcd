"""NVIDIA GPUs: the driver, the CUDA toolkit, NCCL (torch's ``nccl`` backend), ``nvidia-smi``.

Which copy of a component counts as installed is the one a training job uses:

- ``nccl`` is the NCCL **torch loads**: the ``nvidia-nccl-cuXX`` wheel beside torch (``torch.cuda.nccl.version()``
  reports it), or a ``libnccl`` bundled in ``torch/lib``; a CUDA build of torch with neither links the system
  ``libnccl`` and then loads that one. A CPU build of torch loads none. It comes with the torch wheel, so the
  ``python_env`` role installs it (its pip step), never the installer of a system package.
- ``system_nccl`` is the **system** NCCL (``nccl.h``, else the versioned ``libnccl.so.X.Y.Z`` in the system library
  folders): what nccl-tests and other programs built outside torch link. A stack that wants one pins it; the
  ``system_nccl`` role installs it. torch wheels never load it.
- ``nvidia_driver`` is the kernel module that is loaded (``/proc/driver/nvidia/version``, else what ``nvidia-smi``
  reports): a driver installed on disk but not yet loaded (a reboot pending) is not the one CUDA uses.
- ``cuda`` is the toolkit at ``/usr/local/cuda`` (``version.json``, ``version.txt``, else ``nvcc``), which the env
  file exports as ``CUDA_HOME``; ``torch_cuda`` is the CUDA torch was built with (its wheel's own runtime).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import Any

from .. import Component, DeviceMemory, FactsReading, ToolkitRules, Vendor
from . import reading
from .facts import NvidiaFacts
from .parsers import parse_nvidia_smi_csv

_PYTHON_ENV = "python_env (the venv from the artifact wheelhouse)"


def _section(facts: Any) -> NvidiaFacts | None:
    section: NvidiaFacts | None = facts.section("nvidia")
    return section


def _nvidia_attr(name: str) -> Any:
    def read(facts: Any) -> str | None:
        section = _section(facts)
        return getattr(section, name, None) if section is not None else None
    return read


def _torch_cuda(facts: Any) -> str | None:
    return facts.torch.cuda if facts.torch is not None else None


def torch_nccl(facts: Any) -> tuple[str | None, str]:
    """The NCCL torch loads and where it is: ``("2.28.9", "torch")`` for its own (wheel or ``torch/lib``),
    ``("2.28.3", "system")`` for a CUDA build of torch without one (it links the system libnccl), ``(None,
    "none")`` when torch is not installed or is not a CUDA build (it loads no NCCL)."""
    torch = facts.torch
    if torch is None:
        return None, "none"
    if torch.nccl:
        return torch.nccl, "torch"
    section = _section(facts)
    system = section.nccl if section is not None else None
    if torch.cuda and system:
        return system, "system"
    return None, "none"


def _nccl(facts: Any) -> str | None:
    return torch_nccl(facts)[0]


def _apps(text: str) -> list[dict[str, str]]:
    rows = []
    for row in csv.reader((text or "").splitlines(), skipinitialspace=True):
        if len(row) >= 3 and row[0].strip().isdigit():
            rows.append({"pid": row[0].strip(), "name": row[1].strip(), "used_mib": row[2].strip()})
    return rows


class NvidiaVendor(Vendor):
    name = "nvidia"
    label = "NVIDIA"
    order = 20
    backend = "nccl"
    torch_device = "cuda"
    torch_build = "a CUDA build"
    tool_dirs = ("/usr/local/cuda/bin", "/usr/local/nvidia/bin")  # where its tools are when not on PATH (the facts probe looks there)
    pci_vendor_ids = ("0x10de",)
    pci_classes = ("0x0302", "0x0300")  # 3D controller (data-center GPUs), VGA controller
    visible_devices_env = ("CUDA_VISIBLE_DEVICES",)
    socket_ifname_env = "NCCL_SOCKET_IFNAME"
    tool = "nvidia-smi"
    health_read = "`nvidia-smi -q -x`"
    health_help = ("`health.ecc` (uncorrectable volatile fails, lifetime-only warns, a reset asked "
                   "for fails), `health.remapped_rows` (pending or failed fails), `health.retired_pages` (pre-Ampere), "
                   "`health.throttle` (hardware/thermal slowdown fails, power cap while idle warns), "
                   "`health.temperature` (against the GPU's own slowdown limit), `health.persistence`, "
                   "`health.nvlink` (`nvidia-smi nvlink -s`, links per SKU), `health.xid` (kernel log, severity per "
                   "DCGM's classification)")
    tool_sections = {"nvidia_smi": "nvidia-smi", "nvcc": "nvcc"}
    # What torch dlsyms at the first communicator: ncclCommInitRankConfig arrived in NCCL 2.14 and ncclCommSplit in
    # 2.18, both used by torch >= 2.2 (https://github.com/pytorch/pytorch, ProcessGroupNCCL / NCCLUtils).
    required_symbols = {"libnccl.so.2": ["ncclCommInitRankConfig", "ncclCommSplit"]}
    listed_pins = ("torch", "cuda", "nvidia_driver", "nccl", "python")
    toolkit = ToolkitRules(
        toolkit="cuda", torch_build="torch_cuda", driver="nvidia_driver", label="CUDA", tag_prefix="cu",
        torch_attr="cuda", library="nccl", branch_field="nvidia_driver_branch", background_source="nvidia-background",
        branch_source="NVIDIA data-center driver branches: branch Rnnn is driver major nnn")

    def components(self) -> tuple[Component, ...]:
        return (
            self.component("torch_cuda", required=True, critical=True, match="exact",
                           copy="the CUDA torch was built with (torch.version.cuda): the runtime its wheel carries",
                           installed_by="python_env (it comes with the torch wheel)", read=_torch_cuda,
                           with_torch=True),
            self.component("nvidia_driver", required=True, critical=True, match="exact",
                           copy="the loaded kernel module (/proc/driver/nvidia/version), else what nvidia-smi reports",
                           installed_by="nvidia_driver", read=_nvidia_attr("driver_version")),
            self.component("cuda", required=True, critical=False, match="prefix",
                           copy="the toolkit at /usr/local/cuda, the env file's CUDA_HOME (version.json, version.txt, "
                                "else nvcc)", installed_by="cuda_toolkit", read=_nvidia_attr("cuda")),
            self.component("nccl", required=True, critical=True, match="release",
                           copy="the NCCL torch loads: its nvidia-nccl wheel or torch/lib, else (a CUDA torch without "
                                "one) the system libnccl", installed_by="python_env (torch's nvidia-nccl wheel)",
                           read=_nccl, with_torch=True),
            self.component("system_nccl", required=False, critical=False, match="release",
                           copy="the system NCCL, which nccl-tests and programs built outside torch load: the "
                                "libnccl.so.2 the dynamic loader gives (ldconfig's cache), by the file it leads to, "
                                "else its nccl.h", installed_by="system_nccl (an NCCL package from the artifact "
                                "repository)", read=_nvidia_attr("nccl")),
        )

    def stack_fields(self) -> Mapping[str, str]:
        return {"nvidia_driver_branch": "the driver branch its nvidia_driver is on (e.g. R580)"}

    def component_details(self, facts: Any) -> dict[str, dict[str, Any]]:
        torch = facts.torch
        nvidia = _section(facts)
        loaded, where = torch_nccl(facts)
        system = nvidia.nccl if nvidia is not None else None
        if loaded is None and system is None:
            return {}
        common: dict[str, Any] = {
            "torch_nccl": torch.nccl if torch else None, "torch_nccl_library": torch.nccl_library if torch else None,
            "torch_nccl_from": torch.nccl_from if torch else None, "system_nccl": system,
            "system_nccl_libraries": list(nvidia.nccl_libraries) if nvidia is not None else []}
        if where == "torch":
            judged = "the NCCL torch loads"
        elif where == "system":
            judged = "the system NCCL (torch is a CUDA build with no NCCL of its own beside it, so it links this one)"
        elif torch is None:
            judged = "the NCCL torch loads: torch is not installed in the stack's python"
        else:
            judged = "the NCCL torch loads: this torch is not a CUDA build and loads none"
        nccl: dict[str, Any] = {"judged": judged, **common}
        if where == "torch" and system and system != loaded:
            nccl["note"] = f"the system NCCL {system} is installed too; torch does not load it"
        details = {"nccl": nccl}
        if system is not None:
            copy = next(c.copy for c in self.components() if c.key == "system_nccl")
            system_detail: dict[str, Any] = {"judged": copy, **common,
                                             "loader_library": nvidia.nccl_loader_library if nvidia else None}
            if where == "torch" and loaded != system:
                system_detail["note"] = f"torch loads its own NCCL {loaded}, not this one"
            details["system_nccl"] = system_detail
        return details

    @property
    def facts_type(self) -> type:
        return NvidiaFacts

    def read_facts(self, facts_reading: FactsReading) -> NvidiaFacts | None:
        return reading.read_facts(facts_reading, self.owns)

    def facts_rows(self, section: Any) -> list[tuple[str, str]]:
        return reading.facts_rows(section)

    def facts_summary(self, section: Any) -> list[str]:
        return reading.facts_summary(section)

    def device_count(self, facts: Any) -> int | None:
        section = _section(facts)
        return len(section.gpus) if section is not None else None

    def library_dirs(self, paths: Mapping[str, str], variables: Mapping[str, Any]) -> list[str]:
        venv = paths.get("venv")
        return [f"{venv}/lib/python3*/site-packages/nvidia/nccl/lib"] if venv else []

    def libraries_remedy(self, pins: Mapping[str, Any], host: str, matrix: Any) -> str | None:
        pin = pins.get("nccl")
        return (f"the libnccl loaded lacks symbols torch needs: use the NCCL the torch wheel pins "
                f"({pin.version if pin else 'see compat/nvidia.yml'}), and keep an older system libnccl off "
                f"LD_LIBRARY_PATH (inv provision --limit {host})")

    def device_counts(self, tool_output: str, evidence: Mapping[str, Any]) -> tuple[int, list[str]]:
        # The GPUs the script read from `nvidia-smi -q -x` (evidence.gpus), else the --query-gpu CSV of older records.
        gpus_seen = evidence.get("gpus")
        if isinstance(gpus_seen, list):
            return len(gpus_seen), []
        return len(parse_nvidia_smi_csv(tool_output)), []

    def device_memory(self, tool_output: str, apps_output: str, min_free: float) -> DeviceMemory:
        gpus = parse_nvidia_smi_csv(tool_output)
        busy = []
        for gpu in gpus:
            if gpu.memory_total_mib and gpu.memory_used_mib is not None:
                if 1 - gpu.memory_used_mib / gpu.memory_total_mib < min_free:
                    busy.append(f"gpu {gpu.index}: {gpu.memory_used_mib}/{gpu.memory_total_mib} MiB used")
        procs = [f"pid {a['pid']} {a['name']} ({a['used_mib']} MiB)" for a in _apps(apps_output)]
        return DeviceMemory(len(gpus), busy, procs)


VENDOR = NvidiaVendor()
