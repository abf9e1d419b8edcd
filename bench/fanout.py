"""Fan-out benchmark: `accelstack facts` next to `ansible -m setup` and `pyinfra ... fact` on the same lab hosts.

    python bench/fanout.py [--hosts 32] [--repeat 5] [--big 256] [--slurm] [--slurm-hosts 8]
    python bench/fanout.py --tiny    # 4 hosts on the local connection, accelstack only: the CI smoke test

Brings up a lab of its own (tag ``acb``, subnet 10.216) and prints, in one run and side by side: each tool's median
wall time, its control-side CPU (the tool and its children) and the lab hosts' CPU (what their sshd and every
process under it spent, read from each sshd listener's reaped children: exact, whatever else the machine does) on
``--hosts`` hosts; the CPU per host two ways (the whole run over the hosts, and the marginal cost of a host: the
run on every host minus the run on one, over the hosts added); and the ratios against the goals of issue 14
(control CPU per host <= 0.5x pyinfra's, wall <= 1.0x pyinfra's). Ratios are taken within each round, the tools
having run one after the other, then the median: this machine's speed drifts by half again over minutes, and a
ratio of medians from different minutes would carry that drift.

Two floor lines come with it, bare paramiko with none of any tool around it: connect, run the same facts probe
and read it (the least a paramiko-based tool can spend here to gather these facts), and connect and run `true`
(the least any paramiko-based tool spends to reach a host at all). The lab hosts share this machine's two cores
with every tool, so the hosts' CPU over the cores is a floor under any wall time here. Then ``--big`` hosts:
wall, error records, both CPUs, and the bare `true` floor (goal: under 6 s, 0 errors). With ``--slurm``: the
quick tier of `accelstack validate` on ``--slurm-hosts`` lab nodes through one ``srun`` (``--engine slurm``) next
to the same over SSH.

accelstack runs from compiled bytecode, as an installed package does: this machine sets PYTHONDONTWRITEBYTECODE,
so an editable checkout would otherwise recompile every module on every run (about 90 ms) while ansible and
pyinfra, installed by pip, run theirs from .pyc files.

Needs root. ansible-core and pyinfra are installed into ``bench/.venv`` on first use (never into the project's
environment: pyinfra pins its own paramiko). pyinfra gathers two facts (``server.Os``, ``server.KernelVersion``),
ansible's setup module and accelstack's probe each gather the whole host (about 30 times more facts).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENV = HERE / ".venv"
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))  # the lab (accelstack_lab) lives in the checkout, outside the package

from accelstack_lab import Lab, lab_ids  # noqa: E402

GOAL_CPU_PER_HOST = 0.5  # accelstack / pyinfra, control CPU per host
GOAL_WALL = 1.0  # accelstack / pyinfra, wall
GOAL_BIG_WALL_S = 6.0
QUICK_SYSTEM_CHECKS = "env,hccn,health,libraries"


def ensure_peer_tools() -> Path:
    bin_dir = VENV / "bin"
    if not (bin_dir / "ansible").exists() or not (bin_dir / "pyinfra").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(bin_dir / "pip"), "install", "-q", "ansible-core", "pyinfra"], check=True)
    return bin_dir


def machine_busy_s() -> float:
    """CPU seconds this machine has spent busy (all cores, every process) since boot, from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def hosts_cpu_s(sshd_pids: list[int]) -> float:
    """CPU seconds the lab hosts' sshd listeners' reaped children spent: every connection's sshd, its shell and
    all they ran. A connection's share is counted once its sshd has exited."""
    total = 0
    for pid in sshd_pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[13]) + int(fields[14])  # cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


