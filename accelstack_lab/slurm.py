"""Real Slurm on the lab: Debian's ``munged``, ``slurmctld`` and one ``slurmd`` per lab host, one partition.

The recipe was measured by this project on Debian 12's Slurm 22.05 (a 2-core machine without systemd): one munged
and one slurmctld on this machine (the controller in a UTS namespace of its own, named ``<tag>ctl``, so the config
does not depend on this machine's hostname), one slurmd inside each lab host's network, mount and UTS namespaces,
registering under the host's name. Everything lives under the lab's state folder
(``/var/lib/accelstack-lab/<tag>/slurm``), outside the paths a lab host shadows, so every slurmd and client reads
the same ``slurm.conf``; ``lab.down`` removes the folder.

The only setting a normal cluster would not need is ``CgroupPlugin=cgroup/v1`` (22.05's slurmd always loads a
cgroup plugin; with proctrack/linuxproc and task/none it is never used). ``SlurmdTimeout=10`` lets a node whose
link went down show ``down*`` in about 35 s; after a heal, ``scontrol reconfigure`` brings it back at once.

A lab host has no accelstack of its own: its ``/root`` and ``/tmp`` are private, and the control side's python
lives there. So the lab installs ``/usr/local/bin/accelstack`` in each host (its private ``/usr/local``), a
wrapper that runs this machine's accelstack in this machine's mount namespace while keeping the host's network
and hostname, with a sysfs of the host's network namespace: what ``node-check`` measures there (interfaces, the
collective over the host's network) and the name it drains are the host's. The node file it reads is the host's own, written here per host.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from accelstack.engines.slurm.parse import parse_scontrol_node
from accelstack.errors import ConfigError

from . import DEFAULT_TAG, Lab, LabHost, _alive, _kill_all

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
TOOLS = {"slurmctld": "slurmctld", "slurmd": "slurmd", "sinfo": "slurm-client", "scontrol": "slurm-client",
         "srun": "slurm-client", "munged": "munge", "mungekey": "munge"}
DEFAULT_CTLD_PORT = 6817
HEALTH_INTERVAL = 60
START_TIMEOUT = 30.0
# What one node's start-up health check (node-check's health tier) may cost this machine: every slurmd runs one as
# it starts, all at once on the same cores (0.4-0.65 CPU-s measured, bench/node_check.py and bench/slurm_scale.py).
HEALTH_CHECK_CPU_S = 1.0
WRAPPER = "/usr/local/bin/accelstack"


def ctld_port(tag: str) -> int:
    """6817 for the developer's lab; another port per tag, so the test suite's lab can run beside it."""
    if tag == DEFAULT_TAG:
        return DEFAULT_CTLD_PORT
    return 7000 + zlib.crc32(tag.encode()) % 800 * 2


def ensure_installed(*, install: bool = True) -> None:
    """Debian's packages, installed when missing (without Recommends: they pull 43 packages nobody needs here).
    Installing starts no daemon on a machine without systemd; a policy-rc.d makes sure of it anyway."""
    missing = sorted({pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None
                      and not Path("/usr/sbin", tool).exists()})
    if not missing:
        return
    if not install or shutil.which("apt-get") is None:
        raise ConfigError(f"Slurm for the lab needs {', '.join(missing)}, which is not installed",
                          hint=f"apt-get install --no-install-recommends {' '.join(PACKAGES)}")
    policy = Path("/usr/sbin/policy-rc.d")
    placed = not policy.exists()
    if placed:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    try:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        proc = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
                              env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, stdin=subprocess.DEVNULL)
            proc = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
                                  env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            raise ConfigError(f"installing {' '.join(PACKAGES)} failed: {tail}",
                              hint="install them by hand: apt-get install --no-install-recommends "
                                   + " ".join(PACKAGES))
    finally:
        if placed:
            policy.unlink(missing_ok=True)


class SlurmLab:
    """Slurm on a :class:`Lab`: ``up`` starts the daemons for every lab host, ``down`` stops them by PID."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.dir = lab.dir / "slurm"
        self.conf = self.dir / "etc" / "slurm.conf"
        self.port = ctld_port(lab.tag)
        self.controller = f"{lab.tag}ctl"
        self.health_script = self.dir / "health.sh"

    # ----- environment for clients -----
    def env(self) -> dict[str, str]:
        """What a Slurm client on this machine needs: the config (without it every client looks for a
        configless controller in DNS and fails)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def running(self) -> bool:
        return _alive(_read_pid(self.dir / "ctld" / "mypid"))

    # ----- up -----
    def up(self, *, health_check: bool = True, stack: str = "cpu", node_vars: dict[str, Any] | None = None,
           install: bool = True, health_interval: int = HEALTH_INTERVAL,
           health_args: tuple[str, ...] = ("--tier", "health")) -> list[str]:
        """Start munged, slurmctld and one slurmd per lab host; return the node names once all are idle (within
        :func:`idle_timeout`: every slurmd runs its health check as it starts, all on this machine's cores; the
        health tier reads files and vendor tools only, so 64 nodes on two cores came up in 14 s). Idempotent: a
        Slurm already up is stopped and started again over the current hosts."""
        self.lab.require_root()
        ensure_installed(install=install)
        hosts = sorted(self.lab.load().values(), key=lambda h: h.index)
        if not hosts:
            raise ConfigError("the lab has no hosts: run inv lab.up --hosts N first")
        self.down()
        for sub in ("etc", "ctld/state", "munge"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        # munged refuses a group- or other-writable folder on the way to its socket.
        for path in (self.lab.dir, self.dir, self.dir / "munge"):
            path.chmod(0o755)
        for host in hosts:
            (self.dir / "nodes" / host.name / "spool").mkdir(parents=True, exist_ok=True)
            self.write_node_file(host.name, stack=stack, overrides=node_vars)
        self._write_config(hosts, health_check=health_check, interval=health_interval)
        self._start_munge()
        self._write_wrappers(hosts, health_args)
        self._start_ctld()
        for host in hosts:
            self._start_slurmd(host)
        names = [h.name for h in hosts]
        self.wait_idle(names, timeout=idle_timeout(len(names), os.cpu_count() or 1, health_check=health_check))
        return names

    def _write_config(self, hosts: list[LabHost], *, health_check: bool, interval: int) -> None:
        cpus = os.cpu_count() or 1
        d = self.dir
        lines = [
            "# Written by `inv lab.up --slurm`; removed by lab.down. The lab's recipe: accelstack_lab/slurm.py.",
            f"ClusterName={self.lab.tag}lab",
            f"SlurmctldHost={self.controller}({self.lab.bridge_address})",
            f"SlurmctldPort={self.port}",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={d}/munge/munge.socket.2",
            f"StateSaveLocation={d}/ctld/state",
            f"SlurmctldPidFile={d}/ctld/slurmctld.pid", f"SlurmctldLogFile={d}/ctld/slurmctld.log",
            f"SlurmdSpoolDir={d}/nodes/%n/spool", f"SlurmdPidFile={d}/nodes/%n/slurmd.pid",
            f"SlurmdLogFile={d}/nodes/%n/slurmd.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            "MpiDefault=none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            "ReturnToService=2", "SlurmctldDebug=info", "SlurmdDebug=info", "MailProg=/bin/true",
            "SlurmdTimeout=10",
        ]
        if health_check:
            lines += [f"HealthCheckProgram={self.health_script}", f"HealthCheckInterval={int(interval)}",
                      "HealthCheckNodeState=ANY"]
        lines += [f"NodeName={h.name} NodeAddr={h.address} CPUs={cpus} Sockets=1 CoresPerSocket={cpus} "
                  f"ThreadsPerCore=1 State=UNKNOWN" for h in hosts]
        lines += ["PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]
        self.conf.write_text("\n".join(lines))
        # 22.05 has no CgroupPlugin=disabled, and a lab host has nothing under /sys/fs/cgroup.
        (self.dir / "etc" / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n")

    def node_file(self, name: str) -> Path:
        return self.dir / "nodes" / name / "node.yml"

    def node_runs(self, name: str) -> Path:
        """The node's own runs folder, as a node has on its own disk: one folder shared by every lab node made
        each node-check's pruning read every other node's runs too (a cost that grew with the lab, not the node)."""
        return self.dir / "nodes" / name / "runs"

    def write_node_file(self, name: str, *, stack: str = "cpu", overrides: dict[str, Any] | None = None) -> Path:
        """The host's node file, rendered from the template provisioning uses, with the lab's vars (this
        machine's python has torch; the host's own network interface carries gloo)."""
        from accelstack.paths import project_root
        from accelstack.provision.templating import render_template, template_environment
        from accelstack.stacks import load_stack

        the_stack = load_stack(stack)
        values: dict[str, Any] = {"expect_devices": 0, "accelerator": "cpu", "gloo_socket_ifname": "eth0",
                                  "stack_python": sys.executable, **(overrides or {})}
        context = {**values, "inventory_hostname": name, "stack": the_stack, "paths": the_stack.paths,
                   "vendor": the_stack.vendor, "env_file": "/etc/profile.d/accelstack.sh",
                   "node_runs_dir": str(self.node_runs(name)), "env_exports": dict(the_stack.env)}
        text = render_template(template_environment([project_root() / "templates"]), "node.yml.j2", context)
        path = self.node_file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        return path

    def _write_wrappers(self, hosts: list[LabHost], health_args: tuple[str, ...]) -> None:
        """``accelstack`` inside each host, and the health-check program slurmd runs."""
        import accelstack

        src = Path(accelstack.__file__).resolve().parent.parent
        munge_pid = _read_pid(self.dir / "munge" / "mypid")
        wrapper = "\n".join([
            "#!/bin/sh",
            "# Written by `inv lab.up --slurm`: this machine's accelstack, run in this machine's mount namespace",
            "# (where its python lives) with this host's network and hostname. The node file is this host's.",
            'node=$(hostname)',
            f'export ACCELSTACK_NODE_FILE="${{ACCELSTACK_NODE_FILE:-{self.dir}/nodes/$node/node.yml}}"',
            f"export PYTHONPATH={shlex.quote(str(src))}${{PYTHONPATH:+:$PYTHONPATH}}",
            f"export SLURM_CONF={shlex.quote(str(self.conf))}",
            f"cd {shlex.quote(str(self.dir))} || exit 2",
            # A private copy of that namespace with a sysfs of this host's network namespace: /sys/class/net
            # then lists this host's interfaces, not the machine's.
            f"exec nsenter --mount=/proc/{munge_pid}/ns/mnt --wd={shlex.quote(str(self.dir))} -- "
            "unshare --mount --propagation private -- /bin/sh -c "
            "'mount -t sysfs lab-sys /sys && exec \"$0\" -m accelstack \"$@\"' "
            f"{shlex.quote(sys.executable)} \"$@\"",
            "",
        ])
        for host in hosts:
            target = self.lab.dir / "hosts" / host.name / "root" / "usr_local" / "bin" / "accelstack"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(wrapper)
            target.chmod(0o755)
        self.health_script.write_text("\n".join([
            "#!/bin/sh",
            "# slurmd's HealthCheckProgram on the lab: the node's health tier (no torch, no device context, as the",
            "# README recommends beside jobs); a fail drains it with the cause.",
            "PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; export PATH",
            f"{WRAPPER} node-check {shlex.join(health_args)} --drain --json "
            f">{self.dir}/nodes/$(hostname)/health.out 2>&1",
            "exit 0",
            "",
        ]))
        self.health_script.chmod(0o755)

    def _spawn(self, argv: list[str], folder: Path, name: str) -> int:
        out = (folder / f"{name}.out").open("w")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                                env=self.env())
        (folder / "mypid").write_text(f"{proc.pid}\n")
        return proc.pid

    def _start_munge(self) -> None:
        m = self.dir / "munge"
        key = m / "munge.key"
        if not key.exists():
            _check(["mungekey", "--create", f"--keyfile={key}"])
        key.chmod(0o400)
        pid = self._spawn(["munged", "-F", f"--key-file={key}", f"--socket={m}/munge.socket.2",
                           f"--pid-file={m}/munged.pid", f"--log-file={m}/munged.log",
                           f"--seed-file={m}/munged.seed"], m, "munged")
        self._wait(lambda: (m / "munge.socket.2").is_socket(), "munged", pid, m / "munged.out")

    def _start_ctld(self) -> None:
        c = self.dir / "ctld"
        # A UTS namespace of its own: slurmctld compares SlurmctldHost with gethostname().
        script = f"hostname {shlex.quote(self.controller)} && exec slurmctld -D -f {shlex.quote(str(self.conf))}"
        pid = self._spawn(["unshare", "--uts", "--", "/bin/sh", "-c", script], c, "slurmctld")
        self._wait(lambda: _port_open(self.lab.bridge_address, self.port), "slurmctld", pid, c / "slurmctld.out")

    def _start_slurmd(self, host: LabHost) -> None:
        folder = self.dir / "nodes" / host.name
        self._spawn(["nsenter", "-t", str(host.anchor_pid), "-n", "-m", "-u", "--",
                     "slurmd", "-D", "-f", str(self.conf)], folder, "slurmd")

    def _wait(self, ready: Any, what: str, pid: int, log: Path) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            if not _alive(pid) or time.monotonic() > deadline:
                text = log.read_text(errors="replace").strip()[-600:] if log.exists() else ""
                raise ConfigError(f"{what} did not start on the lab: {text or 'no output'}", where=str(log))
            time.sleep(0.05)

    # ----- queries -----
    def run(self, *argv: str, timeout: float = 30.0, check: bool = False) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(list(argv), env=self.env(), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise ConfigError(f"{shlex.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
        return proc

    def node_states(self) -> dict[str, str]:
        """Node name -> sinfo's long state (``idle``, ``drained``, ``down*``...)."""
        proc = self.run("sinfo", "-h", "-N", "-o", "%N %T")
        states = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1].lower()
        return states

    def node_info(self, name: str) -> dict[str, str]:
        """``scontrol show node NAME`` as key -> value (``State``, ``Reason``...)."""
        proc = self.run("scontrol", "-o", "show", "node", name)
        return parse_scontrol_node(proc.stdout)

    def wait_idle(self, names: list[str], timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.node_states()
            if all(states.get(n, "").startswith("idle") and not states[n].endswith("*") for n in names):
                return
            time.sleep(0.1)
        waiting = {n: states.get(n, "unknown") for n in names if not states.get(n, "").startswith("idle")}
        raise ConfigError(f"Slurm nodes not idle after {timeout:.0f} s: {waiting}",
                          where=str(self.dir / "ctld" / "slurmctld.log"))

    def reconfigure(self) -> None:
        """Every slurmd re-registers: a healed node is idle at once instead of after ~20 ping cycles."""
        if self.running():
            self.run("scontrol", "reconfigure")

    # ----- down -----
    def down(self) -> bool:
        """Stop every daemon this lab started (by PID, slurmd and slurmctld before munged), then remove the
        state so the next start recovers no old node or job. Returns whether anything was running."""
        pid_files = sorted((self.dir / "nodes").glob("*/mypid")) + [self.dir / "ctld" / "mypid"]
        pids = [p for p in (_read_pid(f) for f in pid_files) if p > 0]
        munge = _read_pid(self.dir / "munge" / "mypid")
        was = any(_alive(p) for p in [*pids, munge])
        # slurmstepd of a job still running belongs to a node's session: kill the sessions, not just the leaders.
        _kill_all([*pids, *_session_members(pids)])
        _kill_all([munge] if munge > 0 else [])
        for sub in ("nodes", "ctld", "etc", "runs"):
            shutil.rmtree(self.dir / sub, ignore_errors=True)
        for leftover in (self.dir / "munge").glob("munge.socket.2*"):
            leftover.unlink(missing_ok=True)
        (self.dir / "munge" / "mypid").unlink(missing_ok=True)
        for host in self.lab.load().values():
            (self.lab.dir / "hosts" / host.name / "root" / "usr_local" / "bin" / "accelstack").unlink(missing_ok=True)
        return was


def idle_timeout(nodes: int, cores: int, *, health_check: bool) -> float:
    """How long ``up`` waits for every node to be idle: :data:`START_TIMEOUT`, and with the start-up health check
    the time every node's check takes on this machine's cores besides (each slurmd registers once its check is
    done). Pure."""
    return START_TIMEOUT + (nodes * HEALTH_CHECK_CPU_S / max(cores, 1) if health_check else 0.0)


def _read_pid(path: Path) -> int:
    try:
        return int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def _session_members(leaders: list[int]) -> list[int]:
    """Processes in the sessions these leaders started (each daemon was started with setsid)."""
    wanted = {p for p in leaders if p > 0}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and int(fields[3]) in wanted and int(entry.name) not in wanted:
            found.append(int(entry.name))
    return found


def _port_open(address: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((address, port), timeout=0.3):
            return True
    except OSError:
        return False


def _check(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise ConfigError(f"{shlex.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")

