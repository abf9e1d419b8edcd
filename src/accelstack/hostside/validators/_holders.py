#!/usr/bin/env python3
"""Who holds the devices: read before a check that needs a device context creates one, so a device that another
process is using (a training job beside the check) is left alone: ``skip`` naming the holder, never ``fail``, never a
drain. Not a validator (no declaration names it); the checks that open a device (``torch_devices``,
``collective_init``, the sweeps, ``perf``) call :func:`held` before they touch one and :func:`held_after` on an
error.

A device is held when the vendor tool lists a process on it that is not this check's own, when it runs in an
exclusive compute mode with a process on it, or when most of its memory is in use while no process is listed (a job
in another container: ``nvidia-smi`` lists only the processes of its own PID namespace). After the fact, an error
that says so is the same finding: CUDA's "busy or unavailable" (exclusive mode, NVIDIA's cudaErrorDevicesUnavailable),
the NPU's ``dcmi ... ret is -8005/-8020`` ("the device is used"), or out of memory while another process holds
the memory (the H200 capture: ``CUDA error: out of memory`` at ``set_device`` with 385 MB free).

The read is the vendor's (its host-side module's ``read_devices``), the one every check of this interpreter shares
(``nvidia-smi -q -x``, ``npu-smi info``, :func:`_common.read_tool`); a tier's checks run in one interpreter, and the
first read comes before any context of ours exists. Stdlib only, Python 3.6 syntax.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import vendor_module

EXCLUSIVE = ("exclusive_process", "exclusive_thread")
# Memory in use with no process listed, past this share of a device: someone else's job in another container.
UNLISTED_FRACTION = 0.5
# An out of memory on a device that had more than this share in use before the check began is someone else's doing
# (an idle 910B shows about 5 % of its HBM in use by the driver, an idle H100 a few MiB).
TAKEN_FRACTION = 0.1
# What says a device is someone else's: the vendor's own texts (its module's BUSY_ERRORS: CUDA's "busy or
# unavailable", dcmi's -8005/-8020), and out of memory in torch's words or the vendor's (OOM_ERRORS).
OOM = r"out of memory|OutOfMemoryError"
SHOWN = 4


def _patterns(vendor):
    module = vendor_module(vendor)
    busy = getattr(module, "BUSY_ERRORS", None)
    oom = "|".join(p for p in (OOM, getattr(module, "OOM_ERRORS", None)) if p)
    return (re.compile(busy, re.IGNORECASE) if busy else None), re.compile(oom, re.IGNORECASE)


def read_devices(vendor):
    """(devices, error): one dict per device, ``{device, index, uuid, compute_mode, memory_used_mib,
    memory_total_mib, processes: [{pid, name, memory_mib}]}``, from the interpreter's one read of the vendor tool
    (its host-side module's ``read_devices``); ``error`` says why the tool could not tell (devices is then None).
    No vendor tool on the cpu stack: ([], None)."""
    return vendor_module(vendor).read_devices()


def _last(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def visible_indices(vendor, count, environ=None):
    """The vendor's device indices behind torch's devices 0..count-1. Its visible-devices variable
    (``CUDA_VISIBLE_DEVICES``, ``ASCEND_RT_VISIBLE_DEVICES``: the module's ``VISIBLE_DEVICES``, the first one set)
    renumbers them (entries are indices, or GPU UUIDs for CUDA, kept as strings); without one torch's device i is
    the tool's device i."""
    env = os.environ if environ is None else environ
    value = next((env.get(name) for name in vendor_module(vendor).VISIBLE_DEVICES
                  if env.get(name) is not None and env.get(name).strip()), None)
    if value is None:
        return list(range(count))
    entries = [item.strip() for item in value.split(",") if item.strip()]
    out = []
    for item in entries[:count]:
        out.append(int(item) if item.isdigit() else item)
    return out


def _select(devices, wanted):
    if wanted is None:
        return list(devices)
    chosen = []
    for key in wanted:
        for device in devices:
            if device["index"] == key or (isinstance(key, str) and device.get("uuid")
                                          and device["uuid"].upper().startswith(key.upper())):
                chosen.append(device)
    return chosen


def _mib(value):
    return "%s MiB" % value if value is not None else "memory unknown"


def _foreign(device, own):
    return [p for p in device["processes"] if p.get("pid") not in own]


def describe(device, own):
    """Why one device is held, or None: its foreign processes, an exclusive mode, or memory used by no listed
    process."""
    foreign = _foreign(device, own)
    mode = (device.get("compute_mode") or "").lower()
    if foreign:
        procs = ", ".join("pid %s %s (%s)" % (p["pid"], p.get("name") or "?", _mib(p.get("memory_mib")))
                          for p in foreign[:SHOWN])
        more = " and %d more" % (len(foreign) - SHOWN) if len(foreign) > SHOWN else ""
        return "%s is in use by %s%s%s" % (device["device"], procs, more,
                                           " in compute mode %s" % device["compute_mode"] if mode in EXCLUSIVE
                                           else "")
    used, total = device.get("memory_used_mib"), device.get("memory_total_mib")
    if used is not None and total and used > UNLISTED_FRACTION * total:
        return ("%s has %s of %s MiB in use by no process listed here (a job in another container or PID "
                "namespace)" % (device["device"], used, total))
    return None


def holders(devices, own):
    return [dict(p, device=d["device"]) for d in devices for p in _foreign(d, own)]


def held(vendor, wanted=None, own=None, devices=None):
    """Why the devices a check is about to open are someone else's now, or None when they are free (or the tool
    cannot tell: the ``devices`` and ``health`` checks report a tool that fails). ``wanted``: the vendor indices (or
    UUIDs) it will open (:func:`visible_indices`), None for all. Returns ``{"summary", "holders", "devices"}``."""
    if devices is None:
        devices, _error = read_devices(vendor)
    if not devices:
        return None
    own = set(own or ()) | {os.getpid()}
    chosen = _select(devices, wanted)
    reasons = [why for why in (describe(d, own) for d in chosen) if why]
    if not reasons:
        return None
    return {"summary": "; ".join(reasons[:SHOWN]) + (" (+%d more)" % (len(reasons) - SHOWN)
                                                     if len(reasons) > SHOWN else ""),
            "holders": holders(chosen, own), "devices": [d["device"] for d in chosen if describe(d, own)]}


def held_after(vendor, error_text, wanted=None, own=None, devices=None):
    """After an error opening or using a device: the same finding when the error says the device is someone
    else's, else None. "Busy or unavailable" (an exclusive device with a holder) is always that; out of memory is
    that only while another process holds memory on those devices (listed, or the memory used before we
    started), so an out of memory on a free device stays the failure it is."""
    text = error_text or ""
    busy_re, oom_re = _patterns(vendor)
    busy = busy_re.search(text) if busy_re else None
    oom = oom_re.search(text)
    if not (busy or oom):
        return None
    if devices is None:
        devices, _error = read_devices(vendor)
    own = set(own or ()) | {os.getpid()}
    chosen = _select(devices or [], wanted)
    found = held(vendor, wanted, own, devices) if devices else None
    if found is None and oom:
        # Someone's memory the first read already showed, below the share that makes a device held outright.
        taken = [d for d in chosen if d.get("memory_used_mib") and d.get("memory_total_mib")
                 and d["memory_used_mib"] > TAKEN_FRACTION * d["memory_total_mib"]]
        if not taken:
            return None
        found = {"summary": "; ".join("%s had %s of %s MiB in use before this check started"
                                      % (d["device"], d["memory_used_mib"], d["memory_total_mib"]) for d in taken),
                 "holders": holders(chosen, own), "devices": [d["device"] for d in taken]}
    if found is None:
        # Busy or unavailable with nothing listed: the driver itself says another process holds the device.
        found = {"summary": "the driver says the device is busy or unavailable (an exclusive compute mode with a "
                            "holder this namespace does not list)", "holders": [], "devices": []}
    found["error"] = next((line.strip() for line in text.splitlines()
                           if (busy_re and busy_re.search(line)) or oom_re.search(line)), _last(text))[:300]
    return found


def skip_summary(what, found):
    """The summary of a check that left held devices alone."""
    return "%s: %s skipped: a device another process holds is not touched" % (found["summary"], what)


def skip_evidence(found):
    evidence = {"held_by": found["holders"], "held_devices": found["devices"]}
    if found.get("error"):
        evidence["device_error"] = found["error"]
    return evidence
