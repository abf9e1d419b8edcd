#!/usr/bin/env python3
"""The cpu vendor's host-side half, and the interface every vendor's ``hostside.py`` has.

The validators (``hostside/validators/*.py``) load a vendor's module by the config's ``vendor`` with
``_common.vendor_module(name)``: uploaded beside them as ``vendor_<name>.py``, or from the package's
``vendors/<name>/hostside.py``. A vendor's module provides:

``NAME``, ``HAS_DEVICES``
    its name, and whether its hosts have accelerators at all (the cpu vendor's do not).
``TORCH_DEVICE``, ``TORCH_PLUGIN``, ``TORCH_BUILD``
    torch's device type (``cuda``, ``npu``; None), the module that registers it with torch, imported before
    torch's device API is asked (``torch_npu``; None), and what a torch needs to see the devices, for a remedy.
``TOOL``, ``VISIBLE_DEVICES``, ``PCI_ACCELERATORS``, ``DEVICE_IPS``, ``LIMITS``
    the device tool's name; the environment variables that renumber the devices torch sees (the first is what
    the env file writes); ``(PCI vendor id, class prefix)`` of its accelerators in sysfs; whether each device
    has a RoCE IP that the ``hccn`` check compares; its health limits' defaults.
``VISIBLE_UUIDS``, ``VISIBLE_ASCENDING``
    the prefixes of device UUIDs its visible-devices variables take besides ids (``GPU-``), and whether its
    runtime needs the ids ascending (it stops at the first id out of order), for the ``env`` check.
``BUSY_ERRORS``, ``OOM_ERRORS``
    regular expressions (or None) of the errors that say a device is someone else's (busy, or out of memory in
    the vendor runtime's own words), for ``_holders.py``.
``present()``
    whether the host has its tool (a config that names no vendor is judged by the first vendor present).
``health_checks(limits, rows, accelerator)``
    the ``health.*`` records from its tool's cheap reads, judged against ``limits`` (the config's
    ``device_health``) and the per-SKU ``rows`` (``device_rows``).
``list_devices(evidence)``
    the ``devices`` check's ``(status, summary, metrics)``; the tool's exit and output (``tool_exit``,
    ``tool_output``, its parsed devices) go into ``evidence`` for the control side to count and judge.
``read_devices()``
    ``(devices, error)``: one dict per device, ``{device, index, uuid, compute_mode, memory_used_mib,
    memory_total_mib, processes: [{pid, name, memory_mib}]}``, for ``_holders.py`` (who holds a device).
``memory_evidence()``
    ``(evidence, failure)``: the ``memory.devices`` check's tool reads for the control side, and the summary of
    a read that failed (None when they answered).
``pcie_link(address)``
    the PCIe link of the device at a PCI address as its tool reads it, None where it does not (sysfs is read).

Stdlib only, Python 3.6 syntax.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this module when uploaded
from _common import record

NAME = "cpu"
HAS_DEVICES = False
TORCH_DEVICE = None
TORCH_PLUGIN = None
TORCH_BUILD = "a CPU build"
TOOL = None
VISIBLE_DEVICES = ()
PCI_ACCELERATORS = ()
VISIBLE_UUIDS = ()
VISIBLE_ASCENDING = False
DEVICE_IPS = False
LIMITS = {}
BUSY_ERRORS = None
OOM_ERRORS = None


def present():
    return False


def health_checks(limits, rows, accelerator):
    return [record("health", "skip", "cpu stack: no accelerator to check")]


def list_devices(evidence):
    return "skip", "cpu stack: no accelerator expected, no vendor tool to count devices with", {}


def read_devices():
    return [], None


def memory_evidence():
    return {}, None


def pcie_link(address):
    return None
