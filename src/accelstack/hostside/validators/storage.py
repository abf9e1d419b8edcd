#!/usr/bin/env python3
# Declared in accelstack/validate/checks/storage.py (tier, python, timeout, config keys, judge, help).
"""Storage: the checkpoint folder exists, lies on the filesystem the inventory names, has room, and writes fast
enough.

A rank-0 checkpoint save that outlasts the collective timeout is a known cause of `_ALLGATHER_BASE` watchdog
timeouts on the other ranks, so the estimated save time of the configured checkpoint size is compared with
the collective timeout.

Nothing is created: a checkpoint folder that is missing usually means the shared filesystem is not mounted, and
creating it would measure the root disk instead (and leave training writing there). The folder's filesystem is
the mount with the longest mount point that is a prefix of its real path, from ``/proc/self/mountinfo`` (or
``/proc/mounts``); ``checkpoint_fs`` (``lustre``, ``nfs``, ``gpfs``, ...) says which type it must be. The
throughput probe writes one temporary file inside the existing folder and removes it.

``ACCELSTACK_SIM_ROOT`` (unset on real hosts) prefixes the mount table's path, as in network.py, so the unit
tests give it a mount table of their own. Stdlib only, Python 3.6 syntax.
"""

import errno
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for

CHECK = "storage"
MOUNT_TABLES = ("/proc/self/mountinfo", "/proc/mounts")
result = results_for(CHECK)


def rooted(path):
    root = os.environ.get("ACCELSTACK_SIM_ROOT", "").rstrip("/")
    return root + path if root else path


