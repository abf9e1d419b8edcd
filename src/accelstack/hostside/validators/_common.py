#!/usr/bin/env python3
"""What every host-side validator shares: the check record, running a vendor tool, the vendor's host-side module, the
judgement helpers the vendors' health reads share, and the ``__main__`` entry.

Not a validator: no declaration in ``accelstack/validate/checks/`` names it, while the upload
(``accelstack.engines.ssh.remote.ensure_uploaded``, every ``*.py`` here) carries it and its content hash covers it. A validator
runs as ``python <folder>/<name>.py '<config json>'``, so this file's folder is ``sys.path[0]`` there; loaded by
path (the unit tests) a validator puts its own folder on ``sys.path`` before importing this.

A vendor's host-side half (``accelstack/vendors/<name>/hostside.py``: its tool, its reads and parsers, its health
judgement; the interface is written in ``vendors/cpu/hostside.py``) is uploaded beside the validators as
``vendor_<name>.py`` and loaded by :func:`vendor_module` from the config's ``vendor``; run from the package itself
(node-check's Slurm step, the unit tests) it is loaded from the package's ``vendors/`` folder.

Stdlib only, Python 3.6 syntax: it runs with the host's system python as well as the stack's.
"""

import glob
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import traceback

# Reads of a vendor tool's state (``nvidia-smi -q -x``, ``npu-smi info``) that every check of one interpreter
# shares: a tier's checks run in one interpreter (``_batch.py``), and each of them asks the tool the same question.
_READS = {}


HERE = os.path.dirname(os.path.abspath(__file__))
# In the package: hostside/validators/ -> accelstack/vendors/<name>/hostside.py.
PACKAGE_VENDORS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "vendors")
VENDOR_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
UPLOADED = "vendor_%s.py"


def vendor_module(name):
    """The host-side module of the vendor ``name`` (``vendor_<name>.py`` beside this file, else the package's
    ``vendors/<name>/hostside.py``); ImportError for a vendor that has none."""
    name = name or "cpu"
    if not VENDOR_NAME.match(str(name)):
        raise ImportError("vendor %r is not a vendor's name" % (name,))
    module_name = UPLOADED[:-3] % name
    if module_name in sys.modules:
        return sys.modules[module_name]
    if os.path.exists(os.path.join(HERE, UPLOADED % name)):
        return importlib.import_module(module_name)
    path = os.path.join(PACKAGE_VENDORS, name, "hostside.py")
    if not os.path.exists(path):
        raise ImportError("no host-side module for vendor %r (looked for %s and %s)"
                          % (name, os.path.join(HERE, UPLOADED % name), path))
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def vendor_modules():
    """Every vendor's host-side module that is here (uploaded, else in the package), by name."""
    names = set(os.path.basename(p)[len("vendor_"):-3] for p in glob.glob(os.path.join(HERE, UPLOADED % "*")))
    names.update(os.path.basename(os.path.dirname(p))
                 for p in glob.glob(os.path.join(PACKAGE_VENDORS, "*", "hostside.py")))
    return [vendor_module(name) for name in sorted(n for n in names if VENDOR_NAME.match(n))]


def record(check, status, summary, metrics=None, evidence=None, remedy=None):
    """One check result as the control side reads it (accelstack.validate.judge.to_record)."""
    return {"check": check, "status": status, "summary": summary, "metrics": metrics or {},
            "evidence": evidence or {}, "remedy": remedy}


def results_for(default_check):
    """``result(status, summary, metrics, evidence, remedy, check)`` for a validator whose records are named
    ``default_check`` unless a call names another (``check="memory.shm"``)."""
    def result(status, summary, metrics=None, evidence=None, remedy=None, check=default_check):
        return record(check, status, summary, metrics, evidence, remedy)
    return result


