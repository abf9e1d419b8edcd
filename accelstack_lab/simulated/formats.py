"""Pure renderers of the version files the simulated (lab-only) packages install, in the vendors' real formats.

Paths inside these files are written as ``@@NAME@@`` tokens that the host-side installer replaces with the
real (or ``ACCELSTACK_SIM_ROOT``-prefixed) install paths, so the formats live here, testable without a host.
Formats: an installed CANN 8.1.RC1 tree (https://github.com/leideng/CANN-8.1.RC1) and the captures under
tests/data/captures/ (Ascend), NCCL's ``NCCL version`` banner and the CUDA ``version.json`` layout.
"""

from __future__ import annotations

import json

from . import versions

# Components that CANN's latest/version.cfg lists, in the order of the 8.1.RC1 tree
# (https://github.com/leideng/CANN-8.1.RC1).
TOOLKIT_COMPONENTS = ("runtime", "compiler", "hccl", "opp", "toolkit", "aoe", "ncs")
KERNELS_COMPONENT = "opp_kernel"


def driver_version_info(release: versions.DriverRelease) -> str:
    lines = [
        f"Version={release.version}",
        f"ascendhal_version={release.ascendhal}",
        "aicpu_version=1.0",
        "tdt_version=1.0",
        "log_version=1.0",
        "prof_version=2.0",
        "dvppkernels_version=1.1",
        "tsfw_version=1.0",
        f"Innerversion={release.innerversion}",
        "compatible_version=" + ",".join(release.compatible),
        f"compatible_version_fw={release.compatible_fw}",
    ]
    if release.has_package_version:
        lines.append(f"package_version={release.version}")
    return "\n".join(lines) + "\n"


def firmware_version_info(release: versions.FirmwareRelease) -> str:
    return "\n".join([
        f"Version={release.version}",
        "firmware_version=1.0",
        f"package_version={release.package_version}",
        "compatible_version_drv=" + ",".join(release.compatible_drv),
    ]) + "\n"


def ascend_install_info(values: dict[str, str]) -> str:
    """``/etc/ascend_install.info``: the keys in the order of the real file, then any others."""
    order = ["UserName", "UserGroup", "Firmware_Install_Type", "Firmware_Install_Path_Param",
             "Driver_Install_Type", "Driver_Install_Path_Param", "Driver_Install_For_All"]
    keys = [k for k in order if k in values] + sorted(k for k in values if k not in order)
    return "".join(f"{k}={values[k]}\n" for k in keys)


def toolkit_install_info(release: versions.CannRelease, arch: str) -> str:
    return "\n".join([
        "package_name=Ascend-cann-toolkit",
        f"version={release.version}",
        f"innerversion={release.innerversion}",
        "compatible_version=" + ",".join(release.compatible),
        f"arch={arch}",
        "os=linux",
        f"path=@@TOOLKIT_HOME@@/{release.version}/{arch}-linux",
    ]) + "\n"


def component_version_info(release: versions.CannRelease, component: str) -> str:
    """``<ver>/<component>/version.info`` (runtime's fields; the other components carry the same header)."""
    major_minor = ".".join(release.internal.split(".")[:2])
    lines = [
        f"Version={release.internal}",
        f"version_dir={release.version}",
        f"timestamp={release.timestamp}",
    ]
    if component == "runtime":
        lines += [
            "runtime_acl_version=1.0",
            "runtime_dvpp_version=1.0",
            "required_driver_ascendhal_version=4.0.0",
            "required_driver_dvppkernels_version=1.1",
            "required_driver_tsfw_version=1.0",
            f'required_opp_abi_version=">=6.3, <={major_minor}"',
            f'required_package_opp_kernel_version=">=6.3, <={major_minor}"',
            f'required_package_toolkit_version="{major_minor}"',
        ]
    return "\n".join(lines) + "\n"


def version_cfg(release: versions.CannRelease, components: tuple[str, ...]) -> str:
    """``latest/version.cfg``: ``<component>_{running,upgrade,installed}_version=[<internal>:<release>]``."""
    pair = f"[{release.internal}:{release.version}]"
    lines = ["# version: 1.0"]
    for state in ("running", "upgrade", "installed"):
        lines += [f"{c}_{state}_version={pair}" for c in components]
    return "\n".join(lines) + "\n"


def toolkit_component_install_info() -> str:
    """``<ver>/toolkit/ascend_install.info`` (as in https://github.com/leideng/CANN-8.1.RC1); the run user is known at
    install time."""
    return "\n".join([
        "Install_Type=full",
        "Chip_Type=all",
        "Feature_Type=all",
        "UserName=@@USER@@",
        "UserGroup=@@GROUP@@",
        "Install_Path_Param=@@TOOLKIT_HOME@@",
        "Docker_Root_Path_Param=",
    ]) + "\n"


