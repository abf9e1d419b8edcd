"""Fan-out benchmark: `accelstack facts` next to `ansible -m setup` and `pyinfra ... fact` on the same lab hosts.

    python bench/fanout.py [--hosts 32] [--repeat 5] [--big 256]
    python bench/fanout.py --tiny    # 4 hosts on the local connection, accelstack only: the CI smoke test

Brings up a lab of its own (tag ``acb``, subnet 10.216), prints median wall times side by side with ratios, then
brings up ``--big`` hosts and prints accelstack's wall time and error count there. Needs root. ansible-core and
pyinfra are installed into ``bench/.venv`` on first use (never into the project's environment: pyinfra pins its
own paramiko). Targets (issue 2): accelstack <= 0.5x pyinfra and <= 0.1x ansible-core on 32 hosts; 0 errors on 256.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENV = HERE / ".venv"
sys.path.insert(0, str(REPO / "src"))

from accelstack.lab import Lab  # noqa: E402


def ensure_peer_tools() -> Path:
    bin_dir = VENV / "bin"
    if not (bin_dir / "ansible").exists() or not (bin_dir / "pyinfra").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(bin_dir / "pip"), "install", "-q", "ansible-core", "pyinfra"], check=True)
    return bin_dir


CONTROL_CPU: dict[str, list[float]] = {}


def timed(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
          label: str = "") -> tuple[float, int, str]:
    """Wall time, exit code, output; the control side's CPU (the tool and its children, e.g. ansible's ssh
    processes) is kept per label: on a real fleet the hosts' own work runs elsewhere, while here every lab host
    shares this machine's cores, so wall time also pays for the hosts' side of the work."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if label:
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        CONTROL_CPU.setdefault(label, []).append(cpu)
    return elapsed, proc.returncode, proc.stdout + proc.stderr


def accelstack_facts(lab: Lab, runs: Path) -> tuple[float, int, int]:
    seconds, code, out = timed([sys.executable, "-m", "accelstack", "facts", "--inventory", str(lab.inventory),
                                "--json"], env={"ACCELSTACK_RUNS": str(runs)}, label="accelstack facts")
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    errors = sum(1 for r in records if r["status"] == "error")
    return seconds, code, errors


def write_peer_inventories(lab: Lab, work: Path) -> tuple[Path, Path]:
    hosts = lab.status()
    ssh_args = f"-o UserKnownHostsFile={lab.known_hosts} -o StrictHostKeyChecking=yes"
    ini = work / "hosts.ini"
    ini.write_text("[lab]\n" + "".join(f"{h['host']} ansible_host={h['address']}\n" for h in hosts) +
                   "[lab:vars]\nansible_user=root\n"
                   f"ansible_ssh_private_key_file={lab.key}\n"
                   f"ansible_ssh_common_args='{ssh_args}'\n"
                   "ansible_python_interpreter=/usr/bin/python3\n")
    py = work / "inventory.py"
    entries = ",\n".join(
        f"    ({h['address']!r}, {{'ssh_user': 'root', 'ssh_key': {str(lab.key)!r}, "
        f"'ssh_known_hosts_file': {str(lab.known_hosts)!r}, 'ssh_strict_host_key_checking': 'yes'}})"
        for h in hosts)
    py.write_text(f"lab = [\n{entries}\n]\n")
    return ini, py


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--big", type=int, default=256, help="host count for the scale run (0 to skip)")
    parser.add_argument("--tiny", action="store_true",
                        help="one round of accelstack facts over 4 local-connection hosts; no lab, no root, no peers")
    args = parser.parse_args()
    if args.tiny:
        return tiny()
    if os.geteuid() != 0:
        print("bench/fanout.py needs root (it brings up a lab)", file=sys.stderr)
        return 3
    bin_dir = ensure_peer_tools()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "inventories").mkdir()
        lab = Lab(work, tag="acb", subnet="10.216")
        try:
            lab.up(args.hosts)
            ini, py = write_peer_inventories(lab, work)
            ansible_env = {"ANSIBLE_PIPELINING": "True", "ANSIBLE_HOST_KEY_CHECKING": "True",
                           "ANSIBLE_FORKS": str(args.hosts), "ANSIBLE_LOCAL_TEMP": str(work / "ansible-tmp"),
                           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "0"}
            tools = {
                "accelstack facts": lambda: accelstack_facts(lab, work / "runs")[:2],
                "ansible -m setup": lambda: timed([str(bin_dir / "ansible"), "all", "-i", str(ini), "-m", "setup",
                                                   "-f", str(args.hosts)], env=ansible_env,
                                                  label="ansible -m setup")[:2],
                "pyinfra fact": lambda: timed([str(bin_dir / "pyinfra"), str(py), "fact", "server.Os",
                                               "server.KernelVersion", "--parallel", str(args.hosts), "-y"],
                                              cwd=work, label="pyinfra fact")[:2],
            }
            # One unmeasured warm-up each, then the tools take turns, so none always runs first after lab.up
            # or right after ansible's ControlPersist masters.
            for run in tools.values():
                run()
            CONTROL_CPU.clear()
            times: dict[str, list[float]] = {name: [] for name in tools}
            for _ in range(args.repeat):
                for name, run in tools.items():
                    seconds, code = run()
                    if code != 0:
                        print(f"  {name}: exit {code}", file=sys.stderr)
                    times[name].append(seconds)
            medians = {name: statistics.median(values) for name, values in times.items()}
            ours = medians["accelstack facts"]
            cpu = {name: statistics.median(values) for name, values in CONTROL_CPU.items()}
            print(f"\nfan-out on {args.hosts} lab hosts, median of {args.repeat}; load average "
                  f"{os.getloadavg()[0]:.1f}")
            print(f"{'tool':<20}{'wall s':>8}{'accelstack/tool':>17}{'control CPU s':>15}{'accelstack/tool':>17}")
            for name, value in medians.items():
                print(f"{name:<20}{value:>8.2f}{ours / value:>17.2f}{cpu[name]:>15.2f}"
                      f"{cpu['accelstack facts'] / cpu[name]:>17.2f}")
            print("targets (wall): accelstack/pyinfra <= 0.50, accelstack/ansible <= 0.10")
            if args.big:
                lab.up(args.big)
                seconds, code, errors = accelstack_facts(lab, work / "runs")
                print(f"\naccelstack facts on {args.big} lab hosts: {seconds:.2f} s, exit {code}, "
                      f"{errors} error record(s) (target 0)")
        finally:
            lab.down()
    return 0


def tiny() -> int:
    """The fan-out path (pool, one probe per host, records) on hosts reached with ``connection: local``."""
    with tempfile.TemporaryDirectory(prefix="acb-tiny-") as tmp:
        inventory = Path(tmp) / "local4.yml"
        inventory.write_text("vars: {stack: cpu, connection: local}\nhosts:\n"
                             + "".join(f"  local{i}: {{}}\n" for i in range(1, 5)))
        path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
        seconds, code, out = timed([sys.executable, "-m", "accelstack", "facts", "--inventory", str(inventory),
                                    "--json"], env={"ACCELSTACK_RUNS": str(Path(tmp) / "runs"), "PYTHONPATH": path})
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    passed = sum(1 for r in records if r["status"] == "pass")
    print(f"accelstack facts on 4 local-connection hosts: {seconds:.2f} s, exit {code}, {passed}/4 pass "
          "(peers and the lab are skipped in --tiny)")
    return 0 if code == 0 and passed == 4 else 1


if __name__ == "__main__":
    raise SystemExit(main())
