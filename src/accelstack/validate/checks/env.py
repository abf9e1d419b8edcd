"""Declares ``hostside/validators/env.py``: the rendered env file, socket interfaces, visible-device lists."""

from . import Check

CHECKS = (
    Check(("env",), "health", script="env.py", python="system", timeout=60,
          help="the rendered file present and sourced; `*_SOCKET_IFNAME` up with an address, and the same as the "
               "inventory's `*_socket_ifname` (a disagreement fails, naming both); visible-device lists valid (a "
               "warning for non-contiguous lists)",
          config=("host", "vendor", "env_file", "expect_devices", "socket_ifnames", "socket_ifname_sources"),
          confirms=("cann-env-missing", "device-mapping", "network-interface")),
)
