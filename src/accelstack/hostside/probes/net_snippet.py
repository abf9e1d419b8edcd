# accelstack facts probe, network part for hosts without iproute2 (minimal images, containers, the H100 host
# of the captures): interfaces from /sys/class/net, IPv4 address and netmask from the SIOCGIFADDR and
# SIOCGIFNETMASK ioctls, which no shell tool reads. Prints one JSON list of
# {name, operstate, mtu, flags, ipv4, netmask}; the shell probe (facts_probe.sh) runs it with the host's python3
# only when `ip` is missing or fails. Python 3.6 syntax, stdlib only; an error is one line on stderr, exit 1.
import json
import os
import socket
import struct
import sys

try:
    import fcntl
except ImportError:  # not Linux: no ioctls, names and states only
    fcntl = None  # type: ignore[assignment]

SIOCGIFADDR = 0x8915
SIOCGIFNETMASK = 0x891b
BASE = "/sys/class/net"


def read_sys(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except Exception:
        return None


def ifreq_ipv4(name, request):
    if fcntl is None:
        return None
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = fcntl.ioctl(sock.fileno(), request, struct.pack("256s", name[:15].encode()))
        return socket.inet_ntoa(packed[20:24])
    except Exception:
        return None  # no IPv4 address on it (EADDRNOTAVAIL), or no such ioctl here
    finally:
        sock.close()


def interfaces():
    found = []
    for name in sorted(os.listdir(BASE)):
        found.append({
            "name": name,
            "operstate": read_sys(os.path.join(BASE, name, "operstate")),
            "mtu": read_sys(os.path.join(BASE, name, "mtu")),
            "flags": read_sys(os.path.join(BASE, name, "flags")),
            "ipv4": ifreq_ipv4(name, SIOCGIFADDR),
            "netmask": ifreq_ipv4(name, SIOCGIFNETMASK),
        })
    return found


try:
    text = json.dumps(interfaces())
except Exception as exc:
    sys.stderr.write("%s: %s\n" % (type(exc).__name__, exc))
    sys.exit(1)
print(text)
