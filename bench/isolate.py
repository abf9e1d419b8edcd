"""Bad-node isolation: bisection (what `inv validate` runs now) beside the pairwise ring it replaced, on lab hosts
with one slowed link.

    sudo python bench/isolate.py [--hosts 16] [--slow labN] [--keep]
    sudo python bench/isolate.py --tiny          # 4 hosts, one fleet sweep size: the CI smoke

Brings up (or reuses) a lab of its own (tag aci, subnet 10.227: never the test lab `act` nor the developer lab
`acs`), installs the CPU stack's venv, slows one host's link (`lab.fault link-slow`: netem, or tbf where the kernel
has no netem), runs the fleet allreduce through `validate` (which isolates by bisection), then the old pairwise
ring over the same hosts. Printed side by side: who each named, the extra collective runs, the rounds (runs that
share no node go at once; one-sided bisection runs one a round) and the wall time of the isolation. Run it under the lab lock:
`flock -w 900 /tmp/accelstack-lab.lock python bench/isolate.py`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from accelstack.engines.ssh.cluster import isolate, pairwise, prepare_members, ring_rounds  # noqa: E402
from accelstack.engines.ssh.run import validate_inventory  # noqa: E402
from accelstack.inventory import load_inventory  # noqa: E402
from accelstack.stacks.context import resolve_contexts  # noqa: E402
from accelstack.transport.fanout import HostPool  # noqa: E402
from accelstack.validate.config import host_config  # noqa: E402
from accelstack.validate.registry import validators_dir  # noqa: E402
from accelstack.validate.thresholds import load_thresholds  # noqa: E402
from accelstack_lab import Lab, lab_ids  # noqa: E402
from tests.labtools import install_venv  # noqa: E402

TAG, SUBNET = lab_ids("aci", "10.227")
DEADLINE_S = 60  # what validate gives each isolation run
FLEET_DEADLINE_S = 150  # the fleet run: every host starts torch on the same two cores
RANKS = 1  # per host: 16 hosts x 2 ranks of gloo on two cores measure the CPU, not the slowed link


def bisection(inventory: str) -> dict:
    started = time.monotonic()
    inv = load_inventory(inventory)
    records = [r for r in validate_inventory(inv, inv.select(), only={"multinode"}) if r.check == "multinode"]
    wall = time.monotonic() - started
    first = records[0]
    isolation = first.evidence.get("isolation") or {}
    at_fault = first.evidence.get("at_fault") or {"nodes": [], "links": []}
    return {"named": at_fault["nodes"] + [f"{a}<->{b}" for a, b in at_fault["links"]],
            "runs": isolation.get("extra_runs", 0), "rounds": isolation.get("rounds", 0),
            "wall_s": isolation.get("wall_s", 0.0), "validate_wall_s": wall,
            "fleet_busbw": first.metrics.get("busbw_gbps"), "statuses": sorted({r.status for r in records}),
            "failed": [f"round {r['round']} {'-'.join(r['hosts'])}: {r.get('detail', '')}"
                       for r in isolation.get("runs", []) if r["status"] == "fail"],
            "fleet_summary": next((r.summary for r in records if r.status == "fail"), "")}


def pairwise_ring(inventory: str) -> dict:
    hosts = load_inventory(inventory).select(None)
    contexts = resolve_contexts(hosts)
    configs = {name: host_config(ctx, tier="standard") for name, ctx in contexts.items()}
    thresholds = load_thresholds()
    with HostPool() as pool:
        members, errors = prepare_members(list(contexts.values()), lambda ctx: pool.connect(ctx.host),
                                          validators_dir(), configs)
        if errors:
            raise SystemExit(f"pairwise: {errors[0].host}: {errors[0].summary}")
        started = time.monotonic()
        results = pairwise(members, thresholds, deadline_s=DEADLINE_S)
        wall = time.monotonic() - started
    names = [m.name for m in members]
    nodes, links = isolate(names, {p.hosts for p in results if p.status == "fail"}, [p.hosts for p in results],
                           set())
    failed = [f"{'-'.join(p.hosts)}: {p.why}" for p in results if p.status == "fail"]
    return {"named": nodes + [f"{a}<->{b}" for a, b in links], "runs": len(results),
            "rounds": len(ring_rounds(len(members))), "wall_s": wall, "failed": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--tiny", action="store_true", help="4 hosts, one fleet sweep size: the CI smoke")
    parser.add_argument("--slow", help="the host whose link is slowed (default: about two thirds in)")
    parser.add_argument("--keep", action="store_true", help="leave the lab up (a later run reuses it)")
    args = parser.parse_args()
    count = 4 if args.tiny else args.hosts
    if count < 2:
        raise SystemExit("--hosts must be 2 or more")
    slow = args.slow or f"lab{max(2, (2 * count + 2) // 3)}"
    root = Path(tempfile.mkdtemp(prefix="aci-"))
    os.environ.setdefault("ACCELSTACK_RUNS", str(root / "runs"))  # bench runs are not the user's history
    (root / "inventories").mkdir()
    lab = Lab(root, tag=TAG, subnet=SUBNET)
    started = time.monotonic()
    try:
        lab.up(count)
        install_venv(lab)
        setup = time.monotonic() - started
        doc = yaml.safe_load(Path(lab.inventory).read_text())
        doc["vars"].update({"multinode_deadline_s": FLEET_DEADLINE_S, "cluster_nproc": RANKS})
        if args.tiny:  # one size of the fleet sweep: the slowed fleet run fails at any size, and the isolation
            doc["vars"]["cluster_sizes"] = [1 << 20]  # runs that name the node have a sweep of their own
        inventory = root / "inventories" / "bench.yml"
        inventory.write_text(yaml.safe_dump(doc))
        lab.fault(slow, "link-slow")
        note = lab.last_fault_note
        try:
            bis = bisection(str(inventory))
            pair = pairwise_ring(str(inventory))
        finally:
            lab.heal(slow)
        bound = math.ceil(math.log2(count))
        print(f"isolation on {count} lab hosts ({RANKS} gloo rank each, {os.cpu_count()} CPU cores), {slow}'s link "
              f"slowed: {note}; lab up and venv in {setup:.0f} s")
        busbw = bis["fleet_busbw"]
        print(f"fleet allreduce: records {'/'.join(bis['statuses'])}, busbw "
              f"{'none' if busbw is None else f'{busbw:.4f} GB/s'}; validate wall {bis['validate_wall_s']:.1f} s")
        print(f"  {bis['fleet_summary'][:300]}")
        print(f"{'isolation':<22} {'named':<14} {'extra runs':>10} {'rounds':>7} {'wall s':>8}")
        for label, row in (("bisection (now)", bis), ("pairwise ring (before)", pair)):
            named = ", ".join(row["named"]) or "nobody"
            print(f"{label:<22} {named:<14} {row['runs']:>10} {row['rounds']:>7} {row['wall_s']:>8.1f}")
        for label, row in (("bisection", bis), ("pairwise", pair)):
            print(f"{label} runs that failed ({len(row['failed'])}):")
            for line in row["failed"]:
                print(f"  {line[:160]}")
        print(f"ceil(log2 {count}) + 1 = {bound + 1}: one-sided bisection names one bad node, and shows every other "
              f"node good, in at most that many runs, one a round; the ring runs {count} pairs")
        if bis["named"] != [slow]:
            raise SystemExit(f"bisection named {bis['named'] or 'nobody'}, not {slow}")
    finally:
        if not args.keep:
            lab.down()


if __name__ == "__main__":
    main()
