"""A SIMULATED torch_npu wheel for the lab: pure Python, it only reports a version.

The file name carries the build tag ``0simulated`` (a wheel build tag must start with a digit), so
``pip install torch_npu==2.5.1`` still matches and the pinned version is exact, while the name says what it is.
It declares no dependencies: the lab's wheelhouse holds one real torch (2.13.0 CPU), not the one each Ascend
stack pins, and the simulated package must never pull anything heavy.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

BUILD_TAG = "0simulated"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def wheel_name(version: str, *, python_tag: str = "cp311", arch: str = "x86_64") -> str:
    platform = f"manylinux_2_17_{arch}.manylinux2014_{arch}"
    return f"torch_npu-{version}-{BUILD_TAG}-{python_tag}-{python_tag}-{platform}.whl"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def torch_npu_wheel(version: str, cann: str, *, python_tag: str = "cp311", arch: str = "x86_64") -> tuple[str, bytes]:
    """(file name, wheel bytes); deterministic for the same arguments."""
    dist_info = f"torch_npu-{version}.dist-info"
    files: dict[str, bytes] = {
        "torch_npu/__init__.py": (
            b'"""SIMULATED torch_npu (accelstack lab): reports a version, drives no NPU, imports nothing heavy."""\n'
            b"from .version import __version__, git_version  # noqa: F401\n"
            b"simulated = True\n"
        ),
        "torch_npu/version.py": (
            "# Simulated torch_npu for the accelstack lab: not Ascend's package.\n"
            f"__version__ = '{version}'\n"
            "git_version = '0000000000000000000000000000000000000000'\n"
            f"simulated_for_cann = '{cann}'\n"
        ).encode(),
        f"{dist_info}/METADATA": (
            "Metadata-Version: 2.1\n"
            "Name: torch_npu\n"
            f"Version: {version}\n"
            f"Summary: SIMULATED torch_npu for the accelstack lab (CANN {cann}); reports its version only, no NPU code\n"
            "License: BSD-3-Clause\n"
            "Requires-Python: >=3.8\n"
        ).encode(),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\n"
            "Generator: accelstack_lab.simulated\n"
            "Root-Is-Purelib: true\n"
            f"Tag: {python_tag}-{python_tag}-manylinux_2_17_{arch}\n"
            f"Tag: {python_tag}-{python_tag}-manylinux2014_{arch}\n"
            f"Build: {BUILD_TAG}\n"
        ).encode(),
        f"{dist_info}/top_level.txt": b"torch_npu\n",
    }
    record_lines = [f"{path},{_record_hash(data)},{len(data)}" for path, data in files.items()]
    record_lines.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record_lines) + "\n").encode()

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path, data in files.items():  # dist-info last, RECORD last of all, as the wheel spec recommends
            info = zipfile.ZipInfo(path, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return wheel_name(version, python_tag=python_tag, arch=arch), out.getvalue()
