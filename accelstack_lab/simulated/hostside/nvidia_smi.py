#!/usr/bin/env python3
"""SIMULATED nvidia-smi for the accelstack lab (installed by the simulated NVIDIA driver package, in
/usr/local/bin because a lab host shares /usr/bin with the machine). Not NVIDIA's tool.

Formats follow the real captures in tests/data/captures/ (nvidia_smi_*; their sources in its README.md) and
tests/data/h100/: ``--query-gpu`` CSV (header units in brackets, ``noheader``, ``nounits``), ``-q -x`` XML (the
health sections in the shape of a real H100's, driver 580: persistence mode, clock-event reasons, ECC volatile and
aggregate, retired pages, remapped rows, temperature against T.Limit), ``nvlink -s``, ``topo -m``, ``-L``,
``--version`` and the default table. Devices come from ``devices.json`` next to the driver's state; a device marked
``present: false`` has fallen off the bus.

Fault knobs, per device in ``devices.json`` (all optional, healthy when absent): ``persistence_mode``
(``Disabled``), ``clocks_event_reasons`` (active reasons, e.g. ``["hw_slowdown"]``; default ``gpu_idle`` while
utilisation is 0), ``ecc_dram_uncorrectable`` (volatile), ``ecc_aggregate_uncorrectable``,
``remapped_row_pending`` / ``remapped_row_failure`` (``Yes``), ``remapped_rows_unc``, ``retired_pages``
(``{"single_bit": n, "double_bit": n, "pending": "Yes"}``, pre-Ampere style; absent = N/A as on Hopper),
``temperature_c`` against ``tlimit_c`` (default 87), ``nvlinks_inactive`` (link numbers that are down),
``pcie_current_gen`` / ``pcie_current_width`` (a link trained below Gen5 x16). A device in use by someone else:
``processes`` (``[{"pid": n, "name": "python3", "memory_mib": n}]``: listed by ``-q -x``, ``--query-compute-apps``
and the default table, their memory added to ``memory.used``) and ``compute_mode`` (``Exclusive_Process``,
``Prohibited``; default ``Default``). ``--query-compute-apps`` takes ``pid``, ``process_name``, ``used_memory``,
``gpu_uuid``, ``gpu_bus_id``.
Exit codes as documented for nvidia-smi: 2 bad arguments, 6 no devices.
"""

import json
import sys
import time
from xml.sax.saxutils import escape

DEVICES_FILE = "@@DEVICES_FILE@@"

# field -> (header unit, value function)
FIELDS = {
    "index": ("", lambda d, doc: str(d["index"])),
    "name": ("", lambda d, doc: d["name"]),
    "uuid": ("", lambda d, doc: d["uuid"]),
    "serial": ("", lambda d, doc: d["serial"]),
    "pci.bus_id": ("", lambda d, doc: d["bus_id"]),
    "driver_version": ("", lambda d, doc: doc["driver_version"]),
    "vbios_version": ("", lambda d, doc: d["vbios"]),
    "count": ("", lambda d, doc: str(len(present(doc)))),
    "memory.total": ("MiB", lambda d, doc: str(d["memory_total_mib"])),
    "memory.used": ("MiB", lambda d, doc: str(used_mib(d))),
    "memory.free": ("MiB", lambda d, doc: str(d["memory_total_mib"] - used_mib(d))),
    "compute_mode": ("", lambda d, doc: d.get("compute_mode", "Default")),
    "temperature.gpu": ("", lambda d, doc: str(d["temperature_c"])),
    "utilization.gpu": ("%", lambda d, doc: str(d["utilization_pct"])),
    "power.draw": ("W", lambda d, doc: "%.2f" % d["power_draw_w"]),
    "power.limit": ("W", lambda d, doc: "%.2f" % d["power_limit_w"]),
    "compute_cap": ("", lambda d, doc: "9.0"),
    "persistence_mode": ("", lambda d, doc: d.get("persistence_mode", "Enabled")),
    "pstate": ("", lambda d, doc: "P0"),
    "ecc.mode.current": ("", lambda d, doc: "Enabled"),
    "mig.mode.current": ("", lambda d, doc: "Disabled"),
    "ecc.errors.uncorrected.volatile.total": ("", lambda d, doc: str(d["ecc_dram_uncorrectable"])),
    "pcie.link.gen.current": ("", lambda d, doc: str(d.get("pcie_current_gen", 5))),
    "pcie.link.gen.max": ("", lambda d, doc: "5"),
    "pcie.link.width.current": ("", lambda d, doc: str(d.get("pcie_current_width", 16))),
    "pcie.link.width.max": ("", lambda d, doc: "16"),
    "remapped_rows.pending": ("", lambda d, doc: d.get("remapped_row_pending", "No")),
    "remapped_rows.failure": ("", lambda d, doc: d.get("remapped_row_failure", "No")),
}
APP_FIELDS = {
    "pid": ("", lambda d, p: str(p["pid"])),
    "process_name": ("", lambda d, p: p.get("name", "python3")),
    "used_memory": ("MiB", lambda d, p: str(p.get("memory_mib", 0))),
    "used_gpu_memory": ("MiB", lambda d, p: str(p.get("memory_mib", 0))),
    "gpu_uuid": ("", lambda d, p: d["uuid"]),
    "gpu_bus_id": ("", lambda d, p: d["bus_id"]),
}
REASONS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
           "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting")
ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id", "gpu_serial": "serial"}


