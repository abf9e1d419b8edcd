#!/usr/bin/env python3
# Declared in accelstack/validate/checks/memory.py (tier, python, timeout, config keys, judge, help).
"""Memory: /dev/shm (DataLoader workers and NCCL/HCCL shared buffers live there), the memlock limit (RDMA
registers memory: "ibv_reg_mr ... Cannot allocate memory"), and device memory held by processes that are not
ours. The vendor tool's output (its host-side module's ``memory_evidence``) is judged on the control side with the
vendor's parsers; a vendor tool that is missing or fails makes ``memory.devices`` an ``error`` here already (nothing
was measured).

``ACCELSTACK_SIM_ROOT`` (unset on real hosts) prefixes ``/dev/shm``, as in network.py, for the unit tests.
Stdlib only, Python 3.6 syntax.
"""

import errno
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for, vendor_module

GIB = 1 << 30
result = results_for("memory")
SHM = "/dev/shm"


def main(config):
    vendor = vendor_module(config.get("vendor", "cpu"))
    checks = []
    min_shm = float(config.get("min_shm_gb") or 1.0)
    shm_path = os.environ.get("ACCELSTACK_SIM_ROOT", "").rstrip("/") + SHM
    try:
        stat = os.statvfs(shm_path)
        shm = stat.f_blocks * stat.f_frsize
    except OSError as exc:
        shm = 0
        if exc.errno != errno.ENOENT:  # there is a /dev/shm, it could not be measured
            checks.append(result("error", "cannot stat %s: %s" % (SHM, exc.strerror or exc), {}, {"path": shm_path},
                                 "check the /dev/shm mount (stat -f /dev/shm)", check="memory.shm"))
    metrics = {"shm_bytes": shm}
    if checks:  # the error above: nothing measured to judge
        metrics = {}
    elif shm == 0:
        checks.append(result("fail", "there is no %s: DataLoader workers and shared-memory transports need it" % SHM,
                             metrics, {"path": shm_path}, "mount a tmpfs at /dev/shm (in containers --shm-size or "
                             "--ipc=host)", check="memory.shm"))
    elif shm < min_shm * GIB:
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
    elif not vendor.HAS_DEVICES:
        checks.append(result("pass", "memlock %d KiB (no RDMA on the %s stack)" % (soft // 1024, vendor.NAME),
                             lock_metrics, check="memory.memlock"))
    else:
        checks.append(result("warn", "memlock is %d KiB: RDMA memory registration fails ('ibv_reg_mr ... Cannot "
                             "allocate memory', 'ibv_create_qp failed')" % (soft // 1024), lock_metrics,
                             remedy="set memlock unlimited in /etc/security/limits.d and the service or container "
                             "that starts training (ulimit -l unlimited)", check="memory.memlock"))
    # The vendor's tool reads (its host-side module's memory_evidence), judged on the control side
    # (accelstack.validate.judge.judge_memory, Vendor.device_memory); a read that failed measured nothing.
    evidence, failed = vendor.memory_evidence()
    if failed:
        checks.append(result("error", failed, {}, evidence, "install or repair the driver so that %s answers "
                             "(inv provision %s--limit %s); a hung tool points at a wedged device"
                             % (vendor.TOOL, "--inventory %s " % config["inventory"] if config.get("inventory") else "",
                                config.get("host") or "<host>"), check="memory.devices"))
    elif evidence:
        # Judged on the control side (accelstack.validate.judge.judge_memory); provisional until then.
        checks.append(result("pass", "device memory: see control-side judgement", {}, evidence,
                             check="memory.devices"))
    return checks


if __name__ == "__main__":
    main_entry("memory", main)
