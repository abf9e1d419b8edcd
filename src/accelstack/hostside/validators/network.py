#!/usr/bin/env python3
# Declared in accelstack/validate/checks/network.py (tier, python, timeout, config keys, judge, help).
"""Ascend NPU device IPs: what ``/etc/hccn.conf`` says against what each NPU's RoCE interface really has.

HCCL's rank table takes every NPU's ``device_ip`` from ``address_<id>`` in ``/etc/hccn.conf`` (the file that
``hccn_tool -i N -ip -s address A netmask M`` persists), and provisioning reads it from there; the address the
interface answers on is what ``hccn_tool -i N -ip -g`` reports. A stale ``address_N`` makes NPU N unreachable
over RDMA, which surfaces only later as HCCL connect timeouts (EI0006 "Getting socket times out", link
establish timeouts). One record, ``hccn``: ``pass`` when every NPU agrees, ``fail`` naming each NPU whose
addresses differ or that one side lacks, ``error`` when hccn_tool or npu-smi is missing, fails to list the NPUs
or hangs on one, ``skip`` on hosts without an Ascend driver (cpu and NVIDIA stacks).

NPU ids: ``npu-smi info -l``'s ``NPU ID`` lines (what Huawei's own DeviceIP-conf.sh walks), plus every
``address_<id>`` hccn.conf lists (an A3 board has more hccn devices than npu-smi NPU ids). The queries run side by
side: hccn_tool takes tens of ms per device, and a wedged one would otherwise hold up the rest.

``ACCELSTACK_SIM_ROOT`` (unset on real hosts) prefixes the fixed paths read here, as it does for the lab's
simulated driver, so the unit tests run against a temporary root. Stdlib only, Python 3.6 syntax.
"""

import os
import shutil
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for, run_tool, vendor_module

CHECK = "hccn"
HCCN_CONF = "/etc/hccn.conf"
INSTALL_INFO = "/etc/ascend_install.info"
ASCEND_BASE = "/usr/local/Ascend"
# Where the driver puts hccn_tool, then the places a site links it to (accelstack.provision.state looks alike).
HCCN_TOOL_PATHS = ("/usr/local/Ascend/driver/tools/hccn_tool", "/usr/local/bin/hccn_tool", "/usr/bin/hccn_tool")
NPU_SMI_PATHS = ("/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi")
QUERY_TIMEOUT = 10
WEDGED = "a wedged device can hang the tool"
SHOWN = 4  # devices named in a summary or remedy before "and N more"
result = results_for(CHECK)


def sim_root():
    return os.environ.get("ACCELSTACK_SIM_ROOT", "").rstrip("/")


def rooted(path):
    """Prefix the simulation root once: a path already under it (the simulated driver records rooted install
    paths in ascend_install.info) is left alone."""
    root = sim_root()
    if not root or not path.startswith("/") or path == root or path.startswith(root + "/"):
        return path
    return root + path


def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


# ----- parsers (kept in step with accelstack.facts.parsers; the unit tests compare them) -----

def parse_key_values(text, sep):
    """``key<sep>value`` lines; blank lines and ``#`` comments skipped, later keys win, quotes removed
    (accelstack.facts.parsers.parse_key_values)."""
    values = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or sep not in line:
            continue
        key, _, value = line.partition(sep)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def parse_hccn_ip(text):
    """``hccn_tool -i N -ip -g`` -> (ipaddr, netmask); an unconfigured NPU prints nothing: (None, None)."""
    values = parse_key_values(text, ":")
    return values.get("ipaddr") or None, values.get("netmask") or None


def parse_hccn_conf(text):
    """``/etc/hccn.conf`` -> {device id: {"address": ..., "netmask": ...}} for every ``address_<id>`` with a value
    (accelstack.facts.parsers.parse_hccn_conf, plus the netmask); other keys and malformed lines are ignored."""
    found = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        for field in ("address", "netmask"):
            number = key[len(field) + 1:]
            if sep and value and key.startswith(field + "_") and number.isdigit():
                found.setdefault(int(number), {})[field] = value
    return dict((device, fields) for device, fields in found.items() if fields.get("address"))