def usage_error(message="Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."):
    # type: (str) -> None
    sys.stdout.write(message + "\n")
    sys.exit(2)


def load():  # type: () -> dict
    try:
        with open(DEVICES_FILE) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        sys.stdout.write("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                         "that the latest NVIDIA driver is installed and running.\n\n")
        sys.exit(9)


def present(doc):  # type: (dict) -> list
    return [d for d in doc["devices"] if d.get("present", True)]


def require_devices(doc):  # type: (dict) -> list
    devices = present(doc)
    if not devices:
        sys.stdout.write("No devices were found\n")
        sys.exit(6)
    return devices


def query(doc, fields, fmt, ids):  # type: (dict, str, str, object) -> str
    names = [ALIASES.get(f.strip(), f.strip()) for f in fields.split(",") if f.strip()]
    for name in names:
        if name not in FIELDS:
            usage_error('Field "%s" is not a valid field to query.' % name)
    options = [o.strip() for o in fmt.split(",")]
    if not options or options[0] != "csv" or any(o not in ("csv", "noheader", "nounits") for o in options):
        usage_error('"%s" is not a valid format.' % fmt)
    lines = []
    if "noheader" not in options:
        header = []
        for name in names:
            unit = FIELDS[name][0]
            header.append("%s [%s]" % (name, unit) if unit else name)
        lines.append(", ".join(header))
    for d in select(require_devices(doc), ids):
        values = []
        for name in names:
            unit, get = FIELDS[name]
            value = get(d, doc)
            values.append(value if not unit or "nounits" in options else "%s %s" % (value, unit))
        lines.append(", ".join(values))
    return "\n".join(lines) + "\n"


def used_mib(d):  # type: (dict) -> int
    """Memory in use: the device's own knob plus what its processes hold."""
    return int(d["memory_used_mib"]) + sum(int(p.get("memory_mib", 0)) for p in d.get("processes") or [])


def query_apps(doc, fields, fmt):  # type: (dict, str, str) -> str
    """``--query-compute-apps``: one line per process on any device (none: no line at all, as the real tool)."""
    names = [f.strip() for f in fields.split(",") if f.strip()]
    for name in names:
        if name not in APP_FIELDS:
            usage_error('Field "%s" is not a valid field to query.' % name)
    options = [o.strip() for o in fmt.split(",")]
    if not options or options[0] != "csv" or any(o not in ("csv", "noheader", "nounits") for o in options):
        usage_error('"%s" is not a valid format.' % fmt)
    lines = []
    if "noheader" not in options:
        lines.append(", ".join("%s [%s]" % (n, APP_FIELDS[n][0]) if APP_FIELDS[n][0] else n for n in names))
    for d in require_devices(doc):
        for proc in d.get("processes") or []:
            values = []
            for name in names:
                unit, get = APP_FIELDS[name]
                value = get(d, proc)
                values.append(value if not unit or "nounits" in options else "%s %s" % (value, unit))
            lines.append(", ".join(values))
    return "".join(line + "\n" for line in lines)


def processes_xml(d):  # type: (dict) -> list
    out = ["\t\t<processes>"]
    for proc in d.get("processes") or []:
        out += ["\t\t\t<process_info>",
                "\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>",
                "\t\t\t\t<compute_instance_id>N/A</compute_instance_id>",
                "\t\t\t\t<pid>%d</pid>" % int(proc["pid"]),
                "\t\t\t\t<type>C</type>",
                "\t\t\t\t<process_name>%s</process_name>" % escape(str(proc.get("name", "python3"))),
                "\t\t\t\t<used_memory>%d MiB</used_memory>" % int(proc.get("memory_mib", 0)),
                "\t\t\t</process_info>"]
    out += ["\t\t</processes>", "\t\t<accounted_processes>", "\t\t</accounted_processes>"]
    return out


def select(devices, ids):  # type: (list, object) -> list
    if ids is None:
        return devices
    wanted = [i.strip() for i in str(ids).split(",")]
    wanted = [w.upper() for w in wanted]  # bus ids match whatever their hex case, as with the real tool
    chosen = [d for d in devices if str(d["index"]) in wanted or d["uuid"].upper() in wanted
              or d["bus_id"].upper() in wanted]
    if not chosen:
        sys.stdout.write("No devices were found\n")
        sys.exit(6)
    return chosen


def list_gpus(doc):  # type: (dict) -> str
    return "".join("GPU %d: %s (UUID: %s)\n" % (d["index"], d["name"], d["uuid"]) for d in require_devices(doc))


def version_text(doc):  # type: (dict) -> str
    driver = doc["driver_version"]
    return ("NVIDIA-SMI version  : %s\nNVML version        : %s\nDRIVER version      : %s\nCUDA Version        : %s\n"
            % (driver, driver.rsplit(".", 1)[0], driver, doc["cuda_version"]))


def xml_log(doc):  # type: (dict) -> str
    devices = present(doc)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
           "<nvidia_smi_log>",
           "\t<timestamp>%s</timestamp>" % time.strftime("%a %b %d %H:%M:%S %Y"),
           "\t<driver_version>%s</driver_version>" % doc["driver_version"],
           "\t<cuda_version>%s</cuda_version>" % doc["cuda_version"],
           "\t<attached_gpus>%d</attached_gpus>" % len(devices)]
    for d in devices:
        bus = d["bus_id"]
        domain, busno, rest = bus.split(":")
        out += [
            '\t<gpu id="%s">' % bus,
            "\t\t<product_name>%s</product_name>" % escape(d["name"]),
            "\t\t<product_brand>NVIDIA</product_brand>",
            "\t\t<product_architecture>Hopper</product_architecture>",
            "\t\t<persistence_mode>%s</persistence_mode>" % d.get("persistence_mode", "Enabled"),
            "\t\t<mig_mode>\n\t\t\t<current_mig>Disabled</current_mig>\n\t\t\t<pending_mig>Disabled</pending_mig>"
            "\n\t\t</mig_mode>",
            "\t\t<serial>%s</serial>" % d["serial"],
            "\t\t<uuid>%s</uuid>" % d["uuid"],
            "\t\t<minor_number>%d</minor_number>" % d["index"],
            "\t\t<vbios_version>%s</vbios_version>" % d["vbios"],
            "\t\t<gpu_reset_status>\n\t\t\t<reset_required>%s</reset_required>\n"
            "\t\t\t<drain_and_reset_recommended>No</drain_and_reset_recommended>\n\t\t</gpu_reset_status>"
            % d["reset_required"],
            "\t\t<pci>",
            "\t\t\t<pci_bus>%s</pci_bus>" % busno,
            "\t\t\t<pci_device>%s</pci_device>" % rest.split(".")[0],
            "\t\t\t<pci_domain>%s</pci_domain>" % domain[-4:],
            "\t\t\t<pci_device_id>233010DE</pci_device_id>",
            "\t\t\t<pci_bus_id>%s</pci_bus_id>" % bus,
            "\t\t\t<pci_gpu_link_info>",
            "\t\t\t\t<pcie_gen>\n\t\t\t\t\t<max_link_gen>5</max_link_gen>\n"
            "\t\t\t\t\t<current_link_gen>%d</current_link_gen>\n"
            "\t\t\t\t\t<device_current_link_gen>%d</device_current_link_gen>\n"
            "\t\t\t\t\t<max_device_link_gen>5</max_device_link_gen>\n"
            "\t\t\t\t\t<max_host_link_gen>N/A</max_host_link_gen>\n\t\t\t\t</pcie_gen>"
            % (d.get("pcie_current_gen", 5), d.get("pcie_current_gen", 5)),
            "\t\t\t\t<link_widths>\n\t\t\t\t\t<max_link_width>16x</max_link_width>\n"
            "\t\t\t\t\t<current_link_width>%dx</current_link_width>\n\t\t\t\t</link_widths>"
            % d.get("pcie_current_width", 16),
            "\t\t\t</pci_gpu_link_info>",
            "\t\t</pci>",
            "\t\t<performance_state>P0</performance_state>",
            "\t\t<compute_mode>%s</compute_mode>" % d.get("compute_mode", "Default"),
            "\t\t<clocks_event_reasons>",
        ] + ["\t\t\t<clocks_event_reason_%s>%s</clocks_event_reason_%s>"
             % (r, "Active" if r in active_reasons(d) else "Not Active", r) for r in REASONS] + [
            "\t\t</clocks_event_reasons>",
            "\t\t<fb_memory_usage>",
            "\t\t\t<total>%d MiB</total>" % d["memory_total_mib"],
            "\t\t\t<reserved>0 MiB</reserved>",
            "\t\t\t<used>%d MiB</used>" % used_mib(d),
            "\t\t\t<free>%d MiB</free>" % (d["memory_total_mib"] - used_mib(d)),
            "\t\t</fb_memory_usage>",
            "\t\t<utilization>\n\t\t\t<gpu_util>%d %%</gpu_util>\n\t\t\t<memory_util>0 %%</memory_util>\n"
            "\t\t</utilization>" % d["utilization_pct"],
            "\t\t<ecc_mode>\n\t\t\t<current_ecc>Enabled</current_ecc>\n\t\t\t<pending_ecc>Enabled</pending_ecc>"
            "\n\t\t</ecc_mode>",
        ] + health_sections(d) + [
            "\t\t<gpu_power_readings>",
            "\t\t\t<power_state>P0</power_state>",
            "\t\t\t<power_draw>%.2f W</power_draw>" % d["power_draw_w"],
            "\t\t\t<current_power_limit>%.2f W</current_power_limit>" % d["power_limit_w"],
            "\t\t</gpu_power_readings>",
        ] + processes_xml(d) + [
            "\t</gpu>",
        ]
    out.append("</nvidia_smi_log>")
    return "\n".join(out) + "\n"


