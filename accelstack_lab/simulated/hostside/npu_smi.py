#!/usr/bin/env python3
"""SIMULATED npu-smi for the accelstack lab (installed by the simulated Ascend driver package). Not Huawei's tool.

Prints the real tool's formats (tests/data/captures/npu_smi_info_*.txt) for the devices recorded in the driver's
``.simulated/devices.json``; driver and firmware versions come from their ``version.info`` files, as the real
tool reports what is installed. A device marked ``present: false`` is gone from every listing (a lab fault).

``npu-smi info -t ecc -i N`` prints the ECC counters in the format of Huawei's npu-smi documentation (quoted in
the vllm-ascend install guide): ``Key : value`` lines, keys padded to 40. Fault knobs, per device in
``devices.json`` (optional): ``health`` (``Warning``, ``Critical``), ``temp_c``, ``aicore_pct``, ``hbm_used_mb``,
``hbm_double_bit`` (now) and ``hbm_double_bit_aggregate`` (lifetime) ECC counts, ``processes``
(``[{"pid": n, "name": "python", "memory_mb": n}]``: listed in the process table).
"""

import json
import os
import sys

DEVICES_FILE = "@@DEVICES_FILE@@"
DRIVER_HOME = "@@DRIVER_HOME@@"
FIRMWARE_HOME = "@@FIRMWARE_HOME@@"

RULE = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
DOUBLE = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"
USAGE = """Usage: npu-smi info [-h|-l|-m] | npu-smi info -t <board|health|ecc> -i <npu_id> [-c <chip_id>]
    (simulated npu-smi, accelstack lab)
"""
KEY_WIDTH = 31


def version_of(home, key="package_version"):  # type: (str, str) -> str
    values = {}
    try:
        with open(os.path.join(home, "version.info")) as handle:
            for line in handle:
                k, sep, v = line.strip().partition("=")
                if sep:
                    values[k] = v
    except OSError:
        return "NA"
    return values.get(key) or values.get("Version") or "NA"


def load():  # type: () -> dict
    try:
        with open(DEVICES_FILE) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        sys.stderr.write("DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\n"
                         "dcmi module initialize failed. ret is -8005\n")
        sys.exit(255)


def present(doc):  # type: (dict) -> list
    return [d for d in doc["devices"] if d.get("present", True)]


def pair(used, total):  # type: (object, object) -> str
    # "41052/ 65536": the real tool pads the used part to 5 and lets a 5-digit value touch the slash.
    return str(used).ljust(5) + "/ " + str(total)


def info_table(doc):  # type: (dict) -> str
    version = version_of(DRIVER_HOME)
    lines = ["+" + "-" * 96 + "+",
             "| " + ("npu-smi " + version).ljust(33) + ("Version: " + version).ljust(62) + "|",
             RULE,
             "| " + "NPU   Name".ljust(26) + "| " + "Health".ljust(14) + "| "
             + "Power(W)".ljust(12) + "Temp(C)".ljust(18) + "Hugepages-Usage(page)|",
             "| " + "Chip".ljust(26) + "| " + "Bus-Id".ljust(14) + "| "
             + "AICore(%)".ljust(12) + "Memory-Usage(MB)".ljust(18) + "HBM-Usage(MB)".ljust(21) + "|",
             DOUBLE]
    devices = present(doc)
    for d in devices:
        lines.append("| " + (str(d["id"]).ljust(6) + doc["chip"]).ljust(26) + "| " + str(d["health"]).ljust(14)
                     + "| " + str(d["power_w"]).ljust(12) + str(d["temp_c"]).ljust(18) + pair(0, 0).ljust(21) + "|")
        lines.append("| " + "0".ljust(26) + "| " + d["bus_id"].ljust(14) + "| " + str(d["aicore_pct"]).ljust(12)
                     + pair(0, 0).ljust(18) + pair(d["hbm_used_mb"], d["hbm_total_mb"]).ljust(21) + "|")
        lines.append(DOUBLE)
    lines.append(RULE)
    lines.append("| " + "NPU     Chip".ljust(26) + "| " + "Process id".ljust(14) + "| "
                 + "Process name".ljust(25) + "| " + "Process memory(MB)".ljust(24) + "|")
    lines.append(DOUBLE)
    for d in devices:
        procs = d.get("processes") or []
        if not procs:
            lines.append("| " + ("No running processes found in NPU %d" % d["id"]).ljust(95) + "|")
        for p in procs:
            lines.append("| " + (str(d["id"]).ljust(8) + "0").ljust(26) + "| " + str(p["pid"]).ljust(14) + "| "
                         + str(p.get("name", "")).ljust(25) + "| " + str(p.get("memory_mb", 0)).ljust(24) + "|")
        lines.append(DOUBLE)
    return "\n".join(lines) + "\n"


def kv(key, value):  # type: (str, object) -> str
    return "\t" + key.ljust(KEY_WIDTH) + ": " + str(value)


def info_list(doc):  # type: (dict) -> str
    devices = present(doc)
    lines = [kv("Total Count", len(devices)), ""]
    for d in devices:
        lines += [kv("NPU ID", d["id"]), kv("Chip Count", 1), ""]
    return "\n".join(lines) + "\n"


