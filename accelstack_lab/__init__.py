"""The lab: N real hosts on this machine, each a network namespace with a real sshd.

A lab host is what a racked node is to accelstack: an address reached over SSH, its own hostname, and its own
``/usr/local``, ``/opt``, ``/etc/profile.d``, ``/tmp`` and ``/root`` (a private mount namespace with bind mounts), a copy-on-write ``/etc`` (overlayfs), plus a small
``/data`` filesystem (tmpfs) for checkpoints that ``disk-full`` can really fill. Hosts hang off one bridge, so
they reach each other and this machine as a cluster would.

Every host has an anchor process (``sleep infinity``) that holds its mount and UTS namespaces; sshd is started
inside those with ``nsenter``. So stopping sshd (a fault) leaves the host itself, and its files, in place.

Faults are injected with real means: ``sshd-stop`` kills sshd, ``link-down`` takes the host's link down,
``link-slow`` adds ``tc netem`` delay and a rate limit on both ends of the link, ``disk-full`` fills ``/data``.
Nothing here simulates an accelerator; the simulated vendor packages live in :mod:`accelstack_lab.simulated`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from accelstack.errors import ConfigError, PrivilegeError
from accelstack.paths import project_root

DEFAULT_TAG = "acs"
DEFAULT_SUBNET = "10.213"
MAX_HOSTS = 256
FAULT_KINDS = ("sshd-stop", "link-down", "link-slow", "disk-full")
DATA_SIZE = "256m"
# /root too: a lab host must not inherit this machine's shell setup (pyenv, its torch) through a shared home.
PRIVATE_DIRS = {"usr_local": "/usr/local", "opt": "/opt", "profile.d": "/etc/profile.d", "tmp": "/tmp",
                "root": "/root"}
SSHD = "/usr/sbin/sshd"
SFTP_SERVER_CANDIDATES = ("/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server",
                          "/usr/lib/ssh/sftp-server")


@dataclass
class LabHost:
    name: str
    index: int
    address: str
    netns: str
    veth: str
    anchor_pid: int = 0
    sshd_pid: int = 0
    faults: list[str] = field(default_factory=list)


# The checkout this lab code runs from: a lab belongs to it (two checkouts on one machine get two labs).
CHECKOUT = Path(__file__).resolve().parent.parent
SALTS = "0123456"
SALT_ENV = "ACCELSTACK_TEST_LAB_SALT"


def checkout_salt(checkout: Path | None = None) -> str:
    """The digit that moves this checkout's labs apart from another checkout's: ``ACCELSTACK_TEST_LAB_SALT`` when
    set (1-6: what a person or CI chose), else one derived from the checkout's path (0-6; 0 leaves tags and
    subnets as given). Two checkouts whose paths give the same digit are told so by :meth:`Lab.up`, never
    replaced: the lab records which checkout made it."""
    salt = os.environ.get(SALT_ENV, "")
    if salt:
        if len(salt) != 1 or salt not in SALTS[1:]:
            raise ConfigError(f"{SALT_ENV}={salt!r}: a digit 1-6")
        return salt
    digest = hashlib.sha256(str((checkout or CHECKOUT).resolve()).encode()).digest()
    return SALTS[digest[0] % len(SALTS)]


def lab_ids(tag: str, subnet: str, checkout: Path | None = None) -> tuple[str, str]:
    """A lab's tag and /16 for this checkout (:func:`checkout_salt`): salt N appends N to the tag and maps
    10.2xx to 10.(30 N + xx - 200), below every unsalted one; salt 0 leaves them as given. Every lab of the
    project takes its ids from here: ``inv lab.up`` (``acs``, 10.213), the tests' and the benchmarks' labs."""
    salt = checkout_salt(checkout)
    if salt == "0":
        return tag, subnet
    head, octet = subnet.rsplit(".", 1)
    if not 200 <= int(octet) <= 229:
        raise ConfigError(f"{subnet}: a salted lab's subnet must be 10.200-10.229")
    return f"{tag}{salt}", f"{head}.{30 * int(salt) + int(octet) - 200}"


def check_tag(tag: str) -> str:
    """A tag names kernel objects (``TAGbr0``, ``TAGv256``: at most 15 characters) and a state folder."""
    if not re.fullmatch(r"[a-z][a-z0-9]{0,10}", tag or ""):
        raise ConfigError(f"--tag {tag!r}: 1-11 lower-case letters and digits, starting with a letter "
                          "(it prefixes the lab's bridge, namespaces and links)")
    return tag


def check_subnet(subnet: str) -> str:
    """A lab's /16, written ``10.N``."""
    match = re.fullmatch(r"10\.(\d{1,3})", subnet or "")
    if not match or int(match.group(1)) > 255:
        raise ConfigError(f"--subnet {subnet!r}: a /16 of 10/8, written 10.N (e.g. 10.213)")
    return subnet


