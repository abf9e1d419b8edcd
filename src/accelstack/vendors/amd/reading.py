"""AMD's facts read from the probe's sections and files, and shown: :func:`read_facts`, the facts table's rows and
the summary's parts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .facts import AmdFacts
from .parsers import (
    parse_amd_smi_static,
    parse_amd_smi_version,
    parse_amdgpu_module_version,
    parse_rocm_smi_products,
    parse_rocm_version_file,
    rocm_smi_driver,
)

if TYPE_CHECKING:
    from .. import FactsReading

# Where ROCm's release file lies: /opt/rocm is the link amdgpu-install keeps on the installed release.
ROCM_VERSION_FILES = ("/opt/rocm/.info/version",)
AMDGPU_MODULE_VERSION = "/sys/module/amdgpu/version"


def read_facts(reading: FactsReading, owns: Callable[[Any], bool]) -> AmdFacts | None:
    """The AMD section of a host's facts; None when the host shows nothing of its vendor's (``owns`` tells the
    vendor's PCI devices)."""
    amd = AmdFacts()
    module = reading.file(AMDGPU_MODULE_VERSION)
    if module is not None:
        amd.driver_version = parse_amdgpu_module_version(module)
    rocm = reading.file(*ROCM_VERSION_FILES)
    if rocm is not None:
        amd.rocm = parse_rocm_version_file(rocm)
    if (text := reading.section("amd_smi_static")) is not None:
        amd.gpus = reading.attempt("amd_smi_static", parse_amd_smi_static, text) or []
    elif (text := reading.section("rocm_smi")) is not None:
        amd.gpus = reading.attempt("rocm_smi", parse_rocm_smi_products, text) or []
        amd.kernel_driver = rocm_smi_driver(text)
    if (text := reading.section("amd_smi_version")) is not None:
        version = parse_amd_smi_version(text)
        amd.smi_rocm = version.get("rocm")
    reported = next((g.driver_version for g in amd.gpus if g.driver_version), None)
    if amd.driver_version is None and reported is not None:
        # amd-smi names the module's version for a DKMS driver and the kernel's release for the in-tree one
        # (ROCm/k8s-device-plugin#157: no /sys/module/amdgpu/version, "amdgpu version: Linuxversion6.8.0-79...").
        if parse_amdgpu_module_version(reported) is not None:
            amd.driver_version = reported
        else:
            amd.kernel_driver = reported
    has_device = any(owns(d) for d in reading.accelerators)
    if not (amd.driver_version or amd.kernel_driver or amd.gpus or amd.rocm or has_device):
        return None
    return amd


def facts_rows(amd: AmdFacts) -> list[tuple[str, str]]:
    driver = amd.driver_version or (f"in-tree ({amd.kernel_driver})" if amd.kernel_driver else "-")
    return [("amd", f"amdgpu {driver}, ROCm {amd.rocm or '-'}, {len(amd.gpus)} GPU(s)"
                    + (f": {amd.gpus[0].name}" if amd.gpus else ""))]


def facts_summary(amd: AmdFacts) -> list[str]:
    if not (amd.driver_version or amd.gpus):
        return []
    return [f"AMD amdgpu {amd.driver_version or 'in-tree'}, ROCm {amd.rocm or '-'}, {len(amd.gpus)} GPUs"]