class Run:
    """One timed command: wall, exit code, output, the control side's CPU (the tool and its children, e.g.
    ansible's ssh processes), the lab hosts' CPU and the whole machine's busy CPU over the same interval. On a
    real fleet the hosts' work runs elsewhere; here every lab host shares this machine's cores, so wall time
    also pays for it."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
                 sshd_pids: list[int] | None = None) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy = machine_busy_s()
        hosts = hosts_cpu_s(sshd_pids or [])
        started = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
        self.wall = time.perf_counter() - started
        self.busy = machine_busy_s() - busy
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        time.sleep(0.2 if sshd_pids else 0)  # the last sessions' sshd exit and are reaped
        self.hosts_cpu = hosts_cpu_s(sshd_pids or []) - hosts
        self.code = proc.returncode
        self.out = proc.stdout + proc.stderr
        self.records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    @property
    def statuses(self) -> Counter[str]:
        return Counter(r.get("status", "?") for r in self.records)


def accelstack(args: list[str], runs: Path, env: dict[str, str] | None = None,
               sshd_pids: list[int] | None = None) -> Run:
    return Run([sys.executable, "-m", "accelstack", *args, "--json"],
               env={"ACCELSTACK_RUNS": str(runs), **(env or {})}, sshd_pids=sshd_pids)


# Bare paramiko, none of any tool around it: a pool of 32 threads, each connects (the key read once, AES-GCM
# offered first, the host key checked against the lab's known_hosts), runs one command, reads its output, closes.
PARAMIKO_FLOOR = """
import socket, sys
from concurrent.futures import ThreadPoolExecutor
import paramiko
key_file, known_hosts, command_file, *addresses = sys.argv[1:]
command = open(command_file).read()
key = paramiko.Ed25519Key.from_private_key_file(key_file)
known = paramiko.HostKeys(known_hosts)
ciphers = tuple(sorted(paramiko.Transport._preferred_ciphers, key=lambda name: "-gcm@" not in name))
def one(address):
    transport = paramiko.Transport(socket.create_connection((address, 22), 10))
    transport._preferred_ciphers = ciphers
    transport.start_client(timeout=10)
    server_key = transport.get_remote_server_key()
    assert known.check(address, server_key), address
    transport.auth_publickey("root", key)
    channel = transport.open_session()
    channel.exec_command(command)
    out = channel.makefile().read()
    status = channel.recv_exit_status()
    transport.close()
    return status, len(out)
with ThreadPoolExecutor(32) as pool:
    results = list(pool.map(one, addresses))
bad = [r for r in results if r[0] != 0]
print(len(results) - len(bad), "ok", len(bad), "failed")
sys.exit(1 if bad else 0)
"""


def paramiko_floor(lab: Lab, command: str, work: Path, sshd_pids: list[int], hosts: int | None = None) -> Run:
    """The bare-paramiko fan-out of ``command`` over the lab's first ``hosts`` hosts (all of them when None)."""
    path = work / "floor-command.sh"
    path.write_text(command)
    addresses = [h["address"] for h in lab.status()][:hosts]
    return Run([sys.executable, "-c", PARAMIKO_FLOOR, str(lab.key), str(lab.known_hosts), str(path), *addresses],
               sshd_pids=sshd_pids)


def probe_command_for(inventory: Path) -> str:
    """The facts probe exactly as `accelstack facts` sends it to the inventory's first host."""
    from accelstack.facts.gather import probe_options_for
    from accelstack.facts.probe import probe_command
    from accelstack.inventory import load_inventory

    first = next(iter(load_inventory(str(inventory)).hosts.values()))
    return probe_command(probe_options_for(first))


def write_peer_inventories(lab: Lab, work: Path) -> tuple[Path, Path, Path]:
    hosts = lab.status()
    ssh_args = f"-o UserKnownHostsFile={lab.known_hosts} -o StrictHostKeyChecking=yes"
    ini = work / "hosts.ini"
    ini.write_text("[lab]\n" + "".join(f"{h['host']} ansible_host={h['address']}\n" for h in hosts) +
                   "[lab:vars]\nansible_user=root\n"
                   f"ansible_ssh_private_key_file={lab.key}\n"
                   f"ansible_ssh_common_args='{ssh_args}'\n"
                   "ansible_python_interpreter=/usr/bin/python3\n")
    entries = [f"    ({h['address']!r}, {{'ssh_user': 'root', 'ssh_key': {str(lab.key)!r}, "
               f"'ssh_known_hosts_file': {str(lab.known_hosts)!r}, 'ssh_strict_host_key_checking': 'yes'}})"
               for h in hosts]
    py = work / "inventory.py"
    py.write_text("lab = [\n" + ",\n".join(entries) + "\n]\n")
    one = work / "inventory1.py"
    one.write_text("lab = [\n" + entries[0] + "\n]\n")
    return ini, py, one


