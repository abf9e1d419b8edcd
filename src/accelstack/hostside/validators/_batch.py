#!/usr/bin/env python3
"""Several validators in one interpreter: a tier's checks pay for one python start-up (and, with the stack's python,
one torch import), and share one read of each vendor tool (``_common.read_tool``). Not a validator: no declaration
names it; the control side (``accelstack.engines.ssh.host.run_batch``) runs it for node-check and over SSH alike.

    python _batch.py '{"config": {...host config...}, "runs": [{"script": "env.py", "name": "env",
                       "checks": ["env"], "mode": null, "collectives": null, "deadline_s": 50, "timeout": 60}, ...]}'

Each run imports its script as the module of its file's name (so ``torch.multiprocessing``'s spawned ranks find
``collectives.spawned_rank`` as they find it when the script runs alone) and calls its ``main`` with the host config
plus the run's ``mode``, ``collectives`` and ``deadline_s``, exactly what the script gets when it runs by itself. What a
run prints (its libraries' noise, its tools' stderr) is caught per run at the file descriptors and sent back with
its checks, so each check's record carries its own output, as when it runs alone. One line per run, flushed as the run
ends: ``{"batch": INDEX, "script", "duration_s", "stdout", "stderr", "checks": [...]}``.

A run that outlives its ``timeout`` is reported as an ``error`` (it hung: a wedged device, a tool without a time
limit) and the batch exits 124; the control side runs the checks after it one by one, so one hung check never
costs the others their records. Stdlib only, Python 3.6 syntax.
"""

import gc
import importlib
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import record, run_main

RUN_KEYS = ("mode", "collectives", "deadline_s")
TAIL = 20000  # characters of a run's own output sent back: the records keep their tails, not megabytes


class Captured(object):
    """fd 1 and fd 2 of this process into temporary files while a run runs (child processes included); ``out`` is
    the stream the batch's own lines go to."""

    def __init__(self):
        self.out = os.fdopen(os.dup(1), "w")
        self.saved = (os.dup(1), os.dup(2))
        self.files = None

    def start(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.files = (tempfile.TemporaryFile(), tempfile.TemporaryFile())
        os.dup2(self.files[0].fileno(), 1)
        os.dup2(self.files[1].fileno(), 2)

    def stop(self):
        """The run's (stdout, stderr), and fds 1 and 2 back where they were."""
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        texts = []
        for handle in self.files or ():
            handle.seek(0)
            texts.append(handle.read().decode("utf-8", "replace")[-TAIL:])
            handle.close()
        self.files = None
        return texts[0] if texts else "", texts[1] if len(texts) > 1 else ""

    def emit(self, line):
        self.out.write(json.dumps(line, default=str) + "\n")
        self.out.flush()


def release_devices():
    """Between runs: what a finished run left allocated goes back (garbage, and the device memory torch's caching
    allocator holds), so the next run (a spawned rank, a measurement) finds the device as it would alone. Without
    torch there is no device memory to give back: a health batch (vendor tools, files) skips the collection, a few
    milliseconds a run on every health check."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    gc.collect()
    try:
        accel = getattr(torch, "accelerator", None)
        if accel is not None and accel.is_available():
            module = torch.get_device_module(accel.current_accelerator().type)
            empty = getattr(module, "empty_cache", None)
            if empty is not None:
                empty()
    except Exception:  # nothing to release, or nothing that can be: the next run measures what is there
        pass


def run_one(spec, config):
    script = spec["script"]
    name = spec.get("name") or script[:-3]
    checks = list(spec.get("checks") or [name])
    run_config = dict(config)
    for key in RUN_KEYS:
        if spec.get(key) is not None:
            run_config[key] = spec[key]
    try:
        module = importlib.import_module(script[:-3])
        main = module.main
    except BaseException:  # an import that fails is the script's failure, as when it runs alone
        main = None
        failure = sys.exc_info()
    if main is None:
        def main(_config, failure=failure):
            raise failure[1].with_traceback(failure[2])
    return run_main(name, main, run_config, lambda _config: checks)


def watchdog(captured, index, spec, started, lock, state):
    """The run outlived its time limit: its error record, then exit, so the control side runs what is left."""
    def expire():
        with lock:
            if state.get("done"):
                return
            state["expired"] = True
        stdout, stderr = captured.stop()
        checks = [record(check, "error", "no result within %d s: the check hung (a wedged device or a tool without "
                         "a time limit) and was stopped" % int(spec["timeout"]),
                         evidence={"stdout_tail": stdout.splitlines()[-20:], "stderr_tail": stderr.splitlines()[-20:]},
                         remedy="see the stderr tail and dmesg; run the check alone on the host: inv validate "
                                "--only %s" % check)
                  for check in spec.get("checks") or [spec["script"][:-3]]]
        captured.emit({"batch": index, "script": spec["script"], "duration_s": round(time.monotonic() - started, 3),
                       "stdout": stdout, "stderr": stderr, "checks": checks, "timed_out": True})
        os._exit(124)
    timer = threading.Timer(float(spec["timeout"]), expire)
    timer.daemon = True
    return timer


def main(argv):
    document = json.loads(argv[1]) if len(argv) > 1 else {}
    config = document.get("config") or {}
    captured = Captured()
    for index, spec in enumerate(document.get("runs") or []):
        started = time.monotonic()
        lock, state = threading.Lock(), {}
        timer = watchdog(captured, index, spec, started, lock, state) if spec.get("timeout") else None
        captured.start()
        if timer is not None:
            timer.start()
        checks = run_one(spec, config)
        with lock:
            expired = state.get("expired")
            state["done"] = True
        if expired:
            time.sleep(60)  # the watchdog is reporting this run and ending the process
        if timer is not None:
            timer.cancel()
        stdout, stderr = captured.stop()
        captured.emit({"batch": index, "script": spec["script"], "duration_s": round(time.monotonic() - started, 3),
                       "stdout": stdout, "stderr": stderr, "checks": checks})
        release_devices()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
