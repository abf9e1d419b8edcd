"""Declares ``hostside/validators/torch_devices.py``: the devices seen by torch, and a tiny op on device 0."""

from . import Check

CHECKS = (
    Check(("torch_devices",), "quick", script="torch_devices.py", python="stack", timeout=120,
          help="seen by torch through the device-agnostic API (never `torch.cuda` on an NPU host), as many as the "
               "vendor tool lists, and a 64x64 matmul on device 0; a device another process holds (listed by the "
               "vendor tool, exclusive compute mode, busy or unavailable, out of memory while someone holds it) is "
               "a skip naming the holder",
          config=("host", "inventory", "vendor", "expect_devices"),
          confirms=("device-assert", "device-busy", "unknown-error-code", "watchdog-stuck")),
)
