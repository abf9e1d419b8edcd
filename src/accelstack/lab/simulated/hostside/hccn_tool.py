#!/usr/bin/env python3
"""SIMULATED hccn_tool for the accelstack lab (installed by the simulated Ascend driver package).

Answers the queries in the real tool's formats (reference ascend.md 4.3) from the driver's
``.simulated/devices.json``: ``-i N -ip -g``, ``-link -g``, ``-net_health -g``, ``-gateway -g``.
"""

import json
import sys

DEVICES_FILE = "@@DEVICES_FILE@@"
USAGE = "Usage: hccn_tool -i <device_id> <-ip|-link|-net_health|-gateway> -g  (simulated hccn_tool)\n"


def main(args):  # type: (list) -> int
    if len(args) != 4 or args[0] != "-i" or args[3] != "-g" or not args[1].isdigit():
        sys.stderr.write(USAGE)
        return 1
    try:
        with open(DEVICES_FILE) as handle:
            doc = json.load(handle)
    except (OSError, ValueError):
        sys.stderr.write("dcmi module initialize failed. ret is -8005\n")
        return 255
    device = None
    for d in doc["devices"]:
        if str(d["id"]) == args[1] and d.get("present", True):
            device = d
    if device is None:
        sys.stderr.write("device id %s is invalid (simulated hccn_tool)\n" % args[1])
        return 1
    healthy = device.get("health") == "OK"
    query = args[2]
    if query == "-ip":
        if device.get("ip"):
            sys.stdout.write("ipaddr:%s\nnetmask:%s\n" % (device["ip"], device["netmask"]))
    elif query == "-link":
        sys.stdout.write("link status: %s\n" % (device.get("link", "UP") if healthy else "DOWN"))
    elif query == "-net_health":
        sys.stdout.write("net health status: %s\n" % ("Success" if healthy else "Socket failed"))
    elif query == "-gateway":
        ip = device.get("ip") or "0.0.0.0"
        sys.stdout.write("gateway:%s\n" % (ip.rsplit(".", 1)[0] + ".254"))
    else:
        sys.stderr.write(USAGE)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
