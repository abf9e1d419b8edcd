#!/usr/bin/env python3
"""AMD's host-side half: ``amd-smi``'s reads, their parsers and the health judgement, imported by the validators by
the config's vendor (``_common.vendor_module``) and uploaded beside them as ``vendor_amd.py``.

Health, from ``amd-smi metric --json`` (ECC counters, temperatures, power, throttle and violation status, PCIe
link, memory in use), ``amd-smi static --json`` (each GPU's own temperature and power limits, its PCIe maximum, the
RAS bad-page threshold flag) and ``amd-smi bad-pages --json`` (retired, pending and unreservable pages):
``health.ecc``, ``health.bad_pages``, ``health.temperature``, ``health.throttle``, ``health.power``,
``health.pcie``. amd-smi's JSON is a list of ``{"gpu": N, ...}`` (up to amd-smi 25) or ``{"gpu_data": [...]}``
(amd-smi 26, ROCm 7), its quantities ``{"value": 32, "unit": "GT/s"}`` or plain, ``"N/A"`` what a GPU does not
report (https://github.com/ROCm/amdsmi, CHANGELOG; ROCm/rocm-systems PR #223). The interface every vendor's module
has is written in ``vendors/cpu/hostside.py``. Stdlib only, Python 3.6 syntax.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this module when uploaded
from _common import (
    HEALTH_REMEDY,
    NA,
    absolute_temperature,
    find_tool,
    judged,
    pick_row,
    read_tool,
    record,
    span,
    tool_failure,
)

NAME = "amd"
HAS_DEVICES = True
TORCH_DEVICE = "cuda"  # a ROCm build of torch runs its GPUs as torch's cuda device type (HIP under torch.cuda)
TORCH_PLUGIN = None
TORCH_BUILD = "a ROCm build (torch.version.hip set: a +rocmX.Y wheel from download.pytorch.org/whl/rocmX.Y)"
TOOL = "amd-smi"
VISIBLE_DEVICES = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
# PCI vendor:class prefixes of its accelerators: MI300X (processing accelerator), MI250X/MI210 (display controller).
PCI_ACCELERATORS = (("0x1002", "0x1200"), ("0x1002", "0x0380"))
VISIBLE_UUIDS = ("GPU-",)  # ROCR_VISIBLE_DEVICES takes the GPU-<hex> UUIDs rocminfo prints
VISIBLE_ASCENDING = False
DEVICE_IPS = False
# HIP's own words for a device that is someone else's, and its out-of-memory error (torch on ROCm: "HIP out of
# memory"): _holders.py reads a device as someone else's by them.
BUSY_ERRORS = r"hipErrorContextAlreadyInUse|hipErrorDeviceAlreadyInUse"
OOM_ERRORS = r"hipErrorOutOfMemory|HIP out of memory"
# Its health limits' defaults (the shipped ones travel in the config's device_health: vendors/amd/floors.yml).
LIMITS = {"busy_utilization_pct": 5, "idle_power_fraction": 0.9, "max_bad_pages": 64}
# Where the ROCm packages put the tool when /opt/rocm/bin is not on PATH.
TOOL_FOLDERS = ["/opt/rocm/bin", "/usr/bin", "/usr/local/bin"]
# The MI300 violation statuses (amd-smi metric --throttle, "PVIOL / TVIOL"): the thermal and hot ones are hardware
# slowdowns (fail); package power tracking at idle is a cap set too low (warn).
FAIL_VIOLATIONS = ("socket_thermal", "vr_thermal", "hbm_thermal", "prochot")
IDLE_WARN_VIOLATIONS = ("ppt",)
# PCIe generation by the link's transfer rate.
PCIE_GEN = ((2.5, 1), (5.0, 2), (8.0, 3), (16.0, 4), (32.0, 5), (64.0, 6))


# ----- pure parsers -----

def gpus_of(text, what):
    """An amd-smi ``--json`` GPU document -> one mapping per GPU, keys in lower case. Warnings before the document
    (a permission amd-smi lacks) are skipped. ValueError on anything else."""
    match = re.search(r"^[ \t]*[\[{]", text or "", re.MULTILINE)
    if match is None:
        raise ValueError("%s: no JSON document in its output: %r" % (what, (text or "")[:200]))
    try:
        data = json.loads(text[match.start():])
    except ValueError as exc:
        raise ValueError("%s: not valid JSON (%s): %r" % (what, exc, text[match.start():match.start() + 200])) from None
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        data = data["gpu_data"]
    elif isinstance(data, dict) and "gpu" in data:
        data = [data]
    if not isinstance(data, list):
        raise ValueError("%s: expected a list of GPUs, got %s" % (what, type(data).__name__))
    return [_lower(item) for item in data if isinstance(item, dict)]


def _lower(node):
    if isinstance(node, dict):
        return dict((str(k).lower(), _lower(v)) for k, v in node.items())
    if isinstance(node, list):
        return [_lower(v) for v in node]
    return node


def dig(node, *path):
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def value_of(node):
    """A quantity (``{"value": 45, "unit": "C"}``, ``45``, ``"45 C"``) -> a number; None for ``N/A``."""
    if isinstance(node, dict):
        node = node.get("value")
    if node is None or isinstance(node, bool):
        return None
    if isinstance(node, (int, float)):
        return node
    match = re.match(r"^\s*(-?\d+(?:\.\d+)?)", str(node))
    if not match or str(node).strip().lower() in NA:
        return None
    number = float(match.group(1))
    return int(number) if number == int(number) else number


def text_of(node):
    if node is None or isinstance(node, (dict, list)):
        return None
    text = str(node).strip()
    return None if text.lower() in NA else text


def mib_of(node, default_unit="MB"):
    """A size (``{"value": 196592, "unit": "MB"}``, ``"10.1 GB"``, a number in ``default_unit``) -> MiB."""
    unit = node.get("unit") if isinstance(node, dict) else None
    if unit is None and isinstance(node, str):
        match = re.match(r"^\s*-?\d+(?:\.\d+)?\s*([A-Za-z]+)", node)
        unit = match.group(1) if match else None
    amount = value_of(node)
    scale = {"B": 1.0 / (1 << 20), "KB": 1.0 / 1024, "MB": 1, "GB": 1024}.get(str(unit or default_unit).upper())
    return int(amount * scale) if amount is not None and scale is not None else None


def pcie_gen(speed_gts):
    """A link's transfer rate in GT/s -> its PCIe generation (32 -> 5), None when unknown."""
    if speed_gts is None:
        return None
    return next((gen for rate, gen in PCIE_GEN if abs(speed_gts - rate) < 0.01), None)


