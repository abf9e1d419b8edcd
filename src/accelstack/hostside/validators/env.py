#!/usr/bin/env python3
# Declared in accelstack/validate/checks/env.py (tier, python, timeout, config keys, judge, help).
"""Env: the rendered env file is there and a login shell sources it; socket interfaces and visible-device
lists in that environment are usable.

A wrong *_SOCKET_IFNAME only shows at the first collective ("Bootstrap : no socket interface found"), and a
non-contiguous visible-device list makes local rank N a different physical device than N, the mapping behind
"using GPU N to perform barrier as devices used by this process are currently unknown".

The inventory says which interface a job should use; the login environment (the rendered env file) is what a job
really gets. When the two disagree, the host is not as configured: `fail`, naming both.
"""

import fcntl
import os
import re
import socket
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for, vendor_module, vendor_modules

SIOCGIFADDR = 0x8915
IFF_UP = 0x1
EXPORT = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=")
result = results_for("env")


def login_environment():
    """The environment a login shell gets (it reads /etc/profile, which sources /etc/profile.d/*.sh)."""
    for shell in ("/bin/bash", "/bin/sh"):
        if not os.path.exists(shell):
            continue
        try:
            proc = subprocess.run([shell, "-l", "-c", "env -0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        env = {}
        for item in proc.stdout.decode("utf-8", "replace").split("\0"):
            if "=" in item:
                key, value = item.split("=", 1)
                env[key] = value
        return shell, env
    return None, dict(os.environ)


def interfaces():
    """name -> {up, ipv4}: from /sys and an ioctl, so no iproute2 is needed."""
    found = {}
    base = "/sys/class/net"
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        def read(leaf, name=name):
            try:
                with open(os.path.join(base, name, leaf)) as handle:
                    return handle.read().strip()
            except OSError:
                return ""
        flags = int(read("flags") or "0", 16)
        oper = read("operstate")
        up = bool(flags & IFF_UP) and oper in ("up", "unknown")
        address = None
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            packed = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name[:15].encode()))
            address = socket.inet_ntoa(packed[20:24])
        except OSError:
            address = None
        finally:
            sock.close()
        found[name] = {"up": up, "operstate": oper, "ipv4": address}
    return found


def matching_interfaces(spec, names):
    """NCCL/GLOO/HCCL interface syntax: prefixes, '^' to exclude, '=' (NCCL) or '==' (HCCL) for exact names."""
    spec = spec.strip()
    exclude = spec.startswith("^")
    if exclude:
        spec = spec[1:]
    exact = spec.startswith("=")
    spec = spec.lstrip("=")
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items and not exclude:
        return []

    def hit(name):
        return any((name == item) if exact else name.startswith(item) for item in items)

    return [n for n in names if (not hit(n)) == exclude and n != "lo"] if exclude else [n for n in names if hit(n)]


def describe_interfaces(ifaces):
    return ", ".join("%s(%s%s)" % (n, "up" if i["up"] else "down", " " + i["ipv4"] if i["ipv4"] else "")
                     for n, i in sorted(ifaces.items()) if n != "lo")


def check_ifnames(env, config, ifaces):
    checks = []
    intended = dict((k, str(v)) for k, v in (config.get("socket_ifnames") or {}).items() if v)
    sources = config.get("socket_ifname_sources") or {}
    rendered = dict((k, v) for k, v in env.items() if k.endswith("_SOCKET_IFNAME") and v)
    for key in sorted(set(intended) | set(rendered)):
        name = "env.%s" % key.lower()
        want, have = intended.get(key), rendered.get(key)
        want_from = sources.get(key) or "inventory var %s" % key.lower()
        if want is not None and have is not None and want != have:
            evidence = {"variable": key, "inventory": want, "inventory_from": want_from, "login_environment": have,
                        "matches": {want: matching_interfaces(want, sorted(ifaces)),
                                    have: matching_interfaces(have, sorted(ifaces))},
                        "interfaces": ifaces}
            checks.append(result(
                "fail", "%s disagrees: the %s says %s, the login environment (the rendered env file) has %s, and "
                "a job uses the latter; interfaces here: %s" % (key, want_from, want, have,
                                                                describe_interfaces(ifaces)),
                {"usable": 0}, evidence,
                "decide which interface the nodes reach each other on, set it in the %s, then re-render the env "
                "file (inv provision --limit %s)" % (want_from, config.get("host", "HOST")), check=name))
            continue
        value, origin = (have, "login environment") if have is not None else (want, want_from)
        names = matching_interfaces(value, sorted(ifaces))
        usable = [n for n in names if ifaces[n]["up"] and ifaces[n]["ipv4"]]
        evidence = {"variable": key, "value": value, "from": origin, "matches": names, "interfaces": ifaces}
        if usable:
            checks.append(result("pass", "%s=%s -> %s" % (key, value, ", ".join(
                "%s %s" % (n, ifaces[n]["ipv4"]) for n in usable)), {"usable": len(usable)}, evidence,
                check=name))
        else:
            state = "no interface matches" if not names else "matching interface(s) %s down or without an " \
                "address" % ", ".join(names)
            checks.append(result("fail", "%s=%s (%s): %s; interfaces here: %s" % (
                key, value, origin, state, describe_interfaces(ifaces)), {"usable": 0}, evidence,
                "set %s to an interface that is up with an address on every node (the one the nodes reach each "
                "other on), in the inventory's %s var, then re-render the env file" % (key, key.lower()),
                check=name))
    return checks