def toolkit_set_env() -> str:
    """``ascend-toolkit/set_env.sh``: what the CANN <= 8.3 script exports (the 8.1.RC1 one in
    https://github.com/leideng/CANN-8.1.RC1).

    Like the real one it leaves the driver's lib64 folders out: the env role adds them.
    """
    home = "${ASCEND_TOOLKIT_HOME}"
    return "\n".join([
        "#!/bin/sh",
        "# Simulated CANN toolkit environment (accelstack lab, simulated package): the exports of the real",
        "# ascend-toolkit/set_env.sh.",
        "export ASCEND_TOOLKIT_HOME=@@TOOLKIT_HOME@@/latest",
        f"export LD_LIBRARY_PATH={home}/lib64:{home}/lib64/plugin/opskernel:{home}/lib64/plugin/nnengine:"
        f"{home}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/$(uname -m):$LD_LIBRARY_PATH",
        f"export LD_LIBRARY_PATH={home}/tools/aml/lib64:{home}/tools/aml/lib64/plugin:$LD_LIBRARY_PATH",
        f"export PYTHONPATH={home}/python/site-packages:{home}/opp/built-in/op_impl/ai_core/tbe:$PYTHONPATH",
        f"export PATH={home}/bin:{home}/compiler/ccec_compiler/bin:{home}/tools/ccec_compiler/bin:$PATH",
        f"export ASCEND_AICPU_PATH={home}",
        f"export ASCEND_OPP_PATH={home}/opp",
        f"export TOOLCHAIN_HOME={home}/toolkit",
        f"export ASCEND_HOME_PATH={home}",
        "",
    ])


def nnal_version_info(version: str, arch: str) -> str:
    """``nnal/atb/<ver>/version.info``: indented ``key : value`` lines
    (tests/data/captures/nnal_atb_version_info_8.1.RC1.txt)."""
    return "\n".join([
        f"    Ascend-cann-atb : {version}",
        f"    Ascend-cann-atb Version : {version}.B150",
        f"    Platform : {arch}",
        f"    branch : br_release_cann_{version}_simulated",
        "    commit id : 0000000000000000000000000000000000000000",
    ]) + "\n"


def nnal_set_env() -> str:
    """``nnal/atb/set_env.sh``: cxx_abi from ``--cxx_abi=0|1`` or torch, as the real script decides."""
    return "\n".join([
        "#!/bin/sh",
        "# Simulated NNAL (ATB) environment (accelstack lab, simulated package).",
        'atb_path="@@NNAL_HOME@@/atb"',
        "cxx_abi=",
        'for arg in "$@"; do case "$arg" in --cxx_abi=*) cxx_abi="${arg#--cxx_abi=}";; esac; done',
        'if [ -z "$cxx_abi" ]; then',
        "  cxx_abi=$(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))' 2>/dev/null || echo 1)",
        "fi",
        'export ATB_HOME_PATH="${atb_path}/latest/atb/cxx_abi_${cxx_abi}"',
        'export LD_LIBRARY_PATH="$ATB_HOME_PATH/lib:$LD_LIBRARY_PATH"',
        'export PATH="$ATB_HOME_PATH/bin:$PATH"',
        "",
    ])


def cuda_version_json(release: versions.CudaRelease) -> str:
    """``/usr/local/cuda-<v>/version.json`` (CUDA >= 11.1), three-space indent as NVIDIA writes it."""
    doc = {
        "cuda": {"name": "CUDA SDK", "version": release.full},
        "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": release.cudart},
        "cuda_nvcc": {"name": "CUDA NVCC", "version": release.nvcc},
    }
    return json.dumps(doc, indent=3, separators=(",", " : ")) + "\n"


def nvcc_version(release: versions.CudaRelease) -> str:
    year = release.nvcc_built.rsplit("_", 1)[-1]
    return "\n".join([
        "nvcc: NVIDIA (R) Cuda compiler driver",
        f"Copyright (c) 2005-{year} NVIDIA Corporation",
        f"Built on {release.nvcc_built}",
        f"Cuda compilation tools, release {release.minor}, V{release.nvcc}",
        f"Build cuda_{release.minor}.r{release.minor}/compiler.00000000_0",
    ]) + "\n"


def nccl_header(version: str) -> str:
    major, minor, patch = version.split("+")[0].split(".")[:3]
    return "\n".join([
        "/* Simulated nccl.h (accelstack lab, simulated package): the version block only. */",
        "#ifndef NCCL_H_",
        "#define NCCL_H_",
        "",
        f"#define NCCL_MAJOR {major}",
        f"#define NCCL_MINOR {minor}",
        f"#define NCCL_PATCH {patch}",
        '#define NCCL_SUFFIX ""',
        "",
        f"#define NCCL_VERSION_CODE {versions.nccl_version_code(version)}",
        "#define NCCL_VERSION(X,Y,Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : "
        "(X) * 10000 + (Y) * 100 + (Z))",
        "",
        "#endif",
        "",
    ])
