"""The cpu vendor: no accelerator. torch's gloo backend on the CPU, what the lab, the tests and the embedded default
inventory (``inventories/local.yml``) run."""

from __future__ import annotations

from typing import Any

from .. import Vendor

# A CPU host measures small messages quickly: the sweep stays far below what an accelerator is judged at.
CPU_SWEEPS: dict[str, dict[str, Any]] = {
    "quick": {"sizes": [1 << 20], "iters": 5},
    "standard": {"sizes": [1 << 16, 1 << 20, 1 << 24], "iters": 20},
    "full": {"sizes": [1 << 16, 1 << 20, 1 << 24, 1 << 27, 1 << 30], "iters": 50},
}


class CpuVendor(Vendor):
    name = "cpu"
    label = "CPU"
    order = 90
    backend = "gloo"
    torch_build = "a CPU build"
    socket_ifname_env = "GLOO_SOCKET_IFNAME"
    has_devices = False

    def sweep(self, tier: str) -> dict[str, Any]:
        return dict(CPU_SWEEPS[tier])

    def host_defaults(self) -> dict[str, Any]:
        # Two gloo ranks on the CPU: a collective needs two; the lab's hosts have a small /dev/shm.
        return {"storage_probe_mb": 32, "min_shm_gb": 1, "nproc": 2, "accelerator": "cpu"}


VENDOR = CpuVendor()
