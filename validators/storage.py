#!/usr/bin/env python3
# accelstack-validator: check=storage tier=standard python=system timeout=180
"""Storage: the checkpoint folder is writable, has room, and writes fast enough.

A rank-0 checkpoint save that outlasts the collective timeout is a known cause of `_ALLGATHER_BASE` watchdog
timeouts on the other ranks, so the estimated save time of the configured checkpoint size is compared with
the collective timeout.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for

CHECK = "storage"
result = results_for(CHECK)


def write_probe(folder, megabytes):
    """MB/s for a written-and-fsynced file; fsync so the page cache does not flatter the disk."""
    path = os.path.join(folder, ".accelstack-storage-probe-%d" % os.getpid())
    block = os.urandom(1 << 20)
    started = time.perf_counter()
    try:
        with open(path, "wb") as handle:
            for _ in range(megabytes):
                handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
        seconds = time.perf_counter() - started
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    return megabytes / seconds if seconds > 0 else float("inf"), seconds


def main(config):
    folder = config.get("checkpoint_dir")
    if not folder:
        return [result("skip", "no checkpoint_dir set for this host",
                       remedy="set checkpoint_dir in the inventory to check its space and throughput")]
    size_gb = float(config.get("checkpoint_size_gb") or 0)
    timeout_s = float(config.get("collective_timeout_s") or 600)
    probe_mb = int(config.get("storage_probe_mb") or 256)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        return [result("fail", "cannot create %s: %s" % (folder, exc.strerror), evidence={"folder": folder},
                       remedy="create it on the checkpoint filesystem with write access for the training user")]
    stat = os.statvfs(folder)
    free = stat.f_bavail * stat.f_frsize
    metrics = {"free_bytes": free, "total_bytes": stat.f_blocks * stat.f_frsize}
    evidence = {"folder": folder, "checkpoint_size_gb": size_gb, "collective_timeout_s": timeout_s}
    probe_mb = max(1, min(probe_mb, int(free / 4 / (1 << 20)) or 1))
    try:
        mbps, seconds = write_probe(folder, probe_mb)
    except OSError as exc:
        return [result("fail", "writing %d MB to %s failed: %s" % (probe_mb, folder, exc.strerror or exc),
                       metrics, evidence, "free space on the checkpoint filesystem (or fix its mount) before "
                       "training: a save that fails mid-run loses the job")]
    metrics.update(write_mbps=round(mbps, 1), probe_mb=probe_mb, probe_s=round(seconds, 3))
    if size_gb and free < size_gb * 1e9:
        return [result("fail", "%s has %.1f GB free, less than one %.1f GB checkpoint" % (
            folder, free / 1e9, size_gb), metrics, evidence, "free space or point checkpoint_dir elsewhere")]
    if size_gb:
        save_s = size_gb * 1e9 / (mbps * 1e6)
        metrics["estimated_save_s"] = round(save_s, 1)
        if save_s > timeout_s:
            return [result("warn", "a %.1f GB checkpoint takes about %.0f s at %.0f MB/s, longer than the %.0f s "
                           "collective timeout: ranks waiting in a collective hit the watchdog "
                           "(_ALLGATHER_BASE timeouts)" % (size_gb, save_s, mbps, timeout_s), metrics, evidence,
                           "save asynchronously or from every rank (sharded), raise the process group timeout "
                           "above the save time, or use faster storage")]
        if free < 2 * size_gb * 1e9:
            return [result("warn", "%s has room for only one %.1f GB checkpoint (%.1f GB free)" % (
                folder, size_gb, free / 1e9), metrics, evidence, "keep room for at least two checkpoints")]
    return [result("pass", "%s writable at %.0f MB/s, %.1f GB free" % (folder, mbps, free / 1e9), metrics,
                   evidence)]


if __name__ == "__main__":
    main_entry("storage", main)
