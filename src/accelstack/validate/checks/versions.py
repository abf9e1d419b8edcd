"""Declares ``versions``: computed on the control side from the host's facts by its runner
(``accelstack.engines.ssh.host.versions_records``), no script of its own."""

from . import Check

CHECKS = (
    Check(("versions",), "health", help="drift against the stack",
          runner="accelstack.engines.ssh.host:versions_records",
          confirms=("cann-mismatch", "driver-library-mismatch", "driver-too-old", "torch-build-mismatch")),
)