def index_of(node, position):
    value = value_of(node.get("gpu"))
    return int(value) if value is not None else position


def parse_metric(text):
    """``amd-smi metric --json`` -> one dict per GPU with what the health checks judge."""
    out = []
    for position, node in enumerate(gpus_of(text, "amd-smi metric")):
        ecc = node.get("ecc") if isinstance(node.get("ecc"), dict) else {}
        throttle = node.get("throttle") if isinstance(node.get("throttle"), dict) else {}
        violations = {}
        for key, value in throttle.items():
            if key.endswith("_violation_status") and text_of(value) is not None:
                violations[key[:-len("_violation_status")]] = text_of(value).upper() == "ACTIVE"
        out.append({
            "index": index_of(node, position),
            "ecc": {"uncorrectable": _sum(ecc, "total_uncorrectable_count", "cache_uncorrectable_count"),
                    "deferred": _sum(ecc, "total_deferred_count"),
                    "correctable": _sum(ecc, "total_correctable_count", "cache_correctable_count")},
            "ecc_blocks": dict((block, value_of(dig(counts, "uncorrectable_count")))
                               for block, counts in (node.get("ecc_blocks") or {}).items()
                               if isinstance(counts, dict)) if isinstance(node.get("ecc_blocks"), dict) else {},
            "temperature": {"edge": value_of(dig(node, "temperature", "edge")),
                            "hotspot": value_of(dig(node, "temperature", "hotspot")),
                            "mem": value_of(dig(node, "temperature", "mem"))},
            "power": {"socket_w": value_of(dig(node, "power", "socket_power")),
                      "throttle_status": text_of(dig(node, "power", "throttle_status")),
                      "management": text_of(dig(node, "power", "power_management"))},
            "violations": violations,
            "gfx_activity": value_of(dig(node, "usage", "gfx_activity")),
            "memory_used_mib": mib_of(dig(node, "mem_usage", "used_vram")),
            "memory_total_mib": mib_of(dig(node, "mem_usage", "total_vram")),
            "pcie": {"width": value_of(dig(node, "pcie", "width")),
                     "speed_gts": value_of(dig(node, "pcie", "speed"))},
        })
    return out


