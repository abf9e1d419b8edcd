#!/usr/bin/env python3
# Declared in accelstack/validate/checks/device_health.py (tier, python, timeout, config keys, judge, help).
"""Device health from the vendor tool's cheap reads (what DCGM diag r1 and the node health checks look at).

What is read and how it is judged is the vendor's (its host-side module, ``vendors/<vendor>/hostside.py``, loaded
by the config's ``vendor``): NVIDIA's ``nvidia-smi -q -x`` (ECC, remapped rows, retired pages, clock-event reasons,
temperature, persistence, NVLink, Xids), Ascend's ``npu-smi`` (health, HBM ECC, HBM and AI cores busy while idle,
temperature). One record per aspect (``health.ecc``, ``health.xid``, ...), judged here against the limits the config
carries (``device_health``, ``device_rows`` from the vendor's floors.yml; the defaults below and the vendor's
``LIMITS`` where the config is silent). No vendor device on the host: one ``health`` skip; the tool missing or
failing: one ``health`` error. Stdlib only, Python 3.6 syntax.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, record, vendor_module, vendor_modules

# The limits every vendor's judgement shares (the vendors add their own: their modules' LIMITS).
LIMITS = {"temperature_margin_c": 10, "temperature_warn_c": 80, "temperature_fail_c": 90}


def limits_for(module, config):
    limits = dict(LIMITS)
    limits.update(module.LIMITS)
    limits.update(dict((k, v) for k, v in (config.get("device_health") or {}).items() if v is not None))
    return limits


def main(config):
    vendor = config.get("vendor")
    if vendor is None:
        tools = [m for m in vendor_modules() if m.HAS_DEVICES]
        found = [m for m in tools if m.present()]
        if not found:
            return [record("health", "skip", "no %s on this host: no accelerator to check"
                           % " or ".join(m.TOOL for m in tools))]
        module = found[0]
    else:
        try:
            module = vendor_module(vendor)
        except ImportError:
            return [record("health", "skip", "vendor %r has no health reads" % vendor)]
    if not module.HAS_DEVICES:
        return [record("health", "skip", "%s stack: no accelerator to check" % module.NAME)]
    return module.health_checks(limits_for(module, config), config.get("device_rows"), config.get("accelerator") or "")


if __name__ == "__main__":
    main_entry("health", main)
