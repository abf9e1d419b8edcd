#!/usr/bin/env python3
# Declared in accelstack/validate/checks/topology.py (tier, python, timeout, config keys, judge, help).
"""Topology: the NUMA node of every accelerator and NIC, from sysfs.

A collective NIC on a NUMA node with no accelerator makes every transfer cross the socket interconnect; a
device with numa_node -1 on a multi-socket host means the BIOS does not report affinity, so binding is guesswork.
A host whose sysfs has no PCI device list cannot be judged (``error``); one with no accelerator that none is
expected on has nothing to check (``skip``).

``ACCELSTACK_SIM_ROOT`` (unset on real hosts) prefixes the sysfs paths, as in network.py, so the unit tests give
it a sysfs of their own. Stdlib only, Python 3.6 syntax.
"""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for, vendor_modules


def accelerators():
    """PCI vendor:class prefixes of every vendor's accelerators (their host-side modules' PCI_ACCELERATORS: NVIDIA
    3D/VGA controllers, Huawei processing accelerators)."""
    return set(pair for module in vendor_modules() for pair in module.PCI_ACCELERATORS)


result = results_for("topology")


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def sysfs(path):
    return os.environ.get("ACCELSTACK_SIM_ROOT", "").rstrip("/") + path


def main(config):
    pci = sysfs("/sys/bus/pci/devices")
    if not os.path.isdir(pci):
        return [result("error", "cannot read %s: no PCI device list to find the accelerators in" % pci,
                       evidence={"path": pci}, remedy="mount sysfs read-only into the container or host namespace "
                       "the validator runs in (-v /sys:/sys:ro)")]
    nodes = sorted(int(p.rsplit("node", 1)[1]) for p in glob.glob(sysfs("/sys/devices/system/node/node[0-9]*")))
    devices = {}
    wanted_pci = accelerators()
    for dev in sorted(glob.glob(pci + "/*")):
        vendor, klass = read(dev + "/vendor"), read(dev + "/class")[:6]
        if (vendor, klass) in wanted_pci:
            devices[os.path.basename(dev)] = int(read(dev + "/numa_node") or -1)
    nics = {}
    for net in sorted(glob.glob(sysfs("/sys/class/net/*"))):
        if os.path.exists(net + "/device/numa_node"):
            nics[os.path.basename(net)] = int(read(net + "/device/numa_node") or -1)
    wanted = [str(v).lstrip("^=") for v in (config.get("socket_ifnames") or {}).values() if v]
    evidence = {"numa_nodes": nodes, "accelerators": devices, "nics": nics}
    metrics = {"numa_nodes": len(nodes) or 1, "accelerators": len(devices), "nics": len(nics)}
    if not devices:
        if not config.get("expect_devices"):
            return [result("skip", "no accelerator on the PCI bus and none expected: no device affinity to check",
                           metrics, evidence)]
        return [result("warn", "%d NUMA node(s); no accelerator on the PCI bus, %s expected (vendor or class "
                       "not recognised?)" % (len(nodes) or 1, config.get("expect_devices")), metrics, evidence,
                       "see the devices check for the count; lspci -nn lists what is on the bus")]
    problems = []
    if len(nodes) > 1:
        unknown = [d for d, n in devices.items() if n < 0]
        if unknown:
            problems.append("%d device(s) without NUMA affinity (numa_node -1): %s" % (len(unknown),
                                                                                        ", ".join(unknown[:4])))
        used = {n for n in devices.values() if n >= 0}
        for nic, node in nics.items():
            if any(nic.startswith(w) for w in wanted) and node >= 0 and used and node not in used:
                problems.append("collective NIC %s is on NUMA node %d, where no accelerator is" % (nic, node))
    if problems:
        return [result("warn", "; ".join(problems), metrics, evidence,
                       "enable NUMA reporting in the BIOS (ACPI SRAT/SLIT); put the collective NIC on a socket "
                       "with accelerators, or bind ranks with numactl")]
    per_node = {}
    for node in devices.values():
        per_node[node] = per_node.get(node, 0) + 1
    return [result("pass", "%d accelerator(s) over NUMA node(s) %s" % (
        len(devices), ", ".join("%d:%d" % kv for kv in sorted(per_node.items()))), metrics, evidence)]


if __name__ == "__main__":
    main_entry("topology", main)
