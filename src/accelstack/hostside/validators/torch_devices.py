#!/usr/bin/env python3
# Declared in accelstack/validate/checks/torch_devices.py (tier, python, timeout, config keys, judge, help).
"""torch_devices: what torch sees through the device-agnostic API, and a tiny op on device 0.

Runs with the stack's python (torch): the quick tier's check that the training stack can use the devices the vendor
tool counts (the ``devices`` check, health tier, counts them without torch). A device another process holds (a
job's rank listed by the vendor tool, an exclusive compute mode, memory in use by no listed process; or, after
the fact, "busy or unavailable" or out of memory while someone holds the memory) is left alone: ``skip`` naming the
holder (``_holders.py``), never a fail. A torch (or torch_npu) that is not installed in the stack's python is
``error``: the stack is not provisioned, nothing was measured. Stdlib only (plus torch), Python 3.6 syntax.
"""

import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for, vendor_module
from _holders import held, held_after, read_devices, skip_evidence, skip_summary, visible_indices

CHECK = "torch_devices"
result = results_for(CHECK)


def torch_view(vendor):
    """Device type, count and a tiny op on device 0, through torch.accelerator where it exists.

    The vendor's torch plugin (its module's ``TORCH_PLUGIN``: torch_npu on Ascend) is imported first: it registers
    the device type that the generic API reports. torch.cuda is never named here, so an NPU host is never asked
    about CUDA.
    """
    module = vendor_module(vendor)
    view = {"imported": False}
    try:
        import torch
        view["torch"] = torch.__version__
        if module.TORCH_PLUGIN:
            plugin = importlib.import_module(module.TORCH_PLUGIN)
            view[module.TORCH_PLUGIN] = getattr(plugin, "__version__", None)
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
        kind = module.TORCH_DEVICE
        module = torch.get_device_module(kind) if kind and hasattr(torch, "get_device_module") else None
        view["api"] = "torch.get_device_module(%r)" % kind
        view["type"] = kind if module is not None and module.is_available() else None
        view["count"] = int(module.device_count()) if view["type"] else 0
    return view


def tiny_op(view):
    """A 64x64 matmul on device 0, checked: the first context on the device and the first kernel."""
    import torch
    try:
        x = torch.ones(64, 64, device=torch.device(view["type"], 0))
        y = (x @ x).sum().item()
        view["matmul_ok"] = y == 64.0 * 64 * 64
    except Exception as exc:
        view["matmul_error"] = "%s: %s" % (type(exc).__name__, exc)


def provision_remedy(config):
    return "install the stack's python packages: inv provision %s--limit %s" % (
        "--inventory %s " % config["inventory"] if config.get("inventory") else "", config.get("host") or "<host>")


def main(config):
    vendor = config.get("vendor", "cpu")
    module = vendor_module(vendor)
    expect = config.get("expect_devices")
    evidence = {}
    metrics = {}
    devices = None
    if module.HAS_DEVICES:
        # Before torch touches device 0: is it someone else's now? (The devices check reports a failing tool.)
        devices, tool_error = read_devices(vendor)
        if devices is not None:
            metrics["tool_devices"] = len(devices)
        else:
            evidence["tool_error"] = tool_error
        found = held(vendor, visible_indices(vendor, 1), devices=devices)
        if found:
            return [result("skip", skip_summary("the torch check of device 0", found), metrics,
                           skip_evidence(found))]
    view = torch_view(vendor)
    evidence["torch"] = view
    metrics["torch_devices"] = view.get("count")
    env_lists = {k: os.environ.get(k) for k in module.VISIBLE_DEVICES if os.environ.get(k) is not None}
    if env_lists:
        evidence["visible_devices"] = env_lists
    if not view["imported"]:
        if view.get("missing_module") in ("torch", module.TORCH_PLUGIN):
            return [result("error", "%s is not installed in the stack's python (%s): the stack is not provisioned, "
                           "devices were not checked through torch" % (view["missing_module"], sys.executable),
                           metrics, evidence, provision_remedy(config))]
        return [result("fail", "torch does not import: %s" % view.get("import_error"), metrics, evidence,
                       provision_remedy(config))]
    if not module.HAS_DEVICES:
        if expect:
            return [result("fail", "the %s stack sees no accelerator but %s are expected" % (module.NAME, expect),
                           metrics, evidence, "set expect_devices: 0 for this host, or give it an accelerator stack")]
        return [result("pass", "%s stack: torch %s imports; no accelerator expected" % (module.NAME, view.get("torch")),
                       metrics, evidence)]
    count = view.get("count") or 0
    tool = module.TOOL
    tool_count = metrics.get("tool_devices")
    if count:
        tiny_op(view)
    if view.get("matmul_error"):
        found = held_after(vendor, view["matmul_error"], visible_indices(vendor, 1), devices=devices)
        if found:
            evidence.update(skip_evidence(found))
            return [result("skip", skip_summary("the torch check of device 0", found), metrics, evidence)]
        return [result("fail", "torch sees %d device(s) but a matmul on device 0 fails: %s"
                       % (count, view["matmul_error"].strip().splitlines()[0]), metrics, evidence,
                       "check dmesg and the vendor tool's health for device 0 (inv validate --only health)")]
    if view.get("matmul_ok") is False:
        return [result("fail", "a 64x64 matmul on device 0 gives a wrong sum: the device computes wrong values",
                       metrics, evidence, "drain the host; check the device's health (inv validate --only health), "
                       "reset it, RMA if it persists")]
    if tool_count is not None and count != tool_count and not env_lists:
        if count == 0:
            # The hardware answers and torch sees nothing: the python side, not the device, is what to fix.
            backend = module.TORCH_BUILD
            remedy = ("torch %s in the stack's python has no %s backend; it needs %s: inv provision --limit %s "
                      "installs the stack's pins" % (view.get("torch") or "?", vendor, backend,
                                                      config.get("host") or "<host>"))
        else:
            remedy = "a device the driver lists is not usable by torch: dmesg, then the vendor tool's detail view"
        return [result("fail", "torch sees %d of the %d device(s) %s reports" % (count, tool_count, tool), metrics,
                       evidence, remedy)]
    if not count:
        return [result("fail", "torch sees no %s device on a %s stack" % (view.get("type") or "accelerator", vendor),
                       metrics, evidence, provision_remedy(config))]
    if expect is not None and tool_count is None and count != int(expect):
        return [result("fail", "torch sees %d device(s), %s expected (%s could not be read)" % (count, expect, tool),
                       metrics, evidence, "see the devices check for what the driver reports")]
    return [result("pass", "torch sees %d %s device(s) via %s; a matmul on device 0 is right"
                   % (count, view.get("type") or "accelerator", view.get("api")), metrics, evidence)]


if __name__ == "__main__":
    main_entry(CHECK, main)
