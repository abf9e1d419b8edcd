#!/usr/bin/env python3
"""NVIDIA's host-side half: ``nvidia-smi``'s reads, their parsers and the health judgement, imported by the validators
by the config's vendor (``_common.vendor_module``) and uploaded beside them as ``vendor_nvidia.py``.

Health, from one ``nvidia-smi -q -x``: uncorrectable ECC errors (volatile and aggregate), remapped rows (pending,
failure, banks without spare rows), retired pages, clock-event (throttle) reasons active while idle, temperature
against the GPU's own slowdown limit, persistence mode; NVLink state from ``nvidia-smi nvlink -s`` where the SKU
has NVLink; Xid lines in the kernel log with the severity of DCGM's classification (NVIDIA's Xid catalog,
https://docs.nvidia.com/deploy/xid-errors/). The interface every vendor's module has is written in
``vendors/cpu/hostside.py``. Stdlib only, Python 3.6 syntax.
"""

import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this module when uploaded
from _common import (
    HEALTH_REMEDY,
    NA,
    absolute_temperature,
    find_tool,
    judged,
    kernel_log,
    log_seconds,
    number,
    pick_row,
    read_tool,
    read_uptime,
    record,
    run_tool,
    span,
    tool_failure,
)

NAME = "nvidia"
HAS_DEVICES = True
TORCH_DEVICE = "cuda"
TORCH_PLUGIN = None
TORCH_BUILD = "a CUDA build"
TOOL = "nvidia-smi"
VISIBLE_DEVICES = ("CUDA_VISIBLE_DEVICES",)
# PCI vendor:class prefixes of its accelerators: 3D controllers (data-center GPUs) and VGA controllers.
PCI_ACCELERATORS = (("0x10de", "0x0302"), ("0x10de", "0x0300"))
VISIBLE_UUIDS = ("GPU-", "MIG-")  # GPU and MIG UUIDs, as nvidia-smi -L prints them
VISIBLE_ASCENDING = False
DEVICE_IPS = False
# cudaErrorDevicesUnavailable's text ("CUDA-capable device(s) is/are busy or unavailable": an exclusive compute mode
# with a holder), and CUDA's own out-of-memory errors: _holders.py reads a device as someone else's by them.
BUSY_ERRORS = r"busy or unavailable|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE"
OOM_ERRORS = r"cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY"
# Its health limits' defaults (the shipped ones travel in the config's device_health: vendors/nvidia/floors.yml).
LIMITS = {"busy_utilization_pct": 5, "max_retired_pages": 60, "xid_window_s": 24 * 3600}
# Only Xids this recent are judged (``xid_window_s``; an inventory sets it with ``health_xid_window_s``). The
# sources give no window; this one is the interval of the slowest regular run (the nightly fleet-check,
# README.md), so every Xid is judged by at least one run, and a fault the device still carries afterwards
# is what ecc, remapped_rows and the reset-required flags measure. Xids older than that, or older than the last
# driver (re)load, are history: kept in the evidence, not judged.
XID_WINDOW_S = LIMITS["xid_window_s"]
# Xid severity as NVIDIA's Xid catalog buckets it:
# https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
FATAL_XIDS = {48: "double-bit ECC", 74: "NVLink", 79: "fallen off the bus", 94: "contained ECC",
              95: "uncontained ECC", 119: "GSP RPC timeout", 120: "GSP error", 140: "unrecovered ECC"}
WARN_XIDS = {31: "memory page fault", 32: "memory (bad push buffer)", 43: "GPU stopped processing "
             "(usually an application fault)", 63: "memory (row remap / page retirement event)",
             64: "memory (row remap / page retirement failure)", 38: "PCIe", 39: "PCIe", 42: "PCIe",
             60: "thermal", 61: "thermal", 62: "thermal", 54: "power", 56: "power", 57: "power",
             13: "graphics engine exception (usually an application fault)"}
