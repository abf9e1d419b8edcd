#!/usr/bin/env python3
# Declared in accelstack/validate/checks/device_health.py (tier, python, timeout, config keys, judge, help).
"""Device health from the vendor tool's cheap reads (what DCGM diag r1 and the node health checks look at).

NVIDIA, from one ``nvidia-smi -q -x``: uncorrectable ECC errors (volatile and aggregate), remapped rows (pending,
failure, banks without spare rows), retired pages, clock-event (throttle) reasons active while idle, temperature
against the GPU's own slowdown limit, persistence mode; NVLink state from ``nvidia-smi nvlink -s`` where the SKU
has NVLink; Xid lines in the kernel log with the severity of reference nvidia.md 5. Ascend, from ``npu-smi``:
health, HBM ECC (``-t ecc``), HBM in use while idle, temperature, AI core utilisation while idle.

One record per aspect (``health.ecc``, ``health.xid``, ...), judged here against the limits the config carries
(``device_health``, ``device_rows`` from data/thresholds.yml). No vendor device on the host: one ``health`` skip;
the tool missing or failing: one ``health`` error. Stdlib only, Python 3.6 syntax.
"""

import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import find_tool, main_entry, read_tool, record, run_tool

LIMITS = {"temperature_margin_c": 10, "temperature_warn_c": 80, "temperature_fail_c": 90,
          "busy_utilization_pct": 5, "max_retired_pages": 60, "hbm_idle_used_fraction": 0.2,
          "aicore_idle_pct": 10, "xid_window_s": 24 * 3600}
# Only Xids this recent are judged (``xid_window_s``; an inventory sets it with ``health_xid_window_s``). The
# reference gives no window; this one is the interval of the slowest regular run (the nightly fleet-check,
# DESIGN.md "Users"), so every Xid is judged by at least one run, and a fault the device still carries afterwards
# is what ecc, remapped_rows and the reset-required flags measure. Xids older than that, or older than the last
# driver (re)load, are history: kept in the evidence, not judged.
XID_WINDOW_S = LIMITS["xid_window_s"]
NA = ("n/a", "na", "[n/a]", "not supported", "[not supported]", "unknown error", "")
# Reference nvidia.md 5, "Xid severity (DCGM's classification)".
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
LOG_STAMP = re.compile(r"^\s*\[\s*(\d+(?:\.\d+)?)\]")
# The driver's banner as its module loads (at boot, and again after a reload that a repair takes).
DRIVER_LOAD = re.compile(r"NVRM: loading NVIDIA UNIX")
OFF_BUS = re.compile(r"fallen off the bus", re.IGNORECASE)
HEALTH_REMEDY = "drain the host, then inv validate --limit <host> --only health after the fix"


# ----- pure parsers -----

def _text(node, path):
    value = node.findtext(path)
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in NA else value


