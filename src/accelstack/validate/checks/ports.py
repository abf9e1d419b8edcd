"""Declares ``hostside/validators/ports.py``: rendezvous and collective ports between nodes. Orchestrated by
``accelstack.engines.ssh.cluster.run_ports``, which gives the script a config of its own (role, ports, peers)."""

from . import Check

CHECKS = (
    Check(("ports",), "standard", script="ports.py", python="system", timeout=60, scope="cluster",
          help="rendezvous and collective ports between nodes",
          runner="accelstack.engines.ssh.cluster:run_ports", engines=("ssh",), needs_peers=True),
)