# Clock-event reasons (``clocks_event_reason_*``; ``clocks_throttle_reason_*`` before driver 535).
FAIL_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
IDLE_WARN_REASONS = ("sw_power_cap",)
XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+)")
# dmesg's ``[  1234.567890]`` and journalctl -o short-monotonic's: seconds since boot.
# The driver's banner as its module loads (at boot, and again after a reload that a repair takes).
DRIVER_LOAD = re.compile(r"NVRM: loading NVIDIA UNIX")
OFF_BUS = re.compile(r"fallen off the bus", re.IGNORECASE)


# ----- pure parsers -----

def _text(node, path):
    value = node.findtext(path)
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in NA else value


def _yes(value):
    return None if value is None else value.strip().lower() in ("yes", "active", "true", "enabled")


def parse_smi_xml(text):
    """``nvidia-smi -q -x`` -> one dict per GPU with what this check judges. ValueError on text that is not an
    ``nvidia_smi_log`` document. Absent or ``N/A`` fields are ``None``: older branches and other SKUs omit some."""
    try:
        root = ET.fromstring(text or "")
    except ET.ParseError as exc:
        raise ValueError("nvidia-smi -q -x is not well-formed XML: %s" % exc) from None
    if root.tag != "nvidia_smi_log":
        raise ValueError("nvidia-smi -q -x: root <%s>, expected <nvidia_smi_log>" % root.tag)
    gpus = []
    for position, gpu in enumerate(root.findall("gpu")):
        minor = number(_text(gpu, "minor_number"))
        ecc = {}
        for scope in ("volatile", "aggregate"):
            node = gpu.find("ecc_errors/" + scope)
            unc = None
            corr = None
            if node is not None:
                for child in node:
                    value = number(_text(node, child.tag))
                    if value is None:
                        continue
                    if "uncorrectable" in child.tag:
                        unc = (unc or 0) + value
                    elif "correctable" in child.tag:
                        corr = (corr or 0) + value
            ecc[scope] = {"uncorrectable": unc, "correctable": corr}
        ecc["sram_threshold_exceeded"] = _yes(_text(gpu, "ecc_errors/aggregate/sram_threshold_exceeded"))
        ecc["unrepairable_memory"] = _yes(_text(gpu, "ecc_errors/unrepairable_memory"))
        remap_node = gpu.find("remapped_rows")
        remapped = None
        if remap_node is not None and len(remap_node):
            remapped = {"pending": _yes(_text(remap_node, "remapped_row_pending")),
                        "failure": _yes(_text(remap_node, "remapped_row_failure")),
                        "correctable": number(_text(remap_node, "remapped_row_corr")),
                        "uncorrectable": number(_text(remap_node, "remapped_row_unc")),
                        "banks_none": number(_text(remap_node, "row_remapper_histogram/row_remapper_histogram_none")),
                        "banks_low": number(_text(remap_node, "row_remapper_histogram/row_remapper_histogram_low"))}
        retired = {"single_bit": number(_text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")),
                   "double_bit": number(_text(gpu, "retired_pages/double_bit_retirement/retired_count")),
                   "pending": _yes(_text(gpu, "retired_pages/pending_retirement"))}
        reasons = {}
        for parent in ("clocks_event_reasons", "clocks_throttle_reasons"):
            node = gpu.find(parent)
            if node is None:
                continue
            for child in node:
                name = child.tag.split("_reason_", 1)[-1]
                value = _text(node, child.tag)
                if value is not None and "_reason_" in child.tag:
                    reasons[name] = value.lower() == "active"
        temp = {"gpu_c": number(_text(gpu, "temperature/gpu_temp")),
                "tlimit_headroom_c": number(_text(gpu, "temperature/gpu_temp_tlimit")),
                "slow_tlimit_c": number(_text(gpu, "temperature/gpu_temp_slow_tlimit_threshold")),
                "shutdown_tlimit_c": number(_text(gpu, "temperature/gpu_temp_max_tlimit_threshold")),
                "slow_c": number(_text(gpu, "temperature/gpu_temp_slow_threshold")),
                "shutdown_c": number(_text(gpu, "temperature/gpu_temp_max_threshold"))}
        processes = []
        for proc in gpu.findall("processes/process_info"):
            pid = number(_text(proc, "pid"))
            if pid is not None:
                processes.append({"pid": pid, "name": _text(proc, "process_name") or "?",
                                  "type": _text(proc, "type"), "memory_mib": number(_text(proc, "used_memory"))})
        gpus.append({
            "index": minor if minor is not None else position,
            "bus_id": gpu.get("id"),
            "uuid": _text(gpu, "uuid"),
            "name": _text(gpu, "product_name"),
            "compute_mode": _text(gpu, "compute_mode"),
            "memory_total_mib": number(_text(gpu, "fb_memory_usage/total")),
            "memory_used_mib": number(_text(gpu, "fb_memory_usage/used")),
            "processes": processes,
            "persistence": _text(gpu, "persistence_mode"),
            "ecc_mode": _text(gpu, "ecc_mode/current_ecc"),
            "reset_required": _yes(_text(gpu, "gpu_reset_status/reset_required")),
            "drain_and_reset": _yes(_text(gpu, "gpu_reset_status/drain_and_reset_recommended")),
            "ecc": ecc, "remapped": remapped, "retired": retired, "reasons": reasons, "temperature": temp,
            "utilization_pct": number(_text(gpu, "utilization/gpu_util")),
            "pcie": {"max_gen": number(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
                     "current_gen": number(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
                     "device_max_gen": number(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen")),
                     "max_width": number(_text(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width")),
                     "current_width": number(_text(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width"))},
        })
    return gpus


def parse_nvlink_status(text):
    """``nvidia-smi nvlink -s`` -> {gpu index: {"active": n, "inactive": [link, ...]}}. ``Link N: <inactive>``
    (and ``Link N: 0 GB/s``) is down; ``Link N: 26.562 GB/s`` is up."""
    gpus = {}
    current = None
    for line in (text or "").splitlines():
        head = re.match(r"^GPU (\d+):", line.strip())
        if head:
            current = gpus.setdefault(int(head.group(1)), {"active": 0, "inactive": []})
            continue
        link = re.match(r"^Link (\d+):\s*(.*)$", line.strip())
        if link and current is not None:
            speed = number(link.group(2))
            if speed:
                current["active"] += 1
            else:
                current["inactive"].append(int(link.group(1)))
    return gpus


def parse_xids(text):
    """Kernel log -> [(bus id or None, xid, line)]. A GPU that fell off the bus is Xid 79 even in the multi-line
    form that carries no Xid number (https://docs.nvidia.com/deploy/xid-errors/index.html, Xid 79)."""
    found = []
    for line in (text or "").splitlines():
        match = XID_LINE.search(line)
        if match:
            found.append((match.group(1), int(match.group(2)), line.strip()))
        elif OFF_BUS.search(line) and "NVRM" in line:
            found.append((None, 79, line.strip()))
    return found


def split_xids(text, uptime_s, window_s):
    """Kernel log -> (current, older, driver_loaded_at_s); current and older are lists of (bus, xid, line,
    age_s or None). An Xid is older when it precedes the last driver load line, or when it lies more than
    ``window_s`` before ``uptime_s``. A line with no time stamp, or a host whose uptime is unknown, cannot be
    aged: its Xid stays current."""
    loads = [log_seconds(line) for line in (text or "").splitlines() if DRIVER_LOAD.search(line)]
    loads = [t for t in loads if t is not None]
    loaded_at = max(loads) if loads else None
    current, older = [], []
    for bus, xid, line in parse_xids(text):
        at = log_seconds(line)
        age = uptime_s - at if at is not None and uptime_s is not None and uptime_s >= at else None
        if at is not None and loaded_at is not None and at < loaded_at:
            older.append((bus, xid, line, age))
        elif age is not None and window_s is not None and age > window_s:
            older.append((bus, xid, line, age))
        else:
            current.append((bus, xid, line, age))
    return current, older, loaded_at


def xid_severity(xid):
    """``(status, why)`` for one Xid: fail for DCGM's drain/reset class, warn for the rest (named or not)."""
    if xid in FATAL_XIDS:
        return "fail", "Xid %d (%s): drain and reset" % (xid, FATAL_XIDS[xid])
    if xid in WARN_XIDS:
        return "warn", "Xid %d (%s)" % (xid, WARN_XIDS[xid])
    return "warn", "Xid %d (not classified in accelstack's Xid table: look it up in NVIDIA's Xid catalog)" % xid


# ----- pure judgements -----

def judge_ecc(gpus):
    problems = []
    metrics = {"volatile_uncorrectable": 0, "aggregate_uncorrectable": 0, "aggregate_correctable": 0}
    for g in gpus:
        ecc, name = g["ecc"], "gpu %d" % g["index"]
        vol, agg = ecc["volatile"]["uncorrectable"], ecc["aggregate"]["uncorrectable"]
        metrics["volatile_uncorrectable"] += vol or 0
        metrics["aggregate_uncorrectable"] += agg or 0
        metrics["aggregate_correctable"] += ecc["aggregate"]["correctable"] or 0
        if g["ecc_mode"] and g["ecc_mode"].lower() == "disabled":
            problems.append(("warn", "%s: ECC disabled (uncorrectable errors go unnoticed)" % name))
        if vol:
            problems.append(("fail", "%s: %d uncorrectable ECC error(s) since the driver loaded" % (name, vol)))
        elif agg:
            problems.append(("warn", "%s: %d uncorrectable ECC error(s) in its lifetime (none since the driver "
                                     "loaded)" % (name, agg)))
        if ecc["sram_threshold_exceeded"]:
            problems.append(("fail", "%s: SRAM ECC error threshold exceeded" % name))
        if ecc["unrepairable_memory"]:
            problems.append(("fail", "%s: unrepairable memory reported" % name))
        if g["reset_required"] or g["drain_and_reset"]:
            problems.append(("fail", "%s: the driver asks for a GPU reset" % name))
    counted = [g for g in gpus if g["ecc"]["volatile"]["uncorrectable"] is not None
               or g["ecc"]["aggregate"]["uncorrectable"] is not None]
    if not counted and not problems:  # never pass what was not measured
        return record("health.ecc", "skip", "the GPUs report no ECC error counters (ECC not supported)")
    return judged("health.ecc", problems, "no uncorrectable ECC error on %d GPU(s)" % len(gpus), metrics,
                   remedy="drain the host; reset the GPU (nvidia-smi -r -i N, or reboot); if uncorrectable errors "
                          "return, RMA the GPU. " + HEALTH_REMEDY)


def judge_remapped_rows(gpus):
    problems, supported = [], [g for g in gpus if g["remapped"] is not None]
    if not supported:
        return record("health.remapped_rows", "skip", "row remapping is not reported on these GPUs (before Ampere, "
                      "or not supported): see health.retired_pages")
    metrics = {"remapped_uncorrectable": 0, "remapped_correctable": 0, "pending": 0, "failure": 0}
    for g in supported:
        r, name = g["remapped"], "gpu %d" % g["index"]
        metrics["remapped_uncorrectable"] += r["uncorrectable"] or 0
        metrics["remapped_correctable"] += r["correctable"] or 0
        if r["failure"]:
            metrics["failure"] += 1
            problems.append(("fail", "%s: row remapping failed (no spare row left for an error)" % name))
        if r["pending"]:
            metrics["pending"] += 1
            problems.append(("fail", "%s: a row remap is pending (applies at the next GPU reset)" % name))
        if r["banks_none"]:
            problems.append(("warn", "%s: %d memory bank(s) have no spare row left" % (name, r["banks_none"])))
    return judged("health.remapped_rows", problems, "no pending or failed row remap on %d GPU(s)" % len(supported),
                   metrics, remedy="pending: drain and reset the GPU (nvidia-smi -r, or reboot) so the remap "
                   "applies; failure: RMA the GPU. " + HEALTH_REMEDY)


def judge_retired_pages(gpus, limits):
    reported = [g for g in gpus if any(v is not None for v in g["retired"].values())]
    if not reported:
        return record("health.retired_pages", "skip", "page retirement is not reported on these GPUs (Ampere and "
                      "later remap rows instead: see health.remapped_rows)")
    problems, total = [], 0
    limit = int(limits["max_retired_pages"])
    for g in reported:
        r, name = g["retired"], "gpu %d" % g["index"]
        count = (r["single_bit"] or 0) + (r["double_bit"] or 0)
        total += count
        if r["pending"]:
            problems.append(("fail", "%s: a page retirement is pending (applies at the next reboot)" % name))
        if count >= limit:
            problems.append(("fail", "%s: %d retired pages (>= %d)" % (name, count, limit)))
        elif count:
            problems.append(("warn", "%s: %d retired page(s)" % (name, count)))
    return judged("health.retired_pages", problems, "no retired or pending page on %d GPU(s)" % len(reported),
                   {"retired_pages": total}, remedy="pending: reboot to retire the page; at the limit: RMA the "
                   "GPU. " + HEALTH_REMEDY)


def judge_throttle(gpus, limits):
    problems, active = [], {}
    busy_at = float(limits["busy_utilization_pct"])
    for g in gpus:
        name = "gpu %d" % g["index"]
        on = sorted(r for r, v in g["reasons"].items() if v)
        active[name] = on
        busy = (g["utilization_pct"] or 0) > busy_at
        for reason in on:
            if reason in FAIL_REASONS:
                problems.append(("fail", "%s: clocks held down by %s" % (name, reason)))
            elif reason in IDLE_WARN_REASONS and not busy:
                problems.append(("warn", "%s: %s active while idle" % (name, reason)))
    if not any(g["reasons"] for g in gpus):
        return record("health.throttle", "skip", "the driver reports no clock-event reasons")
    return judged("health.throttle", problems, "no slowdown reason active on %d GPU(s)" % len(gpus),
                   {"throttled_gpus": len({t.split(":")[0] for _, t in problems})}, {"active_reasons": active},
                   remedy="hardware/thermal slowdown: check cooling, fans, power supply and the BMC's event log; "
                          "power cap at idle: nvidia-smi -q -d PERFORMANCE,POWER. " + HEALTH_REMEDY)


def judge_gpu_temperature(gpus, limits):
    problems, temps = [], {}
    margin = float(limits["temperature_margin_c"])
    for g in gpus:
        t, name = g["temperature"], "gpu %d" % g["index"]
        temps[name] = t["gpu_c"]
        if t["gpu_c"] is None:
            continue
        if t["tlimit_headroom_c"] is not None:
            slow = t["slow_tlimit_c"] if t["slow_tlimit_c"] is not None else 0
            if t["tlimit_headroom_c"] <= slow:
                problems.append(("fail", "%s: %s C, at its slowdown limit (%s C to T.Limit)"
                                 % (name, t["gpu_c"], t["tlimit_headroom_c"])))
            elif t["tlimit_headroom_c"] - slow < margin:
                problems.append(("warn", "%s: %s C, within %g C of its slowdown limit while idle"
                                 % (name, t["gpu_c"], margin)))
        elif t["slow_c"] is not None:
            if t["gpu_c"] >= t["slow_c"]:
                problems.append(("fail", "%s: %s C >= its slowdown temperature %s C" % (name, t["gpu_c"], t["slow_c"])))
            elif t["gpu_c"] >= t["slow_c"] - margin:
                problems.append(("warn", "%s: %s C, within %g C of its slowdown temperature %s C"
                                 % (name, t["gpu_c"], margin, t["slow_c"])))
        else:
            problems += absolute_temperature(name, t["gpu_c"], limits)
    if all(v is None for v in temps.values()):
        return record("health.temperature", "skip", "the driver reports no GPU temperature")
    return judged("health.temperature", problems, "%d GPU(s) at %s C" % (len(gpus), span(temps.values())),
                   {"max_temperature_c": max(v for v in temps.values() if v is not None)}, {"temperature_c": temps},
                   remedy="check cooling (fans, airflow, inlet temperature) and the BMC's sensors. " + HEALTH_REMEDY)


def judge_persistence(gpus):
    modes = dict(("gpu %d" % g["index"], g["persistence"]) for g in gpus)
    if all(m is None for m in modes.values()):
        return record("health.persistence", "skip", "the driver reports no persistence mode")
    off = [n for n, m in modes.items() if m and m.lower() != "enabled"]
    problems = [("warn", "%s: persistence mode %s" % (n, modes[n])) for n in off]
    return judged("health.persistence", problems, "persistence mode enabled on %d GPU(s)" % len(gpus),
                   {"persistence_off": len(off)}, remedy="enable nvidia-persistenced (or nvidia-smi -pm 1): without "
                   "it the driver tears down and re-initialises the GPU for every job")


def judge_nvlink(gpus, row, status_text, tool_exit):
    if row is None or not row.get("nvlinks"):
        sku = row.get("sku") if row else (gpus[0]["name"] if gpus else "this GPU")
        return record("health.nvlink", "skip", "no NVLink expected for %s (no per-SKU link count in "
                      "the NVIDIA vendor's floors.yml)" % sku)
    if len(gpus) < 2:
        return record("health.nvlink", "skip", "one GPU visible: NVLink has no peer to link to")
    if tool_exit != 0:
        return record("health.nvlink", "error", "nvidia-smi nvlink -s failed (exit %s): %s"
                      % (tool_exit, (status_text or "").strip()[-200:]), evidence={"tool_output": status_text},
                      remedy="run nvidia-smi nvlink -s on the host; if it hangs or fails, check the driver "
                             "(dmesg for Xid) and nvidia-fabricmanager on NVSwitch systems")
    want = int(row["nvlinks"])
    links = parse_nvlink_status(status_text)
    problems = []
    for g in gpus:
        state = links.get(g["index"])
        if state is None:
            problems.append(("fail", "gpu %d: not listed by nvidia-smi nvlink -s" % g["index"]))
        elif state["active"] < want:
            problems.append(("fail", "gpu %d: %d of %d NVLinks active (down: %s)" % (
                g["index"], state["active"], want, ",".join(str(i) for i in state["inactive"]) or "-")))
    return judged("health.nvlink", problems, "%d NVLinks active on each of %d GPU(s)" % (want, len(gpus)),
                   {"expected_links": want, "degraded_gpus": len(problems)}, {"links": links},
                   remedy="check the fabric manager (systemctl status nvidia-fabricmanager) and nvidia-smi nvlink "
                          "-e; a link that stays down needs the baseboard serviced. " + HEALTH_REMEDY)


def _hours(seconds):
    return "%.1f h" % (seconds / 3600.0)


def judge_xids(log_text, log_exit, log_command, uptime_s=None, window_s=XID_WINDOW_S):
    """Xids newer than ``window_s`` and than the last driver load are judged (fatal: fail; the rest: warn); older
    ones pass, listed in the evidence: a repaired GPU is not failed until the next reboot."""
    if log_exit != 0:
        return record("health.xid", "error", "cannot read the kernel log (%s exit %s): %s" % (
            log_command, log_exit, (log_text or "").strip()[-160:]), remedy="run as root, or set sysctl "
            "kernel.dmesg_restrict=0 for the validating user")
    current, older, loaded_at = split_xids(log_text, uptime_s, window_s)
    problems = []
    for bus, xid, _line, age in current:
        status, why = xid_severity(xid)
        problems.append((status, "%s%s%s" % (why, " on %s" % bus if bus else "",
                                             " (%s ago)" % _hours(age) if age is not None else "")))
    seen = []
    for item in problems:  # one line per distinct Xid, GPU and age
        if item not in seen:
            seen.append(item)
    scope = ["of the last %s" % _hours(window_s)] if window_s is not None and uptime_s is not None else []
    if loaded_at is not None:
        scope.append("since the driver loaded (%.0f s after boot)" % loaded_at)
    ok = "no Xid in the kernel log %s" % (" ".join(scope) or "since boot")
    if older:
        ok += " (%d older Xid(s) in the evidence: history, not judged)" % len(older)
    evidence = {"xid_lines": [line for _, _, line, _ in current][-20:],
                "older_xid_lines": [line for _, _, line, _ in older][-20:],
                "window_s": window_s, "uptime_s": uptime_s, "driver_loaded_at_s": loaded_at}
    return judged("health.xid", seen, ok, {"xids": len(current), "xids_older": len(older)}, evidence,
                   remedy="a drain/reset Xid: drain the host and reset or reboot; repeated ones: RMA. "
                          + HEALTH_REMEDY)



# ----- I/O -----

def smi_path():
    return find_tool("nvidia-smi", ["/usr/bin", "/usr/local/bin"])


def read_smi_xml(smi):
    """``nvidia-smi -q -x``, read once per interpreter: ``devices`` counts from the same answer."""
    return read_tool([smi, "-q", "-x"], timeout=60, hang_note="a GPU that hangs the driver")


def xid_window(limits):
    """The ``xid_window_s`` limit in seconds; 0 or less judges every Xid since boot."""
    value = limits.get("xid_window_s")
    if value is None:
        return XID_WINDOW_S
    value = float(value)
    return value if value > 0 else None


def checks(smi, limits, rows, accelerator, window_s=XID_WINDOW_S):
    status, text = read_smi_xml(smi)
    if status != 0:
        return [record("health", "error", "nvidia-smi -q -x failed (exit %d): %s" % (status, text.strip()[-200:]),
                       evidence={"tool_output": text[-2000:]},
                       remedy="check the driver: nvidia-smi must answer before anything can train")]
    try:
        gpus = parse_smi_xml(text)
    except ValueError as exc:
        return [record("health", "error", str(exc), evidence={"tool_output": text[-2000:]},
                       remedy="run nvidia-smi -q -x on the host: output it cannot parse means a driver or tool fault")]
    if not gpus:
        return [record("health", "error", "nvidia-smi -q -x lists no GPU: the devices check says why",
                       remedy="read the devices check's record; lspci | grep 10de shows whether the GPUs are on the bus")]
    row = pick_row(rows, [g["name"] or "" for g in gpus], accelerator)
    link_exit, link_text = (0, "")
    if row and row.get("nvlinks") and len(gpus) > 1:
        link_exit, link_text = read_tool([smi, "nvlink", "-s"], timeout=60)
    log_exit, log_text, log_command = kernel_log()
    found = [judge_ecc(gpus), judge_remapped_rows(gpus), judge_retired_pages(gpus, limits),
             judge_throttle(gpus, limits), judge_gpu_temperature(gpus, limits), judge_persistence(gpus),
             judge_nvlink(gpus, row, link_text, link_exit),
             judge_xids(log_text, log_exit, log_command, read_uptime(), window_s)]
    for check in found:
        check["evidence"].setdefault("sku", row.get("sku") if row else None)
    return found


# ----- the interface the validators call (vendors/cpu/hostside.py) -----

def present():
    """Whether the host has the vendor's tool: a config without a vendor is judged by the first that is."""
    return smi_path() is not None


def health_checks(limits, rows, accelerator):
    """The ``health.*`` records (device_health.py)."""
    smi = smi_path()
    if not smi:
        return [record("health", "error", "nvidia-smi not found on PATH", remedy="install the NVIDIA driver "
                       "(inv provision --limit <host>)")]
    return checks(smi, limits, rows, accelerator, xid_window(limits))


def gpu_summary(gpu):
    """What the control side judges of one GPU, and what a person reads first: small enough for every record."""
    return {"index": gpu["index"], "name": gpu["name"], "bus_id": gpu["bus_id"], "uuid": gpu.get("uuid"),
            "memory_total_mib": gpu.get("memory_total_mib"), "memory_used_mib": gpu.get("memory_used_mib"),
            "compute_mode": gpu.get("compute_mode"), "processes": gpu.get("processes") or []}


def list_devices(evidence, tail=2000):
    """The ``devices`` check: (status, summary, metrics) from the interpreter's one ``nvidia-smi -q -x``, with the
    tool's exit and the GPUs (or its output) in ``evidence``; the count and health are judged on the control side
    (Vendor.device_counts)."""
    smi = smi_path()
    evidence["command"] = "nvidia-smi -q -x"
    if not smi:
        evidence["tool_exit"], evidence["tool_output"] = 127, "nvidia-smi: not found"
        return "error", "nvidia-smi gave no device list to count", {}
    status, text = read_smi_xml(smi)
    evidence["tool_exit"] = status
    if status != 0:
        evidence["tool_output"] = text[-tail:]
        return "error", "nvidia-smi gave no device list to count", {}
    try:
        gpus = parse_smi_xml(text)
    except ValueError as exc:
        # The control side finds no GPU in what it cannot read: an error, with the text's end to look at.
        evidence["tool_output"] = text[-tail:]
        evidence["parse_error"] = str(exc)
        return "error", "nvidia-smi gave no device list to count", {}
    evidence["gpus"] = [gpu_summary(g) for g in gpus]
    in_use = [g for g in gpus if g.get("processes")]
    names = sorted(set(g["name"] or "?" for g in gpus))
    summary = "nvidia-smi lists %d GPU(s): %s" % (len(gpus), ", ".join(names))
    if in_use:
        summary += "; in use by a process: %s" % ", ".join("gpu %d" % g["index"] for g in in_use)
    return "pass", summary, {"processes": sum(len(g.get("processes") or []) for g in gpus)}


def read_devices():
    """(devices, error): one dict per GPU, ``{device, index, uuid, compute_mode, memory_used_mib, memory_total_mib,
    processes: [{pid, name, memory_mib}]}``, from the interpreter's one ``nvidia-smi -q -x`` (_holders.py)."""
    smi = smi_path()
    if not smi:
        return None, "nvidia-smi not found"
    status, text = read_smi_xml(smi)
    if status != 0:
        return None, "nvidia-smi -q -x failed (exit %d): %s" % (status, _last(text))
    try:
        gpus = parse_smi_xml(text)
    except ValueError as exc:
        return None, str(exc)
    return [{"device": "gpu %d" % g["index"], "index": g["index"], "uuid": g.get("uuid"),
             "compute_mode": g.get("compute_mode"), "memory_used_mib": g.get("memory_used_mib"),
             "memory_total_mib": g.get("memory_total_mib"), "processes": g.get("processes") or []}
            for g in gpus], None


def _last(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def memory_evidence():
    """The ``memory.devices`` check's tool reads, as evidence the control side judges (Vendor.device_memory), and
    the summary of a read that failed (None when every read answered)."""
    evidence = {"command": "nvidia-smi --query-gpu=... ; nvidia-smi --query-compute-apps=..."}
    evidence["tool_exit"], evidence["tool_output"] = run_tool(
        ["nvidia-smi", "--query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,"
         "temperature.gpu,utilization.gpu", "--format=csv,noheader,nounits"])
    evidence["apps_exit"], evidence["apps_output"] = run_tool(
        ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv,noheader,"
         "nounits"])
    failed = (tool_failure("nvidia-smi", evidence["tool_exit"], evidence["tool_output"], "device memory was")
              or tool_failure("nvidia-smi --query-compute-apps", evidence["apps_exit"], evidence["apps_output"],
                              "device memory was"))
    return evidence, failed


def parse_smi_link(text):
    """``nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max
    --format=csv,noheader,nounits`` for one GPU -> link dict (``None`` where it says N/A)."""
    cells = [c.strip() for c in (text or "").strip().splitlines()[-1:][0].split(",")] if (text or "").strip() else []
    if len(cells) != 4:
        return None
    current_gen, max_gen, current_width, max_width = [_int(c) for c in cells]
    return {"current_gen": current_gen, "max_gen": max_gen, "current_width": current_width, "max_width": max_width}


def _int(text):
    match = re.match(r"^\s*(\d+)", text or "")
    return int(match.group(1)) if match else None


def pcie_link(address):
    """The PCIe link of the GPU at ``address`` as nvidia-smi reads it (the device side: sysfs in a VM shows the
    emulated port), None where it does not answer (device_perf.py reads sysfs then)."""
    status, text = run_tool(["nvidia-smi", "--query-gpu=pcie.link.gen.current,pcie.link.gen.max,"
                             "pcie.link.width.current,pcie.link.width.max", "--format=csv,noheader,nounits",
                             "-i", ("0000" + address if len(address) == 12 else address).upper()], timeout=20)
    return parse_smi_link(text) if status == 0 else None
