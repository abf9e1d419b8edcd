#!/usr/bin/env python3
# accelstack-validator: check=topology tier=standard python=system timeout=60
"""Topology: the NUMA node of every accelerator and NIC, from sysfs.

A collective NIC on a NUMA node with no accelerator makes every transfer cross the socket interconnect; a
device with numa_node -1 on a multi-socket host means the BIOS does not report affinity, so binding is guesswork.
"""
from __future__ import annotations

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for

# PCI vendor:class prefixes: NVIDIA 3D/VGA controllers, Huawei processing accelerators (Ascend).
ACCELERATORS = {("0x10de", "0x0302"), ("0x10de", "0x0300"), ("0x19e5", "0x1200")}
result = results_for("topology")


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def main(config):
    nodes = sorted(int(p.rsplit("node", 1)[1]) for p in glob.glob("/sys/devices/system/node/node[0-9]*"))
    devices = {}
    for dev in sorted(glob.glob("/sys/bus/pci/devices/*")):
        vendor, klass = read(dev + "/vendor"), read(dev + "/class")[:6]
        if (vendor, klass) in ACCELERATORS:
            devices[os.path.basename(dev)] = int(read(dev + "/numa_node") or -1)
    nics = {}
    for net in sorted(glob.glob("/sys/class/net/*")):
        if os.path.exists(net + "/device/numa_node"):
            nics[os.path.basename(net)] = int(read(net + "/device/numa_node") or -1)
    wanted = [str(v).lstrip("^=") for v in (config.get("socket_ifnames") or {}).values() if v]
    evidence = {"numa_nodes": nodes, "accelerators": devices, "nics": nics}
    metrics = {"numa_nodes": len(nodes) or 1, "accelerators": len(devices), "nics": len(nics)}
    if not devices:
        return [result("pass" if not config.get("expect_devices") else "warn",
                       "%d NUMA node(s); no accelerator on the PCI bus" % (len(nodes) or 1), metrics, evidence)]
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
