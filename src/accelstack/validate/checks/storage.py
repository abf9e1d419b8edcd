"""Declares ``hostside/validators/storage.py``: the checkpoint folder's filesystem, room and throughput."""

from . import Check

CHECKS = (
    Check(("storage",), "standard", script="storage.py", python="system", timeout=180,
          help="checkpoint folder throughput and space against the collective timeout",
          config=("checkpoint_dir", "checkpoint_fs", "checkpoint_size_gb", "collective_timeout_s",
                  "storage_probe_mb"),
          confirms=("collective-timeout", "checkpoint-save-timeout", "disk-full", "io-error",
                    "read-only-filesystem")),
)
