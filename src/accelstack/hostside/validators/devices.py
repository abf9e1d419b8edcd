#!/usr/bin/env python3
# Declared in accelstack/validate/checks/devices.py (tier, python, timeout, config keys, judge, help).
"""Devices: what the vendor tool reports, read without torch and without a device context, so it is safe beside a
running job (the health tier).

NVIDIA: the one ``nvidia-smi -q -x`` this interpreter reads (the ``health`` check judges the same answer): every
GPU's index, name, bus id, memory, compute mode and the processes on it, sent back compact as evidence. Ascend: the
one ``npu-smi info`` table, sent back as it is. The count against ``expect_devices`` and each device's health are
judged on the control side (``accelstack.validate.judge.refine_devices``, with the facts parsers), so the rules
live next to their tested parsers; a tool that is missing, hangs or fails is ``error`` there (nothing was
counted). Processes on a device are listed, not judged: a job may be running (``memory`` judges headroom, the
torch checks leave a held device alone). The cpu stack has no vendor tool: ``skip``, or ``fail`` when devices are
expected. Stdlib only, Python 3.6 syntax.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for
from device_health import npu_smi_path, nvidia_smi_path, parse_smi_xml, read_npu_info, read_smi_xml

CHECK = "devices"
result = results_for(CHECK)
TAIL = 2000


def gpu_summary(gpu):
    """What the control side judges of one GPU, and what a person reads first: small enough for every record."""
    return {"index": gpu["index"], "name": gpu["name"], "bus_id": gpu["bus_id"], "uuid": gpu.get("uuid"),
            "memory_total_mib": gpu.get("memory_total_mib"), "memory_used_mib": gpu.get("memory_used_mib"),
            "compute_mode": gpu.get("compute_mode"), "processes": gpu.get("processes") or []}


def nvidia(evidence):
    smi = nvidia_smi_path()
    evidence["command"] = "nvidia-smi -q -x"
    if not smi:
        evidence["tool_exit"], evidence["tool_output"] = 127, "nvidia-smi: not found"
        return None
    status, text = read_smi_xml(smi)
    evidence["tool_exit"] = status
    if status != 0:
        evidence["tool_output"] = text[-TAIL:]
        return None
    try:
        gpus = parse_smi_xml(text)
    except ValueError as exc:
        # The control side finds no GPU in what it cannot read: an error, with the text's end to look at.
        evidence["tool_output"] = text[-TAIL:]
        evidence["parse_error"] = str(exc)
        return None
    evidence["gpus"] = [gpu_summary(g) for g in gpus]
    return gpus


def main(config):
    vendor = config.get("vendor", "cpu")
    expect = config.get("expect_devices")
    evidence = {}
    if vendor == "cpu":
        if expect:
            return [result("fail", "the cpu stack has no accelerator, but %s are expected" % expect, {}, evidence,
                           "set expect_devices: 0 for this host, or give it an accelerator stack")]
        return [result("skip", "cpu stack: no accelerator expected, no vendor tool to count devices with")]
    if vendor == "nvidia":
        gpus = nvidia(evidence)
        if gpus is None:
            return [result("error", "nvidia-smi gave no device list to count", {}, evidence)]
        in_use = [g for g in gpus if g.get("processes")]
        names = sorted(set(g["name"] or "?" for g in gpus))
        summary = "nvidia-smi lists %d GPU(s): %s" % (len(gpus), ", ".join(names))
        if in_use:
            summary += "; in use by a process: %s" % ", ".join("gpu %d" % g["index"] for g in in_use)
        return [result("pass", summary, {"processes": sum(len(g.get("processes") or []) for g in gpus)}, evidence)]
    if vendor == "ascend":
        npu_smi = npu_smi_path()
        evidence["command"] = "npu-smi info"
        if not npu_smi:
            evidence["tool_exit"], evidence["tool_output"] = 127, "npu-smi: not found"
        else:
            evidence["tool_exit"], evidence["tool_output"] = read_npu_info(npu_smi)
        if evidence["tool_exit"] != 0:
            evidence["tool_output"] = evidence["tool_output"][-TAIL:]
            return [result("error", "npu-smi gave no device list to count", {}, evidence)]
        return [result("pass", "npu-smi lists the NPUs", {}, evidence)]
    return [result("skip", "vendor %r has no device tool to count with" % vendor)]


if __name__ == "__main__":
    main_entry(CHECK, main)
