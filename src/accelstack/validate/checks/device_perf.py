"""Declares ``hostside/validators/device_perf.py``: per-device matmul, copy, host transfers and PCIe link."""

from . import Check

CHECKS = (
    Check(("perf",), "standard", script="device_perf.py", python="stack", timeout=300,
          help="per device, timed with device events after a warm-up: `perf.matmul` (bf16 8192^3 TFLOP/s), "
               "`perf.copy` (device copy, read+write TB/s), `perf.h2d`/`perf.d2h` (pinned GB/s), `perf.pcie` (link "
               "generation and width against their maximum, read while host-to-device copies run: below width "
               "fails, below generation fails under load and warns when read idle); floors per SKU; cpu stack: "
               "skip",
          config=("vendor", "accelerator", "device_rows", "device_margin"),
          thresholds=("devices", "device_margin")),
)