def active_reasons(d):  # type: (dict) -> list
    return d.get("clocks_event_reasons", ["gpu_idle"] if not d["utilization_pct"] else [])


def health_sections(d):  # type: (dict) -> list
    """ECC, retired pages, remapped rows and temperature, in the real H100 capture's shape (driver 580)."""
    volatile = d["ecc_dram_uncorrectable"]
    aggregate = max(volatile, d.get("ecc_aggregate_uncorrectable", 0))
    out = ["\t\t<ecc_errors>", "\t\t\t<volatile>"]
    for scope, unc in (("volatile", volatile), ("aggregate", aggregate)):
        if scope == "aggregate":
            out.append("\t\t\t<aggregate>")
        out += ["\t\t\t\t<sram_correctable>0</sram_correctable>",
                "\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>",
                "\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>",
                "\t\t\t\t<dram_correctable>0</dram_correctable>",
                "\t\t\t\t<dram_uncorrectable>%d</dram_uncorrectable>" % unc]
        if scope == "aggregate":
            out += ["\t\t\t\t<sram_threshold_exceeded>No</sram_threshold_exceeded>", "\t\t\t</aggregate>"]
        else:
            out.append("\t\t\t</volatile>")
    out += ["\t\t\t<channel_repair_pending>No</channel_repair_pending>",
            "\t\t\t<tpc_repair_pending>No</tpc_repair_pending>",
            "\t\t\t<unrepairable_memory>No</unrepairable_memory>", "\t\t</ecc_errors>"]
    retired = d.get("retired_pages")
    sbe = dbe = pending = "N/A"
    if retired is not None:
        sbe, dbe = str(retired.get("single_bit", 0)), str(retired.get("double_bit", 0))
        pending = retired.get("pending", "No")
    out += ["\t\t<retired_pages>",
            "\t\t\t<multiple_single_bit_retirement>\n\t\t\t\t<retired_count>%s</retired_count>\n"
            "\t\t\t\t<retired_pagelist>N/A</retired_pagelist>\n\t\t\t</multiple_single_bit_retirement>" % sbe,
            "\t\t\t<double_bit_retirement>\n\t\t\t\t<retired_count>%s</retired_count>\n"
            "\t\t\t\t<retired_pagelist>N/A</retired_pagelist>\n\t\t\t</double_bit_retirement>" % dbe,
            "\t\t\t<pending_blacklist>N/A</pending_blacklist>",
            "\t\t\t<pending_retirement>%s</pending_retirement>" % pending,
            "\t\t</retired_pages>",
            "\t\t<remapped_rows>",
            "\t\t\t<remapped_row_corr>0</remapped_row_corr>",
            "\t\t\t<remapped_row_corr_inactive>0</remapped_row_corr_inactive>",
            "\t\t\t<remapped_row_unc>%d</remapped_row_unc>" % d.get("remapped_rows_unc", 0),
            "\t\t\t<remapped_row_unc_inactive>0</remapped_row_unc_inactive>",
            "\t\t\t<remapped_row_pending>%s</remapped_row_pending>" % d.get("remapped_row_pending", "No"),
            "\t\t\t<remapped_row_failure>%s</remapped_row_failure>" % d.get("remapped_row_failure", "No"),
            "\t\t\t<row_remapper_histogram>",
            "\t\t\t\t<row_remapper_histogram_max>2560 bank(s)</row_remapper_histogram_max>",
            "\t\t\t\t<row_remapper_histogram_high>0 bank(s)</row_remapper_histogram_high>",
            "\t\t\t\t<row_remapper_histogram_partial>0 bank(s)</row_remapper_histogram_partial>",
            "\t\t\t\t<row_remapper_histogram_low>0 bank(s)</row_remapper_histogram_low>",
            "\t\t\t\t<row_remapper_histogram_none>0 bank(s)</row_remapper_histogram_none>",
            "\t\t\t</row_remapper_histogram>",
            "\t\t</remapped_rows>",
            "\t\t<temperature>",
            "\t\t\t<gpu_temp>%d C</gpu_temp>" % d["temperature_c"],
            "\t\t\t<gpu_temp_tlimit>%d C</gpu_temp_tlimit>" % (d.get("tlimit_c", 87) - d["temperature_c"]),
            "\t\t\t<gpu_temp_max_tlimit_threshold>-8 C</gpu_temp_max_tlimit_threshold>",
            "\t\t\t<gpu_temp_slow_tlimit_threshold>-2 C</gpu_temp_slow_tlimit_threshold>",
            "\t\t\t<gpu_temp_max_gpu_tlimit_threshold>0 C</gpu_temp_max_gpu_tlimit_threshold>",
            "\t\t\t<memory_temp>%d C</memory_temp>" % (d["temperature_c"] + 3),
            "\t\t</temperature>"]
    return out


