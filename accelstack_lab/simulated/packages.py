"""Builders of the simulated (lab-only) vendor packages: one function per package, each returning the ``.run``
file's name and bytes. The payload is the host-side ``install.py``, a ``package.json`` that says what to
install, the rendered version files (:mod:`.formats`) and the compiled libraries (:mod:`.native`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from . import formats, native, runfile, versions

HOSTSIDE = "accelstack_lab.simulated.hostside"
CHIP_FAMILY = "910b"


@dataclass(frozen=True)
class BuiltPackage:
    file: str
    data: bytes
    component: str
    version: str


@dataclass
class _Payload:
    kind: str
    version: str
    label: str
    runfile: str
    meta: dict[str, object] = field(default_factory=dict)
    entries: list[dict[str, object]] = field(default_factory=list)
    folders: dict[str, list[str]] = field(default_factory=dict)
    blobs: dict[str, tuple[bytes, int]] = field(default_factory=dict)

    def add(self, section: str, path: str, data: bytes | str, *, mode: int = 0o644, template: bool = False) -> None:
        blob = data.encode() if isinstance(data, str) else data
        name = f"tree/{section}/{path}"
        self.blobs[name] = (blob, 0o644)
        self.entries.append({"section": section, "path": path, "payload": name, "mode": mode,
                             "template": template})

    def link(self, section: str, path: str, target: str) -> None:
        name = f"tree/{section}/{path}.symlink"
        self.blobs[name] = (target.encode(), 0o644)
        self.entries.append({"section": section, "path": path, "payload": name, "symlink": True})

    def folder(self, section: str, *paths: str) -> None:
        self.folders.setdefault(section, []).extend(paths)

    def build(self) -> bytes:
        package = {"kind": self.kind, "version": self.version, "label": self.label, "runfile": self.runfile,
                   "simulated": True, "files": self.entries, "folders": self.folders, **self.meta}
        blobs = dict(self.blobs)
        blobs["package.json"] = (json.dumps(package, indent=1, sort_keys=True).encode(), 0o644)
        blobs["install.py"] = (_hostside("install.py"), 0o755)
        return runfile.make_runfile(self.label, self.version, runfile.deterministic_tar_gz(blobs))


def _hostside(name: str) -> bytes:
    return resources.files(HOSTSIDE).joinpath(name).read_bytes()


def _readme(what: str) -> str:
    return (f"SIMULATED {what} installed by the accelstack lab (accelstack_lab.simulated).\n"
            "Nothing here drives hardware; the version files follow the vendor's formats.\n")


def _sh(lines: list[str]) -> str:
    return "\n".join(["#!/bin/sh", *lines, ""])


def ascend_driver(version: str, arch: str) -> BuiltPackage:
    name = f"Ascend-hdk-{CHIP_FAMILY}-npu-driver_{version}_linux-{versions.driver_arch(arch)}.run"
    p = _Payload("ascend_driver", version, f"Ascend-hdk-{CHIP_FAMILY}-npu-driver {version} (simulated)", name)
    p.add("driver", "version.info", formats.driver_version_info(versions.driver_release(version)))
    p.add("driver", ".simulated/README", _readme(f"Ascend driver {version}"))
    p.add("driver", "tools/hccn_tool", _hostside("hccn_tool.py"), mode=0o755, template=True)
    p.add("driver", "script/uninstall.sh", _sh([
        "# Simulated Ascend driver uninstaller (accelstack lab).",
        "rm -f '@@NPU_SMI@@' '@@NPU_SMI_SBIN@@'",
        "if [ -f '@@INSTALL_INFO@@' ]; then",
        "  grep -v '^Driver_' '@@INSTALL_INFO@@' > '@@INSTALL_INFO@@.tmp'; mv '@@INSTALL_INFO@@.tmp' '@@INSTALL_INFO@@'",
        "fi",
        "rm -rf '@@DRIVER_HOME@@'",
        'echo "Driver package uninstalled successfully! (simulated)"',
    ]), mode=0o755, template=True)
    p.folder("driver", "lib64/driver", "lib64/common")
    p.add("tools", "npu-smi", _hostside("npu_smi.py"), mode=0o755, template=True)
    return BuiltPackage(name, p.build(), "ascend_driver", version)


def ascend_firmware(version: str, driver: str | None) -> BuiltPackage:
    name = f"Ascend-hdk-{CHIP_FAMILY}-npu-firmware_{version}.run"
    p = _Payload("ascend_firmware", version, f"Ascend-hdk-{CHIP_FAMILY}-npu-firmware {version} (simulated)", name)
    p.add("firmware", "version.info", formats.firmware_version_info(versions.firmware_release(version, driver)))
    p.add("firmware", ".simulated/README", _readme(f"Ascend firmware {version}"))
    p.add("firmware", "script/uninstall.sh", _sh([
        "# Simulated Ascend firmware uninstaller (accelstack lab).",
        "if [ -f '@@INSTALL_INFO@@' ]; then",
        "  grep -v '^Firmware_' '@@INSTALL_INFO@@' > '@@INSTALL_INFO@@.tmp'; mv '@@INSTALL_INFO@@.tmp' '@@INSTALL_INFO@@'",
        "fi",
        "rm -rf '@@FIRMWARE_HOME@@'",
        'echo "Firmware package uninstalled successfully! (simulated)"',
    ]), mode=0o755, template=True)
    return BuiltPackage(name, p.build(), "ascend_firmware", version)


def cann_toolkit(version: str, arch: str, *, cache_dir: Path | None = None) -> BuiltPackage:
    release = versions.cann_release(version)
    name = f"Ascend-cann-toolkit_{version}_linux-{arch}.run"
    p = _Payload("cann_toolkit", version, f"Ascend-cann-toolkit {version} (simulated)", name,
                 meta={"internal": release.internal, "components": list(formats.TOOLKIT_COMPONENTS)})
    lib = f"{arch}-linux/lib64"
    p.add("toolkit", f"{arch}-linux/ascend_toolkit_install.info", formats.toolkit_install_info(release, arch),
          template=True)
    p.add("toolkit", f"{lib}/libhccl.so",
          native.compile_shared(native.hccl_source(version), "libhccl.so", cache_dir=cache_dir), mode=0o755)
    p.add("toolkit", f"{lib}/libascendcl.so",
          native.compile_shared(native.ascendcl_source(version), "libascendcl.so", cache_dir=cache_dir), mode=0o755)
    p.link("toolkit", "lib64", lib)
    for component in formats.TOOLKIT_COMPONENTS:
        p.add("toolkit", f"{component}/version.info", formats.component_version_info(release, component))
    p.add("toolkit", "toolkit/ascend_install.info", formats.toolkit_component_install_info(), template=True)
    p.add("toolkit", ".simulated/README", _readme(f"CANN toolkit {version}"))
    p.folder("toolkit", "python/site-packages", "bin", "opp/built-in/op_impl/ai_core/tbe", "tools/aml/lib64",
             f"{lib}/plugin/opskernel", f"{lib}/plugin/nnengine", "compiler/ccec_compiler/bin")
    p.add("tools", "set_env.sh", formats.toolkit_set_env(), template=True)
    p.add("tools", "cann_uninstall.sh", _sh([
        "# Simulated CANN toolkit uninstaller (accelstack lab): removes every installed version.",
        "rm -rf '@@TOOLKIT_HOME@@'",
        'echo "Ascend-cann-toolkit uninstall success. (simulated)"',
    ]), template=True)
    return BuiltPackage(name, p.build(), "cann_toolkit", version)


def cann_kernels(version: str, arch: str) -> BuiltPackage:
    release = versions.cann_release(version)
    name = versions.kernels_package_name(version, CHIP_FAMILY, arch)
    p = _Payload("cann_kernels", version, f"{name.removesuffix('.run')} (simulated)", name,
                 meta={"internal": release.internal, "toolkit_components": list(formats.TOOLKIT_COMPONENTS)})
    p.add("opp_kernel", "version.info", formats.component_version_info(release, formats.KERNELS_COMPONENT))
    p.add("kernel", "README.simulated", _readme(f"CANN {CHIP_FAMILY} kernels {version}"))
    return BuiltPackage(name, p.build(), "cann_kernels", version)


def nnal(version: str, arch: str) -> BuiltPackage:
    name = f"Ascend-cann-nnal_{version}_linux-{arch}.run"
    p = _Payload("nnal", version, f"Ascend-cann-nnal {version} (simulated)", name)
    p.add("nnal", "version.info", formats.nnal_version_info(version, arch))
    p.add("nnal", ".simulated/README", _readme(f"NNAL {version}"))
    p.folder("nnal", "atb/cxx_abi_0/lib", "atb/cxx_abi_0/bin", "atb/cxx_abi_1/lib", "atb/cxx_abi_1/bin")
    p.add("tools", "set_env.sh", formats.nnal_set_env(), template=True)
    return BuiltPackage(name, p.build(), "nnal", version)


def nvidia_driver(version: str) -> BuiltPackage:
    name = f"NVIDIA-Linux-x86_64-{version}.run"
    cuda = versions.cuda_supported_by_driver(version)
    p = _Payload("nvidia_driver", version, f"NVIDIA Accelerated Graphics Driver {version} (simulated)", name,
                 meta={"cuda": cuda})
    p.add("nvidia", "README", _readme(f"NVIDIA driver {version} (no kernel module; nvidia-smi in /usr/local/bin)"))
    p.add("tools", "nvidia-smi", _hostside("nvidia_smi.py"), mode=0o755, template=True)
    p.add("tools", "nvidia-uninstall", _sh([
        "# Simulated NVIDIA driver uninstaller (accelstack lab).",
        "rm -f '@@NVIDIA_SMI@@'",
        "rm -rf '@@STATE_DIR@@'",
        "rm -f '@@NVIDIA_UNINSTALL@@'",
        'echo "Uninstallation of existing driver is complete. (simulated)"',
    ]), template=True)
    return BuiltPackage(name, p.build(), "nvidia_driver", version)


def cuda(pinned: str, *, cache_dir: Path | None = None) -> BuiltPackage:
    release = versions.cuda_release(pinned)
    name = f"cuda_{release.full}_{release.bundled_driver}_linux.run"
    p = _Payload("cuda", release.full, f"CUDA Toolkit {release.full} (simulated)", name,
                 meta={"minor": release.minor})
    major = release.minor.split(".")[0]
    p.add("cuda", "version.json", formats.cuda_version_json(release))
    p.add("cuda", "bin/nvcc", _sh(["# Simulated nvcc (accelstack lab): reports its version only.",
                                   "cat <<'EOF'", formats.nvcc_version(release).rstrip("\n"), "EOF"]), mode=0o755)
    p.add("cuda", "bin/cuda-uninstaller", _sh([
        "# Simulated CUDA uninstaller (accelstack lab).",
        "rm -rf '@@CUDA_HOME@@'",
        'echo "Successfully uninstalled (simulated)"',
    ]), mode=0o755, template=True)
    so = f"libcudart.so.{release.cudart}"
    p.add("cuda", f"lib64/{so}",
          native.compile_shared(native.cudart_source(release.minor), f"libcudart.so.{major}", cache_dir=cache_dir),
          mode=0o755)
    p.link("cuda", f"lib64/libcudart.so.{major}", so)
    p.link("cuda", "lib64/libcudart.so", f"libcudart.so.{major}")
    p.add("cuda", ".simulated/README", _readme(f"CUDA toolkit {release.full}"))
    p.folder("cuda", "include")
    return BuiltPackage(name, p.build(), "cuda", pinned)


def nccl(version: str, cuda_pinned: str, *, cache_dir: Path | None = None) -> BuiltPackage:
    minor = versions.cuda_release(cuda_pinned).minor
    # NVIDIA ships NCCL as a .txz/.deb/.rpm; the lab wraps it in the same self-extracting form as the others.
    name = f"nccl_{version}-1+cuda{minor}_x86_64.run"
    p = _Payload("nccl", version, f"NCCL {version} for CUDA {minor} (simulated)", name)
    so = f"libnccl.so.{version}"
    p.add("nccl", f"lib/{so}",
          native.compile_shared(native.nccl_source(version, minor), "libnccl.so.2", cache_dir=cache_dir),
          mode=0o755)
    p.link("nccl", "lib/libnccl.so.2", so)
    p.link("nccl", "lib/libnccl.so", "libnccl.so.2")
    p.add("nccl", "include/nccl.h", formats.nccl_header(version))
    p.add("nccl", ".simulated/README", _readme(f"NCCL {version}"))
    return BuiltPackage(name, p.build(), "nccl", version)
