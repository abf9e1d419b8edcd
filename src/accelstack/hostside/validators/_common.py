#!/usr/bin/env python3
"""What every host-side validator shares: the check record, running a vendor tool, and the ``__main__`` entry.

Not a validator: no declaration in ``accelstack/validate/checks/`` names it, while the upload
(``accelstack.engines.ssh.remote.ensure_uploaded``, every ``*.py`` here) carries it and its content hash covers it. A validator
runs as ``python <folder>/<name>.py '<config json>'``, so this file's folder is ``sys.path[0]`` there; loaded by
path (the unit tests) a validator puts its own folder on ``sys.path`` before importing this.

Stdlib only, Python 3.6 syntax: it runs with the host's system python as well as the stack's.
"""

import json
import os
import subprocess
import sys
import traceback

# Reads of a vendor tool's state (``nvidia-smi -q -x``, ``npu-smi info``) that every check of one interpreter
# shares: a tier's checks run in one interpreter (``_batch.py``), and each of them asks the tool the same question.
_READS = {}


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
