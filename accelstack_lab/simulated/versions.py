"""Version facts the simulated (lab-only) vendor packages are built from.

Every table says where its rows come from. ``[V]`` rows are copied from a public capture or vendor file named
beside the table (the same captures are under tests/data/captures/, their sources in its README.md); ``[K]`` rows
are background knowledge, not re-verified; ``[I]`` rows are our own inference, written down so a simulated file
never pretends to be more certain than its source. The simulated files use these values so that the lab's hosts
carry version files in the real formats; they are never evidence about real vendor releases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SIMULATED_MARK = "simulated"

# --- HcclCommInitRootInfoConfig: the one rule -------------------------------------------------------------
#
# torch_npu resolves HcclCommInitRootInfoConfig from libhccl.so with dlsym and fails with
# "RuntimeError: Failed to find function HcclCommInitRootInfoConfig" when the loaded CANN lacks it
# (https://github.com/Ascend/pytorch/blob/master/torch_npu/csrc/distributed/HcclCompile.h; seen with torch 2.5.1
# in https://github.com/modelscope/ms-swift/issues/4211). No public source names the first CANN release that
# exports it.
# [I] What the sources do show: the function is declared in the hccl.h that CANN 8.x ships, with
# HCCL_COMM_CONFIG_VERSION 1 (the first version of the config struct), and vllm-ascend#672 reports
# hcclCommInitRootInfoConfig *returning an error* (so present) on the CANN before 8.1.RC1. We therefore place
# its introduction at CANN 7.0.0 (the release that introduced the HcclCommConfig struct family, torch_npu
# branch v2.1.0-5.0.0) and build one older toolkit, 7.0.RC1, as the lab's fault fixture that lacks it.
# Change this constant, and only this one, when a release note pins the version.
ROOTINFO_CONFIG_FIRST_CANN = "7.0.0"
ROOTINFO_CONFIG_CONFIDENCE = "inferred"
# A toolkit the lab builds besides the stacks' pins: old enough to lack HcclCommInitRootInfoConfig.
FAULT_FIXTURE_CANN = "7.0.RC1"

HCCL_ALWAYS_EXPORTED = (
    "HcclGetRootInfo",
    "HcclCommInitRootInfo",
    "HcclCommInitClusterInfo",
    "HcclCommDestroy",
    "HcclAllReduce",
    "HcclAllGather",
    "HcclBroadcast",
    "HcclReduceScatter",
    "HcclBarrier",
    "HcclGetRankSize",
    "HcclGetRankId",
    "HcclGetErrorString",
)
HCCL_CONFIG_EXPORTS = ("HcclCommInitRootInfoConfig", "HcclCommInitClusterInfoConfig")


_CANN_RE = re.compile(r"^(\d+)\.(\d+)\.(RC(\d+)|(\d+))(?:\.(.+))?$", re.IGNORECASE)


def cann_sort_key(version: str) -> tuple[int, int, int, int]:
    """Order CANN releases: ``8.0.RC2 < 8.0.RC3 < 8.0.0 < 8.1.RC1``; an RC precedes the final release.

    Raises ValueError on something that is not a CANN version.
    """
    match = _CANN_RE.match(version.strip())
    if not match:
        raise ValueError(f"not a CANN version: {version!r}")
    major, minor = int(match.group(1)), int(match.group(2))
    if match.group(4) is not None:
        return (major, minor, 0, int(match.group(4)))
    return (major, minor, 1, int(match.group(5)))


def cann_exports_rootinfo_config(version: str) -> bool:
    """Does the libhccl.so of this CANN release export ``HcclCommInitRootInfoConfig``? See the rule above."""
    return cann_sort_key(version) >= cann_sort_key(ROOTINFO_CONFIG_FIRST_CANN)


def hccl_exports(version: str) -> tuple[str, ...]:
    extra = HCCL_CONFIG_EXPORTS if cann_exports_rootinfo_config(version) else ()
    return HCCL_ALWAYS_EXPORTED + extra


# --- CANN -------------------------------------------------------------------------------------------------

# Since CANN 8.5 the kernels package is the "ops" package (vllm-ascend's install guide,
# https://github.com/vllm-project/vllm-ascend/blob/main/docs/source/installation.md, and hicann/oam-tools
# docs/en/quick_install.md, https://github.com/hicann/oam-tools) [V].
OPS_RENAME_CANN = "8.5.0"


@dataclass(frozen=True)
class CannRelease:
    version: str
    internal: str  # the component Version= / version.cfg internal number, e.g. 7.7.0.1.238
    innerversion: str  # ascend_toolkit_install.info innerversion, e.g. V100R001C21SPC001B238
    compatible: tuple[str, ...]  # toolkit compatible_version families
    timestamp: str


# 8.1.RC1 is verbatim from the installed tree (https://github.com/leideng/CANN-8.1.RC1) [V];
# 7.0.T10's innerversion is from the Ascend/mind-cluster capture
# (tests/data/captures/ascend_toolkit_install_7.0.T10.txt) [V]. The other rows extrapolate the family numbering
# (C18 = 8.0.RC2 ... C21 = 8.1.RC1, as 8.1.RC1's compatible_version list suggests) [I].
CANN_RELEASES: dict[str, CannRelease] = {
    r.version: r
    for r in (
        CannRelease("7.0.RC1", "7.0.0.5.242", "V100R001C13SPC001B242",
                    ("[V100R001C13]",), "20230930_000000000"),
        CannRelease("7.0.0", "7.1.0.3.220", "V100R001C15SPC001B220",
                    ("[V100R001C13]", "[V100R001C15]"), "20231230_000000000"),
        CannRelease("8.0.RC1", "7.2.0.1.231", "V100R001C17SPC001B231",
                    ("[V100R001C15]", "[V100R001C17]"), "20240330_000000000"),
        CannRelease("8.0.RC2", "7.3.0.1.231", "V100R001C18SPC001B231",
                    ("[V100R001C15]", "[V100R001C17]", "[V100R001C18]"), "20240630_000000000"),
        CannRelease("8.0.RC3", "7.5.0.1.129", "V100R001C19SPC001B129",
                    ("[V100R001C15]", "[V100R001C17]", "[V100R001C18]", "[V100R001C19]"), "20240930_000000000"),
        CannRelease("8.0.0", "7.6.0.1.220", "V100R001C20SPC001B220",
                    ("[V100R001C15]", "[V100R001C18]", "[V100R001C19]", "[V100R001C20]"), "20241230_000000000"),
        CannRelease("8.1.RC1", "7.7.0.1.238", "V100R001C21SPC001B238",
                    ("[V100R001C15]", "[V100R001C18]", "[V100R001C19]", "[V100R001C20]", "[V100R001C21]"),
                    "20250428_203017761"),
        CannRelease("8.2.RC1", "8.2.0.1.231", "V100R001C22SPC001B231",
                    ("[V100R001C18]", "[V100R001C19]", "[V100R001C20]", "[V100R001C21]", "[V100R001C22]"),
                    "20250730_000000000"),
    )
}


def cann_release(version: str) -> CannRelease:
    """The table row, or a derived one for a release the table lacks (marked by its B000 build)."""
    if version in CANN_RELEASES:
        return CANN_RELEASES[version]
    major, minor, final, number = cann_sort_key(version)
    family = 21 + (major - 8) * 8 + minor * 2 + final
    return CannRelease(version, f"{major}.{minor}.{number}.1.000", f"V100R001C{family}SPC001B000",
                       (f"[V100R001C{family}]",), "20250101_000000000")


def kernels_package_name(version: str, chip: str, arch: str) -> str:
    """``Ascend-cann-kernels-910b_<v>_linux-<arch>.run`` up to 8.3; ``Ascend-cann-910b-ops_...`` from 8.5."""
    if cann_sort_key(version) >= cann_sort_key(OPS_RENAME_CANN):
        return f"Ascend-cann-{chip}-ops_{version}_linux-{arch}.run"
    return f"Ascend-cann-kernels-{chip}_{version}_linux-{arch}.run"


# --- Ascend HDK (driver and firmware) ---------------------------------------------------------------------


@dataclass(frozen=True)
class DriverRelease:
    version: str
    ascendhal: str
    innerversion: str
    compatible: tuple[str, ...]
    compatible_fw: str
    has_package_version: bool


@dataclass(frozen=True)
class FirmwareRelease:
    version: str
    package_version: str
    compatible_drv: tuple[str, ...]


# 23.0.7 and 25.0.rc1.1 are verbatim captures (tests/data/captures/ascend_driver_version_*.txt) [V]; 24.1.rc1's
# firmware range and its missing package_version are from a public 24.1.rc1 sample [V]; the rest [I].
DRIVER_RELEASES: dict[str, DriverRelease] = {
    r.version: r
    for r in (
        DriverRelease("23.0.7", "7.35.19", "V100R001C15SPC012B220",
                      ("[V100R001C29]", "[V100R001C30]", "[V100R001C13]", "[V100R001C15]"), "[7.0.0,7.1.99]", True),
        DriverRelease("23.0.rc3", "7.35.19", "V100R001C13SPC001B220",
                      ("[V100R001C13]",), "[6.4.0,7.1.99]", False),
        DriverRelease("24.1.rc1", "7.35.19", "V100R001C17SPC001B220",
                      ("[V100R001C15]", "[V100R001C17]", "[V100R001C18]"), "[7.0.0,7.2.99]", False),
        DriverRelease("24.1.rc2", "7.35.21", "V100R001C19SPC001B220",
                      ("[V100R001C15]", "[V100R001C17]", "[V100R001C18]", "[V100R001C19]", "[V100R001C20]",
                       "[V100R001C21]"), "[7.0.0,7.3.99]", True),
        DriverRelease("25.0.rc1.1", "7.35.23", "V100R001C21SPC002B220",
                      ("[V100R001C17]", "[V100R001C18]", "[V100R001C19]", "[V100R001C20]", "[V100R001C21]"),
                      "[7.0.0,7.7.99]", True),
    )
}

FIRMWARE_RELEASES: dict[str, FirmwareRelease] = {
    r.version: r
    for r in (
        FirmwareRelease("7.1.0.11.220", "23.0.7", ("[23.0.rc3,23.0.rc3.]", "[23.0.0,23.0.0.]")),
        FirmwareRelease("6.4.0.4.220", "23.0.rc3", ("[23.0.rc3,23.0.rc3.]",)),
        FirmwareRelease("7.1.0.6.220", "24.1.rc1", ("[23.0.0,23.0.0.]", "[24.0,24.0.]", "[24.1,24.1.]")),
        FirmwareRelease("7.3.0.1.231", "24.1.rc2", ("[23.0.0,23.0.0.]", "[24.0,24.0.]", "[24.1,24.1.]")),
        FirmwareRelease("7.7.0.1.231", "25.0.rc1.1",
                        ("[23.0.0,23.0.0.]", "[24.0,24.0.]", "[24.1,24.1.]", "[25.0,25.0.]")),
    )
}

# CANN -> (driver, firmware), the Ascend docs site's installer map (_static/package_info.js in its fork
# https://github.com/zheliuyu/docs-dev) [V].
HDK_FOR_CANN: dict[str, tuple[str, str]] = {
    "8.2.RC1": ("25.0.rc1.1", "7.7.0.1.231"),
    "8.1.RC1": ("24.1.rc2", "7.3.0.1.231"),
    "8.0.0": ("24.1.rc2", "7.3.0.1.231"),
    "8.0.RC3": ("24.1.rc2", "7.3.0.1.231"),
    "8.0.RC2": ("24.1.rc1", "7.1.0.6.220"),
    "8.0.RC1": ("24.1.rc1", "7.1.0.6.220"),
    "7.0.0": ("23.0.3", "7.1.0.5.220"),
    "7.0.RC1": ("23.0.rc3", "6.4.0.4.220"),
}


def driver_release(version: str) -> DriverRelease:
    if version in DRIVER_RELEASES:
        return DRIVER_RELEASES[version]
    return DriverRelease(version, "7.35.23", "V100R001C21SPC001B000",
                         tuple(f"[V100R001C{n}]" for n in range(15, 23)), "[7.0.0,7.99.99]", True)


def firmware_release(version: str, driver: str | None = None) -> FirmwareRelease:
    if version in FIRMWARE_RELEASES:
        return FIRMWARE_RELEASES[version]
    drv = driver or "24.1.rc2"
    series = ".".join(drv.split(".")[:2])
    return FirmwareRelease(version, drv, ("[23.0.0,23.0.0.]", f"[{series},{series}.]"))


def driver_arch(arch: str) -> str:
    """HDK file names spell x86_64 as ``x86-64`` (Ascend-hdk-910b-npu-driver_24.1.rc2_linux-x86-64.run); CANN names
    keep ``x86_64``."""
    return "x86-64" if arch == "x86_64" else arch


# --- NVIDIA -----------------------------------------------------------------------------------------------

# The highest CUDA a driver branch supports, which nvidia-smi prints as "CUDA Version" (590 -> 13.1 is captured:
# tests/data/captures/nvidia_smi_query_h100_590.48.01.csv's source [V]; the others are the branch each CUDA toolkit
# ships with, https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html [K]).
CUDA_FOR_DRIVER_BRANCH: dict[int, str] = {
    520: "11.8", 525: "12.0", 530: "12.1", 535: "12.2", 545: "12.3", 550: "12.4", 555: "12.5",
    560: "12.6", 565: "12.7", 570: "12.8", 575: "12.9", 580: "13.0", 590: "13.1",
}


def cuda_supported_by_driver(driver: str) -> str:
    branch = int(driver.split(".")[0])
    known = [b for b in sorted(CUDA_FOR_DRIVER_BRANCH) if b <= branch]
    return CUDA_FOR_DRIVER_BRANCH[known[-1]] if known else "11.0"


@dataclass(frozen=True)
class CudaRelease:
    minor: str  # what a stack pins: 12.4
    full: str  # 12.4.1
    bundled_driver: str  # the driver in the runfile's name
    cudart: str  # version.json cuda_cudart
    nvcc: str  # version.json cuda_nvcc, nvcc's V number
    nvcc_built: str


# The last update of each minor release and the driver its runfile bundles [K]; the 12.4 component numbers match
# the capture in tests/data/captures (synthetic, written from the documented format).
CUDA_RELEASES: dict[str, CudaRelease] = {
    r.minor: r
    for r in (
        CudaRelease("12.4", "12.4.1", "550.54.15", "12.4.127", "12.4.131", "Thu_Mar_28_02:18:24_PDT_2024"),
        CudaRelease("12.8", "12.8.1", "570.124.06", "12.8.90", "12.8.93", "Fri_Feb_21_20:23:50_PST_2025"),
        CudaRelease("13.0", "13.0.0", "580.65.06", "13.0.48", "13.0.48", "Wed_Jul_16_07:30:01_PM_PDT_2025"),
    )
}


def cuda_release(version: str) -> CudaRelease:
    minor = ".".join(version.split(".")[:2])
    if minor in CUDA_RELEASES:
        return CUDA_RELEASES[minor]
    full = version if version.count(".") >= 2 else version + ".0"
    return CudaRelease(minor, full, "580.65.06", full, full, "Mon_Jan_01_00:00:00_UTC_2025")


def nccl_version_code(version: str) -> int:
    """NCCL_VERSION_CODE: ``major*10000 + minor*100 + patch`` from 2.9 on, ``major*1000 + minor*100 + patch``
    before (nccl.h's NCCL_VERSION macro)."""
    major, minor, patch = (int(p) for p in version.split("+")[0].split(".")[:3])
    if major <= 2 and minor <= 8:
        return major * 1000 + minor * 100 + patch
    return major * 10000 + minor * 100 + patch


def cuda_runtime_version_code(version: str) -> int:
    """cudaRuntimeGetVersion's number: 12.4 -> 12040."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return major * 1000 + minor * 10
