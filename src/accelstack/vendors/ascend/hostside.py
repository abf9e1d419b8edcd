#!/usr/bin/env python3
"""Ascend's host-side half: ``npu-smi``'s reads, their parsers and the health judgement, imported by the validators by
the config's vendor (``_common.vendor_module``) and uploaded beside them as ``vendor_ascend.py``.

Health, from ``npu-smi``: health, HBM ECC (``-t ecc``), HBM in use while idle, temperature, AI core utilisation
while idle. The interface every vendor's module has is written in ``vendors/cpu/hostside.py``. Stdlib only, Python
3.6 syntax.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this module when uploaded
from _common import (
    HEALTH_REMEDY,
    absolute_temperature,
    find_tool,
    judged,
    number,
    parse_kv,
    read_tool,
    record,
    run_tool,
    span,
    tool_failure,
)

NAME = "ascend"
HAS_DEVICES = True
TORCH_DEVICE = "npu"
TORCH_PLUGIN = "torch_npu"  # registers the npu device type: imported before torch's device API is asked
TORCH_BUILD = "torch_npu (imported before torch's device API)"
TOOL = "npu-smi"
VISIBLE_DEVICES = ("ASCEND_RT_VISIBLE_DEVICES",)
PCI_ACCELERATORS = (("0x19e5", "0x1200"),)  # Huawei processing accelerators
# Each NPU has a RoCE device IP (/etc/hccn.conf, hccn_tool) that HCCL's rank table names: the hccn check applies.
VISIBLE_UUIDS = ()
VISIBLE_ASCENDING = True  # the runtime stops at the first id out of order
DEVICE_IPS = True
# dcmi's -8005/-8020, "the device is used" (https://github.com/vllm-project/vllm-ascend/issues/2698,
# https://github.com/Ascend/cann-container-image/issues/46; the npu-dcmi-device-busy signature): _holders.py reads
# a device as someone else's by them.
BUSY_ERRORS = r"ret is -80(?:05|20)|device is used"
OOM_ERRORS = None
# Its health limits' defaults (the shipped ones travel in the config's device_health: vendors/ascend/floors.yml).
LIMITS = {"hbm_idle_used_fraction": 0.2, "aicore_idle_pct": 10}


# ----- pure parsers -----

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
                    current["temp"] = number(value)
                elif name == "aicore":
                    current["aicore"] = number(value)
                elif name == "hbm":
                    current["hbm_used"], current["hbm_total"] = number(value), number(total)
            if names is row2:
                current = None
        elif mode == "proc" and len(cells) >= 2:
            ids = first.split()
            if ids and ids[0].isdigit() and cells[1].isdigit():
                processes.append({"npu_id": int(ids[0]), "pid": int(cells[1]),
                                  "name": cells[2] if len(cells) > 2 and cells[2] else "?",
                                  "memory_mb": number(cells[3]) if len(cells) > 3 else None})
    return chips, processes


# ----- pure judgements -----

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
    return judged("health.status", problems, "%d NPU chip(s) report OK" % len(chips),
                   {"unhealthy": len(problems)}, {"health": health_details},
                   remedy="npu-smi info -t health -i N names the fault; reset (npu-smi set -t reset) or RMA. "
                          + HEALTH_REMEDY)


def judge_npu_ecc(ecc_by_npu):
    problems, metrics = [], {"hbm_double_bit": 0, "hbm_double_bit_aggregate": 0}
    for npu, values in sorted(ecc_by_npu.items()):
        now = sum(number(values.get(k)) or 0 for k in ("HBM Double Bit Error Count", "DDR Double Bit Error Count"))
        ever = sum(number(values.get(k)) or 0 for k in ("HBM Double Bit Aggregate Total Err Cnt",
                                                          "DDR Double Bit Aggregate Total Err Cnt"))
        metrics["hbm_double_bit"] += now
        metrics["hbm_double_bit_aggregate"] += ever
        if now:
            problems.append(("fail", "npu %d: %d double-bit (uncorrectable) ECC error(s)" % (npu, now)))
        elif ever:
            problems.append(("warn", "npu %d: %d double-bit ECC error(s) in its lifetime" % (npu, ever)))
    return judged("health.ecc", problems, "no double-bit ECC error on %d NPU(s)" % len(ecc_by_npu), metrics,
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
    return judged("health.hbm", problems, "HBM reported and idle on %d NPU chip(s)" % len(chips),
                   {"busy": len(problems)}, remedy="stop the process holding HBM (npu-smi info lists it), or "
                   "reset the NPU if none is listed")


def judge_npu_temperature(chips, limits):
    problems, temps = [], {}
    for c in chips:
        name = "npu %d" % c["npu_id"]
        temps[name] = c["temp"]
        if c["temp"] is not None:
            problems += absolute_temperature(name, c["temp"], limits)
    if all(v is None for v in temps.values()):
        return record("health.temperature", "skip", "npu-smi reports no temperature")
    return judged("health.temperature", problems, "%d NPU chip(s) at %s C" % (len(chips), span(temps.values())),
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
    return judged("health.aicore", problems, "AI cores idle (<= %g%%) or busy with a listed process on %d NPU "
                   "chip(s)" % (limit, len(chips)), {"busy_unlisted": len(problems)},
                   remedy="a task outside any listed process holds the AI cores (a hung job, another container): "
                          "find it, or reset the NPU")



# ----- I/O -----

def smi_path():
    return find_tool("npu-smi", ["/usr/local/bin", "/usr/local/sbin"])


def read_npu_info(npu_smi):
    """``npu-smi info``, read once per interpreter: ``devices`` counts from the same answer."""
    return read_tool([npu_smi, "info"], timeout=60, hang_note="a wedged device can hang the tool")


def checks(npu_smi, limits):
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
    for chip in chips:  # the detail view of a chip that is not OK (npu-smi info -i N -c C -t health)
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


# ----- the interface the validators call (vendors/cpu/hostside.py) -----

def present():
    """Whether the host has the vendor's tool: a config without a vendor is judged by the first that is."""
    return smi_path() is not None


