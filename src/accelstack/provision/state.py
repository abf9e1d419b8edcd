"""The state a plan needs beyond the facts, fetched in one batched command per host.

Checksums of every file the plan might write or upload, which users exist, the reboot marker left by an earlier
run, and on Ascend hosts the NPU device IPs from ``hccn_tool`` (the probe does not ask for them). One command,
sections separated by marker lines; the parser is pure.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ..facts.parsers import parse_hccn_ip

MARK = "@@accelstack-state "
REBOOT_MARKER = "/opt/accelstack/state/reboot-required"
HCCN_TOOL_PATHS = ("/usr/local/Ascend/driver/tools/hccn_tool", "/usr/local/bin/hccn_tool", "/usr/bin/hccn_tool")


@dataclass
class StateQuery:
    """What the steps of one host want to know, collected before the state command is built."""

    checksums: set[str] = field(default_factory=set)
    exists: set[str] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    packages: set[str] = field(default_factory=set)
    unless: dict[str, str] = field(default_factory=dict)  # key -> command whose success means "already done"
    npu_count: int = 0

    def merge(self, other: StateQuery) -> None:
        self.checksums |= other.checksums
        self.exists |= other.exists
        self.users |= other.users
        self.groups |= other.groups
        self.packages |= other.packages
        self.unless.update(other.unless)
        self.npu_count = max(self.npu_count, other.npu_count)


@dataclass
class RemoteState:
    checksums: dict[str, str] = field(default_factory=dict)  # path -> sha256, only files that exist
    exists: set[str] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    packages: set[str] = field(default_factory=set)
    unless_ok: set[str] = field(default_factory=set)
    device_ips: dict[int, str | None] = field(default_factory=dict)
    reboot_marker: str | None = None  # what the marker holds: the steps that asked for a reboot


def state_command(query: StateQuery) -> str:
    parts = [f"echo '{MARK}sha'"]
    if query.checksums:
        quoted = " ".join(shlex.quote(p) for p in sorted(query.checksums))
        parts.append(f"sha256sum -- {quoted} 2>/dev/null")
    parts.append(f"echo '{MARK}exists'")
    for path in sorted(query.exists):
        parts.append(f"[ -e {shlex.quote(path)} ] && echo {shlex.quote(path)}")
    parts.append(f"echo '{MARK}users'")
    for user in sorted(query.users):
        parts.append(f"getent passwd {shlex.quote(user)} >/dev/null 2>&1 && echo {shlex.quote(user)}")
    parts.append(f"echo '{MARK}groups'")
    for group in sorted(query.groups):
        parts.append(f"getent group {shlex.quote(group)} >/dev/null 2>&1 && echo {shlex.quote(group)}")
    parts.append(f"echo '{MARK}packages'")
    for package in sorted(query.packages):
        name = shlex.quote(package)
        parts.append(f"{{ dpkg-query -W -f='${{Status}}' {name} 2>/dev/null | grep -q 'ok installed' || "
                     f"rpm -q {name} >/dev/null 2>&1; }} && echo {name}")
    parts.append(f"echo '{MARK}unless'")
    for key, command in sorted(query.unless.items()):
        parts.append(f"( {command} ) >/dev/null 2>&1 </dev/null && echo {shlex.quote(key)}")
    npu_count = query.npu_count
    parts.append(f"echo '{MARK}reboot'")
    parts.append(f"cat {REBOOT_MARKER} 2>/dev/null")
    if npu_count > 0:
        candidates = " ".join(HCCN_TOOL_PATHS)
        parts.append(f"h=; for c in {candidates}; do [ -x \"$c\" ] && h=$c && break; done; "
                     "[ -z \"$h\" ] && h=$(command -v hccn_tool 2>/dev/null)")
        # All devices queried at once: hccn_tool takes tens of ms each, and a node has 8 or 16 of them.
        devices = " ".join(str(d) for d in range(npu_count))
        parts.append(f"d=$(mktemp -d); for i in {devices}; do [ -n \"$h\" ] && timeout 10 \"$h\" -i $i -ip -g "
                     f">\"$d/$i\" 2>/dev/null & done; wait; for i in {devices}; do echo '{MARK}hccn '$i; "
                     "cat \"$d/$i\" 2>/dev/null; done; rm -rf \"$d\"")
    parts.append("true")
    return "; ".join(parts)


def parse_state(text: str) -> RemoteState:
    state = RemoteState()
    section = ""
    buffers: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith(MARK):
            section = line[len(MARK):].strip()
            buffers.setdefault(section, [])
            continue
        if section:
            buffers[section].append(line)
    for line in buffers.get("sha", []):
        digest, sep, path = line.partition("  ")
        if sep and len(digest) == 64:
            state.checksums[path] = digest
    state.exists = {p for p in buffers.get("exists", []) if p}
    state.packages = {p.strip() for p in buffers.get("packages", []) if p.strip()}
    state.unless_ok = {p.strip() for p in buffers.get("unless", []) if p.strip()}
    state.users = {u.strip() for u in buffers.get("users", []) if u.strip()}
    state.groups = {g.strip() for g in buffers.get("groups", []) if g.strip()}
    marker = "\n".join(buffers["reboot"]).strip() if "reboot" in buffers else ""
    state.reboot_marker = marker or None
    for name, lines in buffers.items():
        if name.startswith("hccn "):
            device = int(name.split()[1])
            state.device_ips[device] = parse_hccn_ip("\n".join(lines)).ipaddr
    return state