def nvlink_status(doc):  # type: (dict) -> str
    """``nvidia-smi nvlink -s``: per GPU, ``Link N: 26.562 GB/s`` or ``Link N: <inactive>`` (as an H100 prints it)."""
    lines = []
    for d in require_devices(doc):
        lines.append("GPU %d: %s (UUID: %s)" % (d["index"], d["name"], d["uuid"]))
        down = set(d.get("nvlinks_inactive", []))
        for link in range(int(doc.get("nvlinks", 18))):
            lines.append("\t Link %d: %s" % (link, "<inactive>" if link in down else "26.562 GB/s"))
    return "\n".join(lines) + "\n"


def topo(doc):  # type: (dict) -> str
    devices = require_devices(doc)
    labels = ["GPU%d" % d["index"] for d in devices]
    lines = ["\t" + "\t".join(labels + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for position, d in enumerate(devices):  # zip(strict=) is 3.10+; this runs on 3.6
        label = labels[position]
        links = [" X " if other is d else "NV%d" % doc.get("nvlinks", 18) for other in devices]
        lines.append("\t".join([label] + links + [d["cpu_affinity"], str(d["numa"]), "\tN/A"]))
    lines += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
        "  PIX  = Connection traversing at most a single PCIe bridge",
        "  NV#  = Connection traversing a bonded set of # NVLinks",
    ]
    return "\n".join(lines) + "\n"


def table(doc):  # type: (dict) -> str
    devices = require_devices(doc)
    rule = "+-----------------------------------------+------------------------+----------------------+"
    lines = [time.strftime("%a %b %d %H:%M:%S %Y").ljust(31),
             "+" + "-" * 89 + "+",
             "| " + ("NVIDIA-SMI " + doc["driver_version"]).ljust(34)
             + ("Driver Version: " + doc["driver_version"]).ljust(31)
             + ("CUDA Version: " + doc["cuda_version"]).ljust(23) + "|",
             "|-----------------------------------------+------------------------+----------------------+",
             "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
             "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
             "|                                         |                        |               MIG M. |",
             "|=========================================+========================+======================|"]
    for d in devices:
        lines.append("|" + ("%4d  %s" % (d["index"], d["name"][:24])).ljust(37) + "On  | "
                     + ("%s Off" % d["bus_id"]).rjust(22) + " | " + str(d["ecc_dram_uncorrectable"]).rjust(20) + " |")
        usage = "%dW / %4dW" % (d["power_draw_w"], d["power_limit_w"])
        memory = "%dMiB / %6dMiB" % (used_mib(d), d["memory_total_mib"])
        mode = {"Exclusive_Process": "E. Process", "Exclusive_Thread": "E. Thread"}.get(
            d.get("compute_mode", "Default"), d.get("compute_mode", "Default"))
        lines.append("| N/A   %2dC    P0" % d["temperature_c"] + usage.rjust(24) + " | " + memory.rjust(22) + " | "
                     + ("%d%%" % d["utilization_pct"]).rjust(7) + mode.rjust(13) + " |")
        lines.append("|                                         |                        |             Disabled |")
        lines.append(rule)
    lines += ["", "+" + "-" * 89 + "+",
              "| Processes:".ljust(90) + "|",
              "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
              "|        ID   ID                                                               Usage      |",
              "|" + "=" * 89 + "|"]
    procs = [(d, p) for d in devices for p in d.get("processes") or []]
    if not procs:
        lines.append("|  No running processes found".ljust(90) + "|")
    for d, p in procs:
        lines.append(("|  %4d   N/A  N/A  %8d      C   %-38s %8dMiB" % (d["index"], int(p["pid"]),
                                                                     str(p.get("name", "python3"))[:38],
                                                                     int(p.get("memory_mib", 0)))).ljust(90) + "|")
    lines.append("+" + "-" * 89 + "+")
    return "\n".join(lines) + "\n"


def main(args):  # type: (list) -> int
    doc = load()
    if not args:
        sys.stdout.write(table(doc))
        return 0
    if args in (["-L"], ["--list-gpus"]):
        sys.stdout.write(list_gpus(doc))
        return 0
    if args == ["--version"]:
        sys.stdout.write(version_text(doc))
        return 0
    if args in (["nvlink", "-s"], ["nvlink", "--status"]):
        sys.stdout.write(nvlink_status(doc))
        return 0
    if args == ["topo", "-m"]:
        sys.stdout.write(topo(doc))
        return 0
    if sorted(args) == ["-q", "-x"] or args == ["-x", "-q"] or args == ["-qx"]:
        sys.stdout.write(xml_log(doc))
        return 0
    fields = apps = fmt = ids = None
    i = 0
    while i < len(args):
        arg = args[i]
        name, sep, value = arg.partition("=")
        if arg == "-i" and i + 1 < len(args):
            ids = args[i + 1]
            i += 2
            continue
        if sep and name == "--query-gpu":
            fields = value
        elif sep and name == "--query-compute-apps":
            apps = value
        elif sep and name == "--format":
            fmt = value
        elif sep and name in ("--id", "-i"):
            ids = value
        else:
            usage_error()
        i += 1
    if apps is not None and fields is None:
        if fmt is None:
            usage_error('Must specify "--format" when using "--query-compute-apps".')
        sys.stdout.write(query_apps(doc, str(apps), str(fmt)))
        return 0
    if fields is None:
        usage_error()
    if fmt is None:
        usage_error('Must specify "--format" when using "--query-gpu".')
    sys.stdout.write(query(doc, str(fields), str(fmt), ids))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