def parse_npu_ids(text):
    """``npu-smi info -l`` -> the ``NPU ID : n`` values, sorted."""
    ids = set()
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "NPU ID" and value.strip().isdigit():
            ids.add(int(value.strip()))
    return sorted(ids)


# ----- the host -----

def find_tool(fixed, name):
    for path in fixed:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which(name)


def hccn_tool_candidates():
    """The driver's tools folder from the install record (a driver installed with --install-path), then the
    usual places; every one under the simulation root when one is set."""
    base = parse_key_values(read_text(rooted(INSTALL_INFO)), "=").get("Driver_Install_Path_Param")
    paths = [os.path.join(base, "driver", "tools", "hccn_tool")] if base and base.startswith("/") else []
    return [rooted(p) for p in paths + [p for p in HCCN_TOOL_PATHS if p not in paths]]


def query_all(tool, ids):
    """{device id: (exit status, output)} of ``hccn_tool -i N -ip -g``, run side by side."""
    answers = {}

    def ask(device):
        answers[device] = run_tool([tool, "-i", str(device), "-ip", "-g"], timeout=QUERY_TIMEOUT,
                                   hang_note=WEDGED)

    threads = [threading.Thread(target=ask, args=(device,)) for device in ids]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join(QUERY_TIMEOUT + 5)
    for device in ids:
        answers.setdefault(device, (124, "%s: no answer within %d s (%s)" % (tool, QUERY_TIMEOUT, WEDGED)))
    return answers