def median(runs: list[Run], what: Callable[[Run], float]) -> float:
    return statistics.median(what(r) for r in runs)


def paired(ours: list[Run], theirs: list[Run], what: Callable[[Run], float]) -> float:
    """The median of round-by-round ratios: the two ran one after the other, at the same machine speed."""
    return statistics.median(what(a) / max(what(b), 1e-9) for a, b in zip(ours, theirs, strict=True))


def verdict(value: float, goal: float) -> str:
    return f"{value:.2f}x (goal <= {goal:.2f}x: {'met' if value <= goal else 'NOT met'})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--big", type=int, default=256, help="host count for the scale run (0 to skip)")
    parser.add_argument("--slurm", action="store_true",
                        help="also the quick tier through srun next to the same over SSH (starts the lab's Slurm)")
    parser.add_argument("--slurm-hosts", type=int, default=8,
                        help="lab nodes for the Slurm line (each runs a slurmd and a node-check on this machine)")
    parser.add_argument("--tiny", action="store_true",
                        help="one round of accelstack facts over 4 local-connection hosts; no lab, no root, no peers")
    args = parser.parse_args()
    if args.tiny:
        return tiny()
    if os.geteuid() != 0:
        print("bench/fanout.py needs root (it brings up a lab)", file=sys.stderr)
        return 3
    bin_dir = ensure_peer_tools()
    compile_bytecode()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "inventories").mkdir()
        runs = work / "runs"
        tag, subnet = lab_ids("acb", "10.216")
        lab = Lab(work, tag=tag, subnet=subnet)
        try:
            lab.up(args.hosts)
            sshd = [h.sshd_pid for h in lab.load().values()]
            ini, py, py_one = write_peer_inventories(lab, work)
            ansible_env = {"ANSIBLE_PIPELINING": "True", "ANSIBLE_HOST_KEY_CHECKING": "True",
                           "ANSIBLE_FORKS": str(args.hosts), "ANSIBLE_LOCAL_TEMP": str(work / "ansible-tmp"),
                           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "0"}
            inventory = str(lab.inventory)
            probe = probe_command_for(lab.inventory)

            def ansible(limit: list[str]) -> Run:
                return Run([str(bin_dir / "ansible"), "all", "-i", str(ini), "-m", "setup", "-f", str(args.hosts),
                            *limit], env=ansible_env, sshd_pids=sshd)

            def pyinfra(inv: Path) -> Run:
                return Run([str(bin_dir / "pyinfra"), str(inv), "fact", "server.Os", "server.KernelVersion",
                            "--parallel", str(args.hosts), "-y"], cwd=work, sshd_pids=sshd)

            def facts(*limit: str) -> Run:
                return accelstack(["facts", "--inventory", inventory, *limit], runs, sshd_pids=sshd)

            # Each tool on every host, and on one host: the difference is what the other hosts cost.
            tools: dict[str, tuple[Callable[[], Run], Callable[[], Run]]] = {
                "accelstack facts": (facts, lambda: facts("--limit", "lab1")),
                "ansible -m setup": (lambda: ansible([]), lambda: ansible(["-l", "lab1"])),
                "pyinfra fact": (lambda: pyinfra(py), lambda: pyinfra(py_one)),
                "paramiko + probe": (lambda: paramiko_floor(lab, probe, work, sshd),
                                     lambda: paramiko_floor(lab, probe, work, sshd, 1)),
                "paramiko + true": (lambda: paramiko_floor(lab, "true", work, sshd),
                                    lambda: paramiko_floor(lab, "true", work, sshd, 1)),
            }
            # One unmeasured warm-up each, then the tools take turns, so none always runs first after lab.up
            # or right after ansible's ControlPersist masters.
            for every, _one in tools.values():
                every()
            full: dict[str, list[Run]] = {name: [] for name in tools}
            single: dict[str, list[Run]] = {name: [] for name in tools}
            for round_ in range(args.repeat):
                for name, (every, one) in tools.items():
                    run = every()
                    if run.code != 0:
                        print(f"  {name}: exit {run.code}: {run.out.strip()[-300:]}", file=sys.stderr)
                    full[name].append(run)
                    if round_ < max(1, (args.repeat + 1) // 2):
                        single[name].append(one())
            report_fanout(full, single, args.hosts, args.repeat, cores)
            if args.slurm:
                slurm_line(lab, runs, args.slurm_hosts)
            if args.big:
                lab.up(args.big)
                big_run(lab, inventory, runs, work, args.big, cores)
        finally:
            lab.down()
    return 0


def compile_bytecode() -> None:
    """Compile accelstack as pip does when it installs a package (this machine sets PYTHONDONTWRITEBYTECODE, so
    the checkout would otherwise be compiled anew on every run, where the peers, installed by pip, are not)."""
    import accelstack

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(accelstack.__file__).parent)], check=True)


