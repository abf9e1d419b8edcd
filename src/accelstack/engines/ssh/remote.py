"""Getting validators onto a host once per run, and the one command that runs each.

The scripts (and each vendor's host-side module, ``vendors/<name>/hostside.py``, as ``vendor_<name>.py`` beside
them) are uploaded to ``/var/tmp/accelstack/validators/<content-hash>/`` only when that folder lacks its
``.complete`` marker: one ``test`` round trip on a host that already has this version, a handful of sftp puts
otherwise. The hash covers every script, so an edited validator lands in a new folder and an old run's folder
is never half-overwritten.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

from ...transport.connection import Transport
from ...validate.checks import Check
from ...vendors import vendors

REMOTE_BASE = "/var/tmp/accelstack/validators"
ENV_FILE = "/etc/profile.d/accelstack.sh"
SYSTEM_PYTHON = "python3"


def validator_scripts(folder: Path) -> tuple[str, list[tuple[Path, str]]]:
    """The validator scripts in a folder, with each vendor's host-side module beside them (``vendor_<name>.py``,
    where ``_common.vendor_module`` finds it), as (local path, remote name); and one hash over their names and
    contents (the remote folder's name)."""
    files = [(script, script.name) for script in sorted(folder.glob("*.py"))]
    files += [(module, f"vendor_{vendor.name}.py") for vendor in vendors()
              if (module := vendor.hostside_module()) is not None]
    digest = hashlib.sha256()
    for path, name in files:
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16], files


def remote_dir(content_hash: str) -> str:
    return f"{REMOTE_BASE}/{content_hash}"


def ensure_uploaded(transport: Transport, folder: Path) -> tuple[str, bool]:
    """The remote folder holding this version of the validators, and whether this call uploaded it."""
    content_hash, scripts = validator_scripts(folder)
    target = remote_dir(content_hash)
    marker = f"{target}/.complete"
    if transport.run(f"test -f {shlex.quote(marker)}", timeout=30).ok:
        return target, False
    transport.run(f"mkdir -p {shlex.quote(target)}", timeout=30, check=True)
    for path, name in scripts:
        transport.put(path, f"{target}/{name}", mode=0o755)
    transport.run(f"touch {shlex.quote(marker)}", timeout=30, check=True)
    return target, True


def python_for(validator: Check, stack_python: str, system_python: str = SYSTEM_PYTHON) -> str:
    return stack_python if validator.python == "stack" else system_python


def command_for(script: str, python: str, config: dict[str, Any], *, timeout: float,
                source_env: bool = True, env: dict[str, str] | None = None) -> str:
    """One shell command: the stack's env file sourced (what a training job gets), a hard time limit that kills
    the validator's whole process group, the config JSON as the one argument, every value quoted."""
    parts = []
    if source_env:
        parts.append(f"[ -r {ENV_FILE} ] && . {ENV_FILE} >/dev/null 2>&1;")
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted((env or {}).items()))
    limit = max(1, int(timeout))
    parts.append(f"{exports + ' ' if exports else ''}timeout -k 5 {limit} {shlex.quote(python)} "
                 f"{shlex.quote(script)} {shlex.quote(json.dumps(config, sort_keys=True))}")
    return " ".join(parts)