def _sum(section, *keys):
    values = [value_of(section.get(key)) for key in keys]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def parse_static(text):
    """``amd-smi static --json`` -> {gpu index: {name, bus_id, limits, max PCIe, bad-page threshold exceeded}}."""
    out = {}
    for position, node in enumerate(gpus_of(text, "amd-smi static")):
        limit = node.get("limit") if isinstance(node.get("limit"), dict) else {}
        exceeded = text_of(dig(node, "ras", "bad_page_threshold_exceeded"))
        out[index_of(node, position)] = {
            "name": text_of(dig(node, "asic", "market_name")) or text_of(dig(node, "board", "product_name")),
            "bus_id": text_of(dig(node, "bus", "bdf")),
            "slowdown_hotspot_c": value_of(limit.get("slowdown_hotspot_temperature")),
            "slowdown_mem_c": value_of(limit.get("slowdown_vram_temperature")),
            "slowdown_edge_c": value_of(limit.get("slowdown_edge_temperature")),
            "power_cap_w": value_of(limit.get("socket_power")) or value_of(limit.get("max_power")),
            "max_pcie_width": value_of(dig(node, "bus", "max_pcie_width")),
            "max_pcie_speed_gts": value_of(dig(node, "bus", "max_pcie_speed")),
            "bad_page_threshold_exceeded": None if exceeded is None else exceeded.lower() in ("true", "yes"),
        }
    return out


def parse_bad_pages(text):
    """``amd-smi bad-pages --json`` -> {gpu index: {"retired": n, "pending": n, "unreservable": n}}. A GPU's
    ``retired``, ``pending`` and ``un_res`` are lists of pages (``page_address``, ``page_size``, ``status``) or a
    sentence saying there are none; a page's ``status`` (RESERVED, PENDING, UNRESERVABLE: the library's
    amdsmi_memory_page_status_t) decides where a page of a list that mixes them counts."""
    out = {}
    for position, node in enumerate(gpus_of(text, "amd-smi bad-pages")):
        counts = {"retired": 0, "pending": 0, "unreservable": 0}
        for key in ("retired", "pending", "un_res"):
            pages = node.get(key)
            for page in pages if isinstance(pages, list) else []:
                status = (text_of(page.get("status")) or "").upper() if isinstance(page, dict) else ""
                if "PENDING" in status or (not status and key == "pending"):
                    counts["pending"] += 1
                elif "UNRES" in status or (not status and key == "un_res"):
                    counts["unreservable"] += 1
                else:
                    counts["retired"] += 1
        out[index_of(node, position)] = counts
    return out


def parse_processes(text):
    """``amd-smi process --json`` -> {gpu index: [{pid, name, memory_mib}]}. An entry is ``{"process_info":
    {...}}`` (amd-smi 6.2) or the mapping itself; a GPU without one says so in a sentence."""
    out = {}
    for position, node in enumerate(gpus_of(text, "amd-smi process")):
        procs = out.setdefault(index_of(node, position), [])
        entries = node.get("process_list")
        if entries is None and isinstance(node.get("process_info"), dict):
            entries = [node["process_info"]]  # the text form's one PROCESS_INFO section
        for entry in entries if isinstance(entries, list) else []:
            info = entry.get("process_info", entry) if isinstance(entry, dict) else None
            if not isinstance(info, dict) or value_of(info.get("pid")) is None:
                continue
            memory = dig(info, "memory_usage", "vram_mem")
            if value_of(memory) is None:
                memory = info.get("mem_usage", info.get("mem"))
            procs.append({"pid": int(value_of(info.get("pid"))), "name": text_of(info.get("name")) or "?",
                          "memory_mib": mib_of(memory, "B")})
    return out