def host_address(index: int, subnet: str = DEFAULT_SUBNET) -> str:
    """lab1 -> 10.213.0.11 ... lab256 -> 10.213.1.10: clear of the bridge's .0.1."""
    offset = index + 10
    return f"{subnet}.{offset // 256}.{offset % 256}"


class Lab:
    """The lab's state folder (``.lab/`` in the project) and the operations on it.

    ``tag`` prefixes every kernel object (bridge, namespaces, veths) and ``subnet`` is the /16 it uses, so the test
    suite's lab (another tag and subnet) never touches a lab a developer has up.
    """

    def __init__(self, root: Path | None = None, *, tag: str | None = None, subnet: str | None = None,
                 state_dir: Path | None = None) -> None:
        self.project = root or project_root()
        default_tag, default_subnet = lab_ids(DEFAULT_TAG, DEFAULT_SUBNET)
        self.tag = check_tag(tag or default_tag)
        self.subnet = check_subnet(subnet or default_subnet)
        self.bridge = f"{self.tag}br0"
        self.bridge_address = f"{self.subnet}.0.1"
        # Outside every folder a lab host shadows (/tmp, /root, ...): sshd inside the host must still see its
        # config and keys after the private mounts are in place.
        self.dir = state_dir or Path("/var/lib/accelstack-lab") / self.tag
        self.state_file = self.dir / "state.json"
        self.owner_file = self.dir / "checkout"  # the checkout that made this lab
        self.key = self.dir / "id_ed25519"
        self.known_hosts = self.dir / "known_hosts"
        self.inventory = self.project / "inventories" / "lab.yml"
        self.last_fault_note = ""

    # ----- state -----
    def load(self) -> dict[str, LabHost]:
        if not self.state_file.exists():
            return {}
        raw = json.loads(self.state_file.read_text())
        return {name: LabHost(**data) for name, data in raw.get("hosts", {}).items()}

    def save(self, hosts: dict[str, LabHost]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        ordered = dict(sorted(hosts.items(), key=lambda item: item[1].index))
        tmp.write_text(json.dumps({"hosts": {n: asdict(h) for n, h in ordered.items()}}, indent=1))
        os.replace(tmp, self.state_file)

    # ----- preconditions -----
    @staticmethod
    def require_root() -> None:
        if os.geteuid() != 0:
            raise PrivilegeError("the lab needs root: it creates network namespaces, a bridge and sshd processes",
                                 hint="run as root (sudo -E inv lab.up ...)")
        for tool in ("ip", "tc", "nsenter", "unshare", "ssh-keygen", SSHD):
            if shutil.which(tool) is None:
                raise ConfigError(f"the lab needs {tool!r}, which is not installed",
                                  hint="apt-get install openssh-server openssh-client iproute2 util-linux")

    def _claim(self) -> None:
        """Refuse to touch a lab another checkout made (two checkouts whose paths give one salt, or one tag given
        twice): its hosts, keys and inventory are that checkout's, and replacing them would break its runs."""
        try:
            owner = self.owner_file.read_text().strip()
        except OSError:
            return  # no lab yet, or one made before labs recorded their checkout
        if owner and owner != str(CHECKOUT):
            raise ConfigError(f"lab {self.tag} belongs to the checkout {owner}, not this one ({CHECKOUT})",
                              hint="give this checkout a lab of its own: --tag and --subnet, or "
                                   f"{SALT_ENV}=1..6 for its tests")

    def _check_subnet_free(self) -> None:
        """A new bridge's /16 must not be another interface's: two routes for one subnet break both labs."""
        if Path(f"/sys/class/net/{self.bridge}").exists():
            return
        for line in _run(["ip", "-4", "-o", "addr", "show"], check=False).splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[2] == "inet" and fields[3].startswith(f"{self.subnet}."):
                raise ConfigError(f"subnet {self.subnet}.0.0/16 is already on {fields[1]} ({fields[3]}): another "
                                  "lab, or this machine's own network", hint="choose another with --subnet 10.N")

    # ----- up -----
    def up(self, count: int, *, stack: str = "cpu", artifact_repo: Path | None = None) -> dict[str, LabHost]:
        """Bring up ``count`` hosts and write the lab inventory (with ``artifact_repo`` when given)."""
        if not 1 <= count <= MAX_HOSTS:
            raise ConfigError(f"--hosts must be between 1 and {MAX_HOSTS}, not {count}")
        self.require_root()
        self._claim()
        self._check_subnet_free()
        shadowed = [t for t in PRIVATE_DIRS.values() if self.dir.resolve().is_relative_to(t)]
        if shadowed:
            raise ConfigError(f"the lab's state folder {self.dir} lies under {shadowed[0]}, which every lab host "
                              "replaces with its own; choose a folder elsewhere")
        hosts = self.load()
        for name in [n for n, h in hosts.items() if h.index > count]:
            self._remove_host(hosts.pop(name))
        self._ensure_keys()
        self.owner_file.write_text(f"{CHECKOUT}\n")
        self._ensure_bridge()
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
        Path("/data").mkdir(exist_ok=True)  # mount point for each host's private /data

        wanted = [LabHost(f"lab{i}", i, host_address(i, self.subnet), f"{self.tag}-lab{i}", f"{self.tag}v{i}")
                  for i in range(1, count + 1)]
        fresh = []
        for host in wanted:
            current = hosts.get(host.name)
            if current is not None and _alive(current.anchor_pid) and _netns_exists(current.netns):
                continue
            if current is not None:
                self._remove_host(current)
            self._create_network(host)
            self._start_anchor(host)
            hosts[host.name] = host
            fresh.append(host)
        for host in fresh:
            self._wait_anchor(host)
        for host in hosts.values():
            if "sshd-stop" not in host.faults and not _alive(host.sshd_pid):
                self._start_sshd(host)
        self.save(hosts)
        self._wait_ssh(list(hosts.values()))
        self._write_known_hosts(hosts)
        self._write_name_service(hosts)
        self._write_inventory(hosts, stack, artifact_repo)
        return hosts

    def _write_name_service(self, hosts: dict[str, LabHost]) -> None:
        """Every host resolves every lab host by name, and has no nameserver to wait for.

        This machine's nameserver is unreachable from the namespaces: each lookup (torchrun's getfqdn, c10d's
        getnameinfo) would stall 10-20 s, which a fleet with working DNS never sees. Written into each host's
        own /etc (the overlay), so this machine's files are untouched."""
        table = "127.0.0.1 localhost\n" + "".join(
            f"{h.address} {h.name}\n" for h in sorted(hosts.values(), key=lambda h: h.index))
        script = (f"printf %s {shlex.quote(table)} > /etc/hosts; "
                  "printf 'options timeout:1 attempts:1\\n' > /etc/resolv.conf")
        for host in hosts.values():
            _run(["nsenter", "-t", str(host.anchor_pid), "-m", "--", "/bin/sh", "-c", script])

    def _ensure_keys(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.key.exists():
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "accelstack-lab", "-f", str(self.key)])
        (self.dir / "authorized_keys").write_text(self.key.with_suffix(".pub").read_text())

    def _ensure_bridge(self) -> None:
        if not Path(f"/sys/class/net/{self.bridge}").exists():
            _run(["ip", "link", "add", self.bridge, "type", "bridge"])
            _run(["ip", "addr", "add", f"{self.bridge_address}/16", "dev", self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])

    def _create_network(self, host: LabHost) -> None:
        if _netns_exists(host.netns):
            _run(["ip", "netns", "del", host.netns])
        if Path(f"/sys/class/net/{host.veth}").exists():
            _run(["ip", "link", "del", host.veth])
        _run(["ip", "netns", "add", host.netns])
        _run(["ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns])
        _run(["ip", "link", "set", host.veth, "master", self.bridge, "up"])
        ns = ["ip", "-n", host.netns]
        _run([*ns, "link", "set", "lo", "up"])
        _run([*ns, "addr", "add", f"{host.address}/16", "dev", "eth0"])
        _run([*ns, "link", "set", "eth0", "up"])
        _run([*ns, "route", "add", "default", "via", self.bridge_address])

    def _host_dir(self, host: LabHost) -> Path:
        return self.dir / "hosts" / host.name

    def _start_anchor(self, host: LabHost) -> None:
        base = self._host_dir(host)
        for sub in PRIVATE_DIRS:
            (base / "root" / sub).mkdir(parents=True, exist_ok=True)
        (base / "root" / "tmp").chmod(0o1777)
        ready = base / "ready"
        ready.unlink(missing_ok=True)
        mounts = [f"mount --bind {shlex.quote(str(base / 'root' / sub))} {target}"
                  for sub, target in PRIVATE_DIRS.items()]
        # /etc is copy-on-write per host (overlayfs): what an installer writes there (users, ascend_install.info,
        # profile scripts) stays on that host and never reaches this machine or the other hosts.
        upper, work = base / "etc-upper", base / "etc-work"
        upper.mkdir(exist_ok=True)
        work.mkdir(exist_ok=True)
        etc = (f"mount -t overlay lab-etc -o lowerdir=/etc,upperdir={shlex.quote(str(upper))},"
               f"workdir={shlex.quote(str(work))} /etc")
        script = "; ".join([
            "set -e", f"hostname {host.name}", etc, f"echo {host.name} > /etc/hostname", *mounts,
            f"mount -t tmpfs -o size={DATA_SIZE},mode=0755 lab-data /data", "mkdir /data/checkpoints",
            f"touch {shlex.quote(str(ready))}", "exec sleep infinity",
        ])
        proc = subprocess.Popen(
            ["ip", "netns", "exec", host.netns, "unshare", "--mount", "--uts", "--propagation", "private",
             "--", "/bin/sh", "-c", script],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=(base / "anchor.log").open("w"),
            start_new_session=True)
        host.anchor_pid = proc.pid

    def _wait_anchor(self, host: LabHost, timeout: float = 30.0) -> None:
        ready = self._host_dir(host) / "ready"
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if time.monotonic() > deadline or not _alive(host.anchor_pid):
                log = (self._host_dir(host) / "anchor.log").read_text(errors="replace")
                raise ConfigError(f"lab host {host.name} did not come up: {log.strip()[-400:]}")
            time.sleep(0.02)

    def _sshd_config(self, host: LabHost) -> Path:
        base = self._host_dir(host)
        hostkey = base / "ssh_host_ed25519_key"
        if not hostkey.exists():
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", host.name, "-f", str(hostkey)])
        sftp = next((p for p in SFTP_SERVER_CANDIDATES if Path(p).exists()), "internal-sftp")
        config = base / "sshd_config"
        # MaxStartups stays at sshd's default (10:30:100): the fan-out must cope with stock servers.
        config.write_text("\n".join([
            "Port 22", "ListenAddress 0.0.0.0", f"HostKey {hostkey}", "PidFile none",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}", "PermitRootLogin prohibit-password",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "UseDNS no",
            "StrictModes no", "PrintMotd no", "PrintLastLog no", "AcceptEnv LANG LC_*",
            f"Subsystem sftp {sftp}", "",
        ]))
        return config

    def _start_sshd(self, host: LabHost) -> None:
        config = self._sshd_config(host)
        log = (self._host_dir(host) / "sshd.log").open("a")
        proc = subprocess.Popen(
            ["nsenter", "-t", str(host.anchor_pid), "-m", "-u", "-n", "--", SSHD, "-D", "-e", "-f", str(config)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        host.sshd_pid = proc.pid

    def _wait_ssh(self, hosts: list[LabHost], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        waiting = [h for h in hosts if "sshd-stop" not in h.faults and "link-down" not in h.faults]
        while waiting:
            still = []
            for host in waiting:
                if not _ssh_banner(host.address):
                    still.append(host)
            waiting = still
            if waiting and time.monotonic() > deadline:
                names = ", ".join(h.name for h in waiting[:10])
                raise ConfigError(f"sshd did not answer on {len(waiting)} lab host(s): {names}",
                                  hint=f"see {self.dir}/hosts/<host>/sshd.log")
            if waiting:
                time.sleep(0.05)

    def _write_known_hosts(self, hosts: dict[str, LabHost]) -> None:
        lines = []
        for host in sorted(hosts.values(), key=lambda h: h.index):
            pub = (self._host_dir(host) / "ssh_host_ed25519_key.pub").read_text().split()
            lines.append(f"{host.address} {pub[0]} {pub[1]}")
        self.known_hosts.write_text("\n".join(lines) + "\n")

    def _write_inventory(self, hosts: dict[str, LabHost], stack: str, artifact_repo: Path | None = None) -> None:
        ordered = sorted(hosts.values(), key=lambda h: h.index)
        lines = [
            "# Written by `inv lab.up`: real sshd hosts in network namespaces on this machine.",
            "# Regenerated on every lab.up; removed by lab.down. Not an example to edit.",
            "vars:",
            f"  stack: {stack}",
            "  user: root",
            f"  key: {self.key}",
            f"  known_hosts: {self.known_hosts}",
            "  expect_devices: 0",
            "  accelerator: cpu",
            "  checkpoint_dir: /data/checkpoints",
            "  checkpoint_fs: tmpfs",
            "  gloo_socket_ifname: eth0",
            *([f"  artifact_repo: {artifact_repo}"] if artifact_repo else []),
            "hosts:",
            *[f"  {h.name}: {{address: {h.address}}}" for h in ordered],
            "groups:",
            "  lab:",
            "    hosts: [" + ", ".join(h.name for h in ordered) + "]",
            "",
        ]
        self.inventory.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.inventory.with_suffix(".tmp")
        tmp.write_text("\n".join(lines))
        os.replace(tmp, self.inventory)

    # ----- down -----
    def down(self) -> int:
        """Remove every lab host, the bridge, the state and the inventory. Returns how many hosts went."""
        self.require_root()
        self._claim()
        from .slurm import SlurmLab
        SlurmLab(self).down()  # before the hosts: their slurmds would otherwise die as namespace processes
        hosts = self.load()
        # Signal every process first and wait once: one host at a time takes minutes at 256 hosts.
        _kill_all([pid for h in hosts.values() for pid in (h.sshd_pid, h.anchor_pid)])
        for host in hosts.values():
            self._remove_host(host)
        # Namespaces left by a crashed lab.up that never reached the state file.
        for line in _run(["ip", "netns", "list"], check=False).splitlines():
            name = line.split()[0] if line.strip() else ""
            if name.startswith(f"{self.tag}-lab"):
                _kill_netns_processes(name)
                _run(["ip", "netns", "del", name], check=False)
        if Path(f"/sys/class/net/{self.bridge}").exists():
            _run(["ip", "link", "del", self.bridge], check=False)
        self.inventory.unlink(missing_ok=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        return len(hosts)

    def _remove_host(self, host: LabHost) -> None:
        for pid in (host.sshd_pid, host.anchor_pid):
            _kill(pid)
        if _netns_exists(host.netns):
            _kill_netns_processes(host.netns)
            _run(["ip", "netns", "del", host.netns], check=False)
        if Path(f"/sys/class/net/{host.veth}").exists():
            _run(["ip", "link", "del", host.veth], check=False)
        shutil.rmtree(self._host_dir(host), ignore_errors=True)

    # ----- status -----
    def status(self) -> list[dict[str, Any]]:
        rows = []
        for host in sorted(self.load().values(), key=lambda h: h.index):
            link = _read(f"/sys/class/net/{host.veth}/operstate") or "missing"
            rows.append({
                "host": host.name, "address": host.address, "netns": _netns_exists(host.netns),
                "anchor": _alive(host.anchor_pid), "sshd": _alive(host.sshd_pid),
                "link": link, "faults": list(host.faults),
            })
        return rows

    # ----- faults -----
    def _get(self, hosts: dict[str, LabHost], name: str) -> LabHost:
        if name not in hosts:
            known = ", ".join(sorted(hosts, key=lambda n: hosts[n].index)[:8]) or "none (run inv lab.up)"
            raise ConfigError(f"no lab host named {name!r}; lab hosts: {known}")
        return hosts[name]

    def fault(self, name: str, kind: str, *, delay: str = "40ms", rate: str = "20mbit") -> LabHost:
        self.require_root()
        self._claim()
        kind_note = kind
        if kind not in FAULT_KINDS:
            raise ConfigError(f"unknown fault {kind!r}; kinds: {', '.join(FAULT_KINDS)}")
        hosts = self.load()
        host = self._get(hosts, name)
        if kind == "sshd-stop":
            _kill(host.sshd_pid)
            host.sshd_pid = 0
        elif kind == "link-down":
            _run(["ip", "link", "set", host.veth, "down"])
        elif kind == "link-slow":
            applied = self._slow_link(host, delay, rate)
            kind_note = f"link-slow ({applied})"
        elif kind == "disk-full":
            # Fill /data until the filesystem says no space; the error from the full write is the point.
            _run(["nsenter", "-t", str(host.anchor_pid), "-m", "--", "/bin/sh", "-c",
                  "cat /dev/zero > /data/.accelstack-lab-fill 2>/dev/null; true"])
        if kind not in host.faults:
            host.faults.append(kind)
        self.save(hosts)
        self.last_fault_note = kind_note
        return host

    def _slow_link(self, host: LabHost, delay: str, rate: str) -> str:
        """netem delay and rate on both ends; where the kernel has no netem, tbf's rate limit alone."""
        for qdisc, label in ((["netem", "delay", delay, "rate", rate], f"netem delay {delay} rate {rate}"),
                             (["tbf", "rate", rate, "burst", "32kbit", "latency", "400ms"],
                              f"tbf rate {rate}: this kernel has no netem, so no added delay")):
            outer = subprocess.run(["tc", "qdisc", "replace", "dev", host.veth, "root", *qdisc],
                                   capture_output=True, text=True)
            if outer.returncode != 0:
                if "unknown" in outer.stderr:
                    continue
                raise ConfigError(f"tc on {host.veth} failed: {outer.stderr.strip()}")
            _run(["ip", "netns", "exec", host.netns, "tc", "qdisc", "replace", "dev", "eth0", "root", *qdisc])
            return label
        raise ConfigError("this kernel has neither netem nor tbf: link-slow cannot be injected")

    def heal(self, name: str) -> LabHost:
        self.require_root()
        self._claim()
        hosts = self.load()
        host = self._get(hosts, name)
        _run(["ip", "link", "set", host.veth, "up"], check=False)
        _run(["tc", "qdisc", "del", "dev", host.veth, "root"], check=False)
        _run(["ip", "netns", "exec", host.netns, "tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
        _run(["nsenter", "-t", str(host.anchor_pid), "-m", "--", "rm", "-f", "/data/.accelstack-lab-fill"],
             check=False)
        if not _alive(host.sshd_pid):
            self._start_sshd(host)
        host.faults = []
        self.save(hosts)
        self._wait_ssh([host])
        from .slurm import SlurmLab
        SlurmLab(self).reconfigure()  # a healed node re-registers now, not ~20 ping cycles later
        return host


# ----- small helpers over the OS -----

def _run(argv: list[str], *, check: bool = True) -> str:
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise ConfigError(f"lab command failed ({proc.returncode}): {shlex.join(argv)}: {proc.stderr.strip()}")
    return proc.stdout


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    stat = _read(f"/proc/{pid}/stat")
    # A zombie is not alive: it no longer serves anything.
    return stat is not None and stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _kill(pid: int) -> None:
    if pid > 0 and _alive(pid):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(50):
            if not _alive(pid):
                return
            time.sleep(0.02)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _kill_all(pids: list[int]) -> None:
    alive = [pid for pid in pids if _alive(pid)]
    for pid in alive:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(_alive(pid) for pid in alive):
        time.sleep(0.02)
    for pid in alive:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _netns_exists(name: str) -> bool:
    return Path(f"/run/netns/{name}").exists()


def _kill_netns_processes(name: str) -> None:
    for pid in _run(["ip", "netns", "pids", name], check=False).split():
        _kill(int(pid))


def _ssh_banner(address: str) -> bool:
    try:
        with socket.create_connection((address, 22), timeout=0.5) as sock:
            sock.settimeout(1.0)
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False
