#!/usr/bin/env python3
# accelstack-validator: check=memory tier=standard python=system timeout=60
"""Memory: /dev/shm (DataLoader workers and NCCL/HCCL shared buffers live there), the memlock limit (RDMA
registers memory: "ibv_reg_mr ... Cannot allocate memory"), and device memory held by processes that are not
ours. The vendor tool's output is judged on the control side with the facts parsers."""
from __future__ import annotations

import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for, run_tool

GIB = 1 << 30
result = results_for("memory")


def main(config):
    vendor = config.get("vendor", "cpu")
    checks = []
    min_shm = float(config.get("min_shm_gb") or 1.0)
    try:
        stat = os.statvfs("/dev/shm")
        shm = stat.f_blocks * stat.f_frsize
    except OSError:
        shm = 0
    metrics = {"shm_bytes": shm}
    if shm < min_shm * GIB:
        checks.append(result("fail" if shm < 256 * (1 << 20) else "warn",
                             "/dev/shm is %.2f GiB (< %.1f GiB): DataLoader workers die with 'bus error' and "
                             "shared-memory transports fall back or fail" % (shm / GIB, min_shm), metrics,
                             {"path": "/dev/shm"}, "enlarge it (mount -o remount,size=... /dev/shm; in "
                             "containers --shm-size or --ipc=host)", check="memory.shm"))
    else:
        checks.append(result("pass", "/dev/shm %.1f GiB" % (shm / GIB), metrics, check="memory.shm"))
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    unlimited = soft == resource.RLIM_INFINITY
    lock_metrics = {"memlock_bytes": None if unlimited else soft}
    if unlimited:
        checks.append(result("pass", "memlock unlimited", lock_metrics, check="memory.memlock"))
    elif vendor == "cpu":
        checks.append(result("pass", "memlock %d KiB (no RDMA on the cpu stack)" % (soft // 1024), lock_metrics,
                             check="memory.memlock"))
    else:
        checks.append(result("warn", "memlock is %d KiB: RDMA memory registration fails ('ibv_reg_mr ... Cannot "
                             "allocate memory', 'ibv_create_qp failed')" % (soft // 1024), lock_metrics,
                             remedy="set memlock unlimited in /etc/security/limits.d and the service or container "
                             "that starts training (ulimit -l unlimited)", check="memory.memlock"))
    evidence = {}
    if vendor == "nvidia":
        evidence["command"] = "nvidia-smi --query-gpu=... ; nvidia-smi --query-compute-apps=..."
        evidence["tool_exit"], evidence["tool_output"] = run_tool(
            ["nvidia-smi", "--query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,"
             "temperature.gpu,utilization.gpu", "--format=csv,noheader,nounits"])
        evidence["apps_exit"], evidence["apps_output"] = run_tool(
            ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv,noheader,"
             "nounits"])
    elif vendor == "ascend":
        evidence["command"] = "npu-smi info"
        evidence["tool_exit"], evidence["tool_output"] = run_tool(["npu-smi", "info"])
    if evidence:
        # Judged on the control side (accelstack.validate.refine); provisional until then.
        checks.append(result("pass", "device memory: see control-side judgement", {}, evidence,
                             check="memory.devices"))
    return checks


if __name__ == "__main__":
    main_entry("memory", main)
