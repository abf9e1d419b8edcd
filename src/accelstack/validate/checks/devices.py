"""Declares ``hostside/validators/devices.py``: devices counted by the vendor tool and seen by torch."""

from ..results import refine_devices
from . import Check

CHECKS = (
    Check(("devices",), "quick", script="devices.py", python="stack", timeout=120,
          help="count against `expect_devices`, health from npu-smi/nvidia-smi, seen by torch through the "
               "device-agnostic API (never `torch.cuda` on an NPU host)",
          config=("host", "inventory", "vendor", "expect_devices"),
          judge=refine_devices,
          confirms=("device-assert", "device-busy", "device-hardware", "no-device", "unknown-error-code",
                    "watchdog-stuck", "xid-fatal", "xid-warn")),
)