def last_line(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def judge_device(device, conf, exit_status, output, tool):
    """(kind, summary part, remedy part) for one NPU; kind is ``ok``, ``fail`` or ``unknown`` (not queried)."""
    address, mask = conf.get("address"), conf.get("netmask")
    set_ip = "%s -i %d -ip -s address %%s netmask %%s" % (tool, device)
    if exit_status == 124:
        return ("unknown", "npu %d: %s" % (device, last_line(output)),
                "npu %d: check its health (npu-smi info) and dmesg; a hung hccn_tool points at the device" % device)
    if exit_status != 0:
        where = "address_%d=%s in hccn.conf" % (device, address) if address else "npu-smi lists it"
        return ("fail", "npu %d: %s, but hccn_tool -i %d -ip -g fails (exit %d: %s)"
                % (device, where, device, exit_status, last_line(output)),
                "npu %d: check the device (npu-smi info, dmesg); if it is gone for good, drop address_%d from %s"
                % (device, device, HCCN_CONF))
    live, live_mask = parse_hccn_ip(output)
    if address and live and address == live:
        return "ok", None, None
    if address and live:
        return ("fail", "npu %d: hccn.conf address_%d=%s, interface %s" % (device, device, address, live),
                "npu %d: keep the live address in hccn.conf: %s, or, if %s is the site's plan, fix the interface: %s"
                % (device, set_ip % (live, live_mask or mask or "<mask>"), address,
                   set_ip % (address, mask or live_mask or "<mask>")))
    if live:
        return ("fail", "npu %d: missing from hccn.conf, interface %s" % (device, live),
                "npu %d: persist it: %s" % (device, set_ip % (live, live_mask or "<mask>")))
    if address:
        return ("fail", "npu %d: hccn.conf address_%d=%s, interface has no address" % (device, device, address),
                "npu %d: fix the interface: %s" % (device, set_ip % (address, mask or "<mask>")))
    return ("fail", "npu %d: no device IP in hccn.conf nor on the interface" % device,
            "npu %d: set the site's RoCE address: %s" % (device, set_ip % ("<ip>", "<mask>")))


def shown(parts):
    more = len(parts) - SHOWN
    return "; ".join(parts[:SHOWN]) + ("; and %d more" % more if more > 0 else "")


def main(config):
    vendor = config.get("vendor")
    host = config.get("host") or "<host>"
    # The vendor whose devices have RoCE device IPs (its host-side module's DEVICE_IPS: Ascend's hccn.conf); a config
    # without a vendor looks for hccn_tool.
    if vendor is not None and not vendor_module(vendor).DEVICE_IPS:
        return [result("skip", "not an Ascend host (%s stack): no NPU device IPs to check" % vendor)]
    conf_path = rooted(HCCN_CONF)
    candidates = hccn_tool_candidates()
    tool = find_tool(candidates, "hccn_tool")
    evidence = {"hccn_conf": conf_path, "hccn_tool": tool}
    if tool is None:
        if vendor is None:
            return [result("skip", "no Ascend driver here (no hccn_tool): no NPU device IPs to check",
                           evidence=evidence)]
        evidence["looked_in"] = candidates + ["$PATH"]
        return [result("error", "hccn_tool not found: is the Ascend driver installed?", evidence=evidence,
                       remedy="install the stack's Ascend driver (inv provision --limit %s); hccn_tool lives in "
                              "<install path>/driver/tools" % host)]
    conf_text = read_text(conf_path)
    conf = parse_hccn_conf(conf_text)
    evidence["hccn_conf_present"] = conf_text is not None
    npu_smi = find_tool([rooted(p) for p in NPU_SMI_PATHS], "npu-smi")
    listed = []
    if npu_smi is not None:
        evidence["list_command"] = "%s info -l" % npu_smi
        evidence["tool_exit"], output = run_tool([npu_smi, "info", "-l"], hang_note=WEDGED)
        listed = parse_npu_ids(output) if evidence["tool_exit"] == 0 else []
        if evidence["tool_exit"] != 0:
            evidence["tool_output"] = output[-2000:]
    evidence["npu_smi_ids"] = listed
    if npu_smi is None or evidence.get("tool_exit") != 0:
        # Without the NPU list an NPU missing from hccn.conf goes unseen: nothing complete was measured.
        return [result("error", "cannot list the NPUs: npu-smi info -l %s" % (
            "is not installed" if npu_smi is None else "failed (exit %d)" % evidence["tool_exit"]),
            evidence=evidence, remedy="check the Ascend driver: npu-smi info must answer (inv provision --limit "
                                      "%s installs the stack's driver)" % host)]
    ids = sorted(set(listed) | set(conf))
    if not ids:
        return [result("skip", "no NPU on this host (npu-smi info -l lists none, %s lists no address_N)"
                       % conf_path, evidence=evidence)]
    answers = query_all(tool, ids)
    devices = {}
    fails, unknowns, fail_remedies, unknown_remedies = [], [], [], []
    for device in ids:
        exit_status, output = answers[device]
        kind, summary, remedy = judge_device(device, conf.get(device, {}), exit_status, output, tool)
        live, live_mask = parse_hccn_ip(output) if exit_status == 0 else (None, None)
        devices[str(device)] = {"hccn_conf": conf.get(device, {}).get("address"),
                                "hccn_conf_netmask": conf.get(device, {}).get("netmask"),
                                "live": live, "live_netmask": live_mask, "exit": exit_status,
                                "in_npu_smi": device in listed, "ok": kind == "ok"}
        if exit_status != 0:
            devices[str(device)]["output"] = output[-500:]
        if kind == "fail":
            fails.append(summary)
            fail_remedies.append(remedy)
        elif kind == "unknown":
            unknowns.append(summary)
            unknown_remedies.append(remedy)
    evidence["devices"] = devices
    evidence["query"] = "%s -i N -ip -g" % tool
    metrics = {"devices": len(ids), "agree": len(ids) - len(fails) - len(unknowns), "disagree": len(fails),
               "unqueried": len(unknowns)}
    if fails:
        return [result("fail", "%d of %d NPU device IP(s) in %s (the rank table's device_ip) disagree with "
                       "hccn_tool -ip -g: %s" % (len(fails), len(ids), conf_path, shown(fails + unknowns)),
                       metrics, evidence,
                       shown(fail_remedies + unknown_remedies)
                       + "; then re-render the rank table (inv provision --limit %s) and re-run inv validate "
                         "--only hccn" % host)]
    if unknowns:
        return [result("error", "hccn_tool did not answer for %d of %d NPU(s): %s"
                       % (len(unknowns), len(ids), shown(unknowns)), metrics, evidence, shown(unknown_remedies))]
    return [result("pass", "%d NPU device IP(s): %s agrees with hccn_tool -ip -g" % (len(ids), conf_path),
                   metrics, evidence)]


if __name__ == "__main__":
    main_entry(CHECK, main)
