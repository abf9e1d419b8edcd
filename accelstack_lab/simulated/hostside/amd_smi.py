#!/usr/bin/env python3
"""SIMULATED amd-smi for the accelstack lab. Not AMD's tool.

Prints the real tool's JSON (``--json``) for the devices recorded in ``@@DEVICES_FILE@@``: ``list``, ``static``,
``metric``, ``process``, ``bad-pages``, and ``version``'s one line. The shapes follow AMD's documented output
(https://github.com/ROCm/amdsmi, amdsmi_cli/README.md and CHANGELOG: lower-case keys of the text form, quantities
as ``{"value": v, "unit": u}`` from ROCm 6.1, ``"N/A"`` for what a GPU does not report); with ``"format":
"gpu_data"`` in the devices file the JSON is wrapped as amd-smi 26 (ROCm 7) wraps it. Only ``--json`` is
simulated: the text form is what a person reads, and the validators never ask for it.

The devices file (written by ``accelstack_lab.simulated.amd.amd_devices``): ``{"rocm", "driver", "format",
"devices": [...]}``. Fault knobs, per device: ``present: false`` (gone from every listing), ``ecc_uncorrectable``,
``ecc_deferred``, ``bad_pages`` (``[{"status": "RESERVED" | "PENDING" | "UNRESERVABLE"}]``), ``temp_hotspot``,
``temp_mem``, ``power_w``, ``gfx_activity``, ``violations`` (``{"socket_thermal": "ACTIVE"}``), ``throttle_status``,
``pcie_width``, ``vram_used_mb``, ``processes`` (``[{"pid": n, "name": "python", "vram_mb": n}]``). A devices file
that does not parse is a driver that does not answer: exit 1 with the library's complaint. Stdlib only, Python
3.6 syntax.
"""

import json
import sys

DEVICES_FILE = "@@DEVICES_FILE@@"
VERSION = "AMDSMI Tool: 24.6.2+simulated | AMDSMI Library version: 24.6.2.0 | ROCm version: %s | amdgpu version: %s"


def load():
    try:
        with open(DEVICES_FILE) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        sys.stderr.write("AMDSMI_STATUS_INIT_ERROR: amdgpu driver not loaded or /dev/kfd not accessible "
                         "(simulated amd-smi, accelstack lab)\n")
        sys.exit(1)


def q(value, unit):
    return "N/A" if value is None else {"value": value, "unit": unit}


def devices(doc):
    return [d for d in doc["devices"] if d.get("present", True)]


def static(d, doc):
    return {
        "gpu": d["index"],
        "asic": {"market_name": d["name"], "vendor_id": "0x1002", "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
                 "subvendor_id": "0x1002", "device_id": d["device_id"], "rev_id": "0x00",
                 "asic_serial": d["serial"], "oam_id": d["index"], "num_compute_units": d["compute_units"],
                 "target_graphics_version": d["gfx"]},
        "bus": {"bdf": d["bus_id"], "max_pcie_width": d["max_pcie_width"],
                "max_pcie_speed": q(d["max_pcie_speed"], "GT/s"), "pcie_interface_version": "Gen %d" % d["pcie_gen"],
                "slot_type": "OAM"},
        "vbios": {"name": "AMD %s" % d["name"].split()[-1], "build_date": "2024/04/18 03:47",
                  "part_number": d["vbios"], "version": d["vbios"]},
        "limit": {"max_power": q(d["power_cap_w"], "W"), "min_power": q(0, "W"), "socket_power": q(d["power_cap_w"], "W"),
                  "slowdown_edge_temperature": "N/A", "slowdown_hotspot_temperature": q(d["slowdown_hotspot_c"], "C"),
                  "slowdown_vram_temperature": q(d["slowdown_mem_c"], "C"), "shutdown_edge_temperature": "N/A",
                  "shutdown_hotspot_temperature": q(d["slowdown_hotspot_c"] + 5, "C"),
                  "shutdown_vram_temperature": q(d["slowdown_mem_c"] + 5, "C")},
        "driver": {"name": "amdgpu", "version": doc.get("driver", "N/A")},
        "board": {"model_number": "102-G30211-00", "product_serial": d["serial"], "fru_id": "N/A",
                  "product_name": d["name"], "manufacturer_name": "AMD"},
        "ras": {"eeprom_version": "0x30000", "bad_page_threshold": 128,
                "bad_page_threshold_exceeded": "True" if d.get("bad_page_threshold_exceeded") else "False",
                "parity_schema": "DISABLED", "single_bit_schema": "DISABLED", "double_bit_schema": "DISABLED",
                "poison_schema": "ENABLED"},
        "numa": {"node": d["numa_node"], "affinity": d["numa_node"]},
        "vram": {"type": "HBM3", "vendor": "N/A", "size": q(d["vram_total_mb"], "MB")},
    }


