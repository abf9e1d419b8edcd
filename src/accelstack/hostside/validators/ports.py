#!/usr/bin/env python3
# Declared in accelstack/validate/checks/ports.py (tier, python, timeout, config keys, judge, help).
"""Ports: the rendezvous and collective ports can be bound here and reached from the other nodes.

Two roles, config["role"]: "listen" binds every port in config["ports"] and accepts until config["listen_s"]
runs out (a port already taken is reported: a stale rendezvous from an earlier job is a classic), "probe"
connects to config["peers"] = [{host, address, ports}] and reports what answered.
"""

import json
import os
import select
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for

result = results_for("ports")


def listen(config):
    ports = [int(p) for p in config.get("ports") or []]
    sockets, taken = [], {}
    for port in ports:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
            sock.listen(64)
            sockets.append(sock)
        except OSError as exc:
            taken[port] = exc.strerror
            sock.close()
    sys.stdout.write(json.dumps({"listening": [s.getsockname()[1] for s in sockets], "taken": taken}) + "\n")
    sys.stdout.flush()
    end = time.monotonic() + float(config.get("listen_s", 30))
    while sockets and time.monotonic() < end:
        ready, _w, _x = select.select(sockets, [], [], 0.5)
        for sock in ready:
            try:
                conn, _addr = sock.accept()
                conn.close()
            except OSError:
                pass
    return []


def probe(config):
    timeout = float(config.get("connect_timeout_s", 3))
    reached, failed = [], []
    for peer in config.get("peers") or []:
        for port in peer.get("ports") or []:
            started = time.monotonic()
            try:
                with socket.create_connection((peer["address"], int(port)), timeout=timeout):
                    reached.append({"host": peer["host"], "port": port,
                                    "ms": round((time.monotonic() - started) * 1000, 2)})
            except OSError as exc:
                failed.append({"host": peer["host"], "address": peer["address"], "port": port,
                               "error": exc.strerror or str(exc) or type(exc).__name__})
    metrics = {"reached": len(reached), "failed": len(failed)}
    evidence = {"reached": reached, "failed": failed}
    if failed:
        names = sorted({"%s:%s" % (f["host"], f["port"]) for f in failed})
        return [result("fail", "cannot connect to %s" % ", ".join(names[:8]), metrics, evidence,
                       "open these ports between the nodes (firewall/security group) or pick free ones "
                       "(rendezvous_port; HCCL_IF_BASE_PORT)")]
    return [result("pass", "reached %d port(s) on %d peer(s)" % (len(reached), len(config.get("peers") or [])),
                   metrics, evidence)]


def main(config):
    return listen(config) if config.get("role") == "listen" else probe(config)


if __name__ == "__main__":
    # listen prints its own line (the ports it holds) and stays up; only probe answers with a checks document.
    main_entry("ports", main, prints=lambda config: config.get("role") != "listen")