def report_fanout(full: dict[str, list[Run]], single: dict[str, list[Run]], n: int, repeat: int, cores: int) -> None:
    ours, peer = "accelstack facts", "pyinfra fact"
    wall = {name: median(rs, lambda r: r.wall) for name, rs in full.items()}
    cpu = {name: median(rs, lambda r: r.cpu) for name, rs in full.items()}
    hosts = {name: median(rs, lambda r: r.hosts_cpu) for name, rs in full.items()}
    cpu_one = {name: median(rs, lambda r: r.cpu) for name, rs in single.items()}
    marginal = {name: max(cpu[name] - cpu_one[name], 0.0) / max(n - 1, 1) for name in full}
    print(f"\nfan-out on {n} lab hosts, median of {repeat} (one host: of {len(single[ours])}); {cores} cores, "
          f"load average {os.getloadavg()[0]:.1f}; ours/it: accelstack over that tool, round by round")
    print(f"{'tool':<18}{'wall s':>8}{'ours/it':>9}{'ctl CPU s':>11}{'ms/host':>9}{'ours/it':>9}{'hosts ms/host':>15}"
          f"{'1 host s':>10}{'ms/extra host':>15}{'ours/it':>9}")
    for name in full:
        # ansible's ControlPersist masters keep their sessions (and so their sshd) alive past the run: not counted.
        host_ms = "n/a" if name.startswith("ansible") else f"{hosts[name] / n * 1000:.1f}"
        print(f"{name:<18}{wall[name]:>8.2f}{paired(full[ours], full[name], lambda r: r.wall):>9.2f}"
              f"{cpu[name]:>11.2f}{cpu[name] / n * 1000:>9.1f}{paired(full[ours], full[name], lambda r: r.cpu):>9.2f}"
              f"{host_ms:>15}{cpu_one[name]:>10.2f}{marginal[name] * 1000:>15.1f}"
              f"{marginal[ours] / max(marginal[name], 1e-9):>9.2f}")
    print(f"goals against pyinfra: control CPU per host "
          f"{verdict(paired(full[ours], full[peer], lambda r: r.cpu), GOAL_CPU_PER_HOST)} over the whole run, "
          f"{verdict(marginal[ours] / max(marginal[peer], 1e-9), GOAL_CPU_PER_HOST)} per extra host "
          f"(bare paramiko with the same probe: {marginal['paramiko + probe'] / max(marginal[peer], 1e-9):.2f}x); "
          f"wall {verdict(paired(full[ours], full[peer], lambda r: r.wall), GOAL_WALL)}")
    print(f"the lab hosts' CPU during accelstack's run: {hosts[ours]:.2f} s (sshd and a shell alone: "
          f"{hosts['paramiko + true']:.2f} s); over {cores} cores that is {hosts[ours] / cores:.2f} s of wall no "
          "control side can remove here")