def metric(d):
    statuses = ("prochot", "ppt", "socket_thermal", "vr_thermal", "hbm_thermal")
    violations = d.get("violations") or {}
    ecc_u, ecc_d = d.get("ecc_uncorrectable", 0), d.get("ecc_deferred", 0)
    return {
        "gpu": d["index"],
        "usage": {"gfx_activity": q(d.get("gfx_activity", 0), "%"), "umc_activity": q(0, "%"),
                  "mm_activity": "N/A"},
        "power": {"socket_power": q(d.get("power_w"), "W"), "gfx_voltage": "N/A", "soc_voltage": "N/A",
                  "mem_voltage": "N/A", "throttle_status": d.get("throttle_status", "N/A"),
                  "power_management": "ENABLED"},
        "temperature": {"edge": "N/A", "hotspot": q(d.get("temp_hotspot"), "C"), "mem": q(d.get("temp_mem"), "C")},
        "pcie": {"width": d.get("pcie_width", d["max_pcie_width"]), "speed": q(d.get("pcie_speed", 2.5), "GT/s"),
                 "bandwidth": "N/A", "replay_count": 0, "l0_to_recovery_count": 0},
        "ecc": {"total_correctable_count": d.get("ecc_correctable", 0), "total_uncorrectable_count": ecc_u,
                "total_deferred_count": ecc_d, "cache_correctable_count": 0, "cache_uncorrectable_count": 0},
        "ecc_blocks": {"UMC": {"correctable_count": d.get("ecc_correctable", 0), "uncorrectable_count": ecc_u,
                               "deferred_count": ecc_d},
                       "SDMA": {"correctable_count": 0, "uncorrectable_count": 0, "deferred_count": 0}},
        "mem_usage": {"total_vram": q(d["vram_total_mb"], "MB"), "used_vram": q(d.get("vram_used_mb", 0), "MB"),
                      "free_vram": q(d["vram_total_mb"] - d.get("vram_used_mb", 0), "MB")},
        "throttle": dict(("%s_violation_status" % k, violations.get(k, "NOT ACTIVE")) for k in statuses),
    }


def process(d):
    procs = d.get("processes") or []
    if not procs:
        return {"gpu": d["index"], "process_list": [{"process_info": "No running processes detected"}]}
    return {"gpu": d["index"], "process_list": [{"process_info": {
        "name": p.get("name", "python"), "pid": p["pid"],
        "memory_usage": {"gtt_mem": q(0, "B"), "cpu_mem": q(0, "B"),
                         "vram_mem": q(int(p.get("vram_mb", 0)) * 1024 * 1024, "B")},
        "mem_usage": q(0, "B"), "usage": {"gfx": q(0, "ns"), "enc": q(0, "ns")}}} for p in procs]}


def bad_pages(d):
    pages = [dict({"page_address": "0x%x" % (0x1000 * (i + 1)), "page_size": "4 KB"}, **p)
             for i, p in enumerate(d.get("bad_pages") or [])]
    return {"gpu": d["index"], "retired": pages or "No bad pages found."}


def emit(doc, items):
    data = {"gpu_data": items} if doc.get("format") == "gpu_data" else items
    sys.stdout.write(json.dumps(data, indent=4) + "\n")


def main(argv):
    command = argv[0] if argv else ""
    doc = load()
    if command == "version":
        sys.stdout.write(VERSION % (doc.get("rocm", "N/A"), doc.get("driver", "N/A")) + "\n")
        return 0
    if "--json" not in argv:
        sys.stderr.write("simulated amd-smi (accelstack lab): only --json output is simulated\n")
        return 2
    found = devices(doc)
    if command == "list":
        emit(doc, [{"gpu": d["index"], "bdf": d["bus_id"], "uuid": d["uuid"], "kfd_id": 2000 + d["index"],
                    "node_id": 2 + d["index"], "partition_id": 0} for d in found])
    elif command == "static":
        emit(doc, [static(d, doc) for d in found])
    elif command == "metric":
        emit(doc, [metric(d) for d in found])
    elif command == "process":
        emit(doc, [process(d) for d in found])
    elif command == "bad-pages":
        emit(doc, [bad_pages(d) for d in found])
    else:
        sys.stderr.write("simulated amd-smi (accelstack lab): unknown command %r\n" % command)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
