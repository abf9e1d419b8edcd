#!/usr/bin/env python3
"""SIMULATED hccn_tool for the accelstack lab (installed by the simulated Ascend driver package).

Answers the queries in the real tool's formats (tests/data/captures/hccn_tool_*.txt) from the driver's
``.simulated/devices.json``: ``-i N -ip -g``, ``-link -g``, ``-net_health -g``, ``-gateway -g``. Sets a device
IP like the real tool, ``-i N -ip -s address A netmask M``, which also persists it in ``/etc/hccn.conf``
(``address_N=``, ``netmask_N=``), where the real tool keeps it.
"""

import json
import os
import sys

DEVICES_FILE = "@@DEVICES_FILE@@"
HCCN_CONF = "@@HCCN_CONF@@"
USAGE = ("Usage: hccn_tool -i <device_id> <-ip|-link|-net_health|-gateway> -g\n"
         "       hccn_tool -i <device_id> -ip -s address <ip> netmask <mask>  (simulated hccn_tool)\n")


def write_atomically(path, text):  # type: (str, str) -> None
    tmp = "%s.simulated-tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def set_ip(doc, device, address, netmask):  # type: (dict, dict, str, str) -> None
    device["ip"], device["netmask"] = address, netmask
    write_atomically(DEVICES_FILE, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    values = {"address_%s" % device["id"]: address, "netmask_%s" % device["id"]: netmask}
    lines = []
    try:
        with open(HCCN_CONF) as handle:
            lines = handle.read().splitlines()
    except OSError:
        pass
    out = []
    for line in lines:
        key = line.partition("=")[0].strip()
        out.append("%s=%s" % (key, values.pop(key)) if key in values else line)
    out += ["%s=%s" % item for item in sorted(values.items())]
    write_atomically(HCCN_CONF, "".join(line + "\n" for line in out))


def main(args):  # type: (list) -> int
    setting = len(args) == 8 and args[3] == "-s" and args[2] == "-ip" and args[4] == "address" \
        and args[6] == "netmask"
    if not setting and (len(args) != 4 or args[3] != "-g"):
        sys.stderr.write(USAGE)
        return 1
    if args[0] != "-i" or not args[1].isdigit():
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
    if setting:
        set_ip(doc, device, args[5], args[7])
        return 0
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
