"""Device faults for the SIMULATED lab packages: shell commands that edit the simulated tools' device files.

``npu-smi``/``hccn_tool``/``nvidia-smi`` (simulated) read their devices from a JSON file on each host, so a lab
test drops a device by running one of these commands on that host (over SSH or locally). Each edit is
atomic (temporary file + rename), so a tool never reads half a file.
"""

from __future__ import annotations

import shlex

ASCEND_DEVICES_FILE = "/usr/local/Ascend/driver/.simulated/devices.json"
NVIDIA_DEVICES_FILE = "/usr/local/.simulated-nvidia/devices.json"
DEVICE_STATES = ("missing", "unhealthy")

_EDIT = r"""
import json, os, sys
path, index, state = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path) as f:
    doc = json.load(f)
key = "id" if doc.get("vendor") == "ascend" else "index"
hit = [d for d in doc["devices"] if d[key] == index]
if not hit and state != "restore":
    sys.exit("simulated device %d not in %s" % (index, path))
for d in doc["devices"]:
    if state == "restore":
        d["present"] = True
        if "health" in d:
            d["health"] = "OK"
        if "reset_required" in d:
            d["reset_required"], d["ecc_dram_uncorrectable"] = "No", 0
    elif d in hit and state == "missing":
        d["present"] = False
    elif d in hit and state == "unhealthy":
        if key == "id":
            d["health"] = "Critical"
        else:
            d["reset_required"], d["ecc_dram_uncorrectable"] = "Yes", 1
tmp = "%s.fault-%d" % (path, os.getpid())
with open(tmp, "w") as f:
    json.dump(doc, f, indent=1, sort_keys=True)
os.replace(tmp, path)
"""


def _devices_file(vendor: str, root: str, devices_file: str | None) -> str:
    if devices_file:
        return devices_file
    if vendor not in ("ascend", "nvidia"):
        raise ValueError(f"vendor must be 'ascend' or 'nvidia', not {vendor!r}")
    base = ASCEND_DEVICES_FILE if vendor == "ascend" else NVIDIA_DEVICES_FILE
    return root.rstrip("/") + base


def drop_device_command(index: int, *, vendor: str = "ascend", state: str = "missing", root: str = "",
                        devices_file: str | None = None, python: str = "python3") -> str:
    """A shell command that marks simulated device ``index`` missing (gone from every listing, as a device
    that fell off the bus) or unhealthy (npu-smi Health ``Critical`` and hccn_tool link ``DOWN``; nvidia-smi
    ``reset_required`` Yes with an uncorrectable ECC error). ``root`` is the host's ``ACCELSTACK_SIM_ROOT``."""
    if state not in DEVICE_STATES:
        raise ValueError(f"state must be one of {', '.join(DEVICE_STATES)}, not {state!r}")
    if index < 0:
        raise ValueError(f"device index must be >= 0, not {index}")
    path = _devices_file(vendor, root, devices_file)
    return shlex.join([python, "-c", _EDIT, path, str(index), state])


def restore_devices_command(*, vendor: str = "ascend", root: str = "", devices_file: str | None = None,
                            python: str = "python3") -> str:
    """A shell command that brings every simulated device back, present and healthy."""
    path = _devices_file(vendor, root, devices_file)
    return shlex.join([python, "-c", _EDIT, path, "0", "restore"])
