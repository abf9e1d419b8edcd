"""Declares ``hostside/validators/topology.py``: NUMA affinity of devices and NICs."""

from . import Check

CHECKS = (
    Check(("topology",), "health", script="topology.py", python="system", timeout=60,
          help="NUMA affinity of devices and NICs", config=("expect_devices", "socket_ifnames")),
)
