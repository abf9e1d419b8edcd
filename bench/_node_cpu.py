"""Where one ``node-check`` run's CPU goes, split by process (shared by bench/node_check.py and
bench/gpu_node_check.py; not a benchmark itself).

:data:`SPLIT` is a ``python -c`` program that runs ``accelstack node-check ARGS...`` in-process and prints on stderr's
last line, as JSON, its own CPU (``RUSAGE_SELF``: python start, imports, judging, records) and the CPU of each
command it runs, summed by kind (the children's time around each ``LocalTransport.run``): ``batch`` (the scripts of
one python in one interpreter, with the vendor tools they read), ``probe`` (the versions check's facts probe) and
``other`` (the validators' folder check, dmesg after a failure).
"""

from __future__ import annotations

import json

SPLIT = r"""
import json, resource, sys
from accelstack.transport import connection
parts = {}
run = connection.LocalTransport.run
def children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
def timed(self, command, **kwargs):
    before = children()
    try:
        return run(self, command, **kwargs)
    finally:
        kind = ("batch" if "_batch.py" in command else "probe" if "accelstack-probe" in command else "other")
        parts[kind] = parts.get(kind, 0.0) + children() - before
connection.LocalTransport.run = timed
from accelstack.cli import main
try:
    main(["accelstack"] + sys.argv[1:])
except SystemExit:
    pass
own = resource.getrusage(resource.RUSAGE_SELF)
parts["own"] = own.ru_utime + own.ru_stime
print(json.dumps(parts), file=sys.stderr)
"""


def split_parts(stderr: str) -> dict[str, float]:
    """The split :data:`SPLIT` printed (its stderr's last line)."""
    lines = stderr.strip().splitlines()
    return dict(json.loads(lines[-1])) if lines else {}
