"""The simulated (lab-only) shared libraries: tiny C sources compiled with gcc at build time.

They exist so that a validator's ``nm -D`` / ctypes / dlsym check has a real ELF object to look at. No function
does any work: every entry point returns the library's "not supported" or "no device" code.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from accelstack.errors import ConfigError

from . import versions

HCCL_E_NOT_SUPPORT = 5
NCCL_SYSTEM_ERROR = 2
CUDA_ERROR_NO_DEVICE = 100


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def hccl_source(cann_version: str) -> str:
    lines = [
        f"/* Simulated libhccl.so for the accelstack lab, CANN {cann_version} (simulated): NOT Huawei HCCL. */",
        f"/* HcclCommInitRootInfoConfig exported: {versions.cann_exports_rootinfo_config(cann_version)} "
        f"(rule: accelstack_lab.simulated.versions.ROOTINFO_CONFIG_FIRST_CANN). */",
        "typedef int HcclResult;",
        "const char accelstack_simulated_cann_version[] = " + _c_string(f"{cann_version} (simulated)") + ";",
        "const char *HcclGetErrorString(int code) { (void)code; "
        + "return " + _c_string("simulated HCCL: no NPU in the lab") + "; }",
    ]
    for name in versions.hccl_exports(cann_version):
        if name == "HcclGetErrorString":
            continue
        lines.append(f"HcclResult {name}() {{ return {HCCL_E_NOT_SUPPORT}; }}")
    return "\n".join(lines) + "\n"


def ascendcl_source(cann_version: str) -> str:
    return "\n".join([
        f"/* Simulated libascendcl.so for the accelstack lab, CANN {cann_version} (simulated). */",
        "#include <stdint.h>",
        "typedef int aclError;",
        "const char accelstack_simulated_cann_version[] = " + _c_string(f"{cann_version} (simulated)") + ";",
        "aclError aclInit(const char *configPath) { (void)configPath; return 0; }",
        "aclError aclFinalize(void) { return 0; }",
        # 507033: the runtime's "no device" family; the lab has no NPU behind the simulated tools.
        "aclError aclrtGetDeviceCount(uint32_t *count) { if (count) *count = 0; return 507033; }",
        "aclError aclrtSetDevice(int32_t deviceId) { (void)deviceId; return 507033; }",
        "",
    ])


def nccl_source(nccl_version: str, cuda_minor: str) -> str:
    code = versions.nccl_version_code(nccl_version)
    banner = f"NCCL version {nccl_version}+cuda{cuda_minor}"
    return "\n".join([
        f"/* Simulated libnccl.so.2 for the accelstack lab, NCCL {nccl_version} (simulated): NOT NVIDIA NCCL. */",
        "typedef int ncclResult_t;",
        # `strings libnccl.so.2 | grep "NCCL version"` is how a wheel's NCCL is identified
        # (https://github.com/pytorch/pytorch/issues/150049).
        "const char accelstack_simulated_nccl_banner[] = " + _c_string(banner + " (simulated)") + ";",
        f"ncclResult_t ncclGetVersion(int *version) {{ if (!version) return 4; *version = {code}; return 0; }}",
        f"ncclResult_t ncclGetUniqueId() {{ return {NCCL_SYSTEM_ERROR}; }}",
        f"ncclResult_t ncclCommInitRank() {{ return {NCCL_SYSTEM_ERROR}; }}",
        f"ncclResult_t ncclCommInitRankConfig() {{ return {NCCL_SYSTEM_ERROR}; }}",
        f"ncclResult_t ncclCommDestroy() {{ return {NCCL_SYSTEM_ERROR}; }}",
        f"ncclResult_t ncclAllReduce() {{ return {NCCL_SYSTEM_ERROR}; }}",
        "const char *ncclGetErrorString(ncclResult_t r) { (void)r; "
        + "return " + _c_string("simulated NCCL: no GPU in the lab") + "; }",
        "",
    ])


def cudart_source(cuda_version: str) -> str:
    code = versions.cuda_runtime_version_code(cuda_version)
    return "\n".join([
        f"/* Simulated libcudart.so for the accelstack lab, CUDA {cuda_version} (simulated). */",
        "const char accelstack_simulated_cuda_version[] = " + _c_string(f"{cuda_version} (simulated)") + ";",
        f"int cudaRuntimeGetVersion(int *v) {{ if (!v) return 1; *v = {code}; return 0; }}",
        f"int cudaGetDeviceCount(int *n) {{ if (n) *n = 0; return {CUDA_ERROR_NO_DEVICE}; }}",
        "",
    ])


def compile_shared(source: str, soname: str, *, cache_dir: Path | None = None) -> bytes:
    """gcc -shared -fPIC; the same source gives the same bytes (fixed file names, no debug info).

    Results are cached by the source's digest in ``cache_dir`` so a rebuild does not run gcc again.
    Raises ConfigError when gcc is missing or fails.
    """
    key = hashlib.sha256((soname + "\0" + source).encode()).hexdigest()[:32]
    cached = cache_dir / f"{key}.so" if cache_dir else None
    if cached is not None and cached.is_file():
        return cached.read_bytes()
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise ConfigError("building the lab repository needs gcc (the simulated libhccl/libnccl are compiled)",
                          hint="apt-get install gcc")
    with tempfile.TemporaryDirectory(prefix="accelstack-sim-cc-") as tmp:
        # A fixed relative name: the object's symbol table records the source's name, never our temp path.
        Path(tmp, "simulated.c").write_text(source)
        proc = subprocess.run(
            [gcc, "-shared", "-fPIC", "-O1", "-o", "simulated.so", "simulated.c", f"-Wl,-soname,{soname}"],
            cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ConfigError(f"gcc failed building simulated {soname}: {proc.stderr.strip()[-600:]}")
        data = Path(tmp, "simulated.so").read_bytes()
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(cached)
    return data
