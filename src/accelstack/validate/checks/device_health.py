"""Declares ``hostside/validators/device_health.py``: device health from the vendor tool's cheap reads."""

from . import Check

CHECKS = (
    Check(("health",), "health", script="device_health.py", python="system", timeout=90,
          help="device health from the vendor tool's cheap reads, one record per aspect. NVIDIA (`nvidia-smi -q "
               "-x`): `health.ecc` (uncorrectable volatile fails, lifetime-only warns, a reset asked for fails), "
               "`health.remapped_rows` (pending or failed fails), `health.retired_pages` (pre-Ampere), "
               "`health.throttle` (hardware/thermal slowdown fails, power cap while idle warns), "
               "`health.temperature` (against the GPU's own slowdown limit), `health.persistence`, "
               "`health.nvlink` (`nvidia-smi nvlink -s`, links per SKU), `health.xid` (kernel log, severity per "
               "DCGM's classification). Ascend (`npu-smi`): `health.status`, `health.ecc` (`-t ecc`), "
               "`health.hbm`, `health.temperature`, `health.aicore` (busy with no process listed). cpu stack: "
               "skip; tool missing or failing: error",
          config=("vendor", "accelerator", "device_health", "device_rows"),
          thresholds=("device_health", "devices"),
          confirms=("device-busy", "device-hardware", "node-failure", "xid-fatal", "xid-warn")),
)
