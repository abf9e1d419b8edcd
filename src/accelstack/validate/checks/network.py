"""Declares ``hostside/validators/network.py``: Ascend NPU device IPs (``hccn``)."""

from . import Check

CHECKS = (
    Check(("hccn",), "health", script="network.py", python="system", timeout=60,
          help="Ascend: each NPU's `address_N` in `/etc/hccn.conf` (the rank table's `device_ip`) against "
               "`hccn_tool -i N -ip -g`; a stale or missing entry fails with the `hccn_tool -ip -s` that fixes "
               "it; skip on cpu and NVIDIA hosts",
          config=("host", "vendor"),
          confirms=("connect-timeout",)),
)
