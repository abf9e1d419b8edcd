#!/usr/bin/env python3
# Declared in accelstack/validate/checks/devices.py (tier, python, timeout, config keys, judge, help).
"""Devices: what the vendor tool reports and what torch sees through the device-agnostic API.

Runs with the stack's python (torch). The vendor tool's raw output goes back as evidence and is parsed on the
control side with accelstack.facts.parsers, so the count and health rules live next to their tested parsers.
This script judges only what needs the host: can torch see and use the devices. A torch (or torch_npu) that is
not installed in the stack's python is ``error``: the stack is not provisioned, nothing was measured. Stdlib
only (plus torch), Python 3.6 syntax.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for, run_tool

CHECK = "devices"
NVIDIA_QUERY = "index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,temperature.gpu,utilization.gpu"
WEDGED = "a wedged device can hang the tool"
result = results_for(CHECK)


def torch_view(vendor):
    """Device type, count and a tiny op on device 0, through torch.accelerator where it exists.

    On Ascend torch_npu must be imported first: it registers the npu device type that the generic API reports.
    torch.cuda is never named here, so an NPU host is never asked about CUDA.
    """
    view = {"imported": False}
    try:
        import torch
        view["torch"] = torch.__version__
        if vendor == "ascend":
            import torch_npu
            view["torch_npu"] = getattr(torch_npu, "__version__", None)
        view["imported"] = True
    except Exception as exc:  # an import failure is the finding
        view["import_error"] = "%s: %s" % (type(exc).__name__, exc)
        # ImportError's name: the module that is not there (None when a module is there and breaks on import).
        view["missing_module"] = getattr(exc, "name", None) if type(exc).__name__ == "ModuleNotFoundError" else None
        return view
    accel = getattr(torch, "accelerator", None)
    if accel is not None and hasattr(accel, "is_available"):
        available = bool(accel.is_available())
        device = accel.current_accelerator() if available else None
        view["api"] = "torch.accelerator"
        view["type"] = device.type if device is not None else None
        view["count"] = int(accel.device_count()) if available else 0
    else:
        # torch before 2.6: the module behind the build's accelerator type.
        kind = "npu" if vendor == "ascend" else ("cuda" if vendor == "nvidia" else None)
        module = torch.get_device_module(kind) if kind and hasattr(torch, "get_device_module") else None
        view["api"] = "torch.get_device_module(%r)" % kind
        view["type"] = kind if module is not None and module.is_available() else None
        view["count"] = int(module.device_count()) if view["type"] else 0
    if view.get("count"):
        try:
            x = torch.ones(64, 64, device=torch.device(view["type"], 0))
            y = (x @ x).sum().item()
            view["matmul_ok"] = y == 64.0 * 64 * 64
        except Exception as exc:
            view["matmul_error"] = "%s: %s" % (type(exc).__name__, exc)
    return view


def main(config):
    vendor = config.get("vendor", "cpu")
    expect = config.get("expect_devices")
    evidence = {}
    metrics = {}
    if vendor == "ascend":
        evidence["command"] = "npu-smi info"
        evidence["tool_exit"], evidence["tool_output"] = run_tool(["npu-smi", "info"], hang_note=WEDGED)
    elif vendor == "nvidia":
        evidence["command"] = "nvidia-smi --query-gpu=%s --format=csv,noheader,nounits" % NVIDIA_QUERY
        evidence["tool_exit"], evidence["tool_output"] = run_tool(
            ["nvidia-smi", "--query-gpu=" + NVIDIA_QUERY, "--format=csv,noheader,nounits"], hang_note=WEDGED)
    view = torch_view(vendor)
    evidence["torch"] = view
    metrics["torch_devices"] = view.get("count")
    env_lists = {k: os.environ.get(k) for k in ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
                 if os.environ.get(k) is not None}
    if env_lists:
        evidence["visible_devices"] = env_lists
    if not view["imported"]:
        remedy = "install the stack's python packages: inv provision %s--limit %s" % (
            "--inventory %s " % config["inventory"] if config.get("inventory") else "", config.get("host") or "<host>")
        if view.get("missing_module") in ("torch", "torch_npu"):
            return [result("error", "%s is not installed in the stack's python (%s): the stack is not provisioned, "
                           "devices were not checked through torch" % (view["missing_module"], sys.executable),
                           metrics, evidence, remedy)]
        return [result("fail", "torch does not import: %s" % view.get("import_error"), metrics, evidence, remedy)]
    if vendor == "cpu":
        if expect:
            return [result("fail", "the cpu stack sees no accelerator but %s are expected" % expect, metrics,
                           evidence, "set expect_devices: 0 for this host, or give it an accelerator stack")]
        return [result("pass", "cpu stack: torch %s imports; no accelerator expected" % view.get("torch"),
                       metrics, evidence)]
    count = view.get("count") or 0
    if view.get("matmul_error"):
        return [result("fail", "torch sees %d device(s) but a matmul on device 0 fails: %s"
                       % (count, view["matmul_error"]), metrics, evidence,
                       "check dmesg and the vendor tool's health for device 0")]
    # The count against expect_devices and the tool's health are judged on the control side.
    return [result("pass", "torch sees %d %s device(s) via %s" % (count, view.get("type") or "accelerator",
                                                                  view.get("api")),
                   metrics, evidence)]


if __name__ == "__main__":
    main_entry("devices", main)