def parse_list(text):
    """``amd-smi list --json`` -> [{index, bus_id, uuid}]."""
    return [{"index": index_of(node, position), "bus_id": text_of(node.get("bdf")),
             "uuid": text_of(node.get("uuid"))} for position, node in enumerate(gpus_of(text, "amd-smi list"))]


# ----- pure judgements -----

def _name(gpu):
    return "gpu %d" % gpu["index"]


def judge_ecc(gpus):
    problems = []
    metrics = {"uncorrectable": 0, "deferred": 0, "correctable": 0}
    for g in gpus:
        ecc = g["ecc"]
        for key in metrics:
            metrics[key] += ecc[key] or 0
        if ecc["uncorrectable"]:
            blocks = sorted(b for b, n in g["ecc_blocks"].items() if n)
            problems.append(("fail", "%s: %d uncorrectable ECC error(s)%s" % (
                _name(g), ecc["uncorrectable"], " in %s" % ", ".join(b.upper() for b in blocks) if blocks else "")))
        elif ecc["deferred"]:
            problems.append(("warn", "%s: %d deferred (poisoned) ECC error(s)" % (_name(g), ecc["deferred"])))
    if all(g["ecc"]["uncorrectable"] is None and g["ecc"]["deferred"] is None for g in gpus):
        return record("health.ecc", "skip", "amd-smi reports no ECC counters on these GPUs (RAS not supported)")
    return judged("health.ecc", problems, "no uncorrectable ECC error on %d GPU(s)" % len(gpus), metrics,
                  remedy="drain the host; reset the GPU (amd-smi reset -G -g N, or reboot) and read amd-smi metric "
                         "-e again; if uncorrectable errors return, RMA the GPU. " + HEALTH_REMEDY)


def judge_bad_pages(gpus, static, pages, pages_exit, pages_text, limits):
    """Retired HBM pages: a pending or unreservable page, or the driver's bad-page threshold passed, fails; pages
    at the limit fail, fewer warn (AMD's RAS retires pages of uncorrectable errors; amdgpu refuses a GPU past its
    threshold)."""
    problems, total = [], 0
    limit = int(limits["max_bad_pages"])
    exceeded = [i for i, s in sorted(static.items()) if s.get("bad_page_threshold_exceeded")]
    for index in exceeded:
        problems.append(("fail", "gpu %d: past the driver's bad-page threshold" % index))
    if pages_exit != 0:
        if exceeded:
            return judged("health.bad_pages", problems, "", {"retired_pages": None})
        if re.search(r"not supported|N/A", pages_text or "", re.IGNORECASE):
            return record("health.bad_pages", "skip", "amd-smi reports no bad-page list on these GPUs")
        return record("health.bad_pages", "error", tool_failure("amd-smi bad-pages", pages_exit, pages_text,
                                                                "the retired pages were"),
                      evidence={"tool_output": (pages_text or "")[-2000:]},
                      remedy="run amd-smi bad-pages on the host; it reads the GPU's RAS EEPROM (root)")
    for g in gpus:
        counts = pages.get(g["index"], {"retired": 0, "pending": 0, "unreservable": 0})
        total += counts["retired"]
        if counts["pending"]:
            problems.append(("fail", "%s: %d page retirement(s) pending (they apply at the next GPU reset)"
                             % (_name(g), counts["pending"])))
        if counts["unreservable"]:
            problems.append(("fail", "%s: %d bad page(s) could not be retired" % (_name(g), counts["unreservable"])))
        if counts["retired"] >= limit:
            problems.append(("fail", "%s: %d retired pages (>= %d)" % (_name(g), counts["retired"], limit)))
        elif counts["retired"]:
            problems.append(("warn", "%s: %d retired page(s)" % (_name(g), counts["retired"])))
    return judged("health.bad_pages", problems, "no retired or pending page on %d GPU(s)" % len(gpus),
                  {"retired_pages": total}, {"pages": dict(("gpu %d" % k, v) for k, v in sorted(pages.items()))},
                  remedy="pending: reset the GPU (or reboot) so the pages retire; unreservable, at the limit or past "
                         "the driver's threshold: RMA the GPU. " + HEALTH_REMEDY)