def _number(value):
    """``"37 C"``, ``"72.13 W"``, ``"16x"``, ``"-2 C"`` -> a number; ``None`` for N/A and the unparsable."""
    if value is None:
        return None
    match = re.match(r"^\s*(-?\d+(?:\.\d+)?)", value)
    if not match:
        return None
    number = float(match.group(1))
    return int(number) if number == int(number) else number


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
        minor = _number(_text(gpu, "minor_number"))
        ecc = {}
        for scope in ("volatile", "aggregate"):
            node = gpu.find("ecc_errors/" + scope)
            unc = None
            corr = None
            if node is not None:
                for child in node:
                    value = _number(_text(node, child.tag))
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
                        "correctable": _number(_text(remap_node, "remapped_row_corr")),
                        "uncorrectable": _number(_text(remap_node, "remapped_row_unc")),
                        "banks_none": _number(_text(remap_node, "row_remapper_histogram/row_remapper_histogram_none")),
                        "banks_low": _number(_text(remap_node, "row_remapper_histogram/row_remapper_histogram_low"))}
        retired = {"single_bit": _number(_text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")),
                   "double_bit": _number(_text(gpu, "retired_pages/double_bit_retirement/retired_count")),
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
        temp = {"gpu_c": _number(_text(gpu, "temperature/gpu_temp")),
                "tlimit_headroom_c": _number(_text(gpu, "temperature/gpu_temp_tlimit")),
                "slow_tlimit_c": _number(_text(gpu, "temperature/gpu_temp_slow_tlimit_threshold")),
                "shutdown_tlimit_c": _number(_text(gpu, "temperature/gpu_temp_max_tlimit_threshold")),
                "slow_c": _number(_text(gpu, "temperature/gpu_temp_slow_threshold")),
                "shutdown_c": _number(_text(gpu, "temperature/gpu_temp_max_threshold"))}
        processes = []
        for proc in gpu.findall("processes/process_info"):
            pid = _number(_text(proc, "pid"))
            if pid is not None:
                processes.append({"pid": pid, "name": _text(proc, "process_name") or "?",
                                  "type": _text(proc, "type"), "memory_mib": _number(_text(proc, "used_memory"))})
        gpus.append({
            "index": minor if minor is not None else position,
            "bus_id": gpu.get("id"),
            "uuid": _text(gpu, "uuid"),
            "name": _text(gpu, "product_name"),
            "compute_mode": _text(gpu, "compute_mode"),
            "memory_total_mib": _number(_text(gpu, "fb_memory_usage/total")),
            "memory_used_mib": _number(_text(gpu, "fb_memory_usage/used")),
            "processes": processes,
            "persistence": _text(gpu, "persistence_mode"),
            "ecc_mode": _text(gpu, "ecc_mode/current_ecc"),
            "reset_required": _yes(_text(gpu, "gpu_reset_status/reset_required")),
            "drain_and_reset": _yes(_text(gpu, "gpu_reset_status/drain_and_reset_recommended")),
            "ecc": ecc, "remapped": remapped, "retired": retired, "reasons": reasons, "temperature": temp,
            "utilization_pct": _number(_text(gpu, "utilization/gpu_util")),
            "pcie": {"max_gen": _number(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
                     "current_gen": _number(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
                     "device_max_gen": _number(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen")),
                     "max_width": _number(_text(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width")),
                     "current_width": _number(_text(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width"))},
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
            speed = _number(link.group(2))
            if speed:
                current["active"] += 1
            else:
                current["inactive"].append(int(link.group(1)))
    return gpus


def parse_xids(text):
    """Kernel log -> [(bus id or None, xid, line)]. A GPU that fell off the bus is Xid 79 even in the multi-line
    form that carries no Xid number (reference nvidia.md 5)."""
    found = []
    for line in (text or "").splitlines():
        match = XID_LINE.search(line)
        if match:
            found.append((match.group(1), int(match.group(2)), line.strip()))
        elif OFF_BUS.search(line) and "NVRM" in line:
            found.append((None, 79, line.strip()))
    return found


def log_seconds(line):
    """Seconds since boot that a kernel log line carries (``[  1234.5] ...``), None for a line without one."""
    match = LOG_STAMP.match(line or "")
    return float(match.group(1)) if match else None


def parse_uptime(text):
    """``/proc/uptime`` (two numbers, the first seconds since boot) -> that number, None when unreadable."""
    try:
        return float((text or "").split()[0])
    except (IndexError, ValueError):
        return None


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
    return "warn", "Xid %d (not classified in the reference: look it up in NVIDIA's Xid catalog)" % xid


def parse_kv(text):
    """``npu-smi info -t health|ecc|board -i N``: ``Key : value`` lines (tab-indented) -> {key: value}."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            values[key.strip()] = value.strip()
    return values


NPU_COLUMNS = (("power", "power"), ("temp", "temp"), ("hugepages", "hugepages"), ("aicore", "aicore"),
               ("memory", "memory"), ("hbm", "hbm"))
PAIR_OR_TOKEN = re.compile(r"(\S+?)\s*/\s*(\S+)|(\S+)")


def _columns(cell):
    names = []
    for word in cell.split():
        lowered = word.lower()
        names.append(next((stem for prefix, stem in NPU_COLUMNS if lowered.startswith(prefix)), lowered))
    return names


def _cells(cell):
    return [(m.group(3), None) if m.group(3) is not None else (m.group(1), m.group(2))
            for m in PAIR_OR_TOKEN.finditer(cell)]


def parse_npu_table(text):
    """``npu-smi info`` -> (chips, processes). A chip: {npu_id, chip_id, name, health, temp, aicore, hbm_used,
    hbm_total}; a process: {npu_id, pid, name, memory_mb}. Column meanings come from the table's own header rows (A2, 910A and A3
    layouts), pairs like ``41052/ 65536`` included."""
    chips, processes = [], []
    mode = ""
    row1, row2 = ["power", "temp", "hugepages"], ["aicore", "memory", "hbm"]
    current = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("+"):
            current = None
            continue
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        first = cells[0]
        if len(cells) >= 2 and "Process id" in cells[1]:
            mode, current = "proc", None
            continue
        if first.startswith("NPU") and len(cells) >= 3 and cells[1].startswith("Health"):
            mode, row1 = "dev", _columns(cells[2])
            continue
        if first.startswith("Chip") and len(cells) >= 3 and cells[1].startswith("Bus-Id"):
            row2 = _columns(cells[2])
            continue
        if mode == "dev" and len(cells) >= 3:
            if current is None:
                match = re.match(r"^(\d+)\s+(\S.*)$", first)
                if not match:
                    continue
                current = {"npu_id": int(match.group(1)), "name": match.group(2).strip(), "chip_id": None,
                           "health": cells[1] or None, "temp": None, "aicore": None, "hbm_used": None,
                           "hbm_total": None}
                names = row1
                chips.append(current)
            else:
                ids = first.split()
                current["chip_id"] = int(ids[0]) if ids and ids[0].isdigit() else None
                names = row2
            for name, (value, total) in zip(names, _cells(cells[2])):  # noqa: B905 (strict= is 3.10+; runs on 3.6)
                if name == "temp":
                    current["temp"] = _number(value)
                elif name == "aicore":
                    current["aicore"] = _number(value)
                elif name == "hbm":
                    current["hbm_used"], current["hbm_total"] = _number(value), _number(total)
            if names is row2:
                current = None
        elif mode == "proc" and len(cells) >= 2:
            ids = first.split()
            if ids and ids[0].isdigit() and cells[1].isdigit():
                processes.append({"npu_id": int(ids[0]), "pid": int(cells[1]),
                                  "name": cells[2] if len(cells) > 2 and cells[2] else "?",
                                  "memory_mb": _number(cells[3]) if len(cells) > 3 else None})
    return chips, processes


def pick_row(rows, names, accelerator=""):
    """The first per-SKU row one of whose ``match`` strings occurs in the accelerator var or a device name."""
    haystack = [n.lower() for n in list(names) + [accelerator or ""] if n]
    for row in rows or []:
        for needle in row.get("match") or []:
            if any(needle.lower() in hay for hay in haystack):
                return row
    return None


# ----- pure judgements: (status, summary, metrics, evidence, remedy) -----

def _worst(statuses):
    order = ["skip", "pass", "warn", "error", "fail"]
    return max(statuses, key=order.index) if statuses else "skip"


def _result(check, problems, ok_summary, metrics, evidence=None, remedy=None):
    """``problems``: [(status, text)]. The worst status wins; no problem is ``pass`` with ``ok_summary``."""
    if not problems:
        return record(check, "pass", ok_summary, metrics, evidence)
    status = _worst([s for s, _ in problems])
    shown = [t for s, t in problems if s == status] + [t for s, t in problems if s != status]
    return record(check, status, "; ".join(shown[:6]) + (" (+%d more)" % (len(shown) - 6) if len(shown) > 6 else ""),
                  metrics, evidence, remedy if status in ("fail", "warn") else None)


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
    return _result("health.ecc", problems, "no uncorrectable ECC error on %d GPU(s)" % len(gpus), metrics,
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
    return _result("health.remapped_rows", problems, "no pending or failed row remap on %d GPU(s)" % len(supported),
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
    return _result("health.retired_pages", problems, "no retired or pending page on %d GPU(s)" % len(reported),
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
    return _result("health.throttle", problems, "no slowdown reason active on %d GPU(s)" % len(gpus),
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
            problems += _absolute_temperature(name, t["gpu_c"], limits)
    if all(v is None for v in temps.values()):
        return record("health.temperature", "skip", "the driver reports no GPU temperature")
    return _result("health.temperature", problems, "%d GPU(s) at %s C" % (len(gpus), _span(temps.values())),
                   {"max_temperature_c": max(v for v in temps.values() if v is not None)}, {"temperature_c": temps},
                   remedy="check cooling (fans, airflow, inlet temperature) and the BMC's sensors. " + HEALTH_REMEDY)


def _absolute_temperature(name, value, limits):
    if value >= float(limits["temperature_fail_c"]):
        return [("fail", "%s: %s C >= %s C" % (name, value, limits["temperature_fail_c"]))]
    if value >= float(limits["temperature_warn_c"]):
        return [("warn", "%s: %s C >= %s C" % (name, value, limits["temperature_warn_c"]))]
    return []


def _span(values):
    values = [v for v in values if v is not None]
    return "%s" % values[0] if min(values) == max(values) else "%s-%s" % (min(values), max(values))


def judge_persistence(gpus):
    modes = dict(("gpu %d" % g["index"], g["persistence"]) for g in gpus)
    if all(m is None for m in modes.values()):
        return record("health.persistence", "skip", "the driver reports no persistence mode")
    off = [n for n, m in modes.items() if m and m.lower() != "enabled"]
    problems = [("warn", "%s: persistence mode %s" % (n, modes[n])) for n in off]
    return _result("health.persistence", problems, "persistence mode enabled on %d GPU(s)" % len(gpus),
                   {"persistence_off": len(off)}, remedy="enable nvidia-persistenced (or nvidia-smi -pm 1): without "
                   "it the driver tears down and re-initialises the GPU for every job")


def judge_nvlink(gpus, row, status_text, tool_exit):
    if row is None or not row.get("nvlinks"):
        sku = row.get("sku") if row else (gpus[0]["name"] if gpus else "this GPU")
        return record("health.nvlink", "skip", "no NVLink expected for %s (no per-SKU link count in "
                      "data/thresholds.yml)" % sku)
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
    return _result("health.nvlink", problems, "%d NVLinks active on each of %d GPU(s)" % (want, len(gpus)),
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
    return _result("health.xid", seen, ok, {"xids": len(current), "xids_older": len(older)}, evidence,
                   remedy="a drain/reset Xid: drain the host and reset or reboot; repeated ones: RMA. "
                          + HEALTH_REMEDY)


def judge_npu_status(chips, health_details):
    problems = []
    for c in chips:
        name = "npu %d chip %s" % (c["npu_id"], c["chip_id"] if c["chip_id"] is not None else 0)
        health = (c["health"] or "").strip()
        detail = health_details.get(c["npu_id"]) or {}
        code = detail.get("Error Code")
        suffix = " (error code %s)" % code if code and code.upper() != "NA" else ""
        if not health:
            problems.append(("fail", "%s: no health reported" % name))
        elif health.upper() == "OK":
            continue
        elif health.lower() == "warning":
            problems.append(("warn", "%s: health %s%s" % (name, health, suffix)))
        else:
            problems.append(("fail", "%s: health %s%s" % (name, health, suffix)))
    return _result("health.status", problems, "%d NPU chip(s) report OK" % len(chips),
                   {"unhealthy": len(problems)}, {"health": health_details},
                   remedy="npu-smi info -t health -i N names the fault; reset (npu-smi set -t reset) or RMA. "
                          + HEALTH_REMEDY)


def judge_npu_ecc(ecc_by_npu):
    problems, metrics = [], {"hbm_double_bit": 0, "hbm_double_bit_aggregate": 0}
    for npu, values in sorted(ecc_by_npu.items()):
        now = sum(_number(values.get(k)) or 0 for k in ("HBM Double Bit Error Count", "DDR Double Bit Error Count"))
        ever = sum(_number(values.get(k)) or 0 for k in ("HBM Double Bit Aggregate Total Err Cnt",
                                                          "DDR Double Bit Aggregate Total Err Cnt"))
        metrics["hbm_double_bit"] += now
        metrics["hbm_double_bit_aggregate"] += ever
        if now:
            problems.append(("fail", "npu %d: %d double-bit (uncorrectable) ECC error(s)" % (npu, now)))
        elif ever:
            problems.append(("warn", "npu %d: %d double-bit ECC error(s) in its lifetime" % (npu, ever)))
    return _result("health.ecc", problems, "no double-bit ECC error on %d NPU(s)" % len(ecc_by_npu), metrics,
                   {"ecc": ecc_by_npu}, remedy="reset the NPU (npu-smi set -t reset -i N) and watch the count; "
                   "rising double-bit errors: RMA. " + HEALTH_REMEDY)


def judge_npu_hbm(chips, processes, limits):
    problems = []
    limit = float(limits["hbm_idle_used_fraction"])
    if all(c["hbm_total"] is None for c in chips):
        return record("health.hbm", "skip", "npu-smi shows no HBM column (an NPU without HBM, such as the 310P)")
    for c in chips:
        name = "npu %d" % c["npu_id"]
        if not c["hbm_total"]:
            problems.append(("fail", "%s: no HBM reported (HBM-Usage missing or 0 total)" % name))
            continue
        used = (c["hbm_used"] or 0) / float(c["hbm_total"])
        if used > limit:
            pids = [str(p["pid"]) for p in processes if p["npu_id"] == c["npu_id"]]
            problems.append(("warn", "%s: %s/%s MB HBM in use%s" % (name, c["hbm_used"], c["hbm_total"],
                                                                     " by pid " + ",".join(pids) if pids else
                                                                     " with no process listed")))
    return _result("health.hbm", problems, "HBM reported and idle on %d NPU chip(s)" % len(chips),
                   {"busy": len(problems)}, remedy="stop the process holding HBM (npu-smi info lists it), or "
                   "reset the NPU if none is listed")


def judge_npu_temperature(chips, limits):
    problems, temps = [], {}
    for c in chips:
        name = "npu %d" % c["npu_id"]
        temps[name] = c["temp"]
        if c["temp"] is not None:
            problems += _absolute_temperature(name, c["temp"], limits)
    if all(v is None for v in temps.values()):
        return record("health.temperature", "skip", "npu-smi reports no temperature")
    return _result("health.temperature", problems, "%d NPU chip(s) at %s C" % (len(chips), _span(temps.values())),
                   {"max_temperature_c": max(v for v in temps.values() if v is not None)}, {"temperature_c": temps},
                   remedy="check cooling (fans, airflow, inlet temperature) and the BMC's sensors. " + HEALTH_REMEDY)


def judge_npu_aicore(chips, processes, limits):
    problems = []
    limit = float(limits["aicore_idle_pct"])
    for c in chips:
        if c["aicore"] is not None and c["aicore"] > limit:
            if not [p for p in processes if p["npu_id"] == c["npu_id"]]:
                problems.append(("warn", "npu %d: AI cores %s%% busy with no process listed" % (c["npu_id"],
                                                                                                  c["aicore"])))
    return _result("health.aicore", problems, "AI cores idle (<= %g%%) or busy with a listed process on %d NPU "
                   "chip(s)" % (limit, len(chips)), {"busy_unlisted": len(problems)},
                   remedy="a task outside any listed process holds the AI cores (a hung job, another container): "
                          "find it, or reset the NPU")


# ----- I/O -----

def read_smi_xml(smi):
    """``nvidia-smi -q -x``, read once per interpreter: ``devices`` counts from the same answer."""
    return read_tool([smi, "-q", "-x"], timeout=60, hang_note="a GPU that hangs the driver")


def read_npu_info(npu_smi):
    """``npu-smi info``, read once per interpreter: ``devices`` counts from the same answer."""
    return read_tool([npu_smi, "info"], timeout=60, hang_note="a wedged device can hang the tool")


def nvidia_smi_path():
    return find_tool("nvidia-smi", ["/usr/bin", "/usr/local/bin"])


def npu_smi_path():
    return find_tool("npu-smi", ["/usr/local/bin", "/usr/local/sbin"])


def kernel_log():
    """(exit, text, command): ``dmesg``, or the journal's kernel messages when dmesg is refused."""
    status, text = run_tool(["dmesg"], timeout=20)
    if status == 0:
        return status, text, "dmesg"
    # short-monotonic stamps lines as dmesg does (seconds since boot), so one parser ages both.
    j_status, j_text = run_tool(["journalctl", "-k", "-b", "-q", "--no-pager", "-o", "short-monotonic"], timeout=20)
    if j_status == 0:
        return j_status, j_text, "journalctl -k -b"
    return status, text, "dmesg"


def read_uptime():
    """Seconds since boot (``/proc/uptime``, under ``ACCELSTACK_SIM_ROOT`` in tests), None when unreadable."""
    path = os.environ.get("ACCELSTACK_SIM_ROOT", "").rstrip("/") + "/proc/uptime"
    try:
        with open(path) as handle:
            return parse_uptime(handle.read())
    except (IOError, OSError):
        return None


def xid_window(limits):
    """The ``xid_window_s`` limit in seconds; 0 or less judges every Xid since boot."""
    value = limits.get("xid_window_s")
    if value is None:
        return XID_WINDOW_S
    value = float(value)
    return value if value > 0 else None


def nvidia_checks(smi, limits, rows, accelerator, window_s=XID_WINDOW_S):
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
    checks = [judge_ecc(gpus), judge_remapped_rows(gpus), judge_retired_pages(gpus, limits),
              judge_throttle(gpus, limits), judge_gpu_temperature(gpus, limits), judge_persistence(gpus),
              judge_nvlink(gpus, row, link_text, link_exit), judge_xids(log_text, log_exit, log_command, read_uptime(), window_s)]
    for check in checks:
        check["evidence"].setdefault("sku", row.get("sku") if row else None)
    return checks


def ascend_checks(npu_smi, limits):
    status, text = read_npu_info(npu_smi)
    if status != 0:
        return [record("health", "error", "npu-smi info failed (exit %d): %s" % (status, text.strip()[-200:]),
                       evidence={"tool_output": text[-2000:]},
                       remedy="check the driver: npu-smi must answer before anything can train")]
    chips, processes = parse_npu_table(text)
    if not chips:
        return [record("health", "error", "npu-smi info lists no NPU: the devices check says why",
                       evidence={"tool_output": text[-2000:]},
                       remedy="read the devices check's record; lspci | grep 19e5 shows whether the NPUs are on the bus")]
    details, ecc, errors = {}, {}, []
    for chip in chips:  # the detail view of a chip that is not OK (reference ascend.md 4.2: -i N -c C -t health)
        if (chip["health"] or "").upper() != "OK" and chip["npu_id"] not in details:
            h_status, h_text = run_tool([npu_smi, "info", "-t", "health", "-i", str(chip["npu_id"]), "-c",
                                         str(chip["chip_id"] or 0)], timeout=30)
            details[chip["npu_id"]] = parse_kv(h_text) if h_status == 0 else {"error": h_text.strip()[-200:]}
    for npu in sorted(set(c["npu_id"] for c in chips)):
        e_status, e_text = run_tool([npu_smi, "info", "-t", "ecc", "-i", str(npu)], timeout=30)
        if e_status != 0:
            errors.append("npu-smi info -t ecc -i %d failed (exit %d): %s" % (npu, e_status, e_text.strip()[-120:]))
        else:
            ecc[npu] = parse_kv(e_text)
    ecc_check = judge_npu_ecc(ecc) if not errors else record(
        "health.ecc", "error", "; ".join(errors[:3]),
        remedy="run npu-smi info -t ecc -i N on the host; an npu-smi too old for -t ecc needs the driver of the pin")
    return [judge_npu_status(chips, details), ecc_check, judge_npu_hbm(chips, processes, limits),
            judge_npu_temperature(chips, limits), judge_npu_aicore(chips, processes, limits)]


def main(config):
    vendor = config.get("vendor")
    limits = dict(LIMITS)
    limits.update(dict((k, v) for k, v in (config.get("device_health") or {}).items() if v is not None))
    if vendor == "cpu":
        return [record("health", "skip", "cpu stack: no accelerator to check")]
    smi = nvidia_smi_path()
    npu_smi = npu_smi_path()
    if vendor is None:
        vendor = "nvidia" if smi else "ascend" if npu_smi else None
        if vendor is None:
            return [record("health", "skip", "no nvidia-smi or npu-smi on this host: no accelerator to check")]
    if vendor == "nvidia":
        if not smi:
            return [record("health", "error", "nvidia-smi not found on PATH", remedy="install the NVIDIA driver "
                           "(inv provision --limit <host>)")]
        return nvidia_checks(smi, limits, config.get("device_rows"), config.get("accelerator") or "",
                             xid_window(limits))
    if vendor == "ascend":
        if not npu_smi:
            return [record("health", "error", "npu-smi not found on PATH or in /usr/local/bin",
                           remedy="install the Ascend driver (inv provision --limit <host>)")]
        return ascend_checks(npu_smi, limits)
    return [record("health", "skip", "vendor %r has no health reads" % vendor)]


if __name__ == "__main__":
    main_entry("health", main)
