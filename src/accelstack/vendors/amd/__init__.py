"""AMD Instinct GPUs (MI300X, MI250X): the amdgpu driver, ROCm, RCCL (torch's ``nccl`` backend), ``amd-smi``.

A ROCm build of torch is a CUDA-shaped torch: ``torch.version.hip`` is set (``torch.version.cuda`` is None), its
devices are torch's ``cuda`` device type (HIP runs underneath ``torch.cuda``), and its ``nccl`` backend is RCCL,
ROCm's NCCL, which reads NCCL's environment variables (``NCCL_SOCKET_IFNAME``, ``NCCL_DEBUG``: RCCL's
documentation, https://rocm.docs.amd.com/projects/rccl/en/latest/). ``HIP_VISIBLE_DEVICES`` renumbers the GPUs a
HIP program sees, ``ROCR_VISIBLE_DEVICES`` those the ROCm runtime exposes below it (ROCm's "GPU isolation
techniques" page); torch also honours ``CUDA_VISIBLE_DEVICES`` on ROCm, which is NVIDIA's name and not written here.

Which copy of a component counts as installed:

- ``amdgpu_driver`` is the loaded amdgpu module's version (``/sys/module/amdgpu/version``, written by the DKMS
  build that ``amdgpu-install`` puts in; else what ``amd-smi static`` reports). A host on the kernel's own amdgpu
  has no module version: the facts keep the kernel release it reports, and a stack's pin then reads as missing.
- ``rocm`` is the release at ``/opt/rocm`` (``.info/version``), what ``amd-smi``, ``rocminfo`` and programs built
  outside torch use.
- ``torch_rocm`` is the ROCm torch was built with (``torch.version.hip`` as ``6.2``): a ROCm wheel of
  download.pytorch.org carries its own HIP runtime and RCCL in ``torch/lib``, so it runs on the driver alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import Component, DeviceMemory, FactsReading, ToolkitRules, Vendor
from . import reading
from .facts import AmdFacts
from .parsers import hip_release, parse_amd_smi_memory, parse_amd_smi_processes

_PYTHON_ENV = "python_env (it comes with the torch wheel)"


def _section(facts: Any) -> AmdFacts | None:
    section: AmdFacts | None = facts.section("amd")
    return section


def _amd_attr(name: str) -> Any:
    def read(facts: Any) -> str | None:
        section = _section(facts)
        return getattr(section, name, None) if section is not None else None
    return read


def _torch_rocm(facts: Any) -> str | None:
    return hip_release(facts.torch.hip) if facts.torch is not None else None


class AmdVendor(Vendor):
    name = "amd"
    label = "AMD"
    order = 30
    backend = "nccl"  # RCCL, under torch's NCCL backend name on ROCm builds
    torch_device = "cuda"
    torch_build = "a ROCm build (torch.version.hip set: a +rocmX.Y wheel from download.pytorch.org/whl/rocmX.Y)"
    tool_dirs = ("/opt/rocm/bin",)  # where its tools are when not on PATH (the facts probe looks there)
    pci_vendor_ids = ("0x1002",)  # AMD/ATI graphics (0x1022 is AMD's CPUs and chipsets)
    # Instinct parts: MI300X is a processing accelerator (0x1200), MI250X/MI210/MI100 a display controller (0x0380).
    pci_classes = ("0x1200", "0x0380")
    visible_devices_env = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
    socket_ifname_env = "NCCL_SOCKET_IFNAME"  # RCCL reads NCCL's variables
    tool = "amd-smi"
    health_read = "`amd-smi`"
    health_help = ("`health.ecc` (uncorrectable or deferred fails), `health.bad_pages` (retired or "
                   "pending pages), `health.temperature` (against the GPU's own limits), `health.throttle`, "
                   "`health.power` (near the cap while idle), `health.pcie` (link narrower than its maximum)")
    tool_sections = {"amd_smi_static": "amd-smi", "amd_smi_version": "amd-smi", "rocm_smi": "rocm-smi"}
    # RCCL keeps NCCL's API: torch's ProcessGroupNCCL dlsyms the same entry points on ROCm (ncclCommInitRankConfig
    # from NCCL/RCCL 2.14, ncclCommSplit from 2.18; RCCL 2.18 came with ROCm 6.0).
    required_symbols = {"librccl.so.1": ["ncclCommInitRankConfig", "ncclCommSplit"]}
    listed_pins = ("torch", "torch_rocm", "rocm", "amdgpu_driver", "python")
    toolkit = ToolkitRules(
        toolkit="rocm", torch_build="torch_rocm", driver="amdgpu_driver", label="ROCm", tag_prefix="rocm",
        torch_attr="hip")

    def components(self) -> tuple[Component, ...]:
        return (
            self.component("torch_rocm", required=True, critical=True, match="release",
                           copy="the ROCm torch was built with (torch.version.hip, as major.minor): the HIP runtime "
                                "and RCCL its wheel carries", installed_by=_PYTHON_ENV, read=_torch_rocm,
                           with_torch=True),
            self.component("amdgpu_driver", required=True, critical=True, match="exact",
                           copy="the loaded amdgpu module (/sys/module/amdgpu/version, a DKMS build), else what "
                                "amd-smi static reports", installed_by="amdgpu_driver",
                           read=_amd_attr("driver_version")),
            self.component("rocm", required=True, critical=False, match="prefix",
                           copy="the ROCm release at /opt/rocm (.info/version), which amd-smi and programs built "
                                "outside torch use", installed_by="rocm", read=_amd_attr("rocm")),
        )

    @property
    def facts_type(self) -> type:
        return AmdFacts

    def read_facts(self, facts_reading: FactsReading) -> AmdFacts | None:
        return reading.read_facts(facts_reading, self.owns)

    def facts_rows(self, section: Any) -> list[tuple[str, str]]:
        return reading.facts_rows(section)

    def facts_summary(self, section: Any) -> list[str]:
        return reading.facts_summary(section)

    def owns(self, device: Any) -> bool:
        # Its accelerators only: a Radeon's HDMI audio function has AMD's vendor id too.
        klass = str(getattr(device, "pci_class", "") or "").lower()
        return device.vendor == self.name and (not klass or klass.startswith(self.pci_classes))

    def device_count(self, facts: Any) -> int | None:
        section = _section(facts)
        return len(section.gpus) if section is not None else None

    def library_dirs(self, paths: Mapping[str, str], variables: Mapping[str, Any]) -> list[str]:
        venv = paths.get("venv")
        rocm = paths.get("rocm") or "/opt/rocm"
        return ([f"{venv}/lib/python3*/site-packages/torch/lib"] if venv else []) + [f"{rocm}/lib"]

    def libraries_remedy(self, pins: Mapping[str, Any], host: str, matrix: Any) -> str | None:
        pin = pins.get("torch")
        return (f"the librccl loaded lacks symbols torch needs: use the RCCL of the torch wheel "
                f"({pin.version if pin else 'the stack pin'}, in torch/lib), and keep an older /opt/rocm/lib off "
                f"LD_LIBRARY_PATH (inv provision --limit {host})")

    def device_counts(self, tool_output: str, evidence: Mapping[str, Any]) -> tuple[int, list[str]]:
        # The GPUs the script read from `amd-smi list` (evidence.gpus); their health is the health check's.
        gpus = evidence.get("gpus")
        return (len(gpus), []) if isinstance(gpus, list) else (0, [])

    def device_memory(self, tool_output: str, apps_output: str, min_free: float) -> DeviceMemory:
        try:
            gpus = parse_amd_smi_memory(tool_output)
            processes = parse_amd_smi_processes(apps_output) if apps_output.strip() else []
        except ValueError:
            return DeviceMemory(0, [], [])  # output it cannot read: no device whose memory was read (an error)
        busy = [f"gpu {index}: {used}/{total} MiB used" for index, used, total in gpus
                if used is not None and total and 1 - used / total < min_free]
        procs = [f"pid {p['pid']} {p['name']} on gpu {p['gpu']} ({p['memory_mib']} MiB)"
                 for p in processes]
        return DeviceMemory(len(gpus), busy, procs)


VENDOR = AmdVendor()