def judge_temperature(gpus, static, limits):
    """The hotspot (junction) and HBM temperatures against the GPU's own slowdown limits (``amd-smi static``'s
    LIMIT section), else the absolute fallbacks."""
    problems, temps = [], {}
    margin = float(limits["temperature_margin_c"])
    for g in gpus:
        own = static.get(g["index"], {})
        t = g["temperature"]
        hot = t["hotspot"] if t["hotspot"] is not None else t["edge"]
        temps[_name(g)] = hot
        for label, value, slowdown in (("hotspot", t["hotspot"], own.get("slowdown_hotspot_c")),
                                       ("HBM", t["mem"], own.get("slowdown_mem_c")),
                                       ("edge", t["edge"] if t["hotspot"] is None else None,
                                        own.get("slowdown_edge_c"))):
            if value is None:
                continue
            if slowdown is None:
                if label != "HBM":
                    problems += absolute_temperature(_name(g), value, limits)
            elif value >= slowdown:
                problems.append(("fail", "%s: %s %s C >= its slowdown temperature %s C" % (_name(g), label, value,
                                                                                            slowdown)))
            elif value >= slowdown - margin:
                problems.append(("warn", "%s: %s %s C, within %g C of its slowdown temperature %s C while idle"
                                 % (_name(g), label, value, margin, slowdown)))
    if all(v is None for v in temps.values()):
        return record("health.temperature", "skip", "amd-smi reports no GPU temperature")
    return judged("health.temperature", problems, "%d GPU(s) at %s C (hotspot)" % (len(gpus), span(temps.values())),
                  {"max_temperature_c": max(v for v in temps.values() if v is not None)}, {"temperature_c": temps},
                  remedy="check cooling (fans, airflow, inlet temperature) and the BMC's sensors. " + HEALTH_REMEDY)


def judge_throttle(gpus, limits):
    """MI300's violation statuses (thermal and PROCHOT active: fail; package power at idle: warn); on older GPUs
    amd-smi's THROTTLE_STATUS while idle (warn)."""
    problems, active = [], {}
    busy_at = float(limits["busy_utilization_pct"])
    reported = False
    for g in gpus:
        idle = (g["gfx_activity"] or 0) <= busy_at
        on = sorted(k for k, v in g["violations"].items() if v)
        active[_name(g)] = on
        reported = reported or bool(g["violations"]) or g["power"]["throttle_status"] is not None
        for kind in on:
            if kind in FAIL_VIOLATIONS:
                problems.append(("fail", "%s: clocks held down by %s" % (_name(g), kind)))
            elif kind in IDLE_WARN_VIOLATIONS and idle:
                problems.append(("warn", "%s: %s violation active while idle" % (_name(g), kind)))
        if not g["violations"] and (g["power"]["throttle_status"] or "").upper() == "THROTTLED" and idle:
            problems.append(("warn", "%s: throttled while idle" % _name(g)))
    if not reported:
        return record("health.throttle", "skip", "amd-smi reports no throttle or violation status on these GPUs")
    return judged("health.throttle", problems, "no slowdown active on %d GPU(s)" % len(gpus),
                  {"throttled_gpus": len(set(t.split(":")[0] for _, t in problems))}, {"active_violations": active},
                  remedy="thermal or PROCHOT: check cooling, fans, power supply and the BMC's event log; power at "
                         "idle: amd-smi metric --power and the power cap (amd-smi static --limit). " + HEALTH_REMEDY)