def run_tool(argv, timeout=30, hang_note=None):
    """(exit status, output); a missing or hung tool is data, not an exception. ``hang_note`` says in the
    timeout message why the tool may hang."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        return proc.returncode, proc.stdout.decode("utf-8", "replace")
    except FileNotFoundError:
        return 127, "%s: not found" % argv[0]
    except subprocess.TimeoutExpired:
        message = "%s: no answer within %d s" % (argv[0], timeout)
        return 124, message + (" (%s)" % hang_note if hang_note else "")


def read_tool(argv, timeout=30, hang_note=None):
    """:func:`run_tool` for a read of the device's state that the checks of this interpreter share: the first call
    runs the tool, later calls with the same arguments get its answer. Only for reads of state (not under a load
    a check puts on the device, not a query that may change), so a tier asks ``nvidia-smi -q -x`` once."""
    key = tuple(argv)
    if key not in _READS:
        _READS[key] = run_tool(argv, timeout=timeout, hang_note=hang_note)
    return _READS[key]


def find_tool(name, fixed):
    """``name`` on PATH, else in the ``fixed`` folders where the driver installs it; ``ACCELSTACK_SIM_ROOT`` (unset on
    real hosts, the lab's simulated driver root in tests) prefixes the fixed folders. None when it is nowhere."""
    root = os.environ.get("ACCELSTACK_SIM_ROOT", "").rstrip("/")
    folders = os.environ.get("PATH", "").split(os.pathsep) + [root + folder for folder in fixed]
    for folder in folders:
        path = os.path.join(folder, name)
        if folder and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def main_entry(name, main, error_checks=None, prints=None):
    """The validator's ``__main__``: ``sys.argv[1]`` as the JSON config, ``main(config)`` for the checks, one
    ``{"checks": [...]}`` line on stdout. A validator never raises: any exception (a config that is not JSON
    included) becomes an ``error`` record, ``"the <name> validator failed: <last traceback line>"`` with the
    traceback's tail as evidence, for the check ``name`` or, with ``error_checks``, for each check that
    ``error_checks(config)`` names (``{}`` when the config did not parse). ``prints(config)`` false means the run
    writes its own output and no document is printed (ports' listen role)."""
    config = {}
    try:
        config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    except BaseException:  # a config that is not JSON: an error record, as any other failure
        checks = failed_checks(name, {}, error_checks)
    else:
        checks = run_main(name, main, config, error_checks)
    if prints is None or prints(config):
        sys.stdout.write(json.dumps({"checks": checks}, default=str) + "\n")


def run_main(name, main, config, error_checks=None):
    """``main(config)``'s checks, or the ``error`` records of a validator that raised (:func:`main_entry`): the one
    way a validator runs, alone or in a batch (``_batch.py``)."""
    try:
        return main(config)
    except BaseException:  # a validator never raises: its own failure is an error record
        return failed_checks(name, config, error_checks)


def failed_checks(name, config, error_checks=None):
    """The ``error`` records of a validator that raised, from the exception being handled."""
    lines = traceback.format_exc().splitlines()
    summary = "the %s validator failed: %s" % (name, lines[-1])
    host = (config.get("host") if isinstance(config, dict) else None) or "HOST"
    if "ModuleNotFoundError" in lines[-1] or "ImportError" in lines[-1]:
        remedy = "the stack's module is missing on the host: inv provision --limit %s" % host
    else:
        remedy = "run the command in this record's evidence on the host by hand and read its traceback"
    return [record(check, "error", summary, evidence={"traceback": lines[-15:]}, remedy=remedy)
            for check in (error_checks(config) if error_checks else [name])]


# ----- what the vendors' health judgements share (vendors/<name>/hostside.py) -----

NA = ("n/a", "na", "[n/a]", "not supported", "[not supported]", "unknown error", "")
HEALTH_REMEDY = "drain the host, then inv validate --limit <host> --only health after the fix"
LOG_STAMP = re.compile(r"^\s*\[\s*(\d+(?:\.\d+)?)\]")  # dmesg's [  1234.567890]: seconds since boot


def number(value):
    """``"37 C"``, ``"72.13 W"``, ``"16x"``, ``"-2 C"`` -> a number; ``None`` for N/A and the unparsable."""
    if value is None:
        return None
    match = re.match(r"^\s*(-?\d+(?:\.\d+)?)", value)
    if not match:
        return None
    value = float(match.group(1))
    return int(value) if value == int(value) else value


def parse_kv(text):
    """``Key : value`` lines (tab-indented, as vendor tools print their detail views) -> {key: value}."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            values[key.strip()] = value.strip()
    return values


def pick_row(rows, names, accelerator=""):
    """The first per-SKU row one of whose ``match`` strings occurs in the accelerator var or a device name."""
    haystack = [n.lower() for n in list(names) + [accelerator or ""] if n]
    for row in rows or []:
        for needle in row.get("match") or []:
            if any(needle.lower() in hay for hay in haystack):
                return row
    return None


def worst(statuses):
    order = ["skip", "pass", "warn", "error", "fail"]
    return max(statuses, key=order.index) if statuses else "skip"


def judged(check, problems, ok_summary, metrics, evidence=None, remedy=None):
    """``problems``: [(status, text)]. The worst status wins; no problem is ``pass`` with ``ok_summary``."""
    if not problems:
        return record(check, "pass", ok_summary, metrics, evidence)
    status = worst([s for s, _ in problems])
    shown = [t for s, t in problems if s == status] + [t for s, t in problems if s != status]
    return record(check, status, "; ".join(shown[:6]) + (" (+%d more)" % (len(shown) - 6) if len(shown) > 6 else ""),
                  metrics, evidence, remedy if status in ("fail", "warn") else None)


def absolute_temperature(name, value, limits):
    """A device without a slowdown limit of its own, against the absolute fallbacks."""
    if value >= float(limits["temperature_fail_c"]):
        return [("fail", "%s: %s C >= %s C" % (name, value, limits["temperature_fail_c"]))]
    if value >= float(limits["temperature_warn_c"]):
        return [("warn", "%s: %s C >= %s C" % (name, value, limits["temperature_warn_c"]))]
    return []


def span(values):
    known = [v for v in values if v is not None]
    if not known:
        return "?"
    low, high = min(known), max(known)
    return "%s" % low if low == high else "%s-%s" % (low, high)


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


def tool_failure(name, exit_status, output, what):
    """The summary of a vendor tool that did not answer, or None when it did (exit 0): ``what`` was not measured."""
    if exit_status == 0:
        return None
    lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    if exit_status == 127:
        return "%s is not installed (%s): %s not measured" % (name, last, what)
    if exit_status == 124:
        return "%s did not answer (%s): %s not measured" % (name, last, what)
    return "%s failed (exit %d: %s): %s not measured" % (name, exit_status, last, what)