def unescape(field):
    """Mount tables write space, tab, newline and backslash as octal escapes (``\\040``)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit() and len(field[i + 1:i + 4]) == 3:
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text):
    """``/proc/self/mountinfo`` -> [{"mount_point", "fstype", "source"}] in table order; bad lines skipped."""
    mounts = []
    for line in (text or "").splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 7:
            continue
        head, _, tail = line.partition(" - ")
        head, tail = head.split(), tail.split()
        if len(head) < 5 or len(tail) < 2:
            continue
        mounts.append({"mount_point": unescape(head[4]), "fstype": tail[0], "source": unescape(tail[1])})
    return mounts


def parse_proc_mounts(text):
    """``/proc/mounts`` (``source mount_point fstype options 0 0``) -> the same shape as parse_mountinfo."""
    mounts = []
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) >= 3:
            mounts.append({"mount_point": unescape(fields[1]), "fstype": fields[2], "source": unescape(fields[0])})
    return mounts


def mount_for(path, mounts):
    """The mount holding ``path`` (absolute, symlinks resolved): the longest mount point that is a prefix of it;
    of equal ones the last listed (a later mount covers an earlier one at the same point). None if none."""
    best = None
    for mount in mounts:
        point = mount["mount_point"].rstrip("/") or "/"
        inside = path == point or point == "/" or path.startswith(point + "/")
        if inside and (best is None or len(point) >= len(best["mount_point"].rstrip("/") or "/")):
            best = mount
    return best


def fs_matches(fstype, wanted):
    """``nfs`` takes nfs4, ``weka`` takes fuse.weka: the family the inventory names, any version of it."""
    fstype, wanted = fstype.lower(), wanted.lower()
    if fstype.startswith("fuse."):
        fstype = fstype[len("fuse."):]
    return fstype == wanted or (fstype.startswith(wanted) and fstype[len(wanted):].isdigit())


def read_mounts():
    """(mounts, the table read) or (None, what was tried) when no mount table can be read."""
    for path in MOUNT_TABLES:
        try:
            with open(rooted(path)) as handle:
                text = handle.read()
        except OSError:
            continue
        mounts = parse_mountinfo(text) if path.endswith("mountinfo") else parse_proc_mounts(text)
        if mounts:
            return mounts, rooted(path)
    return None, ", ".join(rooted(p) for p in MOUNT_TABLES)


def describe(mount):
    return "%s (%s from %s)" % (mount["mount_point"], mount["fstype"], mount["source"])


def nearest_existing(path):
    while path and path != "/" and not os.path.exists(path):
        path = os.path.dirname(path)
    return path or "/"


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
                       remedy="set checkpoint_dir (and checkpoint_fs) in the inventory to check its space and "
                              "throughput")]
    folder = str(folder)
    size_gb = float(config.get("checkpoint_size_gb") or 0)
    timeout_s = float(config.get("collective_timeout_s") or 600)
    probe_mb = int(config.get("storage_probe_mb") or 256)
    wanted = config.get("checkpoint_fs")
    wanted = [str(w) for w in (wanted if isinstance(wanted, list) else [wanted]) if w]
    evidence = {"folder": folder, "checkpoint_fs": wanted or None, "checkpoint_size_gb": size_gb,
                "collective_timeout_s": timeout_s}
    mounts, table = read_mounts()
    evidence["mount_table"] = table
    if not os.path.isdir(folder):
        ancestor = nearest_existing(os.path.realpath(folder) if os.path.isabs(folder) else folder)
        found = mount_for(os.path.realpath(ancestor), mounts) if mounts else None
        evidence["nearest_existing"] = ancestor
        evidence["mount"] = found
        what = "is not a folder" if os.path.exists(folder) else "does not exist"
        where = (": %s would be on %s" % (ancestor, describe(found))) if found else ""
        return [result("fail", "checkpoint_dir %s %s%s" % (folder, what, where), {}, evidence,
                       "mount the checkpoint filesystem%s and create %s on it with write access for the training "
                       "user (accelstack never creates it: a missing folder usually means the shared filesystem is "
                       "not mounted)" % (" (%s)" % " or ".join(wanted) if wanted else "", folder))]
    real = os.path.realpath(folder)
    found = mount_for(real, mounts) if mounts else None
    evidence["mount"] = found
    if wanted:
        if found is None:
            return [result("error", "cannot tell which filesystem holds %s: no mount table could be read (%s)"
                           % (folder, table), {}, evidence,
                           "check that /proc is mounted on the host, then re-run the storage check")]
        if not any(fs_matches(found["fstype"], w) for w in wanted):
            return [result("fail", "checkpoint_dir %s is on %s, not %s: the checkpoint filesystem is not mounted "
                           "there" % (folder, describe(found), " or ".join(wanted)), {}, evidence,
                           "mount the %s filesystem that should hold %s (check /etc/fstab, autofs and the "
                           "network to its servers), or set checkpoint_fs to the filesystem this host really uses"
                           % (" or ".join(wanted), folder))]
    try:
        stat = os.statvfs(folder)
    except OSError as exc:
        return [result("error", "cannot stat the filesystem of %s: %s" % (folder, exc.strerror or exc), {},
                       evidence, "check the mount (a hung or stale network mount answers with errors): "
                                 "stat -f %s" % folder)]
    free = stat.f_bavail * stat.f_frsize
    metrics = {"free_bytes": free, "total_bytes": stat.f_blocks * stat.f_frsize}
    if found is not None:
        metrics["fstype"] = found["fstype"]
    if not os.access(folder, os.W_OK):
        return [result("fail", "%s is not writable by %s" % (folder, config.get("user") or "the validator's user"),
                       metrics, evidence, "give the training user write access to %s" % folder)]
    probe_mb = max(1, min(probe_mb, int(free / 4 / (1 << 20)) or 1))
    try:
        mbps, seconds = write_probe(folder, probe_mb)
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        return [result("fail", "writing %d MB to %s failed: %s" % (probe_mb, folder, exc.strerror or exc),
                       metrics, evidence, ("free space on the checkpoint filesystem" if full else
                                           "fix the checkpoint filesystem's mount (read-only, I/O errors?)")
                       + " before training: a save that fails mid-run loses the job")]
    metrics.update(write_mbps=round(mbps, 1), probe_mb=probe_mb, probe_s=round(seconds, 3))
    on = (" on %s" % found["fstype"]) if found is not None else ""
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
    return [result("pass", "%s%s writable at %.0f MB/s, %.1f GB free" % (folder, on, mbps, free / 1e9), metrics,
                   evidence)]


if __name__ == "__main__":
    main_entry("storage", main)