def judge_power(gpus, static, limits):
    """Socket power while idle against the GPU's own cap: near it with nothing running warns (a stuck job outside
    any listed process, a cap set too low); power management disabled warns."""
    problems, draws = [], {}
    busy_at = float(limits["busy_utilization_pct"])
    fraction = float(limits["idle_power_fraction"])
    for g in gpus:
        watts = g["power"]["socket_w"]
        draws[_name(g)] = watts
        cap = static.get(g["index"], {}).get("power_cap_w")
        if (g["power"]["management"] or "").upper() == "DISABLED":
            problems.append(("warn", "%s: power management disabled" % _name(g)))
        if watts is not None and cap and (g["gfx_activity"] or 0) <= busy_at and watts >= fraction * cap:
            problems.append(("warn", "%s: %s W of its %s W cap while idle" % (_name(g), watts, cap)))
    if all(v is None for v in draws.values()):
        return record("health.power", "skip", "amd-smi reports no socket power on these GPUs")
    return judged("health.power", problems, "%d GPU(s) at %s W" % (len(gpus), span(draws.values())),
                  {"max_power_w": max(v for v in draws.values() if v is not None)}, {"power_w": draws},
                  remedy="find what keeps the GPU busy (amd-smi process) and check the power cap (amd-smi static "
                         "--limit). " + HEALTH_REMEDY)


def judge_pcie(gpus, static):
    """The link's width against the GPU's maximum: a link trained narrower fails. The speed is not judged here:
    an idle GPU lowers its link speed to save power (the link's speed under load is device_perf's)."""
    problems, links = [], {}
    for g in gpus:
        width, speed = g["pcie"]["width"], g["pcie"]["speed_gts"]
        own = static.get(g["index"], {})
        links[_name(g)] = {"width": width, "speed_gts": speed, "max_width": own.get("max_pcie_width"),
                           "max_speed_gts": own.get("max_pcie_speed_gts")}
        if width is not None and own.get("max_pcie_width") and width < own["max_pcie_width"]:
            problems.append(("fail", "%s: PCIe link x%d of x%d" % (_name(g), width, own["max_pcie_width"])))
    if all(v["width"] is None for v in links.values()):
        return record("health.pcie", "skip", "amd-smi reports no PCIe link on these GPUs")
    return judged("health.pcie", problems, "PCIe links at full width on %d GPU(s)" % len(gpus),
                  {"narrow_links": len(problems)}, {"links": links},
                  remedy="reseat the GPU or its riser, check the slot's BIOS settings; a link that stays narrow "
                         "needs the baseboard serviced. " + HEALTH_REMEDY)


# ----- I/O -----

def smi_path():
    return find_tool("amd-smi", TOOL_FOLDERS)


def read_json(smi, *args):
    """``amd-smi <args> --json``, read once per interpreter: the checks of one tier share it."""
    return read_tool([smi] + list(args) + ["--json"], timeout=60, hang_note="a GPU that hangs the driver")


def checks(smi, limits, rows, accelerator):
    status, text = read_json(smi, "metric")
    if status != 0:
        return [record("health", "error", "amd-smi metric failed (exit %d): %s" % (status, text.strip()[-200:]),
                       evidence={"tool_output": text[-2000:]},
                       remedy="check the driver: amd-smi must answer before anything can train (dmesg | grep amdgpu)")]
    try:
        gpus = parse_metric(text)
    except ValueError as exc:
        return [record("health", "error", str(exc), evidence={"tool_output": text[-2000:]},
                       remedy="run amd-smi metric --json on the host: output it cannot parse means a driver or tool "
                              "fault")]
    if not gpus:
        return [record("health", "error", "amd-smi metric lists no GPU: the devices check says why",
                       remedy="read the devices check's record; lspci -d 1002: shows whether the GPUs are on the bus")]
    s_status, s_text = read_json(smi, "static")
    static = {}
    if s_status == 0:
        try:
            static = parse_static(s_text)
        except ValueError:
            static = {}  # without its own limits each GPU is judged against the absolute ones
    p_status, p_text = read_json(smi, "bad-pages")
    pages = {}
    if p_status == 0:
        try:
            pages = parse_bad_pages(p_text)
        except ValueError as exc:
            p_status, p_text = 1, str(exc)
    row = pick_row(rows, [s.get("name") or "" for s in static.values()], accelerator)
    found = [judge_ecc(gpus), judge_bad_pages(gpus, static, pages, p_status, p_text, limits),
             judge_temperature(gpus, static, limits), judge_throttle(gpus, limits),
             judge_power(gpus, static, limits), judge_pcie(gpus, static)]
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
        return [record("health", "error", "amd-smi not found on PATH or in /opt/rocm/bin",
                       remedy="install ROCm's amd-smi with the driver (inv provision --limit <host>)")]
    return checks(smi, limits, rows, accelerator)


