"""Declares ``hostside/validators/devices.py``: the devices the vendor tool counts, without torch (health tier)."""

from ..judge import judge_devices
from . import Check

CHECKS = (
    Check(("devices",), "health", script="devices.py", python="system", timeout=90,
          help="count against `expect_devices` and each device's health from the one `nvidia-smi -q -x` / `npu-smi "
               "info` the tier reads (no torch, no device context: safe beside a job); the processes on each device "
               "are listed, not judged",
          config=("host", "inventory", "vendor", "expect_devices"),
          judge=judge_devices,
          # signatures.yml names `devices` for these: the vendor tool's count and health confirm them, and
          # torch_devices (the quick tier) confirms what needs a device context.
          confirms=("device-assert", "device-busy", "device-hardware", "no-device", "unknown-error-code",
                    "watchdog-stuck", "xid-fatal", "xid-warn")),
)
