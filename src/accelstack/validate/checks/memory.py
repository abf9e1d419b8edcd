"""Declares ``hostside/validators/memory.py``: /dev/shm, memlock, device memory held by others."""

from ..judge import judge_memory
from . import Check

CHECKS = (
    Check(("memory",), "standard", script="memory.py", python="system", timeout=60,
          help="device headroom, foreign processes, /dev/shm, memlock",
          config=("host", "inventory", "vendor", "min_shm_gb"), judge=judge_memory,
          confirms=("out-of-memory", "rdma", "shm-too-small")),
)