def health_checks(limits, rows, accelerator):
    """The ``health.*`` records (device_health.py)."""
    npu_smi = smi_path()
    if not npu_smi:
        return [record("health", "error", "npu-smi not found on PATH or in /usr/local/bin",
                       remedy="install the Ascend driver (inv provision --limit <host>)")]
    return checks(npu_smi, limits)


def list_devices(evidence, tail=2000):
    """The ``devices`` check: (status, summary, metrics); the ``npu-smi info`` table travels as it is in
    ``evidence`` and is counted and judged on the control side (Vendor.device_counts)."""
    npu_smi = smi_path()
    evidence["command"] = "npu-smi info"
    if not npu_smi:
        evidence["tool_exit"], evidence["tool_output"] = 127, "npu-smi: not found"
    else:
        evidence["tool_exit"], evidence["tool_output"] = read_npu_info(npu_smi)
    if evidence["tool_exit"] != 0:
        evidence["tool_output"] = evidence["tool_output"][-tail:]
        return "error", "npu-smi gave no device list to count", {}
    return "pass", "npu-smi lists the NPUs", {}


def read_devices():
    """(devices, error): one dict per NPU, ``{device, index, uuid, compute_mode, memory_used_mib, memory_total_mib,
    processes: [{pid, name, memory_mib}]}``, from the interpreter's one ``npu-smi info`` (_holders.py)."""
    npu_smi = smi_path()
    if not npu_smi:
        return None, "npu-smi not found"
    status, text = read_npu_info(npu_smi)
    if status != 0:
        return None, "npu-smi info failed (exit %d): %s" % (status, _last(text))
    chips, processes = parse_npu_table(text)
    devices = {}
    for chip in chips:
        entry = devices.setdefault(chip["npu_id"], {
            "device": "npu %d" % chip["npu_id"], "index": chip["npu_id"], "uuid": None, "compute_mode": None,
            "memory_used_mib": 0, "memory_total_mib": 0, "processes": []})
        if chip.get("hbm_used") is not None and chip.get("hbm_total"):
            entry["memory_used_mib"] += chip["hbm_used"]
            entry["memory_total_mib"] += chip["hbm_total"]
    for proc in processes:
        if proc["npu_id"] in devices:
            devices[proc["npu_id"]]["processes"].append(
                {"pid": proc["pid"], "name": proc.get("name") or "?", "memory_mib": proc.get("memory_mb")})
    return [devices[k] for k in sorted(devices)], None


def _last(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def memory_evidence():
    """The ``memory.devices`` check's tool read, as evidence the control side judges (Vendor.device_memory), and
    the summary of a read that failed (None when it answered)."""
    evidence = {"command": "npu-smi info"}
    evidence["tool_exit"], evidence["tool_output"] = run_tool(["npu-smi", "info"])
    return evidence, tool_failure("npu-smi", evidence["tool_exit"], evidence["tool_output"], "device memory was")


def pcie_link(address):
    """No vendor tool read of the link: device_perf.py reads sysfs."""
    return None