def info_mapping(doc):  # type: (dict) -> str
    header = "\t" + "NPU ID".ljust(KEY_WIDTH) + "Chip ID".ljust(KEY_WIDTH) + "Chip Logic ID".ljust(KEY_WIDTH) \
        + "Chip Name"
    lines = [header]
    for logic, d in enumerate(present(doc)):
        lines.append("\t" + str(d["id"]).ljust(KEY_WIDTH) + "0".ljust(KEY_WIDTH) + str(logic).ljust(KEY_WIDTH)
                     + "Ascend " + doc["chip"])
    return "\n".join(lines) + "\n"


def find(doc, npu_id):  # type: (dict, str) -> dict
    for d in present(doc):
        if str(d["id"]) == npu_id:
            return d
    sys.stderr.write("Error: the npu id %s is invalid. (simulated npu-smi)\n" % npu_id)
    sys.exit(1)


def board(doc, d, chip):  # type: (dict, dict, object) -> str
    firmware = version_of(FIRMWARE_HOME, "Version")
    if chip is not None:
        lines = [kv("NPU ID", d["id"]), kv("Chip ID", chip), kv("Chip Type", "Ascend"), kv("Chip Name", doc["chip"]),
                 kv("Chip Version", "V1"), kv("Board ID", "0x60"), kv("PCB ID", "A"), kv("BOM ID", 1),
                 kv("Chip Position ID", d["id"]), kv("PCIe Bus Info", d["bus_id"]),
                 kv("Firmware Version", firmware)]
    else:
        lines = [kv("NPU ID", d["id"]), kv("Product Name", "IT21HMDC_Bin5 (simulated)"), kv("Model", "NA"),
                 kv("Manufacturer", "Huawei"), kv("Serial Number", d["serial"]),
                 kv("Software Version", version_of(DRIVER_HOME)), kv("Firmware Version", firmware),
                 kv("Compatibility", "OK"), kv("Board ID", "0x60"), kv("PCB ID", "A"), kv("BOM ID", 1),
                 kv("PCIe Bus Info", d["bus_id"]), kv("Slot ID", d["id"]), kv("Class ID", "NA"),
                 kv("PCI Vendor ID", "0x19E5"), kv("PCI Device ID", "0xD802"), kv("Subsystem Vendor ID", "0x19E5"),
                 kv("Subsystem Device ID", "0x3003"), kv("Chip Count", 1)]
    return "\n".join(lines) + "\n"


def health(d):  # type: (dict) -> str
    ok = d["health"] == "OK"
    return "\n".join([kv("Health Status", d["health"]), kv("Error Code", "NA" if ok else "80E01801"),
                      kv("Error Information", "NA" if ok else "simulated device fault")]) + "\n"


def ecc(d):  # type: (dict) -> str
    now, ever = d.get("hbm_double_bit", 0), d.get("hbm_double_bit_aggregate", 0)
    ever = max(now, ever)
    rows = [("NPU ID", d["id"]), ("Chip Count", 1), None,
            ("DDR Single Bit Error Count", 0), ("DDR Double Bit Error Count", 0),
            ("DDR Single Bit Aggregate Total Err Cnt", 0), ("DDR Double Bit Aggregate Total Err Cnt", 0),
            ("DDR Single Bit Isolated Pages Count", 0), ("DDR Double Bit Isolated Pages Count", 0),
            ("HBM Single Bit Error Count", 0), ("HBM Double Bit Error Count", now),
            ("HBM Single Bit Aggregate Total Err Cnt", 0), ("HBM Double Bit Aggregate Total Err Cnt", ever),
            ("HBM Single Bit Isolated Pages Count", 0), ("HBM Double Bit Isolated Pages Count", ever)]
    return "\n".join("" if r is None else "\t%-40s : %s" % r for r in rows) + "\n"


def option(args, name):  # type: (list, str) -> object
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return args[i + 1]
        usage_error()
    return None


def usage_error():  # type: () -> None
    sys.stderr.write(USAGE)
    sys.exit(1)


def main(args):  # type: (list) -> int
    if not args or args[0] != "info":
        if args and args[0] in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        usage_error()
    rest = args[1:]
    doc = load()
    if not rest:
        sys.stdout.write(info_table(doc))
        return 0
    if rest == ["-l"]:
        sys.stdout.write(info_list(doc))
        return 0
    if rest == ["-m"]:
        sys.stdout.write(info_mapping(doc))
        return 0
    if rest in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    kind, npu, chip = option(rest, "-t"), option(rest, "-i"), option(rest, "-c")
    allowed = {"-t", "-i", "-c"}
    flags = rest[0::2]
    if kind is None or npu is None or len(rest) % 2 or any(f not in allowed for f in flags):
        usage_error()
    device = find(doc, str(npu))
    if kind == "board":
        sys.stdout.write(board(doc, device, chip))
    elif kind == "health":
        sys.stdout.write(health(device))
    elif kind == "ecc":
        sys.stdout.write(ecc(device))
    else:
        usage_error()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
