"""No-op re-provision vs ``inv facts`` on 32 lab hosts (tag acq, subnet 10.220).

The stack is SMALL on purpose, so 32 hosts do not each install torch: the lab-only Ascend stack (simulated HDK
driver + firmware) with roles ``ascend_driver,env`` only: the simulated driver and firmware installers, the env
file, hostfile, launcher and HCCL rank table. One provision converges the fleet; then each figure comes from
``--rounds`` wall times of the CLI, as a user runs it, rounds alternating facts and provision so that load from
other work on the machine falls on both alike. Each figure is the median of the rounds (best beside it).
Target: no-op provision <= 1.5x facts, 0 bytes uploaded.

    sudo python bench/provision.py [--hosts 32] [--rounds 5] [--keep]
    python bench/provision.py --tiny    # one round of facts and provision --check on this machine, no lab:
                                        # the CI smoke test (no root, nothing touched, no target)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
from tests.test_provision_lab import LAB_ASCEND  # noqa: E402


def cli(args: list[str], runs: Path) -> tuple[float, list[dict], int]:
    """The console script as a user runs it (``python -m accelstack``), from this checkout's sources."""
    began = time.monotonic()
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-m", "accelstack", *args, "--json"], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "ACCELSTACK_RUNS": str(runs), "PYTHONPATH": path})
    elapsed = time.monotonic() - began
    return elapsed, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")], proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="leave the lab up afterwards")
    parser.add_argument("--tiny", action="store_true", help="one round on this machine, --check only, no lab")
    args = parser.parse_args()
    if args.tiny:
        return tiny()

    from accelstack_lab import Lab, lab_ids
    from accelstack_lab.simulated import build_lab_repository

    root = Path(tempfile.mkdtemp(prefix="acq-"))
    (root / "inventories").mkdir()
    (root / "stacks").mkdir()
    stack = root / "stacks" / "lab-ascend.yml"
    stack.write_text(LAB_ASCEND)
    repo = build_lab_repository(root / "repo", torch_wheel=None, stacks=[str(stack)], fault_fixtures=False)
    tag, subnet = lab_ids("acq", "10.220")
    lab = Lab(root, tag=tag, subnet=subnet)
    lab.down()
    try:
        lab.up(args.hosts)
        doc = yaml.safe_load(lab.inventory.read_text())
        doc["vars"].update({"stack": str(stack), "artifact_repo": str(repo), "provision_roles": ["ascend_driver", "env"],
                            "ascend_run_user": "root", "ascend_run_group": "root", "ascend_driver_packages": [],
                            "hccl_socket_ifname": "eth0"})
        inventory = root / "bench.yml"
        inventory.write_text(yaml.safe_dump(doc))
        runs = root / "runs"
        first_s, first, rc = cli(["provision", "--inventory", str(inventory)], runs)
        hosts = [r for r in first if r["check"] == "provision"]
        assert rc == 0 and len(hosts) == args.hosts, (rc, [r for r in first if r["status"] != "pass"][:3])
        uploaded = sum(r["metrics"]["bytes_uploaded"] for r in hosts)
        print(f"first provision: {args.hosts} hosts in {first_s:.2f} s, {uploaded} bytes uploaded, "
              f"{sum(r['metrics']['changed'] for r in hosts)} steps changed")
        facts_times, noop_times, noop_bytes, noop_changed = [], [], 0, 0
        for _ in range(args.rounds):
            elapsed, _, rc = cli(["facts", "--inventory", str(inventory)], runs)
            assert rc == 0
            facts_times.append(elapsed)
            elapsed, recs, rc = cli(["provision", "--inventory", str(inventory)], runs)
            assert rc == 0
            noop_times.append(elapsed)
            hosts = [r for r in recs if r["check"] == "provision"]
            noop_bytes += sum(r["metrics"]["bytes_uploaded"] for r in hosts)
            noop_changed += sum(r["metrics"]["changed"] for r in hosts)
        facts_s, noop_s = statistics.median(facts_times), statistics.median(noop_times)
        print(f"{'':28}{'median s':>12}{'best s':>12}   rounds ({args.rounds}), load average {os.getloadavg()[0]:.2f}")
        for label, times in (("inv facts", facts_times), ("inv provision (no-op)", noop_times)):
            print(f"{label:28}{statistics.median(times):>12.2f}{min(times):>12.2f}   "
                  + " ".join(f"{t:.2f}" for t in times))
        print(f"ratio no-op provision / facts (medians): {noop_s / facts_s:.2f}  (target <= 1.5)")
        print(f"bytes uploaded by the no-op runs: {noop_bytes}  (target 0); steps changed: {noop_changed}")
    finally:
        if not args.keep:
            lab.down()
    return 0


def tiny() -> int:
    """facts and provision --check on the embedded default (this machine): nothing is changed, no root."""
    with tempfile.TemporaryDirectory(prefix="acq-tiny-") as tmp:
        runs = Path(tmp)
        facts_s, facts_recs, facts_rc = cli(["facts"], runs)
        check_s, check_recs, check_rc = cli(["provision", "--check"], runs)
    print(f"{'':28}{'wall s':>8}  exit  records")
    print(f"{'inv facts (local)':28}{facts_s:>8.2f}  {facts_rc:>4}  {len(facts_recs)}")
    print(f"{'inv provision --check':28}{check_s:>8.2f}  {check_rc:>4}  {len(check_recs)}")
    return 0 if facts_rc == 0 and check_rc == 0 and facts_recs and check_recs else 1


if __name__ == "__main__":
    sys.exit(main())