def big_run(lab: Lab, inventory: str, runs: Path, work: Path, n: int, cores: int) -> None:
    sshd = [h.sshd_pid for h in lab.load().values()]
    pairs = [(accelstack(["facts", "--inventory", inventory], runs, sshd_pids=sshd),
              paramiko_floor(lab, "true", work, sshd)) for _ in range(3)]
    big = [pair[0] for pair in pairs]
    floor = [pair[1] for pair in pairs]
    errors = [r.statuses.get("error", 0) + (n - len(r.records)) for r in big]
    big_wall = median(big, lambda r: r.wall)
    big_hosts = median(big, lambda r: r.hosts_cpu)
    print(f"\naccelstack facts on {n} lab hosts, median of 3: {big_wall:.2f} s wall "
          f"(goal < {GOAL_BIG_WALL_S:.0f} s: {'met' if big_wall < GOAL_BIG_WALL_S else 'NOT met'}), "
          f"error or missing records {errors} (goal 0), control CPU {median(big, lambda r: r.cpu):.2f} s "
          f"({median(big, lambda r: r.cpu) / n * 1000:.1f} ms/host), the hosts' CPU {big_hosts:.1f} s "
          f"({big_hosts / n * 1000:.1f} ms/host: over {cores} cores at least {big_hosts / cores:.1f} s of wall here)")
    print(f"  floor, bare paramiko connect + true on the same hosts: {median(floor, lambda r: r.wall):.2f} s wall, "
          f"control CPU {median(floor, lambda r: r.cpu):.2f} s, the hosts' CPU {median(floor, lambda r: r.hosts_cpu):.1f} s;"
          f" accelstack/floor {paired(big, floor, lambda r: r.wall):.2f}x wall")


def slurm_line(lab: Lab, runs: Path, hosts: int) -> None:
    """The quick tier on every node through one srun, next to the same over SSH, on the same lab hosts."""
    from accelstack_lab.slurm import SlurmLab

    lab.up(hosts)  # fewer hosts than the fan-out table: each node also runs a slurmd and a node-check here
    slurm = SlurmLab(lab)
    try:
        slurm.up(health_check=False)
        inventory = str(lab.inventory)
        env = {"SLURM_CONF": str(slurm.conf)}
        quick = ["--tier", "quick", "--only", QUICK_SYSTEM_CHECKS]
        accelstack(["validate", "--inventory", inventory, *quick], runs)  # warm-up: uploads the validators
        pairs = [(accelstack(["validate", "--inventory", inventory, *quick], runs),
                  accelstack(["validate", "--engine", "slurm", *quick], runs, env=env))
                 for _ in range(3)]
        print(f"\nquick tier on {hosts} lab nodes, the checks that run on the host's own python ({QUICK_SYSTEM_CHECKS};"
              " the lab hosts are not provisioned: over SSH devices and collective_init find no stack python and "
              "answer error at once, while a node-check through srun runs them on this machine's torch, other "
              "work), median of 3:")
        for label, index in (("over SSH", 0), ("through srun", 1)):
            runs_ = [pair[index] for pair in pairs]
            last = runs_[-1]
            print(f"  validate {label:<13}{median(runs_, lambda r: r.wall):>7.2f} s wall, control CPU "
                  f"{median(runs_, lambda r: r.cpu):.2f} s, {len(last.records)} records "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(last.statuses.items()))}), exit {last.code}")
    finally:
        slurm.down()


def tiny() -> int:
    """The fan-out path (pool, one probe per host, records) on hosts reached with ``connection: local``."""
    with tempfile.TemporaryDirectory(prefix="acb-tiny-") as tmp:
        inventory = Path(tmp) / "local4.yml"
        inventory.write_text("vars: {stack: cpu, connection: local}\nhosts:\n"
                             + "".join(f"  local{i}: {{}}\n" for i in range(1, 5)))
        path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
        run = Run([sys.executable, "-m", "accelstack", "facts", "--inventory", str(inventory), "--json"],
                  env={"ACCELSTACK_RUNS": str(Path(tmp) / "runs"), "PYTHONPATH": path})
    records = run.records
    passed = sum(1 for r in records if r["status"] == "pass")
    print(f"accelstack facts on 4 local-connection hosts: {run.wall:.2f} s, control CPU {run.cpu:.2f} s, exit "
          f"{run.code}, {passed}/4 pass (peers, the lab and Slurm are skipped in --tiny)")
    return 0 if run.code == 0 and passed == 4 else 1


if __name__ == "__main__":
    raise SystemExit(main())