def list_devices(evidence, tail=2000):
    """The ``devices`` check: (status, summary, metrics) from ``amd-smi list --json``, with the tool's exit and the
    GPUs (or its output) in ``evidence``; the count is judged on the control side (Vendor.device_counts)."""
    smi = smi_path()
    evidence["command"] = "amd-smi list --json"
    if not smi:
        evidence["tool_exit"], evidence["tool_output"] = 127, "amd-smi: not found"
        return "error", "amd-smi gave no device list to count", {}
    status, text = read_json(smi, "list")
    evidence["tool_exit"] = status
    if status != 0:
        evidence["tool_output"] = text[-tail:]
        return "error", "amd-smi gave no device list to count", {}
    try:
        gpus = parse_list(text)
    except ValueError as exc:
        evidence["tool_output"] = text[-tail:]
        evidence["parse_error"] = str(exc)
        return "error", "amd-smi gave no device list to count", {}
    evidence["gpus"] = gpus
    return "pass", "amd-smi lists %d GPU(s)" % len(gpus), {}


def read_devices():
    """(devices, error): one dict per GPU, ``{device, index, uuid, compute_mode, memory_used_mib, memory_total_mib,
    processes: [{pid, name, memory_mib}]}``, from ``amd-smi metric`` and ``amd-smi process`` (_holders.py)."""
    smi = smi_path()
    if not smi:
        return None, "amd-smi not found"
    status, text = read_json(smi, "metric")
    if status != 0:
        return None, "amd-smi metric failed (exit %d): %s" % (status, _last(text))
    p_status, p_text = read_json(smi, "process")
    if p_status != 0:
        return None, "amd-smi process failed (exit %d): %s" % (p_status, _last(p_text))
    l_status, l_text = read_json(smi, "list")
    try:
        gpus = parse_metric(text)
        processes = parse_processes(p_text)
        uuids = dict((g["index"], g["uuid"]) for g in parse_list(l_text)) if l_status == 0 else {}
    except ValueError as exc:
        return None, str(exc)
    return [{"device": _name(g), "index": g["index"], "uuid": uuids.get(g["index"]), "compute_mode": None,
             "memory_used_mib": g["memory_used_mib"], "memory_total_mib": g["memory_total_mib"],
             "processes": processes.get(g["index"], [])} for g in gpus], None


def _last(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def memory_evidence():
    """The ``memory.devices`` check's tool reads, as evidence the control side judges (Vendor.device_memory), and
    the summary of a read that failed (None when every read answered)."""
    smi = smi_path() or "amd-smi"
    evidence = {"command": "amd-smi metric --json ; amd-smi process --json"}
    evidence["tool_exit"], evidence["tool_output"] = read_json(smi, "metric")
    evidence["apps_exit"], evidence["apps_output"] = read_json(smi, "process")
    failed = (tool_failure("amd-smi", evidence["tool_exit"], evidence["tool_output"], "device memory was")
              or tool_failure("amd-smi process", evidence["apps_exit"], evidence["apps_output"], "device memory was"))
    return evidence, failed


def pcie_link(address):
    """The PCIe link of the GPU at ``address`` as amd-smi reads it (current from ``metric``, maximum from
    ``static``), None where it does not answer (device_perf.py reads sysfs then)."""
    smi = smi_path()
    if not smi:
        return None
    m_status, m_text = read_json(smi, "metric")
    s_status, s_text = read_json(smi, "static")
    if m_status != 0 or s_status != 0:
        return None
    try:
        gpus, static = parse_metric(m_text), parse_static(s_text)
    except ValueError:
        return None
    wanted = address.lower()[-12:]
    for g in gpus:
        own = static.get(g["index"], {})
        if (own.get("bus_id") or "").lower()[-12:] == wanted:
            return {"current_gen": pcie_gen(g["pcie"]["speed_gts"]), "max_gen": pcie_gen(own.get("max_pcie_speed_gts")),
                    "current_width": g["pcie"]["width"], "max_width": own.get("max_pcie_width")}
    return None
