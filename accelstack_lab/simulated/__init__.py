"""SIMULATED vendor packages for the accelstack lab, and the lab's artifact repository builder.

Everything here is lab-only and says so: every ``.run`` header, installed README, tool banner and library
version string carries "simulated". The packages install at the vendors' real paths and write the real version
files in the real formats, so provisioning, facts and validators run unchanged against lab hosts.

Where each package installs (``$ACCELSTACK_SIM_ROOT`` prefixes every path when set):

=============================================  ==================================================================
``Ascend-hdk-910b-npu-driver_<v>_linux-<a>``    ``/usr/local/Ascend/driver`` (version.info, tools/hccn_tool,
                                                 script/uninstall.sh, .simulated/devices.json),
                                                 ``/usr/local/bin/npu-smi`` (+ ``/usr/local/sbin`` link),
                                                 ``/etc/ascend_install.info``
``Ascend-hdk-910b-npu-firmware_<v>``            ``/usr/local/Ascend/firmware`` (version.info); exit 2 = reboot
``Ascend-cann-toolkit_<v>_linux-<a>``           ``/usr/local/Ascend/ascend-toolkit/{<v>,latest,set_env.sh}``,
                                                 ``latest/lib64/libhccl.so``, ``libascendcl.so``
``Ascend-cann-kernels-910b_<v>_linux-<a>``      ``ascend-toolkit/<v>/opp_kernel``, ``latest/version.cfg``
``Ascend-cann-nnal_<v>_linux-<a>``              ``/usr/local/Ascend/nnal/atb/{<v>,latest,set_env.sh}``
``NVIDIA-Linux-x86_64-<v>``                     ``/usr/local/bin/nvidia-smi`` (not /usr/bin, which lab hosts
                                                 share), ``/usr/local/.simulated-nvidia/devices.json``
``cuda_<v>_<driver>_linux``                     ``/usr/local/cuda-<major.minor>``, link ``/usr/local/cuda``
``nccl_<v>-1+cuda<c>_x86_64`` (lab wrapper)     ``/usr/local/nccl/{lib/libnccl.so.2,include/nccl.h}``
=============================================  ==================================================================

Limits: ``/proc/driver/nvidia/version`` belongs to the kernel and cannot be simulated, so on a lab host the
driver version is what ``nvidia-smi`` reports. The simulated libraries export symbols and return errors.
"""

from __future__ import annotations

from .faults import DEVICE_STATES, drop_device_command, restore_devices_command
from .repository import COMPONENTS, Entry, build_lab_repository, find_torch_wheel, load_stack_pins
from .versions import (
    FAULT_FIXTURE_CANN,
    ROOTINFO_CONFIG_FIRST_CANN,
    cann_exports_rootinfo_config,
    hccl_exports,
)

SIM_ROOT_ENV = "ACCELSTACK_SIM_ROOT"
SIM_DEVICES_ENV = "ACCELSTACK_SIM_DEVICES"

__all__ = [
    "COMPONENTS",
    "DEVICE_STATES",
    "Entry",
    "FAULT_FIXTURE_CANN",
    "ROOTINFO_CONFIG_FIRST_CANN",
    "SIM_DEVICES_ENV",
    "SIM_ROOT_ENV",
    "build_lab_repository",
    "cann_exports_rootinfo_config",
    "drop_device_command",
    "find_torch_wheel",
    "hccl_exports",
    "load_stack_pins",
    "restore_devices_command",
]
