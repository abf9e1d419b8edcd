"""The one-round-trip facts command: the host-side probe script, shipped inside a single shell line.

The script (``accelstack/hostside/probes/facts_probe.py``) travels compressed and base64-encoded inside ``python3 -c``, so a
host needs nothing from us beforehand and the facts cost one SSH exec, not one per tool.
"""

from __future__ import annotations

import base64
import functools
import json
import shlex
import zlib
from dataclasses import dataclass, field

from accelstack.paths import hostside

PROBE_SCRIPT = "facts_probe.py"
PYTHON_MISSING_DOC = (
    '{"probe": 1, "fatal": "python3 not found on PATH", "sections": {}, "files": {}, "errors": []}'
)


@dataclass
class ProbeOptions:
    """What the probe is told: the stack's python, where Ascend lives, which disks to measure, the per-command
    timeout in seconds (npu-smi can hang on a wedged device)."""

    python: str = "python3"
    ascend_root: str = "/usr/local/Ascend"
    disk_paths: list[str] = field(default_factory=lambda: ["/"])
    timeout: float = 10.0

    def to_json(self) -> str:
        return json.dumps(
            {
                "python": self.python,
                "ascend_root": self.ascend_root,
                "disk_paths": list(self.disk_paths),
                "timeout": float(self.timeout),
            },
            sort_keys=True,
        )


def probe_script() -> str:
    """The probe's source text, as it runs on the host."""
    return hostside("probes", PROBE_SCRIPT).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=8)
def _encoded_script(name: str) -> str:
    # base64's alphabet holds no quote, space or shell metacharacter, so it can sit inside single quotes.
    source = hostside("probes", name).read_text(encoding="utf-8")
    return base64.b64encode(zlib.compress(source.encode("utf-8"), 9)).decode("ascii")


def embedded_script_command(script: str, argument: str, missing_doc: str) -> str:
    """One shell line that runs a stdlib script from ``accelstack/hostside/probes`` with the host's python3.

    ``argument`` (one JSON document) reaches the script as ``sys.argv[1]`` through ``shlex.quote``. Without a
    python3 on the host the line prints ``missing_doc``, so the caller always gets JSON to parse.
    """
    loader = (
        "import base64,zlib;"
        f'exec(compile(zlib.decompress(base64.b64decode("{_encoded_script(script)}")),"{script}","exec"))'
    )
    run = f"python3 -c {shlex.quote(loader)} {shlex.quote(argument)}"
    missing = f"printf '%s\\n' {shlex.quote(missing_doc)}"
    return f"if command -v python3 >/dev/null 2>&1; then {run}; else {missing}; fi"


def probe_command(options: ProbeOptions | None = None) -> str:
    """One shell line (POSIX sh and bash) that prints the probe's JSON document.

    Every option value reaches the shell through ``shlex.quote`` of one JSON argument. When the host has no
    ``python3`` the line still prints a JSON document, with ``fatal`` set, so the caller always parses JSON.
    """
    opts = options or ProbeOptions()
    return embedded_script_command(PROBE_SCRIPT, opts.to_json(), PYTHON_MISSING_DOC)
