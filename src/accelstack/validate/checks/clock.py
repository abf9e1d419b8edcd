"""Declares ``clock``: skew between hosts, measured over the run's connections by the control side
(``accelstack.engines.ssh.cluster.run_clock``), no script of its own; Slurm does not run it."""

from . import Check

CHECKS = (
    Check(("clock",), "quick", scope="cluster", help="clock skew between hosts", thresholds=("clock",),
          runner="accelstack.engines.ssh.cluster:run_clock", engines=("ssh",)),
)
