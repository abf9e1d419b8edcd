"""Declares ``clock``: skew between hosts, measured over the run's connections by the control side
(``validate.cluster.clock_records``), no script of its own."""

from . import Check

CHECKS = (
    Check(("clock",), "quick", scope="cluster", help="clock skew between hosts", thresholds=("clock",)),
)
