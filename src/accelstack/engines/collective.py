"""The multi-node collective as both engines run it: the sweep its ranks run, its deadline, the run tag every
process of one run carries (so what is left of it can be found and killed), and how a node's result is read. The
SSH engine starts it with torchrun over SSH (:mod:`.ssh.cluster`), the Slurm engine as one Slurm step
(:mod:`.slurm.collective`); both judge it the same way (:func:`accelstack.validate.judge.judge_isolation_run`)."""

from __future__ import annotations

import secrets
from typing import Any

from ..vendors import get_vendor

CPU_CLUSTER_SWEEP = {"sizes": [1 << 16, 1 << 20, 1 << 22], "iters": 10, "warmup": 1, "size_budget_s": 3.0}
ACCEL_CLUSTER_SWEEP = {"sizes": [1 << 20, 1 << 26, 1 << 30], "iters": 20, "warmup": 2, "size_budget_s": 10.0}
PAIR_SWEEP_CPU = {"sizes": [1 << 22], "iters": 5, "warmup": 1, "size_budget_s": 3.0}
PAIR_SWEEP_ACCEL = {"sizes": [1 << 28], "iters": 10, "warmup": 2, "size_budget_s": 10.0}
DEFAULT_DEADLINE = 120.0


# A pair this far below the best pair is slow even when it clears the floor: one bad link among good ones.
SLOW_PAIR_FRACTION = 0.5


class NodeChecks:
    """What a node's rank 0 printed of the fleet's collective (``checks``), read the same way by both engines."""

    checks: list[dict[str, Any]]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.get("status") == "pass" for c in self.checks)

    @property
    def busbw(self) -> float | None:
        for check in self.checks:
            value = (check.get("metrics") or {}).get("busbw_gbps")
            if value is not None:
                return float(value)
        return None


def new_tag() -> str:
    return f"accelstack-run-{secrets.token_hex(6)}"


def cluster_sweep(config: dict[str, Any], pair: bool = False) -> dict[str, Any]:
    cpu = not get_vendor(config.get("vendor") or "cpu").has_devices
    if pair:
        sweep = dict(PAIR_SWEEP_CPU if cpu else PAIR_SWEEP_ACCEL)
    else:
        sweep = dict(CPU_CLUSTER_SWEEP if cpu else ACCEL_CLUSTER_SWEEP)
        for key in ("sizes", "iters", "warmup", "size_budget_s"):
            if config.get(f"cluster_{key}") is not None:
                sweep[key] = config[f"cluster_{key}"]
    return sweep
