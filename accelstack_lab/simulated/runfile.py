"""Self-extracting ``.run`` files for the simulated (lab-only) packages, in the manner of makeself.

A POSIX sh header, then a gzip'd tar payload. The header verifies the payload's sha256 (``--check`` prints
makeself's "All good." line), unpacks it into a temporary folder and runs the payload's ``install.py`` with the
command line. Bytes are deterministic for the same inputs: sorted entries, fixed mtime/owner/mode, gzip mtime 0.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile

FIXED_MTIME = 1_700_000_000  # any fixed instant: only determinism matters

HEADER_TEMPLATE = """#!/bin/sh
# {label}
# SIMULATED package for the accelstack lab: not a vendor installer. It installs simulated files at the
# vendor's paths; see accelstack_lab.simulated. Version: {version} (simulated).
ACCELSTACK_SIM_LABEL='{label}'
ACCELSTACK_SIM_SHA256='{sha256}'
ACCELSTACK_SIM_OFFSET={offset:010d}
self="$0"
case "$self" in */*) ;; *) self="./$self";; esac
payload() {{ tail -c +"$ACCELSTACK_SIM_OFFSET" "$self"; }}
digest() {{
  if command -v sha256sum >/dev/null 2>&1; then payload | sha256sum | cut -d' ' -f1
  else payload | python3 -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'
  fi
}}
quiet=0
for arg in "$@"; do
  case "$arg" in --quiet|--silent|-s) quiet=1;; esac
done
actual=$(digest)
if [ "$actual" != "$ACCELSTACK_SIM_SHA256" ]; then
  echo "Error in SHA256 checksums: $actual is different from $ACCELSTACK_SIM_SHA256" >&2
  exit 1
fi
for arg in "$@"; do
  if [ "$arg" = "--check" ]; then
    echo "Verifying archive integrity...  100%   SHA256 checksums are OK. All good."
    exit 0
  fi
done
[ "$quiet" = 1 ] || echo "Verifying archive integrity...  100%   SHA256 checksums are OK. All good."
if ! command -v python3 >/dev/null 2>&1; then
  echo "[ERROR]the simulated installer needs python3 on the host" >&2
  exit 1
fi
tmp=$(mktemp -d "${{TMPDIR:-/tmp}}/accelstack-sim.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
if ! payload | tar -xzf - -C "$tmp"; then
  echo "[ERROR]failed to unpack the simulated package" >&2
  exit 1
fi
ACCELSTACK_SIM_RUNFILE="$self" python3 "$tmp/install.py" "$@"
exit $?
"""


def deterministic_tar_gz(files: dict[str, tuple[bytes, int]]) -> bytes:
    """``{path: (content, mode)}`` -> tar.gz bytes that depend only on the inputs."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            content, mode = files[name]
            info = tarfile.TarInfo(name)
            info.size = len(content)
            info.mode = mode
            info.mtime = FIXED_MTIME
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(content))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def make_runfile(label: str, version: str, payload: bytes) -> bytes:
    sha = hashlib.sha256(payload).hexdigest()
    probe = HEADER_TEMPLATE.format(label=label, version=version, sha256=sha, offset=0)
    # The offset field has a fixed width, so the header's length does not depend on the offset it records.
    header = HEADER_TEMPLATE.format(label=label, version=version, sha256=sha, offset=len(probe.encode()) + 1)
    return header.encode() + payload
