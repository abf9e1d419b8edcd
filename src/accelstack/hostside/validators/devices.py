#!/usr/bin/env python3
# Declared in accelstack/validate/checks/devices.py (tier, python, timeout, config keys, judge, help).
"""Devices: what the vendor tool reports, read without torch and without a device context, so it is safe beside a
running job (the health tier).

The read is the vendor's (its host-side module's ``list_devices``, ``vendors/<vendor>/hostside.py``): NVIDIA's one
``nvidia-smi -q -x`` this interpreter reads (the ``health`` check judges the same answer), every GPU's index, name,
bus id, memory, compute mode and the processes on it, sent back compact as evidence; Ascend's one ``npu-smi info``
table, sent back as it is. The count against ``expect_devices`` and each device's health are judged on the control
side (``accelstack.validate.judge.judge_devices``, with the vendor's parsers), so the rules live next to their
tested parsers; a tool that is missing, hangs or fails is ``error`` there (nothing was counted). Processes on a
device are listed, not judged: a job may be running (``memory`` judges headroom, the torch checks leave a held
device alone). The cpu stack has no vendor tool: ``skip``, or ``fail`` when devices are expected. Stdlib only,
Python 3.6 syntax.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for, vendor_module

CHECK = "devices"
result = results_for(CHECK)


def main(config):
    vendor = config.get("vendor", "cpu")
    expect = config.get("expect_devices")
    evidence = {}
    try:
        module = vendor_module(vendor)
    except ImportError:
        return [result("skip", "vendor %r has no device tool to count with" % vendor)]
    if not module.HAS_DEVICES:
        if expect:
            return [result("fail", "the %s stack has no accelerator, but %s are expected" % (module.NAME, expect), {},
                           evidence, "set expect_devices: 0 for this host, or give it an accelerator stack")]
        return [result("skip", "%s stack: no accelerator expected, no vendor tool to count devices with"
                       % module.NAME)]
    status, summary, metrics = module.list_devices(evidence)
    return [result(status, summary, metrics, evidence)]


if __name__ == "__main__":
    main_entry(CHECK, main)