def check_visible(env, config):
    """Every vendor's visible-devices variables (its host-side module's VISIBLE_DEVICES) that the env file sets:
    device ids, each once, below the count; a vendor's UUID forms (VISIBLE_UUIDS) pass as they are, and a vendor
    whose runtime stops at an id out of order (VISIBLE_ASCENDING) needs them ascending."""
    checks = []
    count = config.get("expect_devices")
    for module, key in [(m, k) for m in vendor_modules() for k in m.VISIBLE_DEVICES]:
        value = env.get(key)
        if value is None:
            continue
        name = "env.%s" % key.lower()
        items = value.split(",")
        evidence = {"variable": key, "value": value, "expect_devices": count}
        if module.VISIBLE_UUIDS and any(i.startswith(module.VISIBLE_UUIDS) for i in items):
            checks.append(result("pass", "%s lists UUIDs: %s" % (key, value), evidence=evidence, check=name))
            continue
        if not all(re.match(r"^\d+$", i) for i in items):
            checks.append(result("fail", "%s=%r is not a comma list of device ids; parsing stops at the first "
                                 "bad item, so later devices silently vanish" % (key, value), evidence=evidence,
                                 remedy="write it as ascending ids without spaces, e.g. 0,1,2,3", check=name))
            continue
        ids = [int(i) for i in items]
        problems = []
        if len(set(ids)) != len(ids):
            problems.append("duplicates")
        if module.VISIBLE_ASCENDING and ids != sorted(ids):
            problems.append("not ascending (%s then counts 0 devices)" % module.TORCH_PLUGIN)
        if count and any(i >= int(count) for i in ids):
            problems.append("ids beyond the %s device(s) the host has" % count)
        if problems:
            checks.append(result("fail", "%s=%s: %s" % (key, value, "; ".join(problems)), evidence=evidence,
                                 remedy="list each device once, ascending, below %s" % (count or "the count"),
                                 check=name))
        elif ids and ids != list(range(ids[0], ids[0] + len(ids))) or (ids and ids[0] != 0):
            checks.append(result("warn", "%s=%s is not 0..N-1: local rank N is not physical device N, the "
                                 "mapping behind 'using GPU N to perform barrier ... devices ... unknown'"
                                 % (key, value), evidence=evidence,
                                 remedy="pass device_id=torch.device(<type>, LOCAL_RANK) to init_process_group "
                                 "and index devices by local rank, never by physical id", check=name))
        else:
            checks.append(result("pass", "%s=%s" % (key, value), evidence=evidence, check=name))
    return checks


def main(config):
    env_file = config.get("env_file") or "/etc/profile.d/accelstack.sh"
    checks = []
    shell, env = login_environment()
    exported = []
    if os.path.exists(env_file):
        with open(env_file, errors="replace") as handle:
            exported = [m.group(1) for m in (EXPORT.match(line) for line in handle) if m]
        missing = [name for name in exported if name not in env]
        evidence = {"env_file": env_file, "shell": shell, "exports": exported, "not_in_login_env": missing}
        if missing:
            checks.append(result("fail", "%s exists but a login shell (%s -l) lacks %s" % (
                env_file, shell, ", ".join(missing[:8])), {"exports": len(exported)}, evidence,
                "make sure /etc/profile sources /etc/profile.d/*.sh and the file is readable; re-render with "
                "inv provision --limit %s" % config.get("host", "")))
        else:
            checks.append(result("pass", "%s is sourced by a login shell (%d exports)" % (env_file, len(exported)),
                                 {"exports": len(exported)}, evidence))
    elif not vendor_module(config.get("vendor", "cpu")).HAS_DEVICES:
        checks.append(result("warn", "no env file at %s: the cpu stack runs without one, but nothing pins its "
                             "environment" % env_file, evidence={"env_file": env_file},
                             remedy="inv provision renders it; harmless on the cpu stack"))
    else:
        checks.append(result("fail", "no env file at %s: jobs will not find CANN/CUDA libraries or the HCCL/NCCL "
                             "settings" % env_file, evidence={"env_file": env_file},
                             remedy="inv provision --limit %s renders it" % config.get("host", "")))
    ifaces = interfaces()
    checks.extend(check_ifnames(env, config, ifaces))
    checks.extend(check_visible(env, config))
    return checks


if __name__ == "__main__":
    main_entry("env", main)
