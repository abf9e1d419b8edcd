"""Declares ``hostside/validators/device_health.py``: device health from the vendor tool's cheap reads."""

from ...vendors import vendors
from . import Check

# Each vendor says what its tool's reads judge (Vendor.health_help); a new vendor's aspects reach the help and the
# README's table of checks without an edit here.
_PER_VENDOR = ". ".join(f"{v.label} ({v.health_read}): {v.health_help}" for v in vendors() if v.health_help)

CHECKS = (
    Check(("health",), "health", script="device_health.py", python="system", timeout=90,
          help=f"device health from the vendor tool's cheap reads, one record per aspect. {_PER_VENDOR}. cpu stack: "
               "skip; tool missing or failing: error",
          config=("vendor", "accelerator", "device_health", "device_rows"),
          thresholds=("device_health", "devices"),
          confirms=("device-busy", "device-hardware", "node-failure", "xid-fatal", "xid-warn")),
)
