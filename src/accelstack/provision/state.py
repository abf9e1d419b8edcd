"""The state a plan needs beyond the facts, fetched in one batched command per host.

Checksums of every file the plan might write or upload, which users exist, the reboot marker left by an earlier
run, and on Ascend hosts the NPU device IPs (the probe does not ask for them). One command, sections separated
by marker lines; the parser is pure.

Device IPs come from ``/etc/hccn.conf`` (``address_<id>``/``netmask_<id>``), where ``hccn_tool -i N -ip -s``
persists them and where HCCL's rank-table docs take ``device_ip`` from; ``hccn_tool -i N -ip -g`` is asked only
for a device the file does not list. The file is one ``cat``; the tool is a DCMI call of tens of ms per device.

The command usually runs in the same round trip as the facts probe (``apply.survey``): the query is then built
before the facts are known (:meth:`StateQuery.missing`) and topped up afterwards only if the facts ask for more.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ..vendors.ascend.parsers import parse_hccn_conf, parse_hccn_ip

MARK = "@@accelstack-state "
REBOOT_MARKER = "/opt/accelstack/state/reboot-required"
HCCN_TOOL_PATHS = ("/usr/local/Ascend/driver/tools/hccn_tool", "/usr/local/bin/hccn_tool", "/usr/bin/hccn_tool")
HCCN_CONF = "/etc/hccn.conf"


@dataclass
class StateQuery:
    """What the steps of one host want to know, collected before the state command is built."""

    checksums: set[str] = field(default_factory=set)
    exists: set[str] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    packages: set[str] = field(default_factory=set)
    unless: dict[str, str] = field(default_factory=dict)  # key -> command whose success means "already done"
    npu_count: int = 0  # device IPs wanted for devices 0..npu_count-1 (hccn.conf, else hccn_tool)
    hccn_conf: bool = False  # read /etc/hccn.conf even with npu_count 0 (asked before the facts say how many)
    devices: list[int] | None = None  # only these device numbers (a top-up); None: all below npu_count

    def merge(self, other: StateQuery) -> None:
        self.checksums |= other.checksums
        self.exists |= other.exists
        self.users |= other.users
        self.groups |= other.groups
        self.packages |= other.packages
        self.unless.update(other.unless)
        self.npu_count = max(self.npu_count, other.npu_count)
        self.hccn_conf = self.hccn_conf or other.hccn_conf

    def missing(self, asked: StateQuery, state: RemoteState) -> StateQuery | None:
        """What this query wants beyond ``asked``, whose answer is ``state``; None when ``state`` has it all.

        Devices count as answered when the state has an entry for them (from hccn.conf or hccn_tool); the rest
        are asked again by number (``devices``), so the top-up runs the tool only for those.
        """
        rest = StateQuery(checksums=self.checksums - asked.checksums, exists=self.exists - asked.exists,
                          users=self.users - asked.users, groups=self.groups - asked.groups,
                          packages=self.packages - asked.packages,
                          unless={k: v for k, v in self.unless.items() if asked.unless.get(k) != v})
        rest.devices = [i for i in range(self.npu_count) if i not in state.device_ips]
        if rest.devices:
            rest.npu_count = max(rest.devices) + 1
        empty = not (rest.checksums or rest.exists or rest.users or rest.groups or rest.packages or rest.unless
                     or rest.devices)
        return None if empty else rest


@dataclass
class RemoteState:
    checksums: dict[str, str] = field(default_factory=dict)  # path -> sha256, only files that exist
    exists: set[str] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    packages: set[str] = field(default_factory=set)
    unless_ok: set[str] = field(default_factory=set)
    device_ips: dict[int, str | None] = field(default_factory=dict)  # a device absent: not asked, or no answer
    reboot_marker: str | None = None  # what the marker holds: the steps that asked for a reboot

    def merge(self, other: RemoteState, asked: StateQuery) -> None:
        """Add the answers ``other`` to a top-up ``asked`` (see :meth:`StateQuery.missing`). An ``unless`` asked
        again (its command rendered differently once the facts were known) is decided by the new answer; the
        reboot marker is the one read first."""
        self.unless_ok -= set(asked.unless)
        self.checksums.update(other.checksums)
        self.exists |= other.exists
        self.users |= other.users
        self.groups |= other.groups
        self.packages |= other.packages
        self.unless_ok |= other.unless_ok
        self.device_ips.update(other.device_ips)
        self.reboot_marker = self.reboot_marker or other.reboot_marker


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
    parts.append(f"echo '{MARK}reboot'")
    parts.append(f"cat {REBOOT_MARKER} 2>/dev/null")
    devices = query.devices if query.devices is not None else list(range(query.npu_count))
    if query.hccn_conf or devices:
        parts.append(f"echo '{MARK}hccn.conf'")
        parts.append(f"cat {HCCN_CONF} 2>/dev/null")
    if devices:
        candidates = " ".join(HCCN_TOOL_PATHS)
        parts.append(f"h=; for c in {candidates}; do [ -x \"$c\" ] && h=$c && break; done; "
                     "[ -z \"$h\" ] && h=$(command -v hccn_tool 2>/dev/null)")
        # Only the devices hccn.conf does not list, all at once: hccn_tool takes tens of ms each, and a node has
        # 8 or 16 of them. A device the file lists prints no hccn section: the file's address stands.
        numbers = " ".join(str(d) for d in devices)
        listed = f"grep -qs \"^[[:space:]]*address_$i[[:space:]]*=[[:space:]]*[^[:space:]]\" {HCCN_CONF}"
        parts.append(f"d=$(mktemp -d); for i in {numbers}; do {listed} && continue; : >\"$d/$i\"; "
                     f"[ -n \"$h\" ] && {{ timeout 10 \"$h\" -i $i -ip -g >\"$d/$i\" 2>/dev/null & }}; done; wait; "
                     f"for i in {numbers}; do [ -e \"$d/$i\" ] || continue; echo '{MARK}hccn '$i; "
                     "cat \"$d/$i\"; done; rm -rf \"$d\"")
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
    # The file wins over the tool: the tool is asked only for devices the file lacks (see state_command).
    state.device_ips.update(parse_hccn_conf("\n".join(buffers.get("hccn.conf", []))))
    return state
